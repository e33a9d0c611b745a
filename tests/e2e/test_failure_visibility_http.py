"""Failures where operators look: log levels and fields, `last_error` after a success, and a
retry refused while its cause is present."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from cronledger.application.launches import Worker
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from domain.directory import tenant_uuid
from tests.e2e.helpers import account, assert_problem
from tests.support import Api, FakeClock

LOGGED_FIELDS = ("trace_id", "run_id", "schedule_id", "tenant_id", "error_code")


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    """Two attempts a round, one second apart."""
    settings = Settings(database_url=store_url, retry_base_seconds=1, max_attempts=2)
    opened = open_services(settings, clock)
    yield opened
    opened.close()


@pytest.fixture
def schedule_path(admin: Api, body: dict[str, Any]) -> str:
    account(admin, "ann", ["requester"])
    created = admin.post("/api/workflows/schedules", {**body, "initiator_id": "ann"})
    assert created.status_code == 201
    return f"/api/workflows/schedules/{created.json['id']}"


def _dead_letter(admin: Api, schedule_path: str, services: Services, clock: FakeClock) -> str:
    """A run whose two attempts failed while ann was inactive: its path."""
    run = admin.post(f"{schedule_path}/run", {"request_id": "ops-1"}).json
    assert admin.post("/api/accounts/ann/deactivate").status_code == 200
    for _ in range(2):
        Worker.of(services).poll()
        clock.advance(1)
    services.projector.catch_up()  # as the projections loop does after the worker's writes
    return f"{schedule_path}/runs/{run['id']}"


def test_failed_attempts_warn_and_a_dead_letter_is_an_error(
    admin: Api,
    schedule_path: str,
    services: Services,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="tick.worker"):
        path = _dead_letter(admin, schedule_path, services, clock)

    failures = [r for r in caplog.records if r.getMessage() == "launch failed"]
    assert [r.levelno for r in failures] == [logging.WARNING, logging.ERROR]
    run = admin.get(path).json
    tenant_id = str(tenant_uuid("acme"))
    for record in failures:
        fields = {name: getattr(record, name) for name in LOGGED_FIELDS}
        assert fields == {
            "trace_id": run["trace_id"],
            "run_id": run["id"],
            "schedule_id": run["schedule_id"],
            "tenant_id": tenant_id,
            "error_code": "INITIATOR_INACTIVE",
        }


def test_a_retry_is_refused_while_the_initiator_is_inactive_then_succeeds_clean(
    admin: Api, schedule_path: str, services: Services, clock: FakeClock
) -> None:
    path = _dead_letter(admin, schedule_path, services, clock)
    assert admin.get(path).json["status"] == "DEAD_LETTER"
    refused_run_now = admin.post(f"{schedule_path}/run", {"request_id": "ops-2"})

    refused = admin.post(f"{path}/retry")

    run_now = assert_problem(refused_run_now, 422, "VALIDATION_FAILED")
    body = assert_problem(refused, 422, "VALIDATION_FAILED")
    assert body["errors"] == run_now["errors"]
    assert body["errors"]["initiator_id"] == ["account ann is deactivated"]
    assert admin.get(path).json["status"] == "DEAD_LETTER"
    assert admin.post("/api/accounts/ann/activate").status_code == 200
    assert admin.post(f"{path}/retry").status_code == 202
    Worker.of(services).poll()
    services.projector.catch_up()  # as the projections loop does after the worker's writes
    detail = admin.get(path).json
    assert (detail["status"], detail["last_error"], detail["error_code"]) == (
        "SUCCEEDED",
        None,
        None,
    )
    assert [a["error"] for a in detail["attempts"]] == [
        {
            "code": "INITIATOR_INACTIVE",
            "message": "initiator ann is inactive",
            "params": {"subject": "ann"},
        },
    ] * 2 + [None]
