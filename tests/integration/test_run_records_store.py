"""Run records on real stores (requirement 002: scheduled tasks): manual runs keyed by account,
schedule and request id, old manual runs found again, the record's columns, traced launches."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services
from cronledger.persistence.store import as_instant
from domain.directory import Principal
from domain.permissions import ROLES
from domain.runs import TICK_ACTOR, RequestIdReused, Run, legacy_manual_run_uuid, manual_run_uuid
from domain.schedules import Schedule
from tests.release_stores import facts
from tests.support import T0, FakeClock, Opener, World

REGISTERED_FIELDS = (
    "tenant_id",
    "schedule_id",
    "planned_at",
    "request_id",
    "trigger",
    "status",
    "skipped_count",
    "missed_until",
    "frozen",
    "max_attempts",
    "at",
    "actor",
    "traceparent",
)
RECORD = (
    "schedule_version, triggered_by, request_id, trace_id, started_at, duration_seconds, "
    "status, last_error_code"
)
OLD = facts("release-0.1.0-working")


@pytest.fixture
def world(open_with: Opener) -> World:
    clock = FakeClock(T0)
    return World(open_with(clock), clock)


def operator(world: World, account_id: str) -> Principal:
    return Principal(world.root.tenant_id, account_id, frozenset(ROLES["operator"]))


def schedule_of(world: World) -> Schedule:
    ledger = world.services.ledger
    return ledger.find(Schedule, UUID(world.schedule), "schedule", world.schedule)


def save_as_release_0_1_0(world: World, request_id: str, actor: str) -> UUID:
    """A manual run under the id release 0.1.0 gave it: (schedule, request id)."""
    schedule = schedule_of(world)
    made = schedule.manual_run(request_id, world.clock.now, actor, world.services.schedules.policy)
    registered = made.pending_events[0]
    legacy_id = legacy_manual_run_uuid(schedule.id, request_id)
    fields = {name: getattr(registered, name) for name in REGISTERED_FIELDS}
    old = Run._create(type(registered), id=legacy_id, **fields)
    world.services.ledger.save(old)
    return legacy_id


def record(services: Services, run_id: str) -> dict[str, Any]:
    services.projector.catch_up()
    (row,) = services.store.query(f"SELECT {RECORD} FROM runs WHERE id = ?", (run_id,))
    return dict(zip(RECORD.split(", "), row, strict=True))


def test_the_same_request_of_another_account_is_another_run(world: World) -> None:
    mine = world.services.schedules.run_now(world.root, world.schedule, "r1")
    theirs = world.services.schedules.run_now(operator(world, "ops"), world.schedule, "r1")
    assert mine.id == str(manual_run_uuid(UUID(world.schedule), "root", "r1"))
    assert theirs.id == str(manual_run_uuid(UUID(world.schedule), "ops", "r1"))
    assert (mine.triggered_by, theirs.triggered_by) == ("root", "ops")
    again = world.services.schedules.run_now(world.root, world.schedule, "r1", version=1)
    assert again.id == mine.id


def test_a_manual_run_of_release_0_1_0_is_found_again_by_its_account(world: World) -> None:
    legacy_id = save_as_release_0_1_0(world, "old-1", "root")
    schedules = world.services.schedules
    assert schedules.run_now(world.root, world.schedule, "old-1").id == str(legacy_id)
    other = schedules.run_now(operator(world, "ops"), world.schedule, "old-1")
    assert other.id == str(manual_run_uuid(UUID(world.schedule), "ops", "old-1"))
    schedules.set_enabled(world.root, world.schedule, True, None)
    with pytest.raises(RequestIdReused):
        schedules.run_now(world.root, world.schedule, "old-1")


def test_the_runs_table_keeps_the_record_of_a_launch(world: World) -> None:
    services, clock = world.services, world.clock
    run_id = world.run_now()
    assert record(services, run_id) == {
        "schedule_version": 1,
        "triggered_by": "root",
        "request_id": "r1",
        "trace_id": UUID(run_id).hex,
        "started_at": None,
        "duration_seconds": None,
        "status": "PENDING",
        "last_error_code": None,
    }
    world.set_ann_active(False)
    clock.advance(1)
    Worker.of(services).poll()  # fails, waits to retry
    failed = record(services, run_id)
    assert as_instant(failed["started_at"]) == clock.now
    assert (failed["duration_seconds"], failed["status"]) == (None, "RETRY_WAIT")
    clock.advance(2.5)
    services.runs.cancel(world.root, UUID(world.schedule), run_id, None)
    cancelled = record(services, run_id)
    assert as_instant(cancelled["started_at"]) == clock.now - timedelta(seconds=2.5)
    assert cancelled["duration_seconds"] == pytest.approx(2.5, abs=0.002)
    view = services.runs.view(world.root.tenant_id, UUID(world.schedule), run_id)
    assert (view.duration_seconds, view.error_code) == (2.5, "INITIATOR_INACTIVE")
    world.set_ann_active(True)  # a retry while the initiator is inactive is refused
    services.runs.retry(world.root, UUID(world.schedule), run_id, None)
    assert record(services, run_id)["duration_seconds"] is None
    Worker.of(services).poll()
    assert record(services, run_id)["last_error_code"] is None


def test_every_launch_log_line_carries_the_runs_trace_id(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    run_id = world.run_now()
    trace_id = world.services.runs.view(world.root.tenant_id, UUID(world.schedule), run_id)
    with caplog.at_level(logging.INFO, logger="tick.worker"):
        Worker.of(world.services).poll()
    lines = [r for r in caplog.records if getattr(r, "run_id", None) == run_id]
    assert [r.getMessage() for r in lines] == ["launch succeeded"]  # claimed with it
    assert [getattr(r, "attempt", None) for r in lines] == [1]
    assert {getattr(r, "trace_id", None) for r in lines} == {trace_id.trace_id}
    assert trace_id.trace_id == UUID(run_id).hex


def test_a_failed_launch_logs_its_error_code_under_the_trace_id(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    run_id = world.run_now()
    world.set_ann_active(False)
    with caplog.at_level(logging.INFO, logger="tick.worker"):
        Worker.of(world.services).poll()
    (failed,) = [r for r in caplog.records if r.getMessage() == "launch failed"]
    assert (failed.trace_id, failed.error_code) == (UUID(run_id).hex, "INITIATOR_INACTIVE")  # type: ignore[attr-defined]


def test_the_runs_of_release_0_1_0_carry_the_record(upgraded: Services) -> None:
    upgraded.projector.catch_up()
    rows = upgraded.store.query(
        "SELECT id, schedule_version, triggered_by, trace_id, started_at, duration_seconds "
        "FROM runs WHERE status = 'SUCCEEDED'"
    )
    assert rows
    for run_id, schedule_version, triggered_by, trace_id, started_at, duration in rows:
        assert (schedule_version, triggered_by, trace_id) == (1, TICK_ACTOR, UUID(run_id).hex)
        run = upgraded.ledger.find(Run, UUID(run_id), "run", run_id)
        assert as_instant(started_at) == run.started_at
        assert duration == pytest.approx(run.duration_seconds, abs=0.002)
    assert Ticker.of(upgraded).scan().registered == 0
