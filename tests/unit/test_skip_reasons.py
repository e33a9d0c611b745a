"""Overlap is skipped by default, and every skipped run says why."""

from __future__ import annotations

from dataclasses import asdict, replace
from datetime import timedelta
from uuid import uuid4

from eventsourcing.domain import Snapshot

from domain.runs import Run
from domain.schedules import Schedule, ScheduleSettings
from tests.support import stored_by_an_older_release
from tests.unit.helpers import POLICY, SETTINGS, T0, new_run


def test_a_new_schedule_skips_overlap_unless_told_otherwise() -> None:
    unset = {k: v for k, v in asdict(SETTINGS).items() if k != "overlap_policy"}
    assert ScheduleSettings(**unset).overlap_policy == "skip"
    schedule = Schedule.create(uuid4(), ScheduleSettings(**unset), True, T0, "ops")
    assert schedule.manual_run("r1", T0, "ops", POLICY).frozen["overlap_policy"] == "skip"


def test_a_stored_allow_is_kept() -> None:
    allowing = replace(SETTINGS, overlap_policy="allow")
    schedule = Schedule.create(uuid4(), allowing, True, T0, "ops")
    (created,) = schedule.collect_events()
    assert created.settings["overlap_policy"] == "allow"  # every release stored it
    assert created.mutate(None).settings.overlap_policy == "allow"


def test_an_overlap_skip_names_the_blocking_run() -> None:
    run = new_run()
    run.skip_overlap("the-earlier-run", T0, "w1")
    assert run.skip_reason == {
        "code": "OVERLAP",
        "blocking_run_id": "the-earlier-run",
        "count": None,
    }


def test_a_missed_summary_counts_the_missed_cycles() -> None:
    skipping = replace(SETTINGS, misfire_policy="skip")
    schedule = Schedule.create(uuid4(), skipping, True, T0 - timedelta(days=1, hours=1), "ops")
    summary, on_time = schedule.register_due(T0 + timedelta(seconds=2), 10, POLICY)
    assert summary.skip_reason == {"code": "MISSED", "blocking_run_id": None, "count": 1}
    assert on_time.skip_reason is None


def test_a_run_that_was_not_skipped_has_no_reason() -> None:
    assert new_run().skip_reason is None


def test_a_snapshot_of_an_older_release_reads_without_a_blocking_run() -> None:
    run = new_run()
    older: Run = stored_by_an_older_release(
        Snapshot.take(run), "triggered_by", "blocked_by"
    ).mutate(None)
    assert (older.blocked_by, older.skip_reason, older.status) == (None, None, "PENDING")
