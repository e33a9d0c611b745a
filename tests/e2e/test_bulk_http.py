"""Bulk actions over HTTP, on both stores: each item done or refused on its own as its single
action would be (a schedule deleted meanwhile, one changed since it was read), repeats that
change nothing, delete's own permission, and the bounds of a request."""

from __future__ import annotations

from typing import Any

from tests.e2e.helpers import account
from tests.support import Api

SCHEDULES = "/api/workflows/schedules"
BULK = f"{SCHEDULES}/bulk"
RUNS_BULK = "/api/workflows/runs/bulk"


def made(admin: Api, body: dict[str, Any], name: str, **fields: Any) -> dict[str, Any]:
    created = admin.post(SCHEDULES, {**body, "name": name, **fields})
    assert created.status_code == 201, created.json
    return created.json  # type: ignore[no-any-return]


def by_id(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["id"]: item for item in answer["items"]}


def test_a_bulk_disable_reports_each_schedule_and_refuses_the_gone_and_the_stale(
    admin: Api, body: dict[str, Any]
) -> None:
    kept, stale, gone = (
        made(admin, body, name, enabled=True) for name in ("财务日报", "财务周报", "财务月报")
    )
    admin.post(f"{SCHEDULES}/{stale['id']}/disable", {})  # someone else, meanwhile
    admin.delete(f"{SCHEDULES}/{gone['id']}?version={gone['version']}")
    unknown = "00000000-0000-4000-8000-000000000000"
    ids = [kept["id"], stale["id"], gone["id"], unknown, kept["id"]]
    versions = {s["id"]: s["version"] for s in (kept, stale, gone)}
    answer = admin.post(
        BULK, {"action": "disable", "ids": ids, "versions": versions, "reason": "月结"}
    )
    assert answer.status_code == 200, answer.json
    assert [item["id"] for item in answer.json["items"]] == ids[:4]  # a repeated id counts once
    items = by_id(answer.json)
    assert items[kept["id"]] == {
        "id": kept["id"],
        "outcome": "DONE",
        "status": 200,
        "code": None,
        "detail": None,
        "errors": {},
        "name": "财务日报",
        "version": kept["version"] + 1,
        "run_id": None,
        "run_status": None,
    }
    assert (items[stale["id"]]["outcome"], items[stale["id"]]["code"]) == (
        "REFUSED",
        "VERSION_CONFLICT",
    )
    assert (items[stale["id"]]["status"], items[stale["id"]]["name"]) == (409, "财务周报")
    assert (items[gone["id"]]["code"], items[gone["id"]]["status"]) == ("NOT_FOUND", 404)
    assert items[gone["id"]]["name"] == "财务月报"  # deleted, still named
    assert (items[unknown]["code"], items[unknown]["name"]) == ("NOT_FOUND", None)
    read = admin.get(f"{SCHEDULES}/{kept['id']}").json
    assert (read["enabled"], read["version"]) == (False, kept["version"] + 1)
    timeline = admin.get(f"{SCHEDULES}/{kept['id']}/timeline").json["items"]
    assert (timeline[-1]["type"], timeline[-1]["reason"]) == ("Schedule.Disabled", "月结")

    again = admin.post(BULK, {"action": "disable", "ids": [kept["id"]]})
    assert by_id(again.json)[kept["id"]]["outcome"] == "UNCHANGED"
    assert admin.get(f"{SCHEDULES}/{kept['id']}").json["version"] == kept["version"] + 1


def test_a_bulk_enable_is_refused_for_a_schedule_whose_initiator_may_not_launch(
    admin: Api, body: dict[str, Any]
) -> None:
    account(admin, "bob", ["requester"])
    fine, blocked = made(admin, body, "fine"), made(admin, body, "blocked", initiator_id="bob")
    admin.post("/api/accounts/bob/deactivate", {})
    answer = admin.post(BULK, {"action": "enable", "ids": [fine["id"], blocked["id"]]})
    items = by_id(answer.json)
    assert items[fine["id"]]["outcome"] == "DONE"
    refused = items[blocked["id"]]
    assert (refused["code"], refused["status"]) == ("VALIDATION_FAILED", 422)
    assert "bob" in " ".join(refused["errors"]["initiator_id"])
    assert admin.get(f"{SCHEDULES}/{blocked['id']}").json["enabled"] is False


def test_a_bulk_run_registers_one_run_a_schedule_and_its_repeat_answers_the_same_runs(
    admin: Api, body: dict[str, Any]
) -> None:
    first, second = made(admin, body, "one"), made(admin, body, "two")
    asked = {"action": "run", "ids": [first["id"], second["id"]], "request_id": "month-end-1"}
    answer = admin.post(BULK, asked)
    items = answer.json["items"]
    assert [(i["outcome"], i["status"], i["run_status"]) for i in items] == [
        ("DONE", 202, "PENDING")
    ] * 2
    again = admin.post(BULK, asked).json["items"]
    assert [i["outcome"] for i in again] == ["UNCHANGED"] * 2
    assert [i["run_id"] for i in again] == [i["run_id"] for i in items]
    for schedule, item in zip((first, second), items, strict=True):
        runs = admin.get(f"{SCHEDULES}/{schedule['id']}/runs").json["items"]
        assert [run["id"] for run in runs] == [item["run_id"]]

    unkeyed = admin.post(BULK, {"action": "run", "ids": [first["id"]]})
    assert unkeyed.status_code == 422
    assert "request_id" in unkeyed.json["errors"]


def test_bulk_delete_needs_the_delete_permission_and_each_schedule_s_version(
    admin: Api, body: dict[str, Any]
) -> None:
    quiet, busy = made(admin, body, "quiet"), made(admin, body, "busy")
    admin.post(f"{SCHEDULES}/{busy['id']}/run", {"request_id": "r-1"})  # a run still pending
    operator = account(admin, "olga", ["operator"])
    ids = [quiet["id"], busy["id"]]
    forbidden = operator.post(BULK, {"action": "delete", "ids": ids})
    assert (forbidden.status_code, forbidden.json["code"]) == (403, "FORBIDDEN")

    unversioned = by_id(admin.post(BULK, {"action": "delete", "ids": ids}).json)
    assert unversioned[quiet["id"]]["code"] == "VALIDATION_FAILED"
    assert "version" in unversioned[quiet["id"]]["errors"]
    busy_now = admin.get(f"{SCHEDULES}/{busy['id']}").json
    versions = {quiet["id"]: quiet["version"], busy["id"]: busy_now["version"]}
    answer = by_id(admin.post(BULK, {"action": "delete", "ids": ids, "versions": versions}).json)
    assert (answer[quiet["id"]]["outcome"], answer[quiet["id"]]["status"]) == ("DONE", 204)
    assert (answer[busy["id"]]["code"], answer[busy["id"]]["status"]) == ("IN_FLIGHT", 409)
    assert admin.get(f"{SCHEDULES}/{quiet['id']}").status_code == 404
    assert admin.get(f"{SCHEDULES}/{busy['id']}").status_code == 200


def test_a_bulk_request_is_bounded_and_checked_as_a_whole(admin: Api, body: dict[str, Any]) -> None:
    one = made(admin, body, "one")
    too_many = [one["id"]] * 101
    for asked, field in (
        ({"action": "enable", "ids": too_many}, "ids"),
        ({"action": "enable", "ids": []}, "ids"),
        ({"action": "pause", "ids": [one["id"]]}, "action"),
        ({"action": "enable", "ids": [one["id"]], "request_id": "x"}, "request_id"),
        ({"action": "run", "ids": [one["id"]], "request_id": "x", "reason": "y"}, "reason"),
        ({"action": "enable", "ids": [one["id"]], "versions": {one["id"]: "1"}}, "versions"),
    ):
        answer = admin.post(BULK, asked)
        assert answer.status_code == 422, asked
        assert any(name.startswith(field) for name in answer.json["errors"]), answer.json
    assert admin.get(f"{SCHEDULES}/{one['id']}").json["version"] == one["version"]


def test_runs_are_cancelled_and_retried_in_bulk_each_as_its_state_allows(
    admin: Api, body: dict[str, Any]
) -> None:
    schedule = made(admin, body, "runs")
    runs = [
        admin.post(f"{SCHEDULES}/{schedule['id']}/run", {"request_id": key}).json
        for key in ("a", "b")
    ]
    first, second = (run["id"] for run in runs)
    stale = {second: runs[1]["version"] + 1}
    cancelled = by_id(
        admin.post(RUNS_BULK, {"action": "cancel", "ids": [first, second], "versions": stale}).json
    )
    assert (cancelled[first]["outcome"], cancelled[first]["run_status"]) == ("DONE", "CANCELLED")
    assert (cancelled[first]["status"], cancelled[first]["name"]) == (202, runs[0]["title"])
    assert cancelled[second]["code"] == "VERSION_CONFLICT"

    answer = admin.post(RUNS_BULK, {"action": "retry", "ids": [first, second, "nope"]})
    retried = by_id(answer.json)
    assert (retried[first]["outcome"], retried[first]["run_status"]) == ("DONE", "PENDING")
    assert (retried[second]["code"], retried[second]["status"]) == ("INVALID_STATE", 409)
    assert (retried["nope"]["code"], retried["nope"]["name"]) == ("NOT_FOUND", None)

    auditor = account(admin, "audrey", ["auditor"])
    refused = auditor.post(RUNS_BULK, {"action": "cancel", "ids": [first]})
    assert refused.status_code == 403
