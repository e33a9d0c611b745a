"""Launches over HTTP: a run fails while its initiator is inactive, then succeeds; retry, cancel."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cronledger.application.launches import Worker
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.e2e.helpers import account, assert_problem
from tests.support import Api, FakeClock


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    """CRONLEDGER_RETRY_BASE_SECONDS=1."""
    opened = open_services(Settings(database_url=store_url, retry_base_seconds=1), clock)
    yield opened
    opened.close()


@pytest.fixture
def schedule_path(admin: Api, body: dict[str, Any]) -> str:
    account(admin, "ann", ["requester"])
    created = admin.post("/api/workflows/schedules", {**body, "initiator_id": "ann"})
    assert created.status_code == 201
    return f"/api/workflows/schedules/{created.json['id']}"


def test_a_run_fails_while_the_initiator_is_inactive_then_succeeds(
    admin: Api, schedule_path: str, services: Services, clock: FakeClock
) -> None:
    run = admin.post(f"{schedule_path}/run", {"request_id": "ops-1"}).json
    assert admin.post("/api/accounts/ann/deactivate").status_code == 200
    Worker.of(services).poll()
    clock.advance(1)
    Worker.of(services).poll()
    services.projector.catch_up()  # as the projections loop does after the worker's writes
    waiting = admin.get(f"{schedule_path}/runs/{run['id']}").json
    assert (waiting["status"], waiting["attempt_count"]) == ("RETRY_WAIT", 2)
    assert waiting["next_attempt_at"] == "2026-10-01T09:00:03Z"
    assert admin.post("/api/accounts/ann/activate").status_code == 200
    clock.advance(2)
    Worker.of(services).poll()
    services.projector.catch_up()  # as the projections loop does after the worker's writes

    detail = admin.get(f"{schedule_path}/runs/{run['id']}").json
    assert (detail["status"], detail["attempt_count"]) == ("SUCCEEDED", 3)
    assert [a["error"] and a["error"]["code"] for a in detail["attempts"]] == [
        "INITIATOR_INACTIVE",
        "INITIATOR_INACTIVE",
        None,
    ]
    assert [a["outcome"] for a in detail["attempts"]] == ["FAILED", "FAILED", "SUCCEEDED"]
    assert detail["attempts"][2]["instance_id"] == detail["instance_id"]
    instance = admin.get(f"/api/approvals/{detail['instance_id']}").json
    assert (instance["applicant_id"], instance["state"]) == ("ann", "WAITING_REVIEW")
    assert instance["origin"]["run_id"] == run["id"]
    assert instance["origin"]["scheduled_for"] == run["planned_at"]
    services.projector.catch_up()  # as the projections loop does after the worker's writes
    succeeded = admin.get(f"{schedule_path}/runs?status=SUCCEEDED").json
    assert [r["id"] for r in succeeded["items"]] == [run["id"]]
    assert admin.get(schedule_path).json["last_run"]["status"] == "SUCCEEDED"


def test_cancel_and_retry_follow_the_run_states(
    admin: Api, schedule_path: str, services: Services
) -> None:
    run = admin.post(f"{schedule_path}/run", {"request_id": "ops-1"}).json
    path = f"{schedule_path}/runs/{run['id']}"
    assert_problem(admin.post(f"{path}/retry"), 409, "INVALID_STATE")
    stale = admin.post(f"{path}/cancel", {"version": run["version"] + 1})
    assert_problem(stale, 409, "VERSION_CONFLICT")
    cancelled = admin.post(f"{path}/cancel", {"version": run["version"]})
    assert (cancelled.status_code, cancelled.json["status"]) == (202, "CANCELLED")
    assert Worker.of(services).poll().claimed == 0
    retried = admin.post(f"{path}/retry")
    assert (retried.status_code, retried.json["status"]) == (202, "PENDING")
    Worker.of(services).poll()
    services.projector.catch_up()  # as the projections loop does after the worker's writes
    assert admin.get(path).json["status"] == "SUCCEEDED"
    assert_problem(admin.post(f"{path}/cancel"), 409, "INVALID_STATE")


def test_retry_needs_the_edit_permission(
    admin: Api, schedule_path: str, services: Services
) -> None:
    run = admin.post(f"{schedule_path}/run", {"request_id": "ops-1"}).json
    viewer = account(admin, "viewer", ["auditor"])
    path = f"{schedule_path}/runs/{run['id']}"
    assert_problem(viewer.post(f"{path}/cancel"), 403, "FORBIDDEN")
    assert admin.get(path).json["status"] == "PENDING"
