"""The console's operations dashboard and audit through Flask's test client, on both stores."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask

from cronledger.application.launches import Worker
from cronledger.application.services import Services
from tests.e2e.console.conftest import Console
from tests.e2e.helpers import account
from tests.support import Api, FakeClock

DASHBOARD = "/console/operations/"
AUDIT = "/console/operations/audit"
ENGLISH = {"Accept-Language": "en"}


def a_run(admin: Api, definition_id: str, body: dict[str, Any], services: Services) -> str:
    """A schedule with one manual run, launched; the schedule's id."""
    schedule = admin.post("/api/workflows/schedules", {**body, "definition_id": definition_id})
    assert schedule.status_code == 201, schedule.json
    ran = admin.post(f"/api/workflows/schedules/{schedule.json['id']}/run", {"request_id": "r1"})
    assert ran.status_code == 202, ran.json
    assert Worker.of(services).poll().succeeded == 1
    services.projector.catch_up()  # the launch, into the read models the pages read
    return str(schedule.json["id"])


def figure(page: str, name: str) -> int:
    found = re.search(rf'id="figure-{name}">\s*<dt>.*?</dt>\s*<dd class="value">(\d+)', page)
    assert found, name
    return int(found.group(1))


def rows(page: str, table: str) -> list[list[str]]:
    """The body rows of a table: each cell's text."""
    body = page.split(f'id="{table}"', 1)[1].split("</tbody>", 1)[0]
    return [
        [
            re.sub(r"<[^>]+>|\s+", " ", cell).strip()
            for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
        ]
        for row in re.findall(r"<tr>(.*?)</tr>", body.split("<tbody>", 1)[1], re.S)
    ]


def kind_of(row: list[str]) -> str:
    """An audit row's kind of operation, as its code (the cell shows its label too)."""
    return row[2].split()[-1]


def test_the_dashboard_shows_the_backlog_as_the_api_counts_it(
    console: Console,
    admin: Api,
    definition_id: str,
    body: dict[str, Any],
    services: Services,
) -> None:
    a_run(admin, definition_id, {**body, "initiator_id": "root"}, services)
    page = console.page(DASHBOARD)
    backlog = admin.get("/api/backlog").json
    assert figure(page, "due") == backlog["due_schedules"]
    assert figure(page, "pending") == backlog["pending_runs"]
    assert figure(page, "retry") == backlog["retry_wait_runs"]
    assert figure(page, "dead-letters") == backlog["dead_letter_runs"]
    assert figure(page, "overdue") == backlog["expired_unswept_approvals"]
    assert figure(page, "projection-lag") == backlog["projection_lag_events"]
    assert 'href="/console/runs/dead-letters"' in page
    assert 'href="/console/operations/audit"' in page


def test_the_charts_are_svg_with_their_text_alternative_and_their_figures_as_tables(
    console: Console,
    admin: Api,
    definition_id: str,
    body: dict[str, Any],
    services: Services,
) -> None:
    a_run(admin, definition_id, {**body, "initiator_id": "root"}, services)
    console.client.set_cookie("cronledger_zone", "Asia/Shanghai")
    page = console.page(DASHBOARD, headers=ENGLISH)
    for key in ("registration-lag", "launch-outcomes"):
        assert f'role="img" aria-labelledby="{key}-title {key}-desc"' in page
        assert f'<title id="{key}-title">' in page
    assert re.search(r'<desc id="launch-outcomes-desc">[^<]*1 succeeded, 0 failed', page)
    assert re.search(r'<desc id="registration-lag-desc">1 run planned', page)
    lags, outcomes = rows(page, "registration-lag-table"), rows(page, "launch-outcomes-table")
    assert len(lags) == len(outcomes) == 24
    # T0 is 09:00 UTC: 17:00 in Shanghai, the last hour shown.
    assert lags[-1] == ["17:00", "1", "0 s", "0 s"]
    assert outcomes[-1] == ["17:00", "1", "0", "0", "0"]
    assert lags[0] == ["18:00", "0", "—", "—"]
    title = "17:00: Succeeded 1; Failed 0; Dead-lettered 0; Skipped 0"
    assert f'<g class="bar"><title>{title}</title>' in page


def test_the_dashboard_in_chinese(console: Console) -> None:
    page = console.page(DASHBOARD, headers={"Accept-Language": "zh-CN"})
    for text in (
        "<h1>运维</h1>",
        "死信",
        "超时的审批",
        "投影延迟",
        "登记延迟",
        "发起结果",
        "最近 24 小时没有计划的执行。",
    ):
        assert text in page, text


def test_the_dashboard_needs_what_the_apis_backlog_needs(
    app: Flask, admin: Api, console: Console
) -> None:
    requester = Console(app.test_client())
    requester.sign_in(account(admin, "rita", ["requester"]).token)
    refused = requester.get(DASHBOARD)
    assert refused.status_code == 403
    assert 'href="/console/operations/"' not in refused.get_data(as_text=True)
    auditor = Console(app.test_client())
    auditor.sign_in(account(admin, "aude", ["auditor"]).token)
    assert auditor.get(DASHBOARD).status_code == 200
    operator = Console(app.test_client())
    operator.sign_in(account(admin, "olga", ["operator"]).token)
    page = operator.page(DASHBOARD)
    assert 'href="/console/operations/audit"' not in page  # the audit needs audit:read
    assert operator.get(AUDIT).status_code == 403


def test_the_audit_lists_operations_newest_first_and_filters_them(
    console: Console,
    admin: Api,
    definition_id: str,
    body: dict[str, Any],
    services: Services,
    clock: FakeClock,
) -> None:
    schedule_id = a_run(admin, definition_id, {**body, "initiator_id": "root"}, services)
    clock.advance(3600)
    admin.post(f"/api/workflows/schedules/{schedule_id}/enable")
    listed = rows(console.page(AUDIT), "audit-table")
    assert [(row[1], " ".join(row[2].split())) for row in listed][:3] == [
        ("root", "启用定时任务 schedule.enabled"),
        ("root", "手动执行一次 run.manual"),
        ("root", "创建定时任务 schedule.created"),
    ]

    only = rows(console.page(f"{AUDIT}?aggregate={schedule_id}"), "audit-table")
    assert [kind_of(row) for row in only] == ["schedule.enabled", "schedule.created"]
    kinds = rows(console.page(f"{AUDIT}?kind=run.manual"), "audit-table")
    assert [kind_of(row) for row in kinds] == ["run.manual"]
    accounts = rows(console.page(f"{AUDIT}?aggregate=root"), "audit-table")
    assert [kind_of(row) for row in accounts] == ["account.token_issued", "account.registered"]
    # `from` as a datetime-local field sends it: the viewer's wall time (UTC+8 here).
    console.client.set_cookie("cronledger_zone", "Asia/Shanghai")
    later = rows(console.page(f"{AUDIT}?from=2026-10-01T17:30"), "audit-table")
    assert [kind_of(row) for row in later] == ["schedule.enabled"]
    assert f'href="/console/operations/audit?aggregate={schedule_id}"' in console.page(AUDIT)


def test_a_bad_filter_is_named_next_to_its_field(console: Console) -> None:
    answer = console.get(f"{AUDIT}?kind=nope&from=yesterday&aggregate=%25%25&actor=root")
    assert answer.status_code == 422
    page = answer.get_data(as_text=True)
    for field in ("kind", "from", "aggregate"):
        assert f'id="{field}-error" class="field-error"' in page, field
        assert f'aria-describedby="{field}-error"' in page, field
    assert 'id="actor-error"' not in page
    assert 'value="root"' in page  # what was typed stays
    assert console.get(f"{AUDIT}?from=2026-10-02T00:00&to=2026-10-01T00:00").status_code == 422
    assert console.get(f"{AUDIT}?page=0").status_code == 422
