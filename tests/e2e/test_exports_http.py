"""Exports over HTTP (issue 34, part 4): the execution log, the schedules and the operations
audit as CSV and XLSX, with the lists' filters, read back with Python's `csv` and `openpyxl`
as the lists answer them; the header row in the caller's language; each export in the
operations audit; the cap; another tenant's rows never in a file."""

from __future__ import annotations

import csv
import io
from typing import Any
from urllib.parse import urlencode

import pytest
from openpyxl import load_workbook

import cronledger.application.exports
import domain.exports
from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services
from tests.e2e.helpers import account, assert_problem, other_tenant
from tests.support import Api, FakeClock

RUNS, SCHEDULES, OPERATIONS = (
    "/api/workflows/runs",
    "/api/workflows/schedules",
    "/api/audit/operations",
)
EVERY_SECOND = {"kind": "cron", "expression": "* * * * * *"}
SCANS = 100  # seconds of cycles: 10 schedules, 1,000 runs
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
# What a run's row holds, by column, as the list answers it.
RUN_FIELDS = (
    "id",
    "schedule_id",
    None,  # its schedule's name: not in the list's items
    "title",
    "status",
    "trigger",
    "triggered_by",
    "planned_at",
    "planned_at_local",
    "started_at",
    "finished_at",
    "duration_seconds",
    "attempt_count",
    "error_code",
    None,  # the last error's message
    "instance_id",
    "target_kind",
    None,  # a job's result (JSON text): null for an approval's run
    "initiator_id",
    "trace_id",
)
RUN_HEADERS_EN = [
    "Run id",
    "Schedule id",
    "Schedule name",
    "Title",
    "Status",
    "Trigger (scheduled or manual)",
    "Triggered by",
    "Planned at (UTC)",
    "Planned at (local time)",
    "Started at (UTC)",
    "Finished at (UTC)",
    "Duration (s)",
    "Attempts",
    "Error code",
    "Error message",
    "Approval instance id",
    "Target",
    "Job result",
    "Initiator",
    "Trace id",
]
RUN_HEADERS_ZH = [
    "执行日志 ID",
    "定时任务 ID",
    "定时任务名称",
    "标题",
    "状态",
    "触发方式（定时或手动）",
    "触发者",
    "计划时间（UTC）",
    "计划时间（当地时间）",
    "开始时间（UTC）",
    "结束时间（UTC）",
    "耗时（秒）",
    "尝试次数",
    "错误代码",
    "错误信息",
    "审批实例 ID",
    "执行目标",
    "作业结果",
    "发起人",
    "追踪 ID",
]


@pytest.fixture
def seeded(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> dict[str, str]:
    """Ten schedules firing every second (five named 财务月结, five Daily check, half of them
    skipping a cycle while an earlier one launches), 100 seconds of their cycles, and a run
    by hand: 1,001 runs. Their names by id."""
    names: dict[str, str] = {}
    for n in range(10):
        name = f"财务月结 {n}" if n % 2 else f"Daily check {n}"
        created = admin.post(
            SCHEDULES,
            {
                **body,
                "name": name,
                "trigger": EVERY_SECOND,
                "enabled": True,
                "title_template": f"{name} {{{{datetime}}}}",
                "overlap_policy": "allow" if n < 5 else "skip_while_launching",
            },
        )
        assert created.status_code == 201, created.json
        names[created.json["id"]] = name
    ticker = Ticker.of(services)
    for _ in range(SCANS):
        clock.advance(1)
        ticker.scan()
    first = next(iter(names))
    assert admin.post(f"{SCHEDULES}/{first}/run", {"request_id": "by-hand"}).status_code == 202
    Worker.of(services).poll()  # some launched, some skipped: instances, durations, statuses
    services.projector.catch_up()
    return names


def listed(api: Api, path: str, query: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Every item of a list, page after page by cursor."""
    items: list[dict[str, Any]] = []
    asked = {**(query or {}), "page_size": "200"}
    while True:
        answer = api.get(f"{path}?{urlencode(asked)}")
        assert answer.status_code == 200, answer.json
        items.extend(answer.json["items"])
        if answer.json["next_cursor"] is None:
            return items
        asked["cursor"] = answer.json["next_cursor"]


def exported(
    api: Api, path: str, query: dict[str, str] | None = None, **headers: str
) -> tuple[list[str], list[list[Any]], Any]:
    """An export's header row and rows (CSV's as text, XLSX's as its cells), and the answer."""
    answer = api.get(f"{path}/export?{urlencode(query or {})}", headers=headers)
    assert answer.status_code == 200, answer.get_data(as_text=True)[:500]
    assert answer.headers["Cache-Control"] == "no-store"
    if (query or {}).get("format") == "xlsx":
        assert answer.mimetype == XLSX
        sheet = load_workbook(io.BytesIO(answer.data), read_only=True).worksheets[0]
        rows = [list(row) for row in sheet.iter_rows(values_only=True)]
    else:
        assert answer.content_type == "text/csv; charset=utf-8"
        assert answer.data.startswith(b"\xef\xbb\xbf")  # the BOM: Excel reads UTF-8
        rows = list(csv.reader(io.StringIO(answer.data.decode("utf-8-sig"))))
    return rows[0], rows[1:], answer


def as_listed(cell: Any) -> Any:
    """A cell as the list's JSON has it: blank is null, a number is a number."""
    if cell in ("", None):
        return None
    if isinstance(cell, str):
        try:
            return float(cell) if "." in cell else int(cell)
        except ValueError:
            return cell
    return cell


def run_row(item: dict[str, Any], names: dict[str, str]) -> list[Any]:
    """A listed run as its export's row holds it."""
    row = [item[field] if field else None for field in RUN_FIELDS]
    row[2] = names[item["schedule_id"]]
    row[14] = (item["last_error"] or {}).get("message")
    return [as_listed(cell) for cell in row]


@pytest.mark.parametrize("file_format", ["csv", "xlsx"])
def test_an_export_holds_the_lists_rows_in_its_order(
    admin: Api, seeded: dict[str, str], file_format: str
) -> None:
    items = listed(admin, RUNS)
    assert len(items) == 1001
    headers, rows, answer = exported(admin, RUNS, {"format": file_format})
    assert headers == RUN_HEADERS_EN
    assert answer.headers["Content-Language"] == "en"
    disposition = answer.headers["Content-Disposition"]
    assert disposition.startswith('attachment; filename="execution-log-2026')
    assert disposition.endswith(f'.{file_format}"')
    assert [[as_listed(cell) for cell in row] for row in rows] == [
        run_row(item, seeded) for item in items
    ]
    assert {row[4] for row in rows} == {"PENDING", "SUCCEEDED", "SKIPPED_OVERLAP"}


@pytest.mark.parametrize("file_format", ["csv", "xlsx"])
def test_the_filters_and_the_search_apply_as_on_the_list(
    admin: Api, seeded: dict[str, str], file_format: str
) -> None:
    for query in (
        {"schedule_name": "财务"},
        {"schedule_name": "DAILY CHECK", "status": "SKIPPED_OVERLAP"},
        {"trigger": "manual"},
        {"q": "check 4", "planned_from": "2026-10-01T09:00:50Z"},
        {"schedule_id": next(iter(seeded)), "planned_to": "2026-10-01T09:00:10+00:00"},
    ):
        items = listed(admin, RUNS, query)
        assert items, query
        _, rows, _ = exported(admin, RUNS, {**query, "format": file_format})
        assert [row[0] for row in rows] == [item["id"] for item in items], query
    finance = listed(admin, RUNS, {"schedule_name": "财务"})
    assert len(finance) == 500
    assert {seeded[item["schedule_id"]][:4] for item in finance} == {"财务月结"}


def test_the_header_row_is_in_the_callers_language(admin: Api, seeded: dict[str, str]) -> None:
    chinese = {"Accept-Language": "zh-CN,zh;q=0.9"}
    headers, rows, answer = exported(admin, RUNS, {"status": "PENDING"}, **chinese)
    assert headers == RUN_HEADERS_ZH
    assert answer.headers["Content-Language"] == "zh-CN"
    assert "Accept-Language" in answer.headers["Vary"]
    assert {row[4] for row in rows} == {"PENDING"}  # codes stay codes
    headers, _, answer = exported(admin, SCHEDULES, {"format": "xlsx"}, **chinese)
    assert headers[:6] == ["定时任务 ID", "名称", "任务组名", "执行目标", "已启用", "触发规则"]
    sheet = load_workbook(io.BytesIO(answer.data), read_only=True).worksheets[0]
    assert sheet.title == "定时任务"
    headers, rows, _ = exported(admin, OPERATIONS, {"kind": "schedule.created"}, **chinese)
    assert headers[-1] == "摘要"
    assert rows[0][-1].startswith("创建了定时任务")  # summaries said in Chinese too


@pytest.mark.parametrize("file_format", ["csv", "xlsx"])
def test_schedules_and_operations_export_as_their_lists(
    admin: Api, seeded: dict[str, str], file_format: str
) -> None:
    for query in ({}, {"name_contains": "CHECK"}, {"enabled": "true", "q": "财务"}):
        items = listed(admin, SCHEDULES, query)
        headers, rows, _ = exported(admin, SCHEDULES, {**query, "format": file_format})
        assert headers[:5] == ["Schedule id", "Name", "Job group", "Target", "Enabled"]
        assert [row[:5] for row in rows] == [
            [
                item["id"],
                item["name"],
                item["group"],
                item["target"]["kind"],
                "true" if item["enabled"] else "false",
            ]
            for item in items
        ]
        assert [as_listed(row[-1]) for row in rows] == [item["version"] for item in items]
    assert len(listed(admin, SCHEDULES, {"name_contains": "CHECK"})) == 5
    for query in ({}, {"kind": "schedule.created", "actor": "root"}, {"q": "财务"}):
        items = listed(admin, OPERATIONS, query)
        _, rows, _ = exported(admin, OPERATIONS, {**query, "format": file_format})
        # the export is an operation itself: newest, first, once the file is asked for
        exports = [row for row in rows if row[3] == "tenant.exported"]
        assert [as_listed(row[0]) for row in rows if row not in exports] == [
            item["position"] for item in items if item["kind"] != "tenant.exported"
        ]
        assert [row[7] for row in rows if row not in exports] == [
            item["summary"] for item in items if item["kind"] != "tenant.exported"
        ]


def test_each_export_is_in_the_operations_audit(
    admin: Api, seeded: dict[str, str], services: Services
) -> None:
    operator = account(admin, "olga", ["operator"])
    query = {"status": "PENDING", "schedule_name": "财务"}
    pending = len(listed(admin, RUNS, query))
    exported(operator, RUNS, {**query, "format": "xlsx"})
    exported(admin, SCHEDULES)
    (schedules, runs) = listed(admin, OPERATIONS, {"kind": "tenant.exported"})
    assert (runs["actor"], runs["aggregate_type"]) == ("olga", "tenant")
    assert runs["summary"] == (
        f"the execution log exported as `xlsx`: {pending} rows; filters: `status=PENDING`, "
        "`schedule_name=财务`"
    )
    assert schedules["summary"] == "the schedules list exported as `csv`: 10 rows, unfiltered"
    timeline = admin.get(f"/api/audit/timeline/{runs['aggregate_id']}").json["items"]
    recorded = [entry for entry in timeline if entry["type"] == "Tenant.Exported"]
    assert [entry["data"]["listing"] for entry in recorded] == ["runs", "schedules"]
    assert recorded[0]["data"]["filters"] == {"status": "PENDING", "schedule_name": "财务"}
    assert (recorded[0]["data"]["format"], recorded[0]["data"]["rows"]) == ("xlsx", pending)
    assert recorded[0]["actor"] == "olga"


def test_a_reader_without_the_permission_gets_403_and_nothing_is_recorded(
    admin: Api, seeded: dict[str, str]
) -> None:
    requester = account(admin, "rita", ["requester"])
    operator = account(admin, "olga", ["operator"])
    for api, path in ((requester, RUNS), (requester, SCHEDULES), (operator, OPERATIONS)):
        assert_problem(api.get(f"{path}/export"), 403, "FORBIDDEN")
    assert listed(admin, OPERATIONS, {"kind": "tenant.exported"}) == []


def test_more_rows_than_the_cap_are_refused_with_nothing_recorded(
    admin: Api, seeded: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in (domain.exports, cronledger.application.exports):
        monkeypatch.setattr(module, "MAX_EXPORT_ROWS", 10)
    refused = assert_problem(admin.get(f"{RUNS}/export?format=xlsx"), 422, "TOO_MANY_ROWS")
    assert "narrow the filters" in refused["detail"]
    chinese = admin.get(f"{RUNS}/export?schedule_name=财务", headers={"Accept-Language": "zh"})
    assert "请缩小筛选范围" in assert_problem(chinese, 422, "TOO_MANY_ROWS")["detail"]
    assert listed(admin, OPERATIONS, {"kind": "tenant.exported"}) == []
    _, rows, _ = exported(admin, SCHEDULES)  # exactly the cap: exported
    assert len(rows) == 10


def test_an_export_takes_the_lists_filters_only(admin: Api, seeded: dict[str, str]) -> None:
    for query, field in (
        ("format=pdf", "format"),
        ("page=2", "page"),
        ("sort=title", "sort"),
        ("cursor=abc", "cursor"),
        ("status=DONE", "status"),
        ("schedule_name=", "schedule_name"),
    ):
        refused = assert_problem(admin.get(f"{RUNS}/export?{query}"), 422, "VALIDATION_FAILED")
        assert list(refused["errors"]) == [field], query
    refused = assert_problem(admin.get(f"{SCHEDULES}?name_contains="), 422, "VALIDATION_FAILED")
    assert list(refused["errors"]) == ["name_contains"]


def test_a_spreadsheet_never_runs_a_name_as_a_formula(admin: Api, body: dict[str, Any]) -> None:
    name = '=HYPERLINK("http://example.com","x")'
    assert admin.post(SCHEDULES, {**body, "name": name}).status_code == 201
    _, rows, _ = exported(admin, SCHEDULES)
    assert rows[0][1] == f"'{name}"  # CSV: after an apostrophe
    _, rows, answer = exported(admin, SCHEDULES, {"format": "xlsx"})
    assert rows[0][1] == name  # XLSX: a text cell, as it is
    sheet = load_workbook(io.BytesIO(answer.data)).worksheets[0]
    assert sheet["B2"].data_type == "s"


def test_another_tenants_rows_are_never_exported(
    admin: Api, seeded: dict[str, str], services: Services, client: Any
) -> None:
    globex = other_tenant(services, client)
    for path in (RUNS, SCHEDULES, OPERATIONS):
        for file_format in ("csv", "xlsx"):
            _, rows, _ = exported(globex, path, {"format": file_format})
            assert not any(schedule_id in str(rows) for schedule_id in seeded), path
            assert "财务" not in str(rows)
            assert "Daily" not in str(rows)
    assert exported(globex, RUNS)[1] == []
