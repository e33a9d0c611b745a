"""Approval instances over HTTP: the contract's answers, permissions and time rules."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from cronledger.application.services import Services
from tests.e2e.helpers import account, assert_problem, log_end, submit
from tests.support import Api, FakeClock


@pytest.fixture
def requester(admin: Api) -> Api:
    return account(admin, "sales", ["requester"])


def test_approve_before_the_deadline_and_after_it(
    admin: Api, requester: Api, definition_id: str, clock: FakeClock
) -> None:
    soon = submit(requester, definition_id, "a", review_deadline_at="2026-10-01T09:00:05Z").json
    later = submit(requester, definition_id, "b", review_deadline_at="2026-10-01T09:00:05Z").json
    clock.advance(2)
    approved = admin.post(
        f"/api/approvals/{soon['id']}/approve", {"command_id": "ok", "material_version": 2}
    )
    assert approved.status_code == 200
    assert (approved.json["outcome"], approved.json["state"], approved.json["replayed"]) == (
        "APPROVED",
        "APPROVED",
        False,
    )
    clock.advance(5)
    late = admin.post(
        f"/api/approvals/{later['id']}/approve", {"command_id": "late", "material_version": 2}
    )
    assert late.status_code == 409
    assert (late.json["outcome"], late.json["state"]) == ("EXPIRED", "EXPIRED")
    assert late.json["approval"]["decided_at"] == "2026-10-01T09:00:07Z"
    for instance, at in ((soon, "2026-10-01T09:00:02Z"), (later, "2026-10-01T09:00:07Z")):
        items = admin.get(f"/api/approvals/{instance['id']}/timeline").json["items"]
        assert next(i["type"] for i in items) == "ApprovalInstance.Submitted"
        assert (items[-1]["at"], items[-1]["actor"], items[-1]["command_id"]) == (
            at,
            "root",
            "ok" if instance is soon else "late",
        )


def test_submission_answers_the_instance(requester: Api, definition_id: str) -> None:
    created = submit(requester, definition_id)
    assert created.status_code == 201
    body = created.json
    assert (body["state"], body["applicant_id"], body["material_version"]) == (
        "WAITING_REVIEW",
        "sales",
        2,
    )
    assert body["review_deadline_at"] == "2026-10-01T10:00:00Z"
    assert body["deadline_policy"] == {
        "source": "definition",
        "review_window_seconds": 3600,
        "definition_revision": 1,
        "rule_version": 1,
    }
    assert (body["origin"], body["observations"], body["version"]) == (None, [], 1)
    assert (body["contract_id"], body["extensions"]) == (None, [])
    again = submit(requester, definition_id)
    assert (again.status_code, again.json["id"]) == (201, body["id"])
    assert again.headers["Idempotent-Replayed"] == "true"
    reused = submit(requester, definition_id, title="Other")
    assert_problem(reused, 409, "COMMAND_ID_REUSED")


def test_the_same_deadline_with_two_offsets_is_one_instant(
    requester: Api, definition_id: str
) -> None:
    beijing = submit(requester, definition_id, "cn", review_deadline_at="2026-10-01T18:00:00+08:00")
    utc = submit(requester, definition_id, "utc", review_deadline_at="2026-10-01T10:00:00Z")
    assert (
        beijing.json["review_deadline_at"]
        == utc.json["review_deadline_at"]
        == ("2026-10-01T10:00:00Z")
    )


def test_a_naive_timestamp_is_422_and_writes_nothing(
    requester: Api, services: Services, definition_id: str
) -> None:
    before = log_end(services)
    naive = submit(requester, definition_id, review_deadline_at="2026-10-01T18:00:00")
    assert "review_deadline_at" in assert_problem(naive, 422, "VALIDATION_FAILED")["errors"]
    assert log_end(services) == before


def test_deadlines_in_the_past_are_refused(requester: Api, definition_id: str) -> None:
    past = submit(requester, definition_id, review_deadline_at="2026-10-01T08:00:00Z")
    assert "review_deadline_at" in assert_problem(past, 422, "VALIDATION_FAILED")["errors"]


def test_reused_command_after_approval_replays_and_a_new_one_conflicts(
    admin: Api, requester: Api, definition_id: str, services: Services
) -> None:
    instance = submit(requester, definition_id).json
    path = f"/api/approvals/{instance['id']}/approve"
    first = admin.post(path, {"command_id": "approve-1", "material_version": 2})
    end = log_end(services)
    replay = admin.post(path, {"command_id": "approve-1", "material_version": 2})
    assert (replay.status_code, replay.json["outcome"], replay.json["replayed"]) == (
        200,
        "APPROVED",
        True,
    )
    assert log_end(services) == end
    assert_problem(
        admin.post(path, {"command_id": "approve-1", "material_version": 3}),
        409,
        "COMMAND_ID_REUSED",
    )
    second = admin.post(path, {"command_id": "approve-2", "material_version": 2})
    assert (second.status_code, second.json["outcome"]) == (409, "CONFLICT")
    assert first.json["instance"]["decided_at"] == second.json["approval"]["decided_at"]


def test_stale_material_is_409(admin: Api, requester: Api, definition_id: str) -> None:
    instance = submit(requester, definition_id).json
    stale = admin.post(
        f"/api/approvals/{instance['id']}/approve", {"command_id": "x", "material_version": 1}
    )
    assert (stale.status_code, stale.json["outcome"], stale.json["state"]) == (
        409,
        "STALE_MATERIAL",
        "WAITING_REVIEW",
    )


def test_withdraw_is_the_applicants_own(admin: Api, requester: Api, definition_id: str) -> None:
    instance = submit(requester, definition_id).json
    other = account(admin, "other", ["requester"])
    path = f"/api/approvals/{instance['id']}/withdraw"
    assert_problem(other.post(path, {"command_id": "w"}), 403, "FORBIDDEN")
    withdrawn = requester.post(path, {"command_id": "w"})
    assert (withdrawn.status_code, withdrawn.json["state"]) == (200, "WITHDRAWN")


def test_sign_callbacks_need_the_integration_role_and_are_observations(
    admin: Api, requester: Api, definition_id: str, clock: FakeClock
) -> None:
    instance = submit(requester, definition_id).json
    path = f"/api/approvals/{instance['id']}/callbacks/sign"
    callback = {
        "command_id": "cb-1",
        "contract_id": "C-9",
        "material_version": 2,
        "occurred_at": "2026-10-01T17:58:00+08:00",
        "source": "esign",
    }
    assert_problem(
        admin.post(f"/api/approvals/{instance['id']}/approve", {}), 422, "VALIDATION_FAILED"
    )
    assert_problem(requester.post(path, callback), 403, "FORBIDDEN")
    esign = account(admin, "esign", ["integration"])
    assert esign.post(path, callback).json["outcome"] == "OBSERVED"
    clock.advance(2 * 3600)
    late = esign.post(path, {**callback, "command_id": "cb-2"})
    assert (late.status_code, late.json["outcome"], late.json["state"]) == (
        409,
        "EXPIRED",
        "EXPIRED",
    )
    later = esign.post(path, {**callback, "command_id": "cb-3"})
    assert (later.status_code, later.json["outcome"]) == (409, "LATE_OR_CONFLICT")
    observations = admin.get(f"/api/approvals/{instance['id']}").json["observations"]
    assert [o["outcome"] for o in observations] == ["OBSERVED", "EXPIRED", "LATE_OR_CONFLICT"]
    assert observations[0]["occurred_at"] == "2026-10-01T09:58:00Z"
    assert observations[0]["recorded_at"] == "2026-10-01T09:00:00Z"


def test_extend_deadline(admin: Api, requester: Api, definition_id: str) -> None:
    instance = submit(requester, definition_id).json
    path = f"/api/approvals/{instance['id']}/extend-deadline"
    too_far = admin.post(
        path,
        {"command_id": "e0", "new_deadline_at": "2026-11-30T00:00:00Z", "reason": "customer asked"},
    )
    assert "new_deadline_at" in assert_problem(too_far, 422, "VALIDATION_FAILED")["errors"]
    extended = admin.post(
        path,
        {"command_id": "e1", "new_deadline_at": "2026-10-03T10:00:00Z", "reason": "customer asked"},
    )
    assert (extended.status_code, extended.json["outcome"]) == (200, "EXTENDED")
    assert extended.json["instance"]["review_deadline_at"] == "2026-10-03T10:00:00Z"
    assert_problem(
        requester.post(
            path, {"command_id": "e2", "reason": "x", "new_deadline_at": "2026-10-04T10:00:00Z"}
        ),
        403,
        "FORBIDDEN",
    )


def test_list_filter_and_tenants(
    admin: Api, requester: Api, definition_id: str, services: Services, client: FlaskClient
) -> None:
    first = submit(requester, definition_id, "one").json
    submit(requester, definition_id, "two")
    requester.post(f"/api/approvals/{first['id']}/withdraw", {"command_id": "w"})
    assert admin.get("/api/approvals").json["total"] == 2
    withdrawn = admin.get("/api/approvals?state=WITHDRAWN").json
    assert [i["id"] for i in withdrawn["items"]] == [first["id"]]
    assert_problem(admin.get("/api/approvals?state=DONE"), 422, "VALIDATION_FAILED")
    globex = Api(client, services.directory.bootstrap("globex", "boss").token)
    assert_problem(globex.get(f"/api/approvals/{first['id']}"), 404, "NOT_FOUND")
    assert_problem(
        globex.post(
            f"/api/approvals/{first['id']}/approve", {"command_id": "x", "material_version": 2}
        ),
        404,
        "NOT_FOUND",
    )
    assert globex.get("/api/approvals").json["total"] == 0


def test_backlog_shows_overdue_instances_until_swept(
    admin: Api, requester: Api, definition_id: str, clock: FakeClock, services: Services
) -> None:
    submit(requester, definition_id)
    clock.advance(3600 + 90)
    backlog = admin.get("/api/backlog").json
    assert (
        backlog["expired_unswept_approvals"],
        backlog["oldest_expired_unswept_lag_seconds"],
    ) == (1, 90.0)
    assert backlog["projection_lag_events"] == 0
    services.approvals.sweep()
    assert admin.get("/api/backlog").json["expired_unswept_approvals"] == 0
