"""A person's notices over HTTP (issue 30, item 8): their own only, unread then read."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import SIGN_CALLBACK, account, assert_problem, submit
from tests.support import Api, FakeClock


@pytest.fixture
def rita(admin: Api) -> Api:
    return account(admin, "rita", ["requester"])


@pytest.fixture
def olga(admin: Api) -> Api:
    return account(admin, "olga", ["operator"])


def inbox(api: Api, query: str = "") -> Any:
    listed = api.get(f"/api/notifications{query}")
    assert listed.status_code == 200, listed.json
    return listed.json


def test_an_applicant_is_told_of_a_decision_and_marks_it_read(
    rita: Api, olga: Api, definition_id: str
) -> None:
    instance = submit(rita, definition_id).json
    approved = olga.post(
        f"/api/approvals/{instance['id']}/approve", {"command_id": "ok", "material_version": 2}
    )
    assert approved.status_code == 200
    found = inbox(rita)
    assert (found["unread"], found["total"]) == (1, 1)
    (notice,) = found["items"]
    assert (notice["kind"], notice["instance_id"], notice["read_at"]) == (
        "APPLICATION_DECIDED",
        instance["id"],
        None,
    )
    assert notice["params"] == {"title": "Open account", "outcome": "APPROVED", "actor": "olga"}
    assert [n["kind"] for n in inbox(olga)["items"]] == ["TASK_CLAIMABLE"]  # none decided
    assert_problem(olga.post(f"/api/notifications/{notice['id']}/read"), 404, "NOT_FOUND")
    read = rita.post(f"/api/notifications/{notice['id']}/read")
    assert read.status_code == 200
    assert read.json["read_at"] is not None
    again = rita.post(f"/api/notifications/{notice['id']}/read")
    assert again.json["read_at"] == read.json["read_at"]
    after = inbox(rita)
    assert (after["unread"], after["total"]) == (0, 1)
    assert inbox(rita, "?unread=true")["items"] == []


def test_a_withdrawal_notifies_nobody_and_a_late_callback_notifies_the_applicant(
    admin: Api, rita: Api, definition_id: str, clock: FakeClock
) -> None:
    withdrawn = submit(rita, definition_id, "w").json
    rita.post(f"/api/approvals/{withdrawn['id']}/withdraw", {"command_id": "w"})
    assert inbox(rita)["total"] == 0
    instance = submit(rita, definition_id, "s").json
    esign = account(admin, "esign", ["integration"])
    admin.post(
        f"/api/approvals/{instance['id']}/approve", {"command_id": "ok", "material_version": 2}
    )
    clock.advance(60)
    late = esign.post(f"/api/approvals/{instance['id']}/callbacks/sign", SIGN_CALLBACK)
    assert late.json["outcome"] == "LATE_OR_CONFLICT"
    kinds = [n["kind"] for n in inbox(rita, "?unread=true")["items"]]
    assert kinds == ["CALLBACK_LATE_OR_MISMATCHED", "APPLICATION_DECIDED"]


def test_the_inbox_pages_by_cursor_newest_first(
    rita: Api, olga: Api, definition_id: str, clock: FakeClock
) -> None:
    for n in range(3):
        instance = submit(rita, definition_id, f"s{n}").json
        clock.advance(1)
        olga.post(
            f"/api/approvals/{instance['id']}/approve", {"command_id": "ok", "material_version": 2}
        )
    first = inbox(rita, "?page_size=2")
    second = inbox(rita, f"?page_size=2&cursor={first['next_cursor']}")
    times = [n["created_at"] for n in first["items"] + second["items"]]
    assert times == sorted(times, reverse=True)
    assert len(set(times)) == 3
    assert (second["next_cursor"], second["unread"]) == (None, 3)


def test_an_account_without_the_list_permission_has_no_inbox(admin: Api) -> None:
    esign = account(admin, "esign", ["integration"])
    assert_problem(esign.get("/api/notifications"), 403, "FORBIDDEN")
