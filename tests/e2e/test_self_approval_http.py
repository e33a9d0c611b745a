"""Nobody approves what they asked for (issue 11, item 4): the attack over HTTP, and its parts."""

from __future__ import annotations

from typing import Any

import pytest

from cronledger.application.launches import Worker
from cronledger.application.services import Services
from tests.e2e.helpers import account, assert_problem, log_end, submit, with_reviewer
from tests.support import DECIDERS, Api, FakeClock

SUBMIT = "workflow:approval:submit"


@pytest.fixture
def operator(admin: Api) -> Api:
    return account(admin, "olga", ["operator"])


def set_roles(admin: Api, account_id: str, roles: list[str]) -> None:
    version = admin.get(f"/api/accounts/{account_id}").json["version"]
    changed = admin.put(
        f"/api/accounts/{account_id}", {"name": account_id, "roles": roles, "version": version}
    )
    assert changed.status_code == 200


def approve(api: Api, instance_id: str, command_id: str) -> Any:
    return api.post(
        f"/api/approvals/{instance_id}/approve", {"command_id": command_id, "material_version": 1}
    )


def test_an_initiator_must_be_allowed_to_submit(
    admin: Api,
    operator: Api,
    body: dict[str, Any],
    services: Services,
) -> None:
    account(admin, "audrey", ["auditor"])
    before = log_end(services)
    refused = operator.post("/api/workflows/schedules", {**body, "initiator_id": "audrey"})
    errors = assert_problem(refused, 422, "VALIDATION_FAILED")["errors"]
    assert list(errors) == ["initiator_id"]
    assert f"account audrey lacks {SUBMIT}" in errors["initiator_id"][0]
    assert log_end(services) == before
    account(admin, "rita", ["requester"])
    created = operator.post("/api/workflows/schedules", {**body, "initiator_id": "rita"}).json
    path = f"/api/workflows/schedules/{created['id']}"
    edited = operator.put(path, {**body, "initiator_id": "audrey", "version": 1})
    assert "initiator_id" in assert_problem(edited, 422, "VALIDATION_FAILED")["errors"]
    assert operator.get(path).json["initiator_id"] == "rita"


def test_the_operator_cannot_approve_what_their_schedule_launched(
    admin: Api,
    operator: Api,
    body: dict[str, Any],
    services: Services,
) -> None:
    account(admin, "rita", ["requester"])
    schedule = operator.post("/api/workflows/schedules", {**body, "initiator_id": "rita"}).json
    operator.post(f"/api/workflows/schedules/{schedule['id']}/run", {"request_id": "r1"})
    assert Worker.of(services).poll().succeeded == 1
    services.projector.catch_up()  # as the projections loop does after the worker's writes
    (instance,) = admin.get("/api/approvals").json["items"]
    assert (instance["applicant_id"], instance["origin"]["saved_by"]) == ("rita", "olga")
    assert instance["allow_self_approval"] is False

    refused = approve(operator, instance["id"], "mine")
    assert refused.status_code == 409
    assert (refused.json["outcome"], refused.json["state"], refused.json["replayed"]) == (
        "SELF_APPROVAL",
        "WAITING_REVIEW",
        False,
    )
    assert refused.json["approval"]["state"] == "WAITING_REVIEW"
    items = admin.get(f"/api/approvals/{instance['id']}/timeline").json["items"]
    rejected = items[-1]
    assert (rejected["type"], rejected["actor"], rejected["command_id"]) == (
        "ApprovalInstance.CommandRejected",
        "olga",
        "mine",
    )
    assert rejected["outcome"] == "SELF_APPROVAL"
    assert "olga last saved the schedule" in rejected["reason"]
    again = approve(operator, instance["id"], "mine")
    assert (again.status_code, again.json["outcome"], again.json["replayed"]) == (
        409,
        "SELF_APPROVAL",
        True,
    )
    other = account(admin, "otto", ["operator"])
    approved = approve(other, instance["id"], "theirs")
    assert (approved.status_code, approved.json["outcome"]) == (200, "APPROVED")


def definition_with(admin: Api, key: str, allow_self_approval: bool) -> str:
    with_reviewer(admin)
    created = admin.post(
        "/api/definitions",
        {
            "key": key,
            "name": key,
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
            "allow_self_approval": allow_self_approval,
        },
    )
    assert created.json["allow_self_approval"] is allow_self_approval
    admin.post(f"/api/definitions/{created.json['id']}/publish")
    return str(created.json["id"])


def test_the_applicant_approves_only_where_the_definition_allows_it(admin: Api) -> None:
    strict = submit(admin, definition_with(admin, "strict", False), material_version=1).json
    refused = approve(admin, strict["id"], "a")
    assert (refused.status_code, refused.json["outcome"]) == (409, "SELF_APPROVAL")
    lenient = submit(admin, definition_with(admin, "lenient", True), "s2", material_version=1).json
    assert lenient["allow_self_approval"] is True
    approved = approve(admin, lenient["id"], "a")
    assert (approved.status_code, approved.json["outcome"]) == (200, "APPROVED")
    withdrawn = admin.post(f"/api/approvals/{strict['id']}/withdraw", {"command_id": "w"})
    assert (withdrawn.status_code, withdrawn.json["outcome"]) == (200, "WITHDRAWN")


def test_allow_self_approval_defaults_to_false_and_is_a_strict_boolean(admin: Api) -> None:
    fields = {
        "name": "K",
        "external": False,
        "review_window_seconds": 60,
        "reviewers": DECIDERS,
    }
    created = admin.post("/api/definitions", {**fields, "key": "k"}).json
    assert created["allow_self_approval"] is False
    path = f"/api/definitions/{created['id']}"
    fields = {**fields, "schedule_presets": []}
    changed = admin.put(path, {**fields, "allow_self_approval": True, "version": 1}).json
    assert changed["allow_self_approval"] is True
    assert admin.get(path).json["allow_self_approval"] is True
    left_out = assert_problem(admin.put(path, {**fields, "version": 2}), 422, "VALIDATION_FAILED")
    assert list(left_out["errors"]) == ["allow_self_approval"]
    reset = admin.patch(path, {"allow_self_approval": None}).json
    assert reset["allow_self_approval"] is False
    loose = admin.post("/api/definitions", {**fields, "key": "l", "allow_self_approval": "yes"})
    assert "allow_self_approval" in assert_problem(loose, 422, "VALIDATION_FAILED")["errors"]


def test_a_run_fails_while_its_initiator_may_not_submit(
    admin: Api,
    operator: Api,
    body: dict[str, Any],
    services: Services,
    clock: FakeClock,
) -> None:
    account(admin, "rita", ["requester"])
    schedule = operator.post("/api/workflows/schedules", {**body, "initiator_id": "rita"}).json
    path = f"/api/workflows/schedules/{schedule['id']}"
    set_roles(admin, "rita", ["auditor"])
    run = operator.post(f"{path}/run", {"request_id": "r1"})
    assert "initiator_id" in assert_problem(run, 422, "VALIDATION_FAILED")["errors"]
    set_roles(admin, "rita", ["requester"])
    run = operator.post(f"{path}/run", {"request_id": "r1"}).json
    set_roles(admin, "rita", ["auditor"])
    Worker.of(services).poll()
    services.projector.catch_up()  # as the projections loop does after the worker's writes
    failed = operator.get(f"{path}/runs/{run['id']}").json
    assert (failed["status"], failed["last_error"]["code"]) == (
        "RETRY_WAIT",
        "INITIATOR_NOT_PERMITTED",
    )
    assert SUBMIT in failed["last_error"]["message"]
    set_roles(admin, "rita", ["requester"])
    clock.advance(30)
    Worker.of(services).poll()
    services.projector.catch_up()  # as the projections loop does after the worker's writes
    assert operator.get(f"{path}/runs/{run['id']}").json["status"] == "SUCCEEDED"
