"""Resubmitting a decided instance and cancelling an approved one, over HTTP on both stores
(docs/approvals.md#resubmit-and-cancel)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from cronledger.application.services import Services
from tests.e2e.helpers import account, assert_problem, log_end, submit
from tests.support import DECIDERS, Api, FakeClock


@pytest.fixture
def requester(admin: Api) -> Api:
    return account(admin, "sales", ["requester"])


@pytest.fixture
def refund_id(admin: Api, definition_id: str) -> str:
    """A published cancellation definition (refunds), named by the onboarding definition."""
    created = admin.post(
        "/api/definitions",
        {
            "key": "refund",
            "name": "Refund",
            "external": False,
            "review_window_seconds": 600,
            "reviewers": DECIDERS,
        },
    ).json
    admin.post(f"/api/definitions/{created['id']}/publish")
    current = admin.get(f"/api/definitions/{definition_id}").json
    named = admin.patch(
        f"/api/definitions/{definition_id}",
        {"cancellation_definition": "refund"},
        headers={"If-Match": f'"{current["version"]}"'},
    )
    assert named.status_code == 200, named.json
    assert named.json["cancellation_definition"] == created["id"]
    return str(created["id"])


def _approved(admin: Api, requester: Api, definition_id: str, command_id: str = "s1") -> str:
    instance = submit(requester, definition_id, command_id).json
    approved = admin.post(
        f"/api/approvals/{instance['id']}/approve", {"command_id": "ok", "material_version": 2}
    )
    assert approved.status_code == 200, approved.json
    return str(instance["id"])


def _cancel(api: Api, instance_id: str, command_id: str = "cancel-1") -> Any:
    return api.post(
        f"/api/approvals/{instance_id}/request-cancellation",
        {"command_id": command_id, "reason": "the customer changed their mind"},
    )


def test_a_resubmitted_expired_instance_links_both_ways_and_stays_expired(
    requester: Api, admin: Api, definition_id: str, services: Services, clock: FakeClock
) -> None:
    original = submit(requester, definition_id).json
    clock.advance(3601)
    services.approvals.sweep()
    path = f"/api/approvals/{original['id']}/resubmit"
    body = {"command_id": "again-1", "reason": "sent too late", "material_version": 3}
    resubmitted = requester.post(path, body)
    assert resubmitted.status_code == 201, resubmitted.json
    new = resubmitted.json
    assert (new["state"], new["resubmits"], new["material_version"]) == (
        "WAITING_REVIEW",
        original["id"],
        3,
    )
    assert (new["title"], new["form_data"]) == (original["title"], original["form_data"])
    assert new["review_deadline_at"] == "2026-10-01T11:00:01Z"  # a new deadline
    after = admin.get(f"/api/approvals/{original['id']}").json
    assert (after["state"], after["resubmitted_as"]) == ("EXPIRED", new["id"])
    end = log_end(services)
    again = requester.post(path, body)
    assert (again.status_code, again.json["id"]) == (201, new["id"])
    assert again.headers["Idempotent-Replayed"] == "true"
    assert log_end(services) == end
    second = requester.post(path, {**body, "command_id": "again-2"})
    refused = assert_problem(second, 409, "COMMAND_REJECTED")
    assert (refused["reason_code"], refused["reason_params"]) == (
        "ALREADY_RESUBMITTED",
        {"instance_id": new["id"]},
    )
    items = admin.get(f"/api/approvals/{original['id']}/timeline").json["items"]
    assert [i["type"] for i in items][-2:] == [
        "ApprovalInstance.Resubmitted",
        "ApprovalInstance.CommandRejected",
    ]


def test_only_the_applicant_resubmits_and_only_a_decided_instance(
    requester: Api, admin: Api, definition_id: str
) -> None:
    waiting = submit(requester, definition_id).json
    path = f"/api/approvals/{waiting['id']}/resubmit"
    body = {"command_id": "r", "reason": "why", "material_version": 2}
    refused = assert_problem(requester.post(path, body), 409, "COMMAND_REJECTED")
    assert (refused["reason_code"], refused["state"]) == ("NOT_RESUBMITTABLE", "WAITING_REVIEW")
    requester.post(f"/api/approvals/{waiting['id']}/withdraw", {"command_id": "w"})
    assert_problem(admin.post(path, {**body, "command_id": "r2"}), 403, "FORBIDDEN")
    assert_problem(requester.post(path, {"command_id": "r3"}), 422, "VALIDATION_FAILED")
    items = admin.get(f"/api/approvals/{waiting['id']}/timeline").json["items"]
    refusals = [i for i in items if i["type"] == "ApprovalInstance.CommandRejected"]
    assert [i["reason_code"] for i in refusals] == [
        "NOT_RESUBMITTABLE",
        "RESUBMIT_BY_APPLICANT_ONLY",
    ]
    assert requester.post(path, {**body, "command_id": "r4"}).status_code == 201


def test_an_approved_cancellation_marks_the_original_cancelled_and_it_stays_approved(
    requester: Api, admin: Api, definition_id: str, refund_id: str
) -> None:
    original = _approved(admin, requester, definition_id)
    asked = _cancel(requester, original)
    assert asked.status_code == 201, asked.json
    cancellation = asked.json
    assert (cancellation["definition_id"], cancellation["cancellation_of"]) == (
        refund_id,
        original,
    )
    assert cancellation["applicant_id"] == "sales"
    requested = admin.get(f"/api/approvals/{original}").json
    assert requested["state"] == "APPROVED"
    assert requested["cancellation"]["state"] == "REQUESTED"
    assert requested["cancellation"]["instance_id"] == cancellation["id"]
    assert requested["cancellation"]["reason"] == "the customer changed their mind"
    pending = assert_problem(_cancel(requester, original, "cancel-2"), 409, "COMMAND_REJECTED")
    assert pending["reason_code"] == "CANCELLATION_PENDING"
    approved = admin.post(
        f"/api/approvals/{cancellation['id']}/approve",
        {"command_id": "ok", "material_version": 1},
    )
    assert approved.status_code == 200, approved.json
    settled = admin.get(f"/api/approvals/{original}").json
    assert (settled["state"], settled["cancellation"]["state"]) == ("APPROVED", "CANCELLED")
    assert settled["cancellation"]["outcome"] == "APPROVED"
    done = assert_problem(_cancel(requester, original, "cancel-3"), 409, "COMMAND_REJECTED")
    assert done["reason_code"] == "ALREADY_CANCELLED"
    items = admin.get(f"/api/approvals/{original}/timeline").json["items"]
    assert "ApprovalInstance.CancellationSettled" in [i["type"] for i in items]


def test_a_rejected_cancellation_is_refused_and_may_be_asked_again(
    requester: Api, admin: Api, definition_id: str, refund_id: str
) -> None:
    original = _approved(admin, requester, definition_id)
    first = _cancel(requester, original).json
    rejected = admin.post(
        f"/api/approvals/{first['id']}/reject",
        {"command_id": "no", "material_version": 1, "comment": "already shipped"},
    )
    assert rejected.status_code == 200, rejected.json
    refused = admin.get(f"/api/approvals/{original}").json
    assert (refused["state"], refused["cancellation"]["state"]) == ("APPROVED", "REFUSED")
    assert refused["cancellation"]["outcome"] == "REJECTED"
    again = _cancel(requester, original, "cancel-2")
    assert again.status_code == 201
    assert admin.get(f"/api/approvals/{original}").json["cancellation"] == {
        **refused["cancellation"],
        "state": "REQUESTED",
        "instance_id": again.json["id"],
        "settled_at": None,
        "outcome": None,
    }


def test_an_expired_cancellation_is_refused(
    requester: Api,
    admin: Api,
    definition_id: str,
    refund_id: str,
    services: Services,
    clock: FakeClock,
) -> None:
    original = _approved(admin, requester, definition_id)
    _cancel(requester, original)
    clock.advance(601)
    assert services.approvals.sweep() == 1
    cancellation = admin.get(f"/api/approvals/{original}").json["cancellation"]
    assert (cancellation["state"], cancellation["outcome"]) == ("REFUSED", "EXPIRED")


def test_cancellation_needs_a_definition_and_an_approved_instance(
    requester: Api, admin: Api, definition_id: str
) -> None:
    waiting = submit(requester, definition_id).json
    refused = assert_problem(_cancel(requester, waiting["id"]), 409, "COMMAND_REJECTED")
    assert refused["reason_code"] == "NOT_APPROVED"
    original = _approved(admin, requester, definition_id, "s2")
    none = assert_problem(_cancel(requester, original), 409, "COMMAND_REJECTED")
    assert none["reason_code"] == "NO_CANCELLATION_DEFINITION"
    assert "cancellation definition" in none["detail"]
    assert_problem(_cancel(admin, original, "by-admin"), 403, "FORBIDDEN")


def test_a_definition_cannot_cancel_with_itself_or_a_missing_one(
    admin: Api, definition_id: str
) -> None:
    for named in ("onboarding", "nothing"):
        current = admin.get(f"/api/definitions/{definition_id}").json
        answer = admin.patch(
            f"/api/definitions/{definition_id}",
            {"cancellation_definition": named},
            headers={"If-Match": f'"{current["version"]}"'},
        )
        errors = assert_problem(answer, 422, "VALIDATION_FAILED")["errors"]
        assert "cancellation_definition" in errors


def _together(*calls: Callable[[], Any]) -> list[Any]:
    """Each call on its own thread, started together; their answers in order."""
    barrier = threading.Barrier(len(calls))
    answers: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        barrier.wait()
        answers[index] = calls[index]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def _own_client(api: Api) -> Api:
    return Api(api.client.application.test_client(), api.token)


def test_two_concurrent_cancellation_requests_one_wins_the_other_is_recorded(
    requester: Api, admin: Api, definition_id: str, refund_id: str
) -> None:
    original = _approved(admin, requester, definition_id)
    one, two = _own_client(requester), _own_client(requester)
    answers = _together(lambda: _cancel(one, original, "a"), lambda: _cancel(two, original, "b"))
    assert sorted(a.status_code for a in answers) == [201, 409]
    loser = next(a for a in answers if a.status_code == 409).json
    winner = next(a for a in answers if a.status_code == 201).json
    assert (loser["reason_code"], loser["reason_params"]) == (
        "CANCELLATION_PENDING",
        {"instance_id": winner["id"]},
    )
    items = admin.get(f"/api/approvals/{original}/timeline").json["items"]
    assert [i["type"] for i in items][-2:] == [
        "ApprovalInstance.CancellationRequested",
        "ApprovalInstance.CommandRejected",
    ]


def test_a_cancellation_request_and_a_late_callback_each_get_one_outcome(
    requester: Api, admin: Api, definition_id: str, refund_id: str
) -> None:
    original = _approved(admin, requester, definition_id)
    callback = {
        "command_id": "cb-late",
        "contract_id": "C-9",
        "material_version": 2,
        "occurred_at": "2026-10-01T17:58:00+08:00",
        "source": "esign",
    }
    signer, asker = _own_client(admin), _own_client(requester)
    late, asked = _together(
        lambda: signer.post(f"/api/approvals/{original}/callbacks/sign", callback),
        lambda: _cancel(asker, original),
    )
    assert asked.status_code == 201, asked.json
    assert (late.status_code, late.json["outcome"]) == (409, "LATE_OR_CONFLICT")
    items = admin.get(f"/api/approvals/{original}/timeline").json["items"]
    outcomes = {i["command_id"]: i["outcome"] for i in items if i.get("command_id")}
    assert (outcomes["cb-late"], outcomes["cancel-1"]) == (
        "LATE_OR_CONFLICT",
        "CANCELLATION_REQUESTED",
    )
    after = admin.get(f"/api/approvals/{original}").json
    assert (after["state"], after["cancellation"]["state"]) == ("APPROVED", "REQUESTED")


def test_resubmits_and_cancellation_requests_are_operations(
    requester: Api, admin: Api, definition_id: str, refund_id: str
) -> None:
    withdrawn = submit(requester, definition_id, "w").json
    requester.post(f"/api/approvals/{withdrawn['id']}/withdraw", {"command_id": "w"})
    body = {"command_id": "r", "reason": "补充材料", "material_version": 3}
    new = requester.post(f"/api/approvals/{withdrawn['id']}/resubmit", body).json
    original = _approved(admin, requester, definition_id)
    cancellation = _cancel(requester, original).json
    (resubmitted,) = admin.get("/api/audit/operations?kind=approval.resubmitted").json["items"]
    assert (resubmitted["actor"], resubmitted["aggregate_id"]) == ("sales", withdrawn["id"])
    assert resubmitted["summary"] == (
        f"'Open account' resubmitted as instance {new['id']}: 补充材料"
    )
    (asked,) = admin.get("/api/audit/operations?kind=approval.cancellation_requested").json["items"]
    assert asked["summary"] == (
        f"cancellation of 'Open account' requested as instance {cancellation['id']}: "
        "the customer changed their mind"
    )


def test_a_resubmit_of_an_unpublished_definition_is_refused_and_records_nothing(
    requester: Api, admin: Api, definition_id: str, services: Services
) -> None:
    withdrawn = submit(requester, definition_id).json
    requester.post(f"/api/approvals/{withdrawn['id']}/withdraw", {"command_id": "w"})
    admin.post(f"/api/definitions/{definition_id}/unpublish")
    end = log_end(services)
    body = {"command_id": "r", "reason": "again", "material_version": 2}
    refused = requester.post(f"/api/approvals/{withdrawn['id']}/resubmit", body)
    assert "definition_id" in assert_problem(refused, 422, "VALIDATION_FAILED")["errors"]
    assert log_end(services) == end
    after = admin.get(f"/api/approvals/{withdrawn['id']}").json
    assert (after["state"], after["resubmitted_as"]) == ("WITHDRAWN", None)
