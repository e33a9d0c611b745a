"""Levels, countersign and revised material over HTTP, on both stores (issue 35)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from cronledger.application.services import Services
from tests.e2e.helpers import account
from tests.support import Api, FakeClock


@pytest.fixture
def people(admin: Api) -> dict[str, Api]:
    return {
        name: account(admin, name, [role])
        for name, role in [
            ("ann", "requester"),
            ("lee", "operator"),
            ("fa", "operator"),
            ("fb", "operator"),
            ("fc", "operator"),
        ]
    }


def definition(admin: Api, key: str, levels: list[dict[str, Any]], **more: Any) -> str:
    created = admin.post(
        "/api/definitions",
        {"key": key, "name": "付款审批", "external": False, "review_window_seconds": 3600}
        | {"levels": levels}
        | more,
    )
    assert created.status_code == 201, created.json
    admin.post(f"/api/definitions/{created.json['id']}/publish")
    return str(created.json["id"])


def submit(applicant: Api, definition_id: str, command_id: str = "s-1") -> dict[str, Any]:
    submitted = applicant.post(
        "/api/approvals",
        {
            "command_id": command_id,
            "definition_id": definition_id,
            "title": "付款：星河公司",
            "material_version": 1,
            "form_data": {"amount": 100},
        },
    )
    assert submitted.status_code == 201, submitted.json
    return submitted.json  # type: ignore[no-any-return]


FINANCE = {
    "name": "财务",
    "reviewers": {"accounts": ["fa", "fb", "fc"]},
    "approvals_required": 2,
}


def approve(reviewer: Api, path: str, command_id: str, version: int) -> Any:
    return reviewer.post(f"{path}/approve", {"command_id": command_id, "material_version": version})


def test_two_of_three_approve_v1_a_revise_lapses_them_and_two_approve_v2(
    admin: Api, people: dict[str, Api]
) -> None:
    """The countersign level completes on v1 and the next opens; a revise to v2 lapses both
    approvals and sends the review back to level 1, where a late v1 approve is stale."""
    levels = [FINANCE, {"name": "主管", "reviewers": {"accounts": ["lee"]}}]
    instance = submit(people["ann"], definition(admin, "pay", levels))
    path = f"/api/approvals/{instance['id']}"
    assert [t["id"] for t in instance["tasks"]] == ["1", "2"]
    first = approve(people["fa"], path, "a-1", 1)
    assert (first.status_code, first.json["outcome"]) == (200, "VOTED"), first.json
    again = approve(people["fa"], path, "a-1b", 1)
    assert (again.status_code, again.json["reason_code"]) == (409, "ALREADY_VOTED_ON_LEVEL")
    second = approve(people["fb"], path, "a-2", 1)
    assert second.json["instance"]["current_level"] == 2
    revised = people["ann"].post(
        f"{path}/revise", {"command_id": "r-1", "material_version": 2, "reason": "金额有误"}
    )
    assert (revised.status_code, revised.json["outcome"]) == (200, "REVISED"), revised.json
    shown = admin.get(path).json
    assert shown["current_level"] == 1
    assert [lv["state"] for lv in shown["levels"]] == ["open", "waiting"]
    assert [(v["actor"], v["lapsed"]) for v in shown["levels"][0]["votes"]] == [
        ("fa", True),
        ("fb", True),
    ]
    late = approve(people["fc"], path, "a-late", 1)
    assert (late.status_code, late.json["outcome"]) == (409, "STALE_MATERIAL")
    assert approve(people["fa"], path, "b-1", 2).json["outcome"] == "VOTED"
    assert approve(people["fc"], path, "b-2", 2).json["instance"]["current_level"] == 2
    done = approve(people["lee"], path, "b-3", 2)
    assert done.json["state"] == "APPROVED", done.json
    counted = [
        (v["actor"], v["material_version"])
        for level in admin.get(path).json["levels"]
        for v in level["votes"]
        if not v["lapsed"]
    ]
    assert counted == [("fa", 2), ("fc", 2), ("lee", 2)]


def test_revised_material_lapses_earlier_votes(admin: Api, people: dict[str, Api]) -> None:
    instance = submit(people["ann"], definition(admin, "pay-r", [FINANCE]))
    path = f"/api/approvals/{instance['id']}"
    assert approve(people["fa"], path, "a-1", 1).json["outcome"] == "VOTED"
    stranger = people["fa"].post(
        f"{path}/revise", {"command_id": "r-0", "material_version": 2, "reason": "改"}
    )
    assert stranger.status_code == 403
    same = people["ann"].post(
        f"{path}/revise", {"command_id": "r-1", "material_version": 1, "reason": "补充合同"}
    )
    assert (same.status_code, list(same.json["errors"])) == (422, ["material_version"])
    revised = people["ann"].post(
        f"{path}/revise",
        {
            "command_id": "r-2",
            "material_version": 2,
            "reason": "补充合同",
            "form_data": {"amount": 90},
        },
    )
    assert (revised.status_code, revised.json["outcome"]) == (200, "REVISED"), revised.json
    shown = admin.get(path).json
    assert (shown["material_version"], shown["form_data"]) == (2, {"amount": 90})
    votes = shown["levels"][0]["votes"]
    assert [(v["actor"], v["material_version"], v["lapsed"]) for v in votes] == [("fa", 1, True)]
    assert shown["levels"][0]["approvals"] == 0
    assert all(t["state"] == "OPEN" for t in shown["tasks"])
    late = approve(people["fb"], path, "a-late", 1)
    assert (late.status_code, late.json["outcome"]) == (409, "STALE_MATERIAL")
    assert approve(people["fa"], path, "a-2", 2).json["outcome"] == "VOTED"
    done = approve(people["fc"], path, "a-3", 2)
    assert done.json["state"] == "APPROVED", done.json
    shown = admin.get(path).json
    assert [(v["actor"], v["material_version"], v["lapsed"]) for v in shown["votes"]] == [
        ("fa", 1, True),
        ("fa", 2, False),
        ("fc", 2, False),
    ]
    assert shown["levels"][0]["state"] == "completed"
    items = admin.get(f"{path}/timeline").json["items"][1:]
    outcomes = [e["outcome"] for e in items if e["outcome"]]
    assert outcomes == [
        "VOTED",
        "FORBIDDEN",
        "RULE_BROKEN",
        "REVISED",
        "STALE_MATERIAL",
        "VOTED",
        "APPROVED",
    ]


def test_the_second_level_opens_only_when_the_first_completes(
    admin: Api, people: dict[str, Api]
) -> None:
    admin.post(
        "/api/groups",
        {"key": "sales", "name": "销售部", "members": ["ann", "lee"]} | {"leader_id": "lee"},
    )
    levels = [{"name": "主管", "reviewers": {"applicant_leader": True}}, FINANCE]
    instance = submit(people["ann"], definition(admin, "pay-2l", levels))
    path = f"/api/approvals/{instance['id']}"
    assert [lv["state"] for lv in instance["levels"]] == ["open", "waiting"]
    assert instance["levels"][0]["candidates"] == ["lee"]
    assert [t["id"] for t in instance["tasks"]] == ["1"]
    early = approve(people["fa"], path, "f-0", 1)
    assert (early.status_code, early.json["code"]) == (403, "NOT_A_REVIEWER")
    led = approve(people["lee"], path, "l-1", 1)
    assert (led.json["outcome"], led.json["state"]) == ("VOTED", "WAITING_REVIEW")
    shown = led.json["instance"]
    assert shown["current_level"] == 2
    assert [lv["state"] for lv in shown["levels"]] == ["completed", "open"]
    assert [(t["id"], t["level"], t["state"]) for t in shown["tasks"]] == [
        ("1", 1, "CLOSED"),
        ("2", 2, "OPEN"),
        ("3", 2, "OPEN"),
    ]
    assert approve(people["fa"], path, "f-1", 1).json["outcome"] == "VOTED"
    assert approve(people["fb"], path, "f-2", 1).json["state"] == "APPROVED"
    read = admin.get(path).json
    assert [lv["state"] for lv in read["levels"]] == ["completed", "completed"]
    timeline = admin.get(f"{path}/timeline").json["items"]
    kinds = [e["type"] for e in timeline]
    assert kinds.count("ApprovalInstance.LevelCompleted") == 2


def test_a_level_with_too_few_reviewers_refuses_the_submission(
    admin: Api, people: dict[str, Api]
) -> None:
    # Four named (a level naming fewer accounts than it requires is refused when saved), one of
    # them the applicant, who may not approve her own: three eligible.
    four = {
        **FINANCE,
        "reviewers": {"accounts": ["fa", "fb", "fc", "ann"]},
        "approvals_required": 4,
    }
    refused = people["ann"].post(
        "/api/approvals",
        {
            "command_id": "s-x",
            "definition_id": definition(admin, "pay-4", [four]),
            "title": "付款",
            "material_version": 1,
        },
    )
    assert (refused.status_code, refused.json["code"]) == (422, "NOT_ENOUGH_REVIEWERS")
    assert "level 1" in refused.json["detail"]


def test_a_revise_restarts_the_deadline_when_the_definition_says_so(
    admin: Api, people: dict[str, Api], clock: FakeClock
) -> None:
    one = {"reviewers": {"accounts": ["fa"]}}
    restarting = definition(admin, "pay-restart", [one], restart_deadline_on_revise=True)
    instance = submit(people["ann"], restarting)
    first = datetime.fromisoformat(instance["review_deadline_at"])
    clock.advance(600)
    revised = people["ann"].post(
        f"/api/approvals/{instance['id']}/revise",
        {"command_id": "r-1", "material_version": 2, "reason": "新合同"},
    )
    assert revised.status_code == 200, revised.json
    shown = revised.json["instance"]
    assert datetime.fromisoformat(shown["review_deadline_at"]) == first + timedelta(seconds=600)
    (restart,) = shown["extensions"]
    assert (restart["old_deadline_at"], restart["new_deadline_at"]) == (
        instance["review_deadline_at"],
        shown["review_deadline_at"],
    )
    kept = submit(people["ann"], definition(admin, "pay-kept", [one]), "s-2")
    clock.advance(600)
    same = people["ann"].post(
        f"/api/approvals/{kept['id']}/revise",
        {"command_id": "r-2", "material_version": 2, "reason": "新合同"},
    )
    assert same.json["instance"]["review_deadline_at"] == kept["review_deadline_at"]


def test_a_level_that_can_no_longer_complete_is_shown_and_its_candidates_told(
    admin: Api, people: dict[str, Api], services: Services
) -> None:
    instance = submit(people["ann"], definition(admin, "pay-blocked", [FINANCE]))
    path = f"/api/approvals/{instance['id']}"
    assert approve(people["fa"], path, "a-1", 1).json["outcome"] == "VOTED"
    for gone in ("fb", "fc"):
        answer = admin.post(f"/api/accounts/{gone}/deactivate", {"reason": "离职"})
        assert answer.status_code == 200, answer.json
    services.approvals.sweep()
    services.approvals.sweep()  # once per level
    shown = admin.get(path).json
    assert [
        (b["level"], b["approvals_required"], b["possible"]) for b in shown["blocked_levels"]
    ] == [(1, 2, 1)]
    told = people["fa"].get("/api/notifications").json["items"]
    assert any(n["kind"] == "LEVEL_BLOCKED" for n in told), told


@pytest.mark.parametrize(("return_to", "back_to"), [("first", 1), ("returning", 2)])
def test_a_return_at_level_two_stops_the_clock_and_a_revise_brings_it_back(
    services: Services,
    admin: Api,
    people: dict[str, Api],
    clock: FakeClock,
    return_to: str,
    back_to: int,
) -> None:
    """A group leader, then two of three finance reviewers: finance returns it (退回), the
    clock stands while the applicant revises, and the review goes on at the level the
    definition names; an hour returned moves the deadline by an hour."""
    admin.post(
        "/api/groups",
        {"key": "sales", "name": "销售部", "members": ["ann", "lee"]} | {"leader_id": "lee"},
    )
    levels = [{"name": "主管", "reviewers": {"applicant_leader": True}}, FINANCE]
    defined = definition(admin, f"pay-back-{return_to}", levels, return_to=return_to)
    instance = submit(people["ann"], defined)
    path = f"/api/approvals/{instance['id']}"
    deadline = datetime.fromisoformat(instance["review_deadline_at"])
    assert approve(people["lee"], path, "l-1", 1).json["instance"]["current_level"] == 2
    assert approve(people["fa"], path, "f-1", 1).json["outcome"] == "VOTED"
    returned = people["fb"].post(f"{path}/return", {"command_id": "rt-1", "comment": "缺少发票"})
    assert (returned.status_code, returned.json["state"]) == (200, "RETURNED"), returned.json
    assert returned.json["instance"]["paused_since"] is not None
    blocked = approve(people["fc"], path, "f-2", 1)
    assert (blocked.status_code, blocked.json["reason_code"]) == (409, "INSTANCE_RETURNED")
    clock.now += timedelta(hours=1)
    services.approvals.sweep()
    assert admin.get(path).json["state"] == "RETURNED"
    revised = people["ann"].post(
        f"{path}/revise", {"command_id": "v-2", "material_version": 2, "reason": "补发票"}
    )
    assert (revised.status_code, revised.json["state"]) == (200, "WAITING_REVIEW"), revised.json
    shown = admin.get(path).json
    assert (shown["state"], shown["current_level"], shown["paused_since"]) == (
        "WAITING_REVIEW",
        back_to,
        None,
    )
    assert datetime.fromisoformat(shown["review_deadline_at"]) == deadline + timedelta(hours=1)
    assert shown["pauses"][0]["kind"] == "return"
    assert {t["level"] for t in shown["tasks"] if t["state"] == "OPEN"} == {back_to}
    stale = approve(people["lee" if back_to == 1 else "fc"], path, "f-3", 1)
    assert (stale.status_code, stale.json["outcome"]) == (409, "STALE_MATERIAL")
    if back_to == 1:
        assert approve(people["lee"], path, "l-2", 2).json["instance"]["current_level"] == 2
    assert approve(people["fa"], path, "f-4", 2).json["outcome"] == "VOTED"
    assert approve(people["fc"], path, "f-5", 2).json["state"] == "APPROVED"
    kinds = [e["type"] for e in admin.get(f"{path}/timeline").json["items"]]
    assert kinds.count("ApprovalInstance.Returned") == kinds.count("ApprovalInstance.Revised") == 1


def claimable(reviewer: Api) -> list[str]:
    answer = reviewer.get("/api/tasks?scope=claimable")
    assert answer.status_code == 200, answer.json
    assert answer.json["counts"]["claimable"] == len(answer.json["items"])
    return [item["instance_id"] for item in answer.json["items"]]


def test_a_countersign_level_is_in_a_reviewers_inbox_once_until_they_take_a_task(
    admin: Api, people: dict[str, Api]
) -> None:
    """Two open tasks on a 2-of-3 level: each reviewer's claimable list shows the instance
    once, and not at all once they hold or decided one of its tasks."""
    instance = submit(people["ann"], definition(admin, "pay-inbox", [FINANCE]))
    path = f"/api/approvals/{instance['id']}"
    assert claimable(people["fa"]) == claimable(people["fb"]) == [instance["id"]]
    people["fa"].post(f"{path}/claim", {"command_id": "c-fa"})
    assert claimable(people["fa"]) == []
    assert claimable(people["fb"]) == [instance["id"]]
    assert approve(people["fa"], path, "a-fa", 1).json["outcome"] == "VOTED"
    assert claimable(people["fa"]) == []
    assert claimable(people["fc"]) == [instance["id"]]
