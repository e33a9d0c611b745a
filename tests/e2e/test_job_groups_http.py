"""Job groups (任务组名) over HTTP on both stores: a schedule's `group` (default `DEFAULT`),
kept by an older client's PUT, filtering the schedules, the execution log and their exports;
and the settings an older client never sends (`target`, `auto_pause_after_failures`) at their
defaults."""

from __future__ import annotations

from typing import Any

from cronledger.application.cycles import Ticker
from cronledger.application.services import Services
from tests.e2e.helpers import assert_problem
from tests.e2e.test_exports_http import exported
from tests.support import Api, FakeClock

SCHEDULES = "/api/workflows/schedules"
RUNS = "/api/workflows/runs"


def test_a_schedule_s_group_files_it_and_its_runs(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    plain = admin.post(SCHEDULES, {**body, "name": "plain", "enabled": True})
    assert plain.status_code == 201, plain.json
    assert plain.json["group"] == "DEFAULT"
    assert plain.json["target"] == {"kind": "approval"}
    assert plain.json["auto_pause_after_failures"] == 3
    finance = admin.post(SCHEDULES, {**body, "name": "月结", "group": "财务", "enabled": True})
    assert finance.json["group"] == "财务"

    listed = admin.get(SCHEDULES, query_string={"group": "财务"}).json["items"]
    assert [item["name"] for item in listed] == ["月结"]
    clock.advance(86400)
    Ticker.of(services).scan()
    services.projector.catch_up()
    runs = admin.get(RUNS, query_string={"group": "财务"}).json["items"]
    assert runs
    assert {run["schedule_id"] for run in runs} == {finance.json["id"]}
    assert admin.get(RUNS, query_string={"group": "nobody"}).json["items"] == []
    _, exported_runs, _ = exported(admin, RUNS, {"group": "财务", "format": "csv"})
    assert [row[0] for row in exported_runs] == [run["id"] for run in runs]
    _, exported_schedules, _ = exported(admin, SCHEDULES, {"group": "财务", "format": "xlsx"})
    assert [row[1:3] for row in exported_schedules] == [["月结", "财务"]]

    # an older client's PUT, which knows nothing of groups, keeps the group
    older = {k: v for k, v in finance.json.items() if k in body}
    older = {k: v for k, v in older.items() if k not in ("group",)}
    put = admin.put(f"{SCHEDULES}/{finance.json['id']}", {**older, "version": 1})
    assert put.status_code == 200, put.json
    assert put.json["group"] == "财务"


def test_bad_groups_and_auto_pause_counts_are_refused_by_field(
    admin: Api, body: dict[str, Any]
) -> None:
    for field, value in (
        ("group", ""),
        ("group", "x" * 65),
        ("group", "   "),
        ("auto_pause_after_failures", 0),
        ("auto_pause_after_failures", 1001),
        ("target", {"kind": "shell"}),
    ):
        refused = admin.post(SCHEDULES, {**body, field: value})
        problem = assert_problem(refused, 422, "VALIDATION_FAILED")
        assert any(name.startswith(field) for name in problem["errors"]), (field, problem)
    never = admin.post(SCHEDULES, {**body, "auto_pause_after_failures": None})
    assert never.status_code == 201, never.json
    assert never.json["auto_pause_after_failures"] is None
