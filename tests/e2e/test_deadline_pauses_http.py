"""Pausing the review clock and returning an instance (退回) over HTTP, on both stores, with
the test clock (docs/approvals.md#pausing-the-clock)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from cronledger.application.services import Services
from tests.e2e.helpers import account, assert_problem, submit, with_reviewer
from tests.support import DECIDERS, T0, Api, FakeClock

WINDOW = 20


@pytest.fixture
def requester(admin: Api) -> Api:
    return account(admin, "sales", ["requester"])


def definition(admin: Api, key: str = "payment", **extra: Any) -> str:
    """A published definition with a 20 s review window (and an operator to review it)."""
    with_reviewer(admin)
    created = admin.post(
        "/api/definitions",
        {
            "key": key,
            "name": key.title(),
            "external": False,
            "review_window_seconds": WINDOW,
            "reviewers": DECIDERS,
            **extra,
        },
    )
    assert created.status_code == 201, created.json
    admin.post(f"/api/definitions/{created.json['id']}/publish")
    return str(created.json["id"])


def at(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def clock_command(api: Api, instance_id: str, kind: str, command_id: str, reason: str) -> Any:
    return api.post(
        f"/api/approvals/{instance_id}/{kind}", {"command_id": command_id, "reason": reason}
    )


def state_after_sweep(services: Services, admin: Api, instance_id: str) -> str:
    services.approvals.sweep()
    return str(admin.get(f"/api/approvals/{instance_id}").json["state"])


def test_paused_for_10_s_of_a_20_s_window_it_expires_10_s_later_not_before(
    services: Services, admin: Api, requester: Api, clock: FakeClock
) -> None:
    instance = submit(requester, definition(admin)).json
    assert instance["review_deadline_at"] == at(20)
    clock.now = T0 + timedelta(seconds=5)
    paused = clock_command(admin, instance["id"], "pause-deadline", "p1", "unusual payment")
    assert (paused.status_code, paused.json["outcome"]) == (200, "PAUSED")
    assert paused.json["instance"]["paused_since"] == at(5)
    clock.now = T0 + timedelta(seconds=15)
    resumed = clock_command(admin, instance["id"], "resume-deadline", "r1", "the bank answered")
    assert (resumed.status_code, resumed.json["outcome"]) == (200, "RESUMED")
    shown = admin.get(f"/api/approvals/{instance['id']}").json
    assert (shown["review_deadline_at"], shown["paused_since"], shown["paused_seconds"]) == (
        at(30),
        None,
        10.0,
    )
    assert shown["pauses"] == [
        {
            "kind": "pause",
            "from": at(5),
            "to": at(15),
            "reason": "unusual payment",
            "actor": "root",
            "old_deadline_at": at(20),
            "new_deadline_at": at(30),
        }
    ]
    clock.now = T0 + timedelta(seconds=29)
    assert state_after_sweep(services, admin, instance["id"]) == "WAITING_REVIEW"
    clock.now = T0 + timedelta(seconds=30)
    assert state_after_sweep(services, admin, instance["id"]) == "EXPIRED"
    items = admin.get(f"/api/approvals/{instance['id']}/timeline").json["items"]
    clock_items = [i for i in items if i["outcome"] in ("PAUSED", "RESUMED")]
    assert [(i["type"], i["at"], i["actor"]) for i in clock_items] == [
        ("ApprovalInstance.DeadlinePaused", at(5), "root"),
        ("ApprovalInstance.DeadlineResumed", at(15), "root"),
    ]
    moved = clock_items[1]["data"]["clock"]
    assert (moved["old_deadline_at"], moved["new_deadline_at"]) == (at(20), at(30))


def test_the_sweeper_never_expires_a_paused_instance_and_reviewers_still_decide(
    services: Services, admin: Api, requester: Api, clock: FakeClock
) -> None:
    definition_id = definition(admin)
    first = submit(requester, definition_id, "s-1").json
    second = submit(requester, definition_id, "s-2").json
    for instance in (first, second):
        clock_command(admin, instance["id"], "pause-deadline", f"p-{instance['id']}", "audit")
    clock.now = T0 + timedelta(days=3)
    assert state_after_sweep(services, admin, first["id"]) == "WAITING_REVIEW"
    backlog = admin.get("/api/backlog").json
    assert backlog["expired_unswept_approvals"] == 0
    approved = admin.post(
        f"/api/approvals/{second['id']}/approve", {"command_id": "ok", "material_version": 2}
    )
    assert (approved.status_code, approved.json["state"]) == (200, "APPROVED")
    assert approved.json["instance"]["paused_since"] is None


def test_refusals_are_recorded_with_their_codes_and_need_the_permission(
    admin: Api, requester: Api, clock: FakeClock
) -> None:
    instance = submit(requester, definition(admin)).json
    not_paused = clock_command(admin, instance["id"], "resume-deadline", "r0", "early")
    assert assert_problem(not_paused, 409, "COMMAND_REJECTED")["reason_code"] == (
        "CLOCK_NOT_PAUSED"
    )
    clock_command(admin, instance["id"], "pause-deadline", "p1", "audit")
    again = clock_command(admin, instance["id"], "pause-deadline", "p2", "audit again")
    assert assert_problem(again, 409, "COMMAND_REJECTED")["reason_code"] == ("CLOCK_ALREADY_PAUSED")
    repeated = clock_command(admin, instance["id"], "pause-deadline", "p1", "audit")
    assert (repeated.status_code, repeated.json["replayed"]) == (200, True)
    forbidden = clock_command(requester, instance["id"], "resume-deadline", "r1", "mine")
    assert_problem(forbidden, 403, "FORBIDDEN")
    no_reason = admin.post(f"/api/approvals/{instance['id']}/pause-deadline", {"command_id": "x"})
    assert "reason" in assert_problem(no_reason, 422, "VALIDATION_FAILED")["errors"]
    items = admin.get(f"/api/approvals/{instance['id']}/timeline").json["items"]
    assert [i["reason_code"] for i in items if not i["data"].get("accepted", True)] == [
        "CLOCK_NOT_PAUSED",
        "CLOCK_ALREADY_PAUSED",
        "PERMISSION_MISSING",
    ]


def test_a_pause_longer_than_max_pause_seconds_resumes_by_itself_then_expires(
    services: Services, admin: Api, requester: Api, clock: FakeClock
) -> None:
    instance = submit(requester, definition(admin, max_pause_seconds=10)).json
    assert instance["max_pause_seconds"] == 10
    clock.now = T0 + timedelta(seconds=5)
    paused = clock_command(admin, instance["id"], "pause-deadline", "p1", "audit")
    assert paused.json["instance"]["pause_ends_at"] == at(15)
    clock.now = T0 + timedelta(seconds=25)  # the pause ended at 15 s: the deadline is 30 s
    assert state_after_sweep(services, admin, instance["id"]) == "WAITING_REVIEW"
    shown = admin.get(f"/api/approvals/{instance['id']}").json
    assert (shown["paused_since"], shown["review_deadline_at"]) == (None, at(30))
    assert shown["pauses"][0]["to"] == at(15)
    clock.now = T0 + timedelta(seconds=30)
    assert state_after_sweep(services, admin, instance["id"]) == "EXPIRED"
    items = admin.get(f"/api/approvals/{instance['id']}/timeline").json["items"]
    resumed = next(i for i in items if i["outcome"] == "RESUMED")
    assert (resumed["actor"], resumed["reason_code"]) == (
        "system:sweeper",
        "CLOCK_RESUMED_AT_MAX_PAUSE",
    )


def test_a_return_stops_the_clock_until_the_applicant_withdraws(
    services: Services, admin: Api, requester: Api, clock: FakeClock
) -> None:
    definition_id = definition(admin)
    instance = submit(requester, definition_id).json
    path = f"/api/approvals/{instance['id']}"
    no_comment = admin.post(f"{path}/return", {"command_id": "back"})
    assert "comment" in assert_problem(no_comment, 422, "VALIDATION_FAILED")["errors"]
    clock.now = T0 + timedelta(seconds=5)
    returned = admin.post(f"{path}/return", {"command_id": "back", "comment": "add the invoice"})
    assert (returned.status_code, returned.json["state"]) == (200, "RETURNED")
    shown = returned.json["instance"]
    assert (shown["paused_since"], shown["decided_at"]) == (at(5), None)
    assert {t["state"] for t in shown["tasks"]} == {"CLOSED"}
    assert shown["comments"][0]["text"] == "add the invoice"
    listed = admin.get("/api/approvals?state=RETURNED").json["items"]
    assert [i["id"] for i in listed] == [instance["id"]]
    refused = admin.post(f"{path}/approve", {"command_id": "ok", "material_version": 2})
    assert assert_problem(refused, 409, "COMMAND_REJECTED")["reason_code"] == "INSTANCE_RETURNED"
    clock.now = T0 + timedelta(days=2)
    assert state_after_sweep(services, admin, instance["id"]) == "RETURNED"
    withdrawn = requester.post(f"{path}/withdraw", {"command_id": "w"})
    assert (withdrawn.status_code, withdrawn.json["state"]) == (200, "WITHDRAWN")
    ended = withdrawn.json["instance"]
    assert (ended["paused_since"], ended["pauses"][0]["kind"]) == (None, "return")
    assert ended["paused_seconds"] == (timedelta(days=2) - timedelta(seconds=5)).total_seconds()


def test_only_a_reviewer_returns_and_never_their_own(admin: Api, requester: Api) -> None:
    own = submit(admin, definition(admin)).json
    refused = admin.post(f"/api/approvals/{own['id']}/return", {"command_id": "b", "comment": "x"})
    assert assert_problem(refused, 409, "COMMAND_REJECTED")["reason_code"] == (
        "SELF_APPROVAL_APPLICANT"
    )
    other = submit(admin, definition(admin, "travel"), "s-2").json
    not_reviewer = requester.post(
        f"/api/approvals/{other['id']}/return", {"command_id": "b", "comment": "x"}
    )
    assert_problem(not_reviewer, 403, "FORBIDDEN")


def test_a_pause_across_a_weekend_moves_a_working_days_deadline_by_working_time(
    admin: Api, requester: Api, clock: FakeClock
) -> None:
    created = admin.post(
        "/api/calendars", {"key": "cn", "name": "中国大陆", "timezone": "Asia/Shanghai"}
    )
    admin.post(f"/api/calendars/{created.json['id']}/import", {"region": "CN", "years": [2026]})
    rule = {"kind": "working_days", "days": 3, "calendar": "cn", "cutoff": "18:00"}
    definition_id = definition(admin, "loan", review_window_seconds=None, deadline_rule=rule)
    # Wednesday 2026-10-14 10:00: three working days on, Monday 10-19 18:00 (+08:00)
    clock.now = datetime.fromisoformat("2026-10-14T10:00:00+08:00")
    instance = submit(requester, definition_id).json
    assert instance["review_deadline_at"] == "2026-10-19T10:00:00Z"
    clock.now = datetime.fromisoformat("2026-10-16T12:00:00+08:00")  # Friday noon
    clock_command(admin, instance["id"], "pause-deadline", "p", "waiting for the bank")
    clock.now = datetime.fromisoformat("2026-10-19T12:00:00+08:00")  # Monday noon
    resumed = clock_command(admin, instance["id"], "resume-deadline", "r", "answered")
    # a working day stood (Friday's afternoon and Monday's morning), not three: Tuesday 18:00
    moved = resumed.json["instance"]
    assert moved["review_deadline_at"] == "2026-10-20T10:00:00Z"
    assert moved["paused_seconds"] == 3 * 86400
    assert moved["pauses"][0]["new_deadline_at"] == "2026-10-20T10:00:00Z"
