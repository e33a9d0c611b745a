"""One language at a time: every console page a signed-in admin can reach from the navigation,
read in Chinese, shows no English word but codes, ids, the data the test entered and the short
list of proper names in tests/e2e/english_allowed.txt; nor do the pages a form's refusal
answers with.

The tenant holds one of everything (schedules, runs in every state, instances in every state,
a callback source, a webhook, a group, accounts, notices, operations); the crawl follows the
links of each page it reaches, so a page added later is crawled without a change here.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit
from uuid import uuid4

import pytest
from flask.testing import FlaskClient

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.e2e.console.conftest import Console
from tests.e2e.english import english_words, visible_text
from tests.e2e.helpers import DEFINITION, account, with_reviewer
from tests.support import DECIDERS, REVIEWER, Api, FakeClock

SECRET_KEY = "a test key that is at least thirty-two characters long"
MAX_PAGES = 400
SAME_SHAPE = 3  # pages of one path shape and one set of query names crawled at most
LINK = re.compile(r'(?:href|hx-get)="(/console/[^"#]*)"')
NOT_PAGES = ("/console/static/", "/console/live")  # files, and the live event stream
ID_PART = re.compile(r"[0-9a-f]{8}-[0-9a-f-]{27}|\d+")
# What the test enters: account ids, keys and names in Latin letters, as a tenant's would be.
KNOWN = (
    "root", "ann", "bob", "sam", REVIEWER, "olga", "daily", "weekday-morning", "esign",
    "ops", "cn", "onboarding", "Daily", "Onboarding", "Vera", "Morning check", "e sign", "nobody",
)  # fmt: skip
COMMAND_ID = re.compile(r'name="command_id" value="([^"]+)"')


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    """Services that may sign secrets; two attempts a round, one second apart."""
    settings = Settings(
        database_url=store_url,
        secret_key=SECRET_KEY,
        retry_base_seconds=1,
        max_attempts=2,
        webhook_allow_private=True,
        webhook_allow_http=True,
    )
    opened = open_services(settings, clock)
    yield opened
    opened.close()


@dataclass(frozen=True)
class Tenant:
    """What the tenant holds, as the console's pages of a run in each status and of an
    instance in each state (the crawl starts there too)."""

    runs: dict[str, str]
    instances: dict[str, str]

    @property
    def pages(self) -> list[str]:
        return [*self.runs.values(), *self.instances.values()]


def work(services: Services, clock: FakeClock, seconds: int = 1) -> None:
    """`seconds` of the tick and the worker, then the read models caught up."""
    for _ in range(seconds):
        clock.advance(1)
        Ticker.of(services).scan()
        Worker.of(services).drain()
    services.projector.catch_up()


def created(api: Api, path: str, body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    answer = api.post(path, body, **kwargs)
    assert answer.status_code in (200, 201, 202), answer.json
    return answer.json  # type: ignore[no-any-return]


def command(api: Api, instance_id: str, verb: str, **body: Any) -> Any:
    path = f"/api/approvals/{instance_id}/{verb}"
    return api.post(path, {"command_id": f"{verb}-{instance_id[:8]}", **body})


@pytest.fixture
def tenant(admin: Api, services: Services, clock: FakeClock) -> Tenant:
    with_reviewer(admin)
    vera = Api(admin.client, created(admin, f"/api/accounts/{REVIEWER}/tokens", {})["token"])
    ann = account(admin, "ann", ["requester"])
    account(admin, "olga", ["auditor"])
    created(admin, "/api/accounts", {"id": "bob", "name": "鲍勃", "roles": ["requester"]})
    admin.post("/api/accounts/bob/deactivate")
    definition = created(admin, "/api/definitions", DEFINITION)
    created(admin, f"/api/definitions/{definition['id']}/publish", {})
    created(
        admin,
        "/api/definitions",
        {"key": "onboarding", "name": "Onboarding", "external": False,
         "review_window_seconds": 3600, "reviewers": DECIDERS},
    )  # fmt: skip
    base = {
        "definition_id": definition["id"],
        "timezone": "Asia/Shanghai",
        "initiator_id": "ann",
        "title_template": "每日检查 {{date}}",
        "form_data": {"region": "east"},
    }
    every_second = created(
        admin,
        "/api/workflows/schedules",
        {**base, "name": "每秒检查", "trigger": {"kind": "cron", "expression": "* * * * * *"},
         "enabled": True, "overlap_policy": "allow"},
    )  # fmt: skip
    created(
        admin,
        "/api/workflows/schedules",
        {**base, "name": "每分钟检查", "trigger": {"kind": "cron", "expression": "* * * * *"},
         "enabled": True, "overlap_policy": "skip_while_open", "misfire_policy": "skip"},
    )  # fmt: skip
    created(
        admin,
        "/api/workflows/schedules",
        {**base, "name": "工作时间检查", "enabled": False,
         "trigger": {"kind": "window-interval", "interval_minutes": 30, "weekdays": [1, 2, 3],
                     "windows": [{"start": "09:00", "end": "12:00"}]}},
    )  # fmt: skip
    saver = account(admin, "sam", ["operator"])
    failing = created(
        saver,
        "/api/workflows/schedules",
        {**base, "name": "失败的检查", "trigger": {"kind": "cron", "expression": "0 0 1 1 *"}},
    )
    # Succeeded runs (each an instance waiting), a skipped overlap, then missed cycles.
    work(services, clock, 6)
    admin.post(f"/api/workflows/schedules/{every_second['id']}/disable", {"version": 1})
    work(services, clock, 120)
    clock.advance(600)
    work(services, clock)
    verify = {"kind": "audit.verify", "params": {"full": True}}  # a built-in job's run
    nightly = created(
        admin,
        "/api/workflows/schedules",
        {"name": "夜间审计", "trigger": {"kind": "cron", "expression": "0 2 * * *"},
         "target": verify},
    )  # fmt: skip
    created(admin, f"/api/workflows/schedules/{nightly['id']}/run", {"request_id": "verify"})
    work(services, clock)
    failing_runs = f"/api/workflows/schedules/{failing['id']}/run"
    admin.post("/api/accounts/sam/deactivate")
    created(admin, failing_runs, {"request_id": "dead"})
    work(services, clock, 2)
    created(admin, failing_runs, {"request_id": "retry-wait"})
    Worker.of(services).drain()
    created(admin, failing_runs, {"request_id": "pending"})
    cancelled = created(admin, failing_runs, {"request_id": "cancelled"})
    admin.post(f"/api/workflows/schedules/{failing['id']}/runs/{cancelled['id']}/cancel", {})
    admin.post("/api/accounts/sam/activate")
    services.projector.catch_up()
    # Instances: approved, rejected, withdrawn, expired, claimed, refused, waiting.
    instances = [row["id"] for row in admin.get("/api/approvals?page_size=20").json["items"]]
    approved, rejected, withdrawn, claimed, *_ = instances
    assert command(vera, approved, "approve", material_version=1).status_code == 200
    assert command(vera, approved, "approve", material_version=1).status_code in (200, 409)
    assert command(vera, rejected, "reject", material_version=1, comment="不对").status_code == 200
    assert command(ann, withdrawn, "withdraw").status_code == 200
    assert command(vera, claimed, "claim").status_code == 200
    assert command(vera, claimed, "comments", comment="看过了").status_code == 200
    command(admin, claimed, "approve", material_version=1)  # refused: another holds the task
    submitted = created(
        admin,
        "/api/approvals",
        {"command_id": "direct", "definition_id": definition["id"], "title": "合同 A",
         "form_data": {"amount": 5}, "material_version": 1},
    )  # fmt: skip
    command(admin, submitted["id"], "approve", material_version=1)  # refused: self-approval
    command(vera, submitted["id"], "extend-deadline",
            new_deadline_at="2026-10-02T12:00:00Z", reason="多给一天")  # fmt: skip
    clock.advance(2 * 24 * 3600)
    services.approvals.sweep()
    waiting = created(
        admin,
        "/api/approvals",
        {"command_id": "waiting", "definition_id": definition["id"], "title": "合同 B",
         "form_data": {"amount": 7}, "material_version": 1},
    )  # fmt: skip
    command(vera, waiting["id"], "claim")
    # Configuration: a callback source, a webhook with a delivery, a group, a pause.
    created(admin, "/api/callback-sources", {"name": "esign", "description": "电子签章"})
    hook = created(
        admin,
        "/api/webhooks",
        {"url": "http://127.0.0.1:9/hook", "event_types": ["run.dead_lettered", "ping"],
         "description": "值班"},
        headers={"Idempotency-Key": "hook"},
    )  # fmt: skip
    admin.post(f"/api/webhooks/{hook['id']}/ping", {})
    created(admin, "/api/groups", {"key": "ops", "name": "运营部", "members": ["root", REVIEWER]})
    calendar = created(
        admin,
        "/api/calendars",
        {"key": "cn", "name": "中国大陆", "timezone": "Asia/Shanghai", "region": "CN"},
    )
    created(admin, f"/api/calendars/{calendar['id']}/import", {"region": "CN", "years": [2026]})
    created(admin, "/api/tenant/pause-schedules", {"reason": "演练"})
    created(admin, "/api/tenant/resume-schedules", {"reason": "演练结束"})
    services.projector.catch_up()
    return one_of_each(admin)


def one_of_each(admin: Api) -> Tenant:
    """The page of a run in each status and of an instance in each state the tenant holds."""
    runs = admin.get("/api/workflows/runs?page_size=200").json["items"]
    instances = admin.get("/api/approvals?page_size=200").json["items"]
    launches = [run for run in runs if run["target_kind"] == "approval"]
    job = next(run for run in runs if run["target_kind"] != "approval")
    held = Tenant(
        {
            **{run["status"]: f"/console/runs/{run['id']}" for run in launches},
            "JOB": f"/console/runs/{job['id']}",
        },
        {i["state"]: f"/console/approvals/{i['id']}" for i in instances},
    )
    # Not RUNNING (a worker's, for an instant) nor FAILED (its initiator or definition gone from
    # the log, which no request can do); and a built-in job's run.
    assert len(held.runs) == 8, sorted(held.runs)
    assert len(held.instances) == 5, sorted(held.instances)
    return held


def signed_in(client: FlaskClient, token: str) -> Console:
    browser = Console(client)
    client.set_cookie("cronledger_lang", "zh")
    answer = browser.sign_in(token)
    assert answer.status_code == 302, answer.get_data(as_text=True)
    return browser


def shape(url: str) -> tuple[str, tuple[str, ...]]:
    """A page's path with its ids left out, and the names of its query's parameters."""
    parts = urlsplit(url)
    return ID_PART.sub("*", parts.path), tuple(sorted({k for k, _ in parse_qsl(parts.query)}))


def crawled(browser: Console, starts: list[str]) -> Iterator[tuple[str, str]]:
    """Each console page reachable from `starts` by its links, and its HTML (each must answer
    200; a file a link downloads is left out): at most `SAME_SHAPE` of one shape, `MAX_PAGES`
    in all."""
    seen, shapes = set(starts), Counter[tuple[str, tuple[str, ...]]]()
    waiting = deque(starts)
    while waiting and len(seen) <= MAX_PAGES:
        url = waiting.popleft()
        answer = browser.get(url, follow_redirects=True)
        assert answer.status_code == 200, (url, answer.status_code)
        if answer.headers.get("Content-Disposition", "").startswith("attachment"):
            continue  # a file (a list's export), not a page: its header row is checked apart
        html = answer.get_data(as_text=True)
        yield url, html
        for link in LINK.findall(html):
            link = link.replace("&amp;", "&")
            if link in seen or link.startswith(NOT_PAGES):
                continue
            seen.add(link)
            shapes[shape(link)] += 1
            if shapes[shape(link)] <= SAME_SHAPE:
                waiting.append(link)


def english_on(html: str) -> list[str]:
    return [piece for piece in visible_text(html) if english_words(piece, KNOWN)]


def test_every_page_reads_in_chinese(client: FlaskClient, admin: Api, tenant: Tenant) -> None:
    browser = signed_in(client, admin.token)
    found: dict[str, list[str]] = {}
    pages = 0
    for url, html in crawled(browser, ["/console/", *tenant.pages]):
        pages += 1
        english = english_on(html)
        if english:
            found[url] = english
    assert pages > 40, f"only {pages} pages were reached"
    report = "\n".join(f"{url}:\n    " + "\n    ".join(pieces) for url, pieces in found.items())
    assert not found, f"English on {len(found)} of {pages} pages:\n{report}"


def test_every_refusal_reads_in_chinese(client: FlaskClient, admin: Api, tenant: Tenant) -> None:
    """What a form refused, a filter that is wrong, a command that lost and a missing page."""
    browser = signed_in(client, admin.token)
    definition = admin.get("/api/definitions/by-key/daily").json["id"]
    schedule_form = {
        "name": "",
        "definition_id": definition,
        "kind": "cron",
        "expression": "61 9 * * MON-FRI",
        "timezone": "Mars/Olympus",
        "initiator_id": "nobody",
        "title_template": "{{when}}",
        "form_data": "[1, 2",
        "misfire_policy": "catch_up",
        "overlap_policy": "allow",
    }
    windows_form = {
        **schedule_form,
        "kind": "window-interval",
        "windows": "9-12",
        "interval_minutes": "x",
    }
    calendar = f"/console/calendars/{admin.get('/api/calendars').json['items'][0]['id']}"
    instance = tenant.instances["WAITING_REVIEW"]
    command_id = COMMAND_ID.search(browser.page(instance))
    assert command_id
    answers = {
        "a schedule's fields": browser.post("/console/schedules/new", schedule_form),
        "a window trigger": browser.post("/console/schedules/new", windows_form),
        "an account": browser.post("/console/directory/accounts", {"id": "system-x", "name": ""}),
        "a group": browser.post("/console/directory/groups/", {"key": "-", "name": ""}),
        "a webhook": browser.post("/console/webhooks/", {"url": "ftp://x", "event_types": []}),
        "a callback source": browser.post("/console/callback-sources/", {"name": "e sign"}),
        "a calendar": browser.post(
            "/console/calendars/",
            {"key": "-", "name": "", "timezone": "Mars/Olympus", "holidays": "2026-13-01 坏"},
        ),
        "a calendar's import": browser.post(
            f"{calendar}/import", {"region": "XX", "years": "1066", "version": "2"}
        ),
        "a deadline preview": browser.get(
            f"{calendar}/deadline-preview?submitted_at=soon&days=0&cutoff=25:00"
        ),
        "a definition": browser.post(
            "/console/directory/definitions",
            {"key": "", "name": "", "review_window_seconds": "0", "reminders": "x"},
        ),
        "an extension": browser.post(
            f"{instance}/extend",
            {
                "command_id": command_id.group(1),
                "new_deadline_at": "2000-01-01T00:00",
                "reason": "",
            },
        ),
        "a reassignment": browser.post(
            f"{instance}/reassign",
            {"command_id": command_id.group(1), "assignee_id": "nobody", "reason": "换人"},
        ),
        "a retry of a run that succeeded": browser.post(f"{tenant.runs['SUCCEEDED']}/retry", {}),
        "the run filters": browser.get("/console/runs/?planned_from=tomorrow&status=SOON"),
        "the inbox filters": browser.get("/console/approvals/?deadline_from=tomorrow"),
        "the audit filters": browser.get("/console/operations/audit?from=x&kind=y&aggregate=!"),
        "a page that is not there": browser.get("/console/nowhere"),
        "a schedule that is not there": browser.get(f"/console/schedules/{uuid4()}"),
    }
    found = {}
    for name, answer in answers.items():
        html = answer.get_data(as_text=True)
        assert answer.status_code >= 400 or "field-error" in html, (name, answer.status_code)
        english = english_on(html)
        if english:
            found[name] = english
    report = "\n".join(f"{name}:\n    " + "\n    ".join(pieces) for name, pieces in found.items())
    assert not found, f"English in {len(found)} of {len(answers)} refusals:\n{report}"
