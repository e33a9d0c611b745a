"""Requirement 004 over HTTP: refusals on the log, withdraws checking material, matched
callbacks, extension history, and the sweeper's health on /metrics and /api/backlog."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import IntegrityError, StoredEvent
from flask.testing import FlaskClient

from cronledger.application.services import Services
from tests.e2e.helpers import SIGN_CALLBACK, account, assert_problem, log_end, samples, submit
from tests.support import Api, FakeClock


@pytest.fixture
def requester(admin: Api) -> Api:
    return account(admin, "sales", ["requester"])


def last_entry(admin: Api, instance_id: str) -> dict[str, Any]:
    items: list[dict[str, Any]] = admin.get(f"/api/approvals/{instance_id}/timeline").json["items"]
    return items[-1]


def refusals(services: Services, instance_id: str) -> list[tuple[str, str, str, bool]]:
    services.projector.catch_up()
    rows = services.store.query(
        "SELECT command, outcome, actor, accepted FROM approval_commands "
        "WHERE instance_id = ? AND outcome IN ('FORBIDDEN', 'RULE_BROKEN') ORDER BY version",
        (instance_id,),
    )
    return [(c, o, a, bool(accepted)) for c, o, a, accepted in rows]


def test_refused_commands_are_recorded_and_answered_as_before(
    admin: Api, requester: Api, definition_id: str, services: Services
) -> None:
    instance = submit(requester, definition_id).json
    path = f"/api/approvals/{instance['id']}"
    other = account(admin, "other", ["requester"])
    auditor = account(admin, "aud", ["auditor"])  # sees instances, may not decide them
    esign = account(admin, "esign", ["integration"])  # may not even see them

    assert_problem(other.post(f"{path}/withdraw", {"command_id": "w"}), 403, "FORBIDDEN")
    entry = last_entry(admin, instance["id"])
    assert (entry["type"], entry["outcome"], entry["actor"]) == (
        "ApprovalInstance.CommandRejected",
        "FORBIDDEN",
        "other",
    )
    assert entry["reason"] == "only the applicant may withdraw an instance"
    approve = {"command_id": "a", "material_version": 2}
    refused = assert_problem(auditor.post(f"{path}/approve", approve), 403, "FORBIDDEN")
    assert "workflow:approval:decide" in refused["detail"]
    end = log_end(services)
    assert_problem(esign.post(f"{path}/approve", approve), 403, "FORBIDDEN")
    assert_problem(auditor.post(f"{path}/approve", {}), 422, "VALIDATION_FAILED")
    assert log_end(services) == end  # unseen instance, malformed body: nothing recorded

    too_far = {"command_id": "e", "new_deadline_at": "2026-11-30T00:00:00Z", "reason": "r"}
    broken = assert_problem(
        admin.post(f"{path}/extend-deadline", too_far), 422, "VALIDATION_FAILED"
    )
    assert "within 30 days" in broken["errors"]["new_deadline_at"][0]
    end = log_end(services)
    again = admin.post(f"{path}/extend-deadline", too_far)
    assert {**again.json, "request_id": ""} == {**broken, "request_id": ""}  # another request
    assert log_end(services) == end  # a repeat gets the first answer, and records nothing
    assert refusals(services, instance["id"]) == [
        ("withdraw", "FORBIDDEN", "other", False),
        ("approve", "FORBIDDEN", "aud", False),
        ("extend-deadline", "RULE_BROKEN", "root", False),
    ]
    withdrawn = requester.post(f"{path}/withdraw", {"command_id": "w"})
    assert (withdrawn.status_code, withdrawn.json["state"]) == (200, "WITHDRAWN")


def test_a_withdraw_checks_the_material_it_names(
    requester: Api, definition_id: str, services: Services
) -> None:
    instance = submit(requester, definition_id).json
    path = f"/api/approvals/{instance['id']}/withdraw"
    stale = requester.post(path, {"command_id": "w1", "material_version": 1})
    assert (stale.status_code, stale.json["outcome"], stale.json["state"]) == (
        409,
        "STALE_MATERIAL",
        "WAITING_REVIEW",
    )
    assert_problem(
        requester.post(path, {"command_id": "w2", "material_version": "2"}),
        422,
        "VALIDATION_FAILED",
    )
    current = requester.post(path, {"command_id": "w3", "material_version": 2})
    assert (current.status_code, current.json["outcome"]) == (200, "WITHDRAWN")


def test_callbacks_are_matched_against_the_instance(
    admin: Api, requester: Api, definition_id: str
) -> None:
    instance = submit(requester, definition_id).json
    path = f"/api/approvals/{instance['id']}"
    esign = account(admin, "esign", ["integration"])
    callback = SIGN_CALLBACK
    assert esign.post(f"{path}/callbacks/sign", callback).json["instance"]["contract_id"] == "C-9"
    other = esign.post(
        f"{path}/callbacks/sign", {**callback, "command_id": "cb-2", "contract_id": "C-1"}
    )
    stale = esign.post(
        f"{path}/callbacks/sign", {**callback, "command_id": "cb-3", "material_version": 1}
    )
    assert (other.status_code, other.json["outcome"], stale.json["outcome"]) == (
        200,
        "OBSERVED",
        "OBSERVED",
    )
    observations = admin.get(path).json["observations"]
    assert [(o["contract_matches"], o["material_matches"]) for o in observations] == [
        (True, True),
        (False, True),
        (True, False),
    ]
    reasons = [e["reason"] for e in admin.get(f"{path}/timeline").json["items"][-2:]]
    assert reasons == [
        "callback recorded as an observation; mismatch: contract C-1 is not the instance's C-9",
        "callback recorded as an observation; mismatch: material version 1 is not the current 2",
    ]


def test_extensions_keep_their_history(admin: Api, requester: Api, definition_id: str) -> None:
    instance = submit(requester, definition_id).json
    path = f"/api/approvals/{instance['id']}"
    for n, day in ((1, 3), (2, 5)):
        extended = admin.post(
            f"{path}/extend-deadline",
            {
                "command_id": f"e{n}",
                "new_deadline_at": f"2026-10-0{day}T10:00:00Z",
                "reason": f"r{n}",
            },
        )
        assert extended.status_code == 200
    body = admin.get(path).json
    assert body["extensions"] == [
        {
            "old_deadline_at": "2026-10-01T10:00:00Z",
            "new_deadline_at": "2026-10-03T10:00:00Z",
            "reason": "r1",
            "actor": "root",
            "at": "2026-10-01T09:00:00Z",
            "rule_version": 1,
        },
        {
            "old_deadline_at": "2026-10-03T10:00:00Z",
            "new_deadline_at": "2026-10-05T10:00:00Z",
            "reason": "r2",
            "actor": "root",
            "at": "2026-10-01T09:00:00Z",
            "rule_version": 1,
        },
    ]
    assert body["deadline_policy"] == {"source": "extended", "reason": "r2", "rule_version": 1}


def test_the_openapi_document_shows_the_new_fields(client: FlaskClient) -> None:
    schemas = client.get("/api/openapi.json").json["components"]["schemas"]
    assert {"contract_id", "extensions"} <= set(schemas["ApprovalOut"]["properties"])
    assert {"contract_matches", "material_matches"} <= set(schemas["ObservationOut"]["properties"])
    assert {"old_deadline_at", "new_deadline_at", "reason", "actor", "rule_version"} <= set(
        schemas["ExtensionOut"]["properties"]
    )
    assert "material_version" in schemas["WithdrawIn"]["properties"]
    assert {"sweep_failures", "expiry_lag_buckets", "expiry_lag_sum_seconds"} <= set(
        schemas["BacklogOut"]["properties"]
    )


def test_sweeper_health_on_metrics_and_the_backlog(
    admin: Api,
    requester: Api,
    definition_id: str,
    clock: FakeClock,
    services: Services,
    client: FlaskClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key in ("a", "b", "c"):
        submit(requester, definition_id, key)
    broken = submit(requester, definition_id, "d").json["id"]
    services.ledger.recorder.insert_events(
        [StoredEvent(UUID(broken), 2, "domain.approvals:ApprovalInstance.Gone", b"{}")]
    )
    clock.advance(3600 + 90)  # every deadline passed 90 seconds ago
    save = services.ledger.save
    calls = {"n": 0}

    def conflict_once(*objs: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise IntegrityError("another sweeper got there first")
        return save(*objs, **kwargs)

    monkeypatch.setattr(services.ledger, "save", conflict_once)
    assert services.approvals.sweep() == 3
    backlog = admin.get("/api/backlog").json
    assert backlog["sweep_failures"] == {"version_conflict": 1, "unreadable": 1, "error": 0}
    assert backlog["expiry_lag_buckets"]["60.0"] == 0
    assert backlog["expiry_lag_buckets"]["300.0"] == backlog["expiry_lag_buckets"]["+Inf"] == 3
    assert backlog["expiry_lag_sum_seconds"] == 270.0
    found = samples(client.get("/metrics").get_data(as_text=True))
    assert found[("cronledger_sweep_failures_total", (("reason", "unreadable"),))] == 1
    assert found[("cronledger_sweep_failures_total", (("reason", "version_conflict"),))] == 1
    assert found[("cronledger_expiry_lag_seconds_bucket", (("le", "300.0"),))] == 3
    assert found[("cronledger_expiry_lag_seconds_sum", ())] == 270.0
