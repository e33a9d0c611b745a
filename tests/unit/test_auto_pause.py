"""Auto-pause with no store: failed cycles in a row pause an enabled schedule once; a launch,
or enabling it again, starts the count afresh; `null` never pauses."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from uuid import uuid4

from eventsourcing.domain import Snapshot

from domain.schedules import Schedule, ScheduleSettings
from tests.support import stored_at_version
from tests.unit.helpers import POLICY, SETTINGS, T0

LATER = T0 + timedelta(hours=1)


def enabled(settings: ScheduleSettings = SETTINGS) -> Schedule:
    return Schedule.create(uuid4(), settings, True, T0, "ops")


def event_names(schedule: Schedule) -> list[str]:
    return [type(e).__qualname__ for e in schedule.collect_events()]


def fail(schedule: Schedule, *run_ids: str, code: str = "INITIATOR_INACTIVE") -> None:
    for run_id in run_ids:
        schedule.cycle_failed(run_id, code, LATER)


def test_three_failed_cycles_in_a_row_pause_the_schedule_naming_them() -> None:
    schedule = enabled()
    fail(schedule, "r1", "r2")
    assert schedule.enabled
    schedule.cycle_failed("r3", "DEFINITION_UNPUBLISHED", LATER)

    assert (schedule.enabled, schedule.next_fire_at) == (False, None)
    assert schedule.auto_paused == {
        "at": LATER,
        "reason": "3 cycle(s) in a row ended without launching: r1 (INITIATOR_INACTIVE), "
        "r2 (INITIATOR_INACTIVE), r3 (DEFINITION_UNPUBLISHED)",
        "runs": [
            {"run_id": "r1", "error_code": "INITIATOR_INACTIVE"},
            {"run_id": "r2", "error_code": "INITIATOR_INACTIVE"},
            {"run_id": "r3", "error_code": "DEFINITION_UNPUBLISHED"},
        ],
    }
    assert event_names(schedule)[1:] == [
        "Schedule.CycleFailed",
        "Schedule.CycleFailed",
        "Schedule.CycleFailed",
        "Schedule.AutoPaused",
    ]


def test_the_pause_is_recorded_once_and_keeps_the_saver_of_the_launches() -> None:
    schedule = enabled()
    fail(schedule, "r1", "r2", "r3")
    revision = schedule.revision
    schedule.collect_events()

    fail(schedule, "r4", "r5", "r6")  # cycles registered before the pause end after it

    assert event_names(schedule) == []
    assert schedule.revision == revision
    assert schedule.updated_by == "ops"  # its runs' launches are still vouched for by ops


def test_a_launch_starts_the_count_again_and_is_recorded_only_after_failures() -> None:
    schedule = enabled()
    schedule.cycle_launched("r0", LATER)
    assert event_names(schedule)[1:] == []
    fail(schedule, "r1", "r2")
    schedule.cycle_launched("r3", LATER)
    fail(schedule, "r4", "r5")

    assert schedule.enabled
    assert [f["run_id"] for f in schedule.failed_cycles] == ["r4", "r5"]
    assert event_names(schedule) == [
        "Schedule.CycleFailed",
        "Schedule.CycleFailed",
        "Schedule.FailuresCleared",
        "Schedule.CycleFailed",
        "Schedule.CycleFailed",
    ]
    fail(schedule, "r6")
    assert not schedule.enabled


def test_a_cycle_counts_once_however_often_it_is_retried() -> None:
    schedule = enabled()
    fail(schedule, "r1", "r1", "r1")
    assert schedule.enabled
    assert len(schedule.failed_cycles) == 1


def test_null_never_pauses_and_counts_nothing() -> None:
    schedule = enabled(replace(SETTINGS, auto_pause_after_failures=None))
    fail(schedule, *(f"r{n}" for n in range(20)))
    assert schedule.enabled
    assert event_names(schedule)[1:] == []


def test_a_disabled_schedule_counts_nothing() -> None:
    schedule = Schedule.create(uuid4(), SETTINGS, False, T0, "ops")
    fail(schedule, "r1", "r2", "r3")
    assert (schedule.failed_cycles, schedule.auto_paused) == ([], None)


def test_enabling_again_clears_the_pause_and_counts_afresh() -> None:
    schedule = enabled(replace(SETTINGS, auto_pause_after_failures=1))
    fail(schedule, "r1")
    assert schedule.auto_paused is not None
    schedule.switch(True, LATER, "ops", POLICY)
    assert (schedule.enabled, schedule.auto_paused, schedule.failed_cycles) == (True, None, [])
    schedule.switch(False, LATER, "ops", POLICY)
    schedule.edit(SETTINGS, True, LATER, "ops", POLICY)  # enabled by an edit, threshold 3
    assert schedule.enabled
    fail(schedule, "r2", "r3")
    assert schedule.enabled


def test_an_edit_that_keeps_it_disabled_keeps_the_pause() -> None:
    schedule = enabled(replace(SETTINGS, auto_pause_after_failures=1))
    fail(schedule, "r1")
    schedule.edit(replace(SETTINGS, name="Renamed"), False, LATER, "ops", POLICY)
    assert schedule.auto_paused is not None
    assert schedule.auto_paused["runs"] == [{"run_id": "r1", "error_code": "INITIATOR_INACTIVE"}]


def test_a_lowered_threshold_pauses_at_the_next_failure() -> None:
    schedule = enabled()
    fail(schedule, "r1", "r2")
    schedule.edit(replace(SETTINGS, auto_pause_after_failures=1), True, LATER, "ops", POLICY)
    fail(schedule, "r3")
    assert schedule.auto_paused is not None
    assert len(schedule.auto_paused["runs"]) == 3


def test_a_snapshot_from_before_auto_pause_has_counted_nothing() -> None:
    schedule = enabled()
    older = stored_at_version(Snapshot.take(schedule), 5, "failed_cycles", "auto_paused")
    restored = older.mutate(None)
    assert isinstance(restored, Schedule)
    assert (restored.failed_cycles, restored.auto_paused) == ([], None)
    fail(restored, "r1", "r2", "r3")
    assert not restored.enabled
