// The flow of docs/api.md#a-typescript-client, written only against the types openapi-typescript
// makes from cronledger's OpenAPI document (default options) and the openapi-fetch client.
//
// tests/e2e/test_typescript_client.py generates `./cronledger.ts` beside a copy of this file,
// `flow.ts`, checks it with `tsc --strict`, compiles it and runs it against a served store:
//
//     node flow.js BASE_URL ADMIN_TOKEN
//
// It exits 0 when every step got the answer the document promises, and throws on the first
// that did not.

import createClient from "openapi-fetch";
import type { components, paths } from "./cronledger";

type Schemas = components["schemas"];
type Client = ReturnType<typeof createClient<paths>>;
type Lost = Schemas["CommandRejectedOut"];

declare const process: { argv: string[] }; // node's, without @types/node

const REVIEWER = "ts-reviewer";
const INITIATOR = "admin"; // the bootstrap admin

function check(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(what);
}

function client(baseUrl: string, token: string): Client {
  return createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });
}

/** Whether a problem document is a lost command's 409: its `code` says so. */
function lost(problem: { code: string }): problem is Lost {
  const rejected: Lost["code"] = "COMMAND_REJECTED";
  return problem.code === rejected;
}

/** What a run's status means to this client; a status a later release adds is "another". */
function described(status: Schemas["RunOut"]["status"]): string {
  switch (status) {
    case "PENDING":
    case "RUNNING":
    case "RETRY_WAIT":
      return "under way";
    case "SUCCEEDED":
      return "done";
    default:
      return `another status: ${status}`;
  }
}

async function reviewerToken(admin: Client): Promise<string> {
  const created = await admin.POST("/api/accounts", {
    body: { id: REVIEWER, name: "Reviewer", roles: ["operator"] },
  });
  check(created.data !== undefined, `account: ${JSON.stringify(created.error)}`);
  const issued = await admin.POST("/api/accounts/{account_id}/tokens", {
    params: { path: { account_id: REVIEWER } },
  });
  check(typeof issued.data?.token === "string", `token: ${JSON.stringify(issued.error)}`);
  return issued.data.token;
}

async function publishedDefinition(admin: Client): Promise<Schemas["DefinitionOut"]> {
  const created = await admin.POST("/api/definitions", {
    body: {
      key: "ts-onboarding",
      name: "Onboarding",
      external: false,
      review_window_seconds: 3600,
      reviewers: { accounts: [REVIEWER] },
    },
  });
  check(created.data !== undefined, `definition: ${JSON.stringify(created.error)}`);
  const published = await admin.POST("/api/definitions/{definition_id}/publish", {
    params: { path: { definition_id: created.data.id } },
  });
  check(published.data?.published === true, `publish: ${JSON.stringify(published.error)}`);
  return published.data;
}

async function dailySchedule(admin: Client, definitionId: string): Promise<Schemas["ScheduleOut"]> {
  const created = await admin.POST("/api/workflows/schedules", {
    body: {
      name: "Daily check",
      definition_id: definitionId,
      trigger: { kind: "cron", expression: "0 9 * * *" },
      initiator_id: INITIATOR,
    },
  });
  check(created.data !== undefined, `schedule: ${JSON.stringify(created.error)}`);
  check(!created.data.enabled, "a schedule is created disabled");
  const trigger = created.data.trigger;
  if (trigger.kind === "cron") {
    check(trigger.expression === "0 9 * * *", `expression: ${trigger.expression}`);
  } else {
    throw new Error(`a ${trigger.kind} trigger, every ${trigger.interval_minutes} minutes`);
  }
  return created.data;
}

async function runNowAndList(admin: Client, scheduleId: string): Promise<void> {
  const path = { schedule_id: scheduleId };
  const run = await admin.POST("/api/workflows/schedules/{schedule_id}/run", {
    params: { path, header: { "Idempotency-Key": "ts-run-1" } },
  });
  check(run.data !== undefined, `run now: ${JSON.stringify(run.error)}`);
  check(run.response.status === 202 && run.data.trigger === "manual", "a manual run, accepted");
  const runs = await admin.GET("/api/workflows/schedules/{schedule_id}/runs", {
    params: { path, query: { page_size: 10 } },
  });
  check(runs.data !== undefined, `runs: ${JSON.stringify(runs.error)}`);
  const listed = runs.data.items.find((item) => item.id === run.data.id);
  check(listed !== undefined, "the run is listed");
  check(described(listed.status) !== "", "a status");
  check(described("PAUSED_FOR_HOLIDAY") === "another status: PAUSED_FOR_HOLIDAY", "open");
}

async function submitted(admin: Client, definitionId: string): Promise<Schemas["ApprovalOut"]> {
  const answer = await admin.POST("/api/approvals", {
    body: { definition_id: definitionId, title: "Open account", material_version: 1 },
    params: { header: { "Idempotency-Key": "ts-submit-1" } },
  });
  check(answer.data !== undefined, `submit: ${JSON.stringify(answer.error)}`);
  const policy = answer.data.deadline_policy;
  switch (policy.source) {
    case "definition":
      check(policy.review_window_seconds === 3600, `window: ${policy.review_window_seconds}`);
      break;
    case "explicit":
    case "working_time":
    case "extended":
      throw new Error(`a deadline set by ${policy.source}, rule version ${policy.rule_version}`);
  }
  const origin = answer.data.origin; // null: no schedule launched it
  if (origin !== null && origin.trigger.kind === "window-interval") {
    throw new Error(`launched every ${origin.trigger.interval_minutes} minutes`);
  }
  check(origin === null, `a submission's origin: ${JSON.stringify(origin)}`);
  return answer.data;
}

async function decide(reviewer: Client, instance: Schemas["ApprovalOut"]): Promise<void> {
  const path = { instance_id: instance.id };
  const body = { material_version: instance.material_version };
  const won = await reviewer.POST("/api/approvals/{instance_id}/approve", {
    params: { path },
    body: { ...body, command_id: "ts-approve-1" },
  });
  check(won.data?.outcome === "APPROVED", `approve: ${JSON.stringify(won.error)}`);
  const again = await reviewer.POST("/api/approvals/{instance_id}/approve", {
    params: { path },
    body: { ...body, command_id: "ts-approve-2" },
  });
  check(again.error !== undefined, "a second decision loses");
  if (lost(again.error)) {
    check(again.error.approval.state === "APPROVED", `state: ${again.error.approval.state}`);
    check(again.error.outcome === "CONFLICT", `outcome: ${again.error.outcome}`);
  } else {
    throw new Error(`${again.response.status} ${again.error.code}: ${again.error.detail}`);
  }
}

async function main(baseUrl: string, token: string): Promise<void> {
  const admin = client(baseUrl, token);
  const reviewer = client(baseUrl, await reviewerToken(admin));
  const definition = await publishedDefinition(admin);
  const schedule = await dailySchedule(admin, definition.id);
  await runNowAndList(admin, schedule.id);
  await decide(reviewer, await submitted(admin, definition.id));
}

await main(process.argv[2], process.argv[3]);
