"""Manual runs and what a run record carries (requirement 002: scheduled tasks)."""

from __future__ import annotations

from datetime import timedelta
from uuid import uuid4

import pytest
from eventsourcing.domain import Snapshot

from domain.launch import LaunchFailed
from domain.runs import (
    TICK_ACTOR,
    RequestIdReused,
    Run,
    legacy_manual_run_uuid,
    manual_run_uuid,
)
from domain.schedules import Schedule
from tests.support import stored_by_an_older_release
from tests.unit.helpers import LEASE, POLICY, SETTINGS, T0, new_run


def test_the_key_of_a_manual_run_is_account_schedule_and_request_id() -> None:
    schedule = Schedule.create(uuid4(), SETTINGS, True, T0, "ops")
    mine = schedule.manual_run("r1", T0, "ops", POLICY)
    theirs = schedule.manual_run("r1", T0, "ann", POLICY)
    assert mine.id == manual_run_uuid(schedule.id, "ops", "r1")
    assert mine.id != theirs.id
    assert mine.id != legacy_manual_run_uuid(schedule.id, "r1")
    assert (mine.triggered_by, mine.request_id, mine.schedule_version) == ("ops", "r1", 1)


def test_a_scheduled_run_is_triggered_by_the_tick() -> None:
    schedule = Schedule.create(uuid4(), SETTINGS, True, T0 - timedelta(days=1), "ops")
    (run,) = schedule.register_due(T0 + timedelta(hours=9), 10, POLICY)
    assert (run.triggered_by, run.request_id) == (TICK_ACTOR, None)


def test_a_repeat_answers_the_run_only_at_the_schedule_version_it_was_registered_at() -> None:
    run = new_run()
    run.check_repeat(run.schedule_version, None)
    run.check_repeat(run.schedule_version, run.schedule_version)
    with pytest.raises(RequestIdReused) as changed:
        run.check_repeat(run.schedule_version + 1, None)
    assert changed.value.code == "REQUEST_ID_REUSED"
    assert str(run.id) in changed.value.message
    with pytest.raises(RequestIdReused):
        run.check_repeat(run.schedule_version, run.schedule_version + 1)


def test_a_request_is_found_again_only_by_its_account() -> None:
    run = new_run()
    assert run.answers_request_of("ops")
    assert not run.answers_request_of("ann")


def test_the_record_carries_start_duration_error_code_and_trace_id() -> None:
    run = new_run()
    assert (run.started_at, run.duration_seconds, run.error_code) == (None, None, None)
    assert run.trace_id == run.id.hex
    assert len(run.trace_id) == 32
    run.claim("w1", T0 + timedelta(seconds=1), LEASE)
    failure = LaunchFailed("INITIATOR_INACTIVE", "inactive")
    run.fail(1, "w1", failure, POLICY, T0 + timedelta(seconds=2))
    assert (run.started_at, run.error_code) == (T0 + timedelta(seconds=1), "INITIATOR_INACTIVE")
    assert run.duration_seconds is None  # waiting to retry: not finished
    retry_at = run.next_attempt_at
    assert retry_at is not None
    run.claim("w1", retry_at, LEASE)
    run.succeed(2, "w1", "i1", retry_at + timedelta(seconds=3))
    assert run.started_at == T0 + timedelta(seconds=1)  # the first attempt's
    assert run.duration_seconds == (retry_at - T0).total_seconds() + 2
    assert (run.error_code, run.last_error) == (None, None)  # succeeded since
    assert run.attempts[0]["error"]["code"] == "INITIATOR_INACTIVE"  # its attempts keep it


@pytest.mark.parametrize(
    ("request_id", "triggered_by"), [(None, TICK_ACTOR), ("r1", None)], ids=["tick", "manual"]
)
def test_a_version_1_snapshot_reads_who_triggered_it_where_known(
    request_id: str | None, triggered_by: str | None
) -> None:
    run = new_run()
    if request_id is None:
        schedule = Schedule.create(uuid4(), SETTINGS, True, T0 - timedelta(days=1), "ops")
        (run,) = schedule.register_due(T0 + timedelta(hours=9), 10, POLICY)
    snapshot = Snapshot.take(run)
    old = stored_by_an_older_release(snapshot, "triggered_by")
    read: Run = old.mutate(None)
    assert read.triggered_by == triggered_by
    assert read.answers_request_of("anyone") is (triggered_by is None)
