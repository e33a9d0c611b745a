"""Why and what, in the record: operators' reasons, schedule changes, run-now, late expiries."""

from __future__ import annotations

from typing import Any

from tests.e2e.helpers import account, assert_problem, submit
from tests.support import Api, FakeClock

SCHEDULES = "/api/workflows/schedules"


def timeline(api: Api, path: str) -> list[dict[str, Any]]:
    answer = api.get(f"{path}/timeline")
    assert answer.status_code == 200, answer.json
    return list(answer.json["items"])


def last_of(items: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(item for item in reversed(items) if item["type"] == kind)


def test_schedule_switches_and_deletion_record_their_reason(
    admin: Api, body: dict[str, Any]
) -> None:
    path = f"{SCHEDULES}/{admin.post(SCHEDULES, body).json['id']}"
    assert admin.post(f"{path}/enable", {"reason": "go live"}).status_code == 200
    assert admin.post(f"{path}/disable", {"reason": "holiday freeze"}).status_code == 200
    assert admin.call("DELETE", f"{path}?version=3", {"reason": "retired"}).status_code == 204
    items = timeline(admin, path)
    assert [(i["type"], i["reason"]) for i in items[1:]] == [
        ("Schedule.Enabled", "go live"),
        ("Schedule.Disabled", "holiday freeze"),
        ("Schedule.Deleted", "retired"),
    ]


def test_a_reason_is_optional_and_bounded(admin: Api, body: dict[str, Any]) -> None:
    path = f"{SCHEDULES}/{admin.post(SCHEDULES, body).json['id']}"
    assert_problem(admin.post(f"{path}/enable", {"reason": ""}), 422, "VALIDATION_FAILED")
    assert_problem(admin.post(f"{path}/enable", {"reason": "x" * 501}), 422, "VALIDATION_FAILED")
    assert admin.post(f"{path}/enable").status_code == 200
    assert last_of(timeline(admin, path), "Schedule.Enabled")["reason"] is None


def test_account_changes_and_token_revocation_record_their_reason(admin: Api) -> None:
    account(admin, "olga", ["operator"])
    path = "/api/accounts/olga"
    version = admin.get(path).json["version"]
    update = {"name": "Olga", "roles": ["auditor"], "version": version, "reason": "moved to audit"}
    assert admin.put(path, update).status_code == 200
    assert admin.post(f"{path}/deactivate", {"reason": "left"}).status_code == 200
    assert admin.post(f"{path}/activate", {"reason": "back"}).status_code == 200
    token_id = admin.post(f"{path}/tokens").json["token_id"]
    revoked = admin.call("DELETE", f"{path}/tokens/{token_id}", {"reason": "leaked"})
    assert revoked.status_code == 204
    reasons = {i["type"]: i["reason"] for i in timeline(admin, path)}
    assert reasons["Account.RolesChanged"] == "moved to audit"
    assert reasons["Account.Deactivated"] == "left"
    assert reasons["Account.Activated"] == "back"
    assert reasons["Account.TokenRevoked"] == "leaked"


def test_run_cancel_and_retry_record_their_reason(admin: Api, body: dict[str, Any]) -> None:
    path = f"{SCHEDULES}/{admin.post(SCHEDULES, body).json['id']}"
    run = admin.post(f"{path}/run", {"request_id": "r1"}).json
    run_path = f"{path}/runs/{run['id']}"
    assert admin.post(f"{run_path}/cancel", {"reason": "wrong day"}).status_code == 202
    assert admin.post(f"{run_path}/retry", {"reason": "right day after all"}).status_code == 202
    items = timeline(admin, f"/api/workflows/runs/{run['id']}")
    assert last_of(items, "Run.Cancelled")["reason"] == "wrong day"
    assert last_of(items, "Run.Retried")["reason"] == "right day after all"


def test_an_edit_records_what_changed_and_a_run_now_shows_on_the_schedule(
    admin: Api, body: dict[str, Any]
) -> None:
    path = f"{SCHEDULES}/{admin.post(SCHEDULES, body).json['id']}"
    edited = {**body, "name": "Weekly check", "form_data": {"region": "west"}, "version": 1}
    assert admin.put(path, edited).status_code == 200
    run = admin.post(f"{path}/run", {"request_id": "now-1"}).json
    items = timeline(admin, path)
    assert last_of(items, "Schedule.Updated")["data"]["changes"] == [
        {"field": "name", "old": "每日检查", "new": "Weekly check"},
        {"field": "form_data", "old": {"region": "east"}, "new": {"region": "west"}},
    ]
    requested = last_of(items, "Schedule.RunRequested")
    assert (requested["actor"], requested["data"]) == (
        "root",
        {"run_id": run["id"], "request_id": "now-1"},
    )
    assert admin.get(path).json["version"] == 2  # a run request is no edit
    again = admin.post(f"{path}/run", {"request_id": "now-1", "version": 2})
    assert (again.status_code, again.json["id"]) == (202, run["id"])


def test_a_late_command_is_rejected_beside_the_deadlines_expiry(
    admin: Api, definition_id: str, clock: FakeClock
) -> None:
    requester = account(admin, "sales", ["requester"])
    instance = submit(requester, definition_id, "a", review_deadline_at="2026-10-01T09:00:05Z").json
    clock.advance(10)
    late = admin.post(
        f"/api/approvals/{instance['id']}/approve", {"command_id": "late", "material_version": 2}
    )
    assert (late.status_code, late.json["outcome"], late.json["state"]) == (
        409,
        "EXPIRED",
        "EXPIRED",
    )
    items = timeline(admin, f"/api/approvals/{instance['id']}")
    assert [(i["type"], i["actor"], i["command_id"], i["outcome"]) for i in items[1:]] == [
        ("ApprovalInstance.Expired", "system:sweeper", None, "EXPIRED"),
        ("ApprovalInstance.CommandRejected", "root", "late", "EXPIRED"),
    ]
    replayed = admin.post(
        f"/api/approvals/{instance['id']}/approve", {"command_id": "late", "material_version": 2}
    )
    assert (replayed.status_code, replayed.json["replayed"]) == (409, True)
