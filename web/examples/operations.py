"""Examples of health, backlog, timelines, the operations audit, bodies that only carry a
version or a reason, and a problem document for every code."""

from __future__ import annotations

from typing import Any

from cronledger.version import installed_version
from web.examples.world import (
    ANN_AGGREGATE_ID,
    CREATED_AT,
    CRON_SCHEDULE_ID,
    CRON_TRIGGER,
    DEFINITION_ID,
    MANUAL_RUN_ID,
    SUBMITTED_INSTANCE_ID,
    TENANT_ID,
)

CRON_SCHEDULE_PATH = f"/api/workflows/schedules/{CRON_SCHEDULE_ID}"
INSTANCE_PATH = f"/api/approvals/{SUBMITTED_INSTANCE_ID}"


def problem_document(
    code: str, status: int, title: str, detail: str, instance: str, **more: Any
) -> dict[str, Any]:
    """A problem document as the server writes it, `more` being `errors` or extensions."""
    return {
        "type": f"urn:cronledger:problem:{code.lower().replace('_', '-')}",
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        "instance": instance,
        "request_id": "4caa14ce710a4b35aa645fa8a9377da6",
        **more,
    }


PROBLEMS = {
    "BAD_REQUEST": problem_document(
        "BAD_REQUEST", 400, "Bad request", "the body must be a JSON object", "/api/accounts"
    ),
    "UNAUTHENTICATED": problem_document(
        "UNAUTHENTICATED",
        401,
        "Unauthenticated",
        "send Authorization: Bearer <token>",
        "/api/accounts",
    ),
    "FORBIDDEN": problem_document(
        "FORBIDDEN",
        403,
        "Forbidden",
        "this needs the permission workflow:schedule:list",
        "/api/backlog",
    ),
    "NOT_A_REVIEWER": problem_document(
        "NOT_A_REVIEWER",
        403,
        "Not a reviewer",
        "ops2 is not a reviewer of this instance",
        "/api/approvals/5b0e7d52-8f0c-5d3c-9a61-0c2f7f3e9a10/approve",
    ),
    "NO_ELIGIBLE_REVIEWER": problem_document(
        "NO_ELIGIBLE_REVIEWER",
        422,
        "No eligible reviewer",
        "the definition's reviewers name nobody who may approve this instance",
        "/api/approvals",
    ),
    "NOT_ENOUGH_REVIEWERS": problem_document(
        "NOT_ENOUGH_REVIEWERS",
        422,
        "Not enough reviewers",
        "level 2 has 1 eligible reviewer(s); it requires 2 approvals",
        "/api/approvals",
    ),
    "TOO_MANY_ROWS": problem_document(
        "TOO_MANY_ROWS",
        422,
        "Too many rows",
        "more than 100,000 rows match: narrow the filters (a shorter time window, a status, a "
        "search) and export again",
        "/api/workflows/runs/export",
    ),
    "NOT_FOUND": problem_document(
        "NOT_FOUND",
        404,
        "Not found",
        "schedule 0f9a53c6-1d1e-4c36-9a55-0e5e8f1c2b7d was not found",
        "/api/workflows/schedules/0f9a53c6-1d1e-4c36-9a55-0e5e8f1c2b7d",
    ),
    "METHOD_NOT_ALLOWED": problem_document(
        "METHOD_NOT_ALLOWED",
        405,
        "Method not allowed",
        "The method is not allowed for the requested URL.",
        "/api/accounts",
    ),
    "VERSION_CONFLICT": problem_document(
        "VERSION_CONFLICT",
        409,
        "The resource has changed since that version",
        "account is at version 3, not 1: reload it and apply your change again",
        "/api/accounts/ann",
    ),
    "IN_FLIGHT": problem_document(
        "IN_FLIGHT",
        409,
        "In flight",
        "1 cycle(s) of this schedule are pending, running or waiting to retry: cancel them or "
        "let them finish first",
        CRON_SCHEDULE_PATH,
    ),
    "INVALID_STATE": problem_document(
        "INVALID_STATE",
        409,
        "Invalid state",
        f"run {MANUAL_RUN_ID} is SUCCEEDED: only FAILED, DEAD_LETTER or CANCELLED runs retry",
        f"{CRON_SCHEDULE_PATH}/runs/{MANUAL_RUN_ID}/retry",
    ),
    "GROUP_IS_PARENT": problem_document(
        "GROUP_IS_PARENT",
        409,
        "Group is parent",
        "group finance is the parent of finance.payables: move or delete them first",
        "/api/groups/0541a0fc-ebc5-571b-9ba8-99052b457d25",
    ),
    "TOO_MANY_WEBHOOKS": problem_document(
        "TOO_MANY_WEBHOOKS",
        409,
        "Too many webhooks",
        "the tenant has 50 webhook subscriptions and may have 50 at most "
        "(CRONLEDGER_WEBHOOKS_PER_TENANT): delete one it no longer needs, then try again",
        "/api/webhooks",
    ),
    "COMMAND_ID_REUSED": problem_document(
        "COMMAND_ID_REUSED",
        409,
        "Command id reused",
        "command_id a-1 was already used with a different body; use a new one",
        f"{INSTANCE_PATH}/approve",
    ),
    "REQUEST_ID_REUSED": problem_document(
        "REQUEST_ID_REUSED",
        409,
        "Request id reused",
        f"request_id 'ops-2026-10-01-1' registered run {MANUAL_RUN_ID} at schedule version 2; "
        "the schedule has changed since: check that run's outcome, then use a new request_id",
        f"{CRON_SCHEDULE_PATH}/run",
    ),
    "IDEMPOTENCY_KEY_REUSED": problem_document(
        "IDEMPOTENCY_KEY_REUSED",
        409,
        "Idempotency key reused",
        "Idempotency-Key 5f0c6e1a-2b7d-4f7e-9a51-3c2d8e4b1a90 was already used with a "
        "different request; use a new one",
        "/api/workflows/schedules",
    ),
    "PRECONDITION_FAILED": problem_document(
        "PRECONDITION_FAILED",
        412,
        "The resource does not match If-Match",
        'the resource\'s ETag is "3", which If-Match does not name (a weak tag never matches): '
        "reload it; nothing was changed",
        CRON_SCHEDULE_PATH,
    ),
    "PAYLOAD_TOO_LARGE": problem_document(
        "PAYLOAD_TOO_LARGE",
        413,
        "Payload too large",
        "The data value transmitted exceeds the capacity limit.",
        "/api/approvals",
    ),
    "UNSUPPORTED_MEDIA_TYPE": problem_document(
        "UNSUPPORTED_MEDIA_TYPE",
        415,
        "Unsupported media type",
        "send Content-Type: application/merge-patch+json",
        CRON_SCHEDULE_PATH,
    ),
    "VALIDATION_FAILED": problem_document(
        "VALIDATION_FAILED",
        422,
        "The request has invalid fields",
        "invalid value for trigger.expression",
        "/api/workflows/schedules",
        errors={"trigger.expression": ["minute 61 is out of range 0-59"]},
    ),
    "TOO_MANY_STREAMS": problem_document(
        "TOO_MANY_STREAMS",
        429,
        "Too many streams",
        "this account already has 2 open streams; close one, or retry later",
        "/api/events/stream",
    ),
    "TOO_MANY_REQUESTS": problem_document(
        "TOO_MANY_REQUESTS",
        429,
        "Too many requests",
        "more than 60 of this caller's requests were refused within a minute; try again in 42 s",
        "/api/workflows/schedules",
    ),
    "INTERNAL": problem_document(
        "INTERNAL",
        500,
        "Internal",
        "an internal error occurred; it has been logged",
        f"{CRON_SCHEDULE_PATH}/runs",
    ),
    "UNAVAILABLE": problem_document(
        "UNAVAILABLE", 503, "Unavailable", "the postgresql store is unreachable", "/healthz"
    ),
}

SCHEDULE_TIMELINE = [
    {
        "position": 27,
        "log_version": 1,
        "type": "Schedule.Created",
        "at": CREATED_AT,
        "actor": "root",
        "command_id": None,
        "outcome": None,
        "reason": None,
        "reason_code": None,
        "reason_params": None,
        "data": {
            "tenant_id": TENANT_ID,
            "settings": {
                "name": "Daily check",
                "definition_id": DEFINITION_ID,
                "trigger": CRON_TRIGGER,
                "timezone": "Asia/Shanghai",
                "initiator_id": "ann",
                "title_template": "Daily check {{date}}",
                "form_data": {"region": "east"},
                "misfire_policy": "catch_up",
                "overlap_policy": "skip_while_launching",
                "preset_id": None,
            },
            "enabled": False,
            "next_fire_at": None,
            "definition_revision": 1,
        },
    },
    {
        "position": 29,
        "log_version": 2,
        "type": "Schedule.Enabled",
        "at": CREATED_AT,
        "actor": "root",
        "command_id": None,
        "outcome": None,
        "reason": "go live",
        "reason_code": None,
        "reason_params": None,
        "data": {"next_fire_at": "2026-10-02T01:00:00Z"},
    },
]
APPROVAL_TIMELINE = [
    {
        "position": 41,
        "log_version": 4,
        "type": "ApprovalInstance.Approved",
        "at": "2026-10-01T10:15:00Z",
        "actor": "olga",
        "command_id": "a-1",
        "outcome": "APPROVED",
        "reason": "approved before the deadline",
        "reason_code": "APPROVED_IN_TIME",
        "reason_params": {},
        "data": {
            "command": "approve",
            "payload": {"material_version": 2},
            "accepted": True,
            "fingerprint": "17fe4519ed2eb3bead37713ad126f56f3699dc7f382e67bce56f3d2771cdc40c",
        },
    },
    {
        "position": 43,
        "log_version": 5,
        "type": "ApprovalInstance.CommandRejected",
        "at": "2026-10-01T10:20:00Z",
        "actor": "ann",
        "command_id": "w-1",
        "outcome": "CONFLICT",
        "reason": "the instance is already APPROVED",
        "reason_code": "ALREADY_DECIDED",
        "reason_params": {"state": "APPROVED"},
        "data": {
            "command": "withdraw",
            "payload": {},
            "accepted": False,
            "fingerprint": "f80336a8568f4d1684b6c640c810fcc449cda612afa197311eabf09fa1dd15b4",
        },
    },
]


def _operation(position: int, kind: str, aggregate: str, summary: str, **more: Any) -> Any:
    """An entry of the operations audit, by root at the story's start unless `more` says."""
    return {
        "position": position,
        "at": CREATED_AT,
        "actor": "root",
        "kind": kind,
        "aggregate_type": kind.partition(".")[0],
        "aggregate_id": aggregate,
        "schedule_id": None,
        "summary": summary,
        "timeline": f"/api/audit/timeline/{aggregate}",
        **more,
    }


OPERATIONS = [
    _operation(
        33,
        "approval.deadline_extended",
        SUBMITTED_INSTANCE_ID,
        "review deadline of 'Open account' extended to 2026-10-03T10:00:00Z: customer asked",
        at="2026-10-01T09:20:00Z",
        actor="olga",
        timeline=f"/api/approvals/{SUBMITTED_INSTANCE_ID}/timeline",
    ),
    _operation(
        31,
        "run.manual",
        MANUAL_RUN_ID,
        "manual run of schedule 'Daily check' at 2026-10-01T09:00:00Z",
        schedule_id=CRON_SCHEDULE_ID,
        timeline=f"/api/workflows/runs/{MANUAL_RUN_ID}/timeline",
    ),
    _operation(
        29,
        "schedule.enabled",
        CRON_SCHEDULE_ID,
        "schedule 'Daily check' enabled: go live",
        schedule_id=CRON_SCHEDULE_ID,
        timeline=f"{CRON_SCHEDULE_PATH}/timeline",
    ),
    _operation(22, "account.token_issued", ANN_AGGREGATE_ID, "an API token of account ann issued"),
]

EXAMPLES: dict[str, dict[str, Any]] = {
    "LivenessOut": {
        "serve": {
            "status": "ok",
            "phase": "ready",
            "loops": ["notifier", "projections", "sweeper", "tick", "worker"],
        },
        "web": {"status": "ok", "phase": "ready", "loops": []},
        "worker-draining": {"status": "ok", "phase": "draining", "loops": ["worker"]},
    },
    "HealthOut": {
        "sqlite": {"status": "ok", "store": "sqlite", "version": installed_version()},
        "postgresql": {"status": "ok", "store": "postgresql", "version": installed_version()},
    },
    "BacklogOut": {
        "a-retry-due": {
            "due_schedules": 0,
            "oldest_due_lag_seconds": 0.0,
            "pending_runs": 0,
            "retry_wait_runs": 1,
            "dead_letter_runs": 0,
            "expired_unswept_approvals": 0,
            "oldest_expired_unswept_lag_seconds": 0.0,
            "projection_lag_events": 0,
            "expiry_lag_buckets": {
                "1.0": 1,
                "2.0": 1,
                "5.0": 1,
                "10.0": 1,
                "30.0": 1,
                "60.0": 1,
                "300.0": 1,
                "900.0": 1,
                "3600.0": 1,
                "86400.0": 1,
                "+Inf": 1,
            },
            "expiry_lag_sum_seconds": 0.8,
            "sweep_failures": {"version_conflict": 0, "unreadable": 0, "error": 0},
        },
    },
    "TimelineOut": {
        "schedule": {"items": SCHEDULE_TIMELINE},
        "approval": {"items": APPROVAL_TIMELINE},
    },
    "OperationPage": {
        "newest-first": {
            "items": OPERATIONS,
            "page": 1,
            "page_size": 20,
            "total": 4,
            "total_capped": False,
            "next_cursor": None,
        },
    },
    "VersionBody": {"at-version": {"version": 1}},
    "ReasonBody": {"why": {"reason": "token pasted in a chat"}},
    "VersionReasonBody": {"at-version-and-why": {"version": 2, "reason": "paused for the audit"}},
    "PauseBody": {
        "incident": {"reason": "INC-2041: the approval backend is down"},
        "resolved": {"reason": "INC-2041 resolved"},
    },
    "DefaultCalendarBody": {
        "chosen": {"calendar": "cn"},
        "none": {"calendar": None},
    },
    "TenantOut": {
        "paused": {
            "id": TENANT_ID,
            "name": "acme",
            "schedules_paused": {
                "at": "2026-10-01T09:40:00Z",
                "actor": "root",
                "reason": "INC-2041: the approval backend is down",
            },
            "default_calendar": "cn",
        },
        "running": {
            "id": TENANT_ID,
            "name": "acme",
            "schedules_paused": None,
            "default_calendar": "cn",
        },
    },
    "Problem": PROBLEMS,
}
