"""People in the approval over HTTP, on both stores: reviewers, claim, reject with a comment."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import account, assert_problem
from tests.support import Api


@pytest.fixture
def people(admin: Api) -> dict[str, Api]:
    return {
        name: account(admin, name, [role])
        for name, role in [
            ("ann", "requester"),
            ("bo", "operator"),
            ("cy", "operator"),
            ("dee", "operator"),
        ]
    }


@pytest.fixture
def instance(admin: Api, people: dict[str, Api]) -> dict[str, Any]:
    """Ann's instance of a definition reviewed by bo and cy."""
    created = admin.post(
        "/api/definitions",
        {
            "key": "account-opening",
            "name": "开户审批",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": {"accounts": ["bo", "cy"]},
        },
    )
    assert created.status_code == 201, created.json
    assert created.json["reviewers"] == {
        "accounts": ["bo", "cy"],
        "groups": [],
        "roles": [],
        "applicant_leader": False,
    }
    admin.post(f"/api/definitions/{created.json['id']}/publish")
    submitted = people["ann"].post(
        "/api/approvals",
        {
            "command_id": "s-1",
            "definition_id": created.json["id"],
            "title": "开户：星河公司",
            "material_version": 1,
        },
    )
    assert submitted.status_code == 201, submitted.json
    return submitted.json  # type: ignore[no-any-return]


def test_reviewers_claim_and_reject_with_a_comment(
    admin: Api, people: dict[str, Api], instance: dict[str, Any]
) -> None:
    path = f"/api/approvals/{instance['id']}"
    assert instance["tasks"][0]["candidates"] == ["bo", "cy"]
    outsider = people["dee"].post(f"{path}/approve", {"command_id": "d-1", "material_version": 1})
    assert (outsider.status_code, outsider.json["code"]) == (403, "NOT_A_REVIEWER")
    claimed = people["bo"].post(f"{path}/claim", {"command_id": "c-1"})
    assert claimed.status_code == 200, claimed.json
    assert claimed.json["instance"]["tasks"][0]["assignee_id"] == "bo"
    other = people["cy"].post(f"{path}/approve", {"command_id": "a-1", "material_version": 1})
    assert (other.status_code, other.json["outcome"]) == (409, "CLAIMED_BY_OTHER")
    assert other.json["reason_params"] == {"assignee": "bo"}
    silent = people["bo"].post(f"{path}/reject", {"command_id": "r-1", "material_version": 1})
    assert (silent.status_code, list(silent.json["errors"])) == (422, ["comment"])
    rejected = people["bo"].post(
        f"{path}/reject", {"command_id": "r-2", "material_version": 1, "comment": "缺少营业执照"}
    )
    assert (rejected.status_code, rejected.json["state"]) == (200, "REJECTED")
    late = people["bo"].post(f"{path}/approve", {"command_id": "a-2", "material_version": 1})
    assert (late.status_code, late.json["outcome"]) == (409, "CONFLICT")
    read = admin.get(path).json
    assert read["comments"] == [
        {"author": "bo", "text": "缺少营业执照", "at": read["decided_at"], "command": "reject"}
    ]
    assert read["tasks"][0]["state"] == "CLOSED"
    outcomes = [
        (e["actor"], e["outcome"], e["reason_code"])
        for e in admin.get(f"{path}/timeline").json["items"][1:]
    ]
    assert outcomes == [
        ("dee", "FORBIDDEN", "NOT_A_REVIEWER"),
        ("bo", "CLAIMED", "CLAIMED_IN_TIME"),
        ("cy", "CLAIMED_BY_OTHER", "CLAIMED_BY_OTHER"),
        ("bo", "REJECTED", "REJECTED_IN_TIME"),
        ("bo", "CONFLICT", "ALREADY_DECIDED"),
    ]


def test_the_assignee_hands_the_task_over_and_the_applicant_comments(
    admin: Api, people: dict[str, Api], instance: dict[str, Any]
) -> None:
    path = f"/api/approvals/{instance['id']}"
    people["bo"].post(f"{path}/claim", {"command_id": "c-1"})
    stranger = people["cy"].post(
        f"{path}/reassign", {"command_id": "x-1", "assignee_id": "cy", "reason": "我来"}
    )
    assert stranger.status_code == 403
    moved = people["bo"].post(
        f"{path}/reassign", {"command_id": "m-1", "assignee_id": "cy", "reason": "休假"}
    )
    assert moved.json["instance"]["tasks"][0]["assignee_id"] == "cy"
    noted = people["ann"].post(f"{path}/comments", {"command_id": "n-1", "comment": "已补交"})
    assert (noted.status_code, noted.json["outcome"]) == (200, "COMMENTED")
    approved = people["cy"].post(
        f"{path}/approve", {"command_id": "a-1", "material_version": 1, "comment": "同意"}
    )
    assert approved.json["state"] == "APPROVED"
    texts = [(c["author"], c["text"]) for c in admin.get(path).json["comments"]]
    assert texts == [("ann", "已补交"), ("cy", "同意")]


def test_a_reassignment_names_its_ineligible_target_with_its_other_errors(
    admin: Api, people: dict[str, Api], instance: dict[str, Any]
) -> None:
    path = f"/api/approvals/{instance['id']}"
    people["bo"].post(f"{path}/claim", {"command_id": "c-1"})
    recorded = len(admin.get(f"{path}/timeline").json["items"])
    refused = people["bo"].post(
        f"{path}/reassign", {"command_id": "m-1", "assignee_id": "dee", "reason": ""}
    )
    errors = assert_problem(refused, 422, "VALIDATION_FAILED")["errors"]
    assert set(errors) == {"assignee_id", "reason"}
    assert len(admin.get(f"{path}/timeline").json["items"]) == recorded


def test_a_definition_keeps_its_reviewers_through_a_put_that_leaves_them_out(
    admin: Api, instance: dict[str, Any]
) -> None:
    definition = admin.get(f"/api/definitions/{instance['definition_id']}").json
    put = admin.put(
        f"/api/definitions/{definition['id']}",
        {
            "name": "开户",
            "external": False,
            "review_window_seconds": 7200,
            "schedule_presets": [],
            "allow_self_approval": False,
            "version": definition["version"],
        },
    )
    assert put.status_code == 200, put.json
    assert put.json["reviewers"]["accounts"] == ["bo", "cy"]


def tasks_of(api: Api, scope: str) -> tuple[list[str], dict[str, int]]:
    answer = api.get(f"/api/tasks?scope={scope}")
    assert answer.status_code == 200, answer.json
    return [item["instance_id"] for item in answer.json["items"]], answer.json["counts"]


def test_my_tasks_follow_the_task_from_claimable_to_assigned_to_decided(
    people: dict[str, Api], instance: dict[str, Any]
) -> None:
    mine = [instance["id"]]
    assert tasks_of(people["bo"], "claimable") == (
        mine,
        {"assigned": 0, "claimable": 1, "decided": 0},
    )
    assert tasks_of(people["dee"], "claimable")[0] == []
    path = f"/api/approvals/{instance['id']}"
    people["bo"].post(f"{path}/claim", {"command_id": "c-1"})
    assigned = people["bo"].get("/api/tasks").json
    assert [i["assignee_id"] for i in assigned["items"]] == ["bo"]
    assert assigned["items"][0]["time_left_seconds"] > 0
    assert tasks_of(people["cy"], "claimable")[0] == []
    people["bo"].post(
        f"{path}/reject", {"command_id": "r-1", "material_version": 1, "comment": "不符合条件"}
    )
    assert tasks_of(people["bo"], "assigned") == ([], {"assigned": 0, "claimable": 0, "decided": 1})
    decided = people["bo"].get("/api/tasks?scope=decided").json["items"]
    assert [(i["outcome"], i["time_left_seconds"]) for i in decided] == [("REJECTED", None)]


def test_a_scope_that_does_not_exist_is_refused(people: dict[str, Api]) -> None:
    answer = people["bo"].get("/api/tasks?scope=everyone")
    assert (answer.status_code, list(answer.json["errors"])) == (422, ["scope"])


def test_a_group_reviews_and_the_applicants_leader_is_found_two_levels_up(
    admin: Api, people: dict[str, Api]
) -> None:
    for extra, role in (("lead", "operator"), ("boss", "operator")):
        account(admin, extra, [role])
    groups = [
        {"key": "risk", "name": "风控部", "members": ["boss"], "leader_id": "boss"},
        {
            "key": "risk-ops",
            "name": "风控运营",
            "members": ["bo", "cy", "ann", "lead"],
            "leader_id": "ann",
            "parent_key": "risk",
        },
    ]
    for group in groups:
        made = admin.post("/api/groups", group)
        assert made.status_code == 201, made.json
    unknown = admin.post(
        "/api/definitions",
        {
            "key": "x",
            "name": "x",
            "external": False,
            "review_window_seconds": 60,
            "reviewers": {"groups": ["nope"]},
        },
    )
    assert list(unknown.json["errors"]) == ["reviewers.groups"]
    created = admin.post(
        "/api/definitions",
        {
            "key": "by-group",
            "name": "额度审批",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": {"groups": ["risk-ops"], "applicant_leader": True},
        },
    ).json
    admin.post(f"/api/definitions/{created['id']}/publish")
    submitted = (
        people["ann"]
        .post(
            "/api/approvals",
            {
                "command_id": "g-1",
                "definition_id": created["id"],
                "title": "额度",
                "material_version": 1,
            },
        )
        .json
    )
    # ann leads risk-ops: her leader is risk's, boss; ann herself may not approve her own
    assert submitted["tasks"][0]["candidates"] == ["bo", "boss", "cy", "lead"]
    path = f"/api/approvals/{submitted['id']}"
    outsider = people["dee"].post(f"{path}/approve", {"command_id": "d", "material_version": 1})
    assert (outsider.status_code, outsider.json["code"]) == (403, "NOT_A_REVIEWER")
    boss = admin.post("/api/accounts/boss/tokens").json["token"]
    approved = Api(admin.client, boss).post(
        f"{path}/approve", {"command_id": "b", "material_version": 1}
    )
    assert approved.json["state"] == "APPROVED"
    timeline = admin.get(f"{path}/timeline").json["items"]
    assert [e["data"].get("admission") for e in timeline if e["actor"] == "boss"] == [
        {"rule": "applicant_leader"}
    ]


def test_a_new_definition_names_its_reviewers_and_one_escalation_target(admin: Api) -> None:
    body = {"key": "k", "name": "K", "external": False, "review_window_seconds": 3600}
    unnamed = admin.post("/api/definitions", body)
    assert (unnamed.status_code, list(unnamed.json["errors"])) == (422, ["reviewers"])
    nobody = admin.post("/api/definitions", {**body, "reviewers": {}})
    assert "name at least one reviewer" in nobody.json["errors"]["reviewers"][0]
    both = {"after_seconds": 60, "account_id": "root", "group_leader_of": "ops"}
    unknown = {"after_seconds": 60, "group_leader_of": "nowhere"}
    missing = "escalation.group_leader_of"  # every wrong field at once
    for escalation, fields in [(both, ["escalation", missing]), (unknown, [missing])]:
        refused = admin.post(
            "/api/definitions",
            {**body, "reviewers": {"roles": ["operator"]}, "escalation": escalation},
        )
        assert (refused.status_code, sorted(refused.json["errors"])) == (422, fields)
    admin.post("/api/groups", {"key": "ops", "name": "运营部", "members": ["root"]})
    created = admin.post(
        "/api/definitions",
        {
            **body,
            "reviewers": {"roles": ["operator"]},
            "escalation": {**unknown, "group_leader_of": "ops"},
        },
    )
    assert created.status_code == 201, created.json
    assert created.json["escalation"] == {
        "after_seconds": 60,
        "account_id": None,
        "group_leader_of": "ops",
        "mode": "reassign",
    }
