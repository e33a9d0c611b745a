"""Every list, console page and API, over 500 schedules (100 named 财务…), 10,000 runs and
1,000 waiting approvals: p95 of its first page, a search, a sorted page and its last page;
and how long chromium takes to load each console list page (issue 31's goals: 200 ms, 1 s).

The pages are served in-process by the app (Flask's test client: what the server does for a
page, without a network); chromium loads them from the same app served over HTTP on this
machine. `BENCH_LISTS_REPEATS` sets how often each case is asked (20).
"""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from flask.testing import FlaskClient
from werkzeug.serving import make_server

from bench._machine import describe_machine
from bench._results import Figure, Result, percentile
from bench._stores import empty_store
from cronledger.application.cycles import Ticker
from cronledger.application.directory import DefinitionFields
from cronledger.application.services import Services, open_services
from cronledger.clock import ManualClock
from cronledger.config import Settings
from domain.directory import Principal
from domain.schedules import Schedule, ScheduleSettings
from domain.values import FormData
from web import create_app

SCHEDULES, FINANCE = 500, 100  # schedules, and how many of them are named 财务…
TICKS = 20  # every-minute ticks: SCHEDULES runs each
APPROVALS = 1000
REPEATS = int(os.environ.get("BENCH_LISTS_REPEATS", "20"))
PAGE_GOAL_MS, LOAD_GOAL_MS = 200, 1000
T0 = datetime(2026, 10, 1, tzinfo=UTC)
SECRET_KEY = "the lists benchmark's key, of 32 characters or more"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CSRF = re.compile(r'name="csrf-token" content="([^"]+)"')
SEARCH = quote("财务")
LAST_PAGE = re.compile(r"(?:page \d+ of |第 \d+ / )([\d,]+)")  # the pager's, in English or Chinese


@dataclass(frozen=True)
class Listed:
    """A list page: its path, who reads it (`admin` or `reviewer`), and its sort to measure."""

    name: str
    path: str
    sort: str
    reader: str = "admin"


CONSOLE = (
    Listed("schedules", "/console/schedules/", "-name"),
    Listed("runs", "/console/runs/", "title"),
    Listed("dead letters", "/console/runs/dead-letters", "title"),
    Listed("approvals", "/console/approvals/", "title"),
    Listed("tasks", "/console/tasks/?scope=claimable", "title", "reviewer"),
    Listed("notifications", "/console/notifications/", "created_at", "reviewer"),
    Listed("accounts", "/console/directory/", "name"),
    Listed("definitions", "/console/directory/definitions", "name"),
    Listed("groups", "/console/directory/groups/", "name"),
    Listed("operations audit", "/console/operations/audit", "actor"),
    Listed("callback sources", "/console/callback-sources/", "name"),
    Listed("webhooks", "/console/webhooks/", "url"),
)
API = (
    Listed("schedules", "/api/workflows/schedules", "-name"),
    Listed("run log", "/api/workflows/runs", "title"),
    Listed("approvals", "/api/approvals", "title"),
    Listed("tasks", "/api/tasks?scope=claimable", "title", "reviewer"),
    Listed("notifications", "/api/notifications", "created_at", "reviewer"),
    Listed("accounts", "/api/accounts", "name"),
    Listed("definitions", "/api/definitions", "name"),
    Listed("groups", "/api/groups", "name"),
    Listed("operations", "/api/audit/operations", "actor"),
    Listed("callback sources", "/api/callback-sources", "name"),
    Listed("webhooks", "/api/webhooks", "url"),
)


@dataclass
class Tenant:
    tokens: dict[str, str]
    schedule_ids: list[str]


def run() -> Iterator[Result]:
    for kind in ("sqlite", "postgresql"):
        yield from _measure(kind)


def _measure(kind: str) -> Iterator[Result]:
    with empty_store(kind) as url:
        clock = ManualClock(T0)
        services = open_services(Settings(database_url=url, secret_key=SECRET_KEY), clock)
        try:
            started = time.perf_counter()
            tenant = _seed(services, clock)
            seeded = time.perf_counter() - started
            app = create_app({"SERVICES": services, "TESTING": True, "SECRET_KEY": SECRET_KEY})
            machine = describe_machine()
            settings = {
                "seeded in": f"{seeded:.0f} s",
                "repeats": REPEATS,
                "measured": f"{machine['date']}, commit {machine['commit']}",
            }
            console = {
                who: _signed_in(app.test_client(), tenant.tokens[who]) for who in tenant.tokens
            }
            for listed in CONSOLE:  # the run's settings shown once, beside its first case
                shown = settings if listed is CONSOLE[0] else {}
                yield _page_result(kind, "console", listed, console[listed.reader].get, shown)
            for listed in API:
                yield _page_result(
                    kind, "API", listed, _bearer(app, tenant.tokens[listed.reader]), {}
                )
            yield from _found(kind, app, tenant, console["admin"])
            per_schedule = Listed(
                "a schedule's runs",
                f"/api/workflows/schedules/{tenant.schedule_ids[449]}/runs",
                "title",
            )
            yield _page_result(kind, "API", per_schedule, _bearer(app, tenant.tokens["admin"]), {})
            yield from _chromium(kind, app, tenant)
        finally:
            services.close()


def _found(kind: str, app: Any, tenant: Tenant, console: FlaskClient) -> Iterator[str]:
    """What a person looks for: the 100 schedules named 财务, and the 450th schedule's name on
    its runs' page and in the execution log."""
    searched = _bearer(app, tenant.tokens["admin"])(f"/api/workflows/schedules?q={SEARCH}").json
    page = console.get(f"/console/schedules/?q={SEARCH}&page_size=100").get_data(as_text=True)
    shown = sum(f"财务{n:03d} 月结对账" in page for n in range(1, FINANCE + 1))
    total = searched["total"]
    yield f"lists {kind}: searching 财务 finds {total} schedules; the console shows {shown}"
    schedule_id = tenant.schedule_ids[449]
    runs = console.get(f"/console/runs/?schedule_id={schedule_id}").get_data(as_text=True)
    named = f'href="/console/schedules/{schedule_id}" translate="no">日常巡检 450</a>' in runs
    yield f"lists {kind}: the runs of the 450th schedule show its name: {'yes' if named else 'NO'}"


def _seed(services: Services, clock: ManualClock) -> Tenant:
    """SCHEDULES schedules (the first FINANCE named 财务…), TICKS minutes of runs of each, and
    APPROVALS waiting approvals a reviewer may claim (each telling them so)."""
    directory = services.directory
    token = directory.bootstrap("bench", "admin").token
    admin = directory.authenticate(token)
    assert isinstance(admin, Principal)
    directory.create_account(admin, "reviewer", "审核员", ["operator"])
    reviewer_token = directory.issue_token(admin, "reviewer").token
    fields = DefinitionFields("月结流程", False, 86400, [], reviewers={"roles": ["operator"]})
    definition = directory.create_definition(admin, "month-end", fields)
    directory.set_published(admin, definition.id, True, None)
    every_minute = {"kind": "cron", "expression": "* * * * *"}
    base = ScheduleSettings(
        "",
        definition.id,
        every_minute,
        "Asia/Shanghai",
        "admin",
        "",
        FormData.of({}),
        overlap_policy="allow",
    )
    schedules = [
        Schedule.create(
            admin.tenant_id,
            replace(base, name=name, title_template=f"{name} {{{{date}}}}"),
            True,
            clock.now,
            "admin",
        )
        for name in _names()
    ]
    services.ledger.save(*schedules)
    ticker = Ticker.of(services)
    for _ in range(TICKS):
        clock.advance(60)
        ticker.scan()
    client = create_app({"SERVICES": services, "TESTING": True}).test_client()
    for n in range(APPROVALS):
        body = {
            "command_id": f"bench-{n}",
            "definition_id": str(definition.id),
            "title": f"{'财务' if n % 10 == 0 else '报销'}审批 {n:04d}",
            "form_data": {"amount": n},
            "material_version": 1,
        }
        answer = client.post(
            "/api/approvals", json=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 201, answer.json
    services.projector.catch_up()
    return Tenant({"admin": token, "reviewer": reviewer_token}, [str(s.id) for s in schedules])


def _names() -> list[str]:
    finance = [f"财务{n:03d} 月结对账" for n in range(1, FINANCE + 1)]
    return finance + [f"日常巡检 {n:03d}" for n in range(FINANCE + 1, SCHEDULES + 1)]


def _signed_in(client: FlaskClient, token: str) -> FlaskClient:
    page = client.get("/console/sign-in").get_data(as_text=True)
    found = CSRF.search(page)
    assert found is not None
    answer = client.post("/console/sign-in", data={"csrf_token": found[1], "token": token})
    assert answer.status_code == 302, answer.get_data(as_text=True)
    return client


def _bearer(app: Any, token: str) -> Callable[..., Any]:
    client = app.test_client()
    return lambda path: client.get(path, headers={"Authorization": f"Bearer {token}"})


def _page_result(
    kind: str, where: str, listed: Listed, get: Callable[..., Any], settings: dict[str, object]
) -> Result:
    """p95 of the list's first page, a search for 财务, a sorted page and its last page."""
    joined = "&" if "?" in listed.path else "?"
    first = get(listed.path)
    assert first.status_code == 200, (listed.path, first.status_code)
    last = _last_page(get, listed.path + joined)
    cases = {
        "first page": listed.path,
        "search 财务": f"{listed.path}{joined}q={SEARCH}",
        f"sorted {listed.sort}": f"{listed.path}{joined}sort={listed.sort}",
        f"page {last}": f"{listed.path}{joined}page={last}",
    }
    figures = tuple(
        Figure(f"{case} p95", _p95(get, path), "ms", at_most=PAGE_GOAL_MS)
        for case, path in cases.items()
    )
    return Result("lists", f"{kind}, {where}, {listed.name}", figures, settings)


def _last_page(get: Callable[..., Any], prefix: str) -> int:
    """The last page's number at 20 a page, as the list's total tells it."""
    answer = get(f"{prefix}page_size=20")
    if answer.is_json:
        return max(1, math.ceil(answer.json["total"] / 20))
    found = LAST_PAGE.search(answer.get_data(as_text=True))
    return int(found[1].replace(",", "")) if found else 1


def _p95(get: Callable[..., Any], path: str) -> float:
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        answer = get(path)
        times.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, (path, answer.status_code)
    return percentile(times, 0.95)


@contextmanager
def _served(app: Any) -> Iterator[str]:
    """The app over HTTP on this machine, for a browser."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()


def _chromium(kind: str, app: Any, tenant: Tenant) -> Iterator[Result]:
    """Each console list page's load in chromium (navigation start to the load event), the
    best of three, searched for 财务 and not; the live updates' stream is left closed."""
    if not os.path.exists(CHROMIUM):
        return
    from playwright.sync_api import sync_playwright

    with _served(app) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        pages = {who: _browser_page(browser, base, token) for who, token in tenant.tokens.items()}
        for listed in CONSOLE:
            page = pages[listed.reader]
            joined = "&" if "?" in listed.path else "?"
            figures = tuple(
                Figure(f"{case} load", _load_ms(page, f"{base}{path}"), "ms", at_most=LOAD_GOAL_MS)
                for case, path in (
                    ("first page", listed.path),
                    ("search 财务", f"{listed.path}{joined}q={SEARCH}"),
                )
            )
            yield Result("lists", f"{kind}, chromium, {listed.name}", figures)
        browser.close()


def _browser_page(browser: Any, base: str, token: str) -> Any:
    page = browser.new_context(locale="zh-CN").new_page()
    page.route("**/console/live*", lambda route: route.abort())  # no stream outlives the run
    page.goto(f"{base}/console/sign-in")
    page.fill("#token", token)
    page.click("form.sign-in button[type=submit]")
    page.wait_for_load_state("load")
    return page


def _load_ms(page: Any, url: str) -> float:
    best = math.inf
    for _ in range(3):
        page.goto(url, wait_until="load")
        timing = page.evaluate(
            "() => { const n = performance.getEntriesByType('navigation')[0];"
            " return n.loadEventEnd - n.startTime; }"
        )
        best = min(best, float(timing))
    return best


if __name__ == "__main__":
    for result in run():
        print(result.line)
