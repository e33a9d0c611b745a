"""Overlap policies by their names since 0.11.0, stored `skip` read as `skip_while_open`, and
every skipped run saying why."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import asdict, replace
from datetime import timedelta
from typing import Any
from uuid import uuid4

from eventsourcing.domain import Snapshot
from eventsourcing.persistence import Mapper

from domain.overlap import Blocker, renamed_changes
from domain.runs import Run
from domain.schedules import Schedule, ScheduleSettings
from tests.support import PickleTranscoder, stored_by_an_older_release
from tests.unit.helpers import POLICY, SETTINGS, T0, new_run


def stored_as_version(event: Any, version: int, edit: Callable[[dict[str, Any]], None]) -> Any:
    """`event` as a release that wrote its class at `version` stored it (its state edited by
    `edit`), read back today. For a snapshot, `edit` gets the aggregate's state."""
    mapper: Mapper[Any] = Mapper(transcoder=PickleTranscoder())
    stored = mapper.to_stored_event(event)
    state = pickle.loads(stored.state)
    older = state["state"] if isinstance(event, Snapshot) else state
    older["class_version"] = version
    edit(older)
    return mapper.to_domain_event(replace(stored, state=pickle.dumps(state)))


def saved_with_skip(settings: dict[str, Any]) -> None:
    settings["overlap_policy"] = "skip"


def test_a_new_schedule_skips_only_while_a_cycle_is_being_launched_unless_told_otherwise() -> None:
    unset = {k: v for k, v in asdict(SETTINGS).items() if k != "overlap_policy"}
    assert ScheduleSettings(**unset).overlap_policy == "skip_while_launching"
    schedule = Schedule.create(uuid4(), ScheduleSettings(**unset), True, T0, "ops")
    run = schedule.manual_run("r1", T0, "ops", POLICY)
    assert (run.overlap_policy, run.skips_overlap) == ("skip_while_launching", True)


def test_allow_never_skips_and_a_run_from_before_policies_allows() -> None:
    allowing = Schedule.create(uuid4(), replace(SETTINGS, overlap_policy="allow"), True, T0, "o")
    assert not allowing.manual_run("r1", T0, "ops", POLICY).skips_overlap
    run = new_run()
    del run.frozen["overlap_policy"]
    assert (run.overlap_policy, run.skips_overlap) == ("allow", False)


def test_a_stored_allow_is_kept() -> None:
    allowing = replace(SETTINGS, overlap_policy="allow")
    schedule = Schedule.create(uuid4(), allowing, True, T0, "ops")
    (created,) = schedule.collect_events()
    assert created.settings["overlap_policy"] == "allow"  # every release stored it
    assert created.mutate(None).settings.overlap_policy == "allow"


def test_a_schedule_saved_with_skip_reads_as_skip_while_open() -> None:
    schedule = Schedule.create(uuid4(), SETTINGS, True, T0, "ops")
    schedule.edit(replace(SETTINGS, overlap_policy="allow"), True, T0, "ops", POLICY)
    created, updated = schedule.collect_events()
    old_created = stored_as_version(created, 2, lambda s: saved_with_skip(s["settings"]))
    assert old_created.settings["overlap_policy"] == "skip_while_open"

    def skip_to_allow(state: dict[str, Any]) -> None:
        saved_with_skip(state["settings"])
        state["changes"] = [{"field": "overlap_policy", "old": "skip", "new": "allow"}]

    old_updated = stored_as_version(updated, 3, skip_to_allow)
    assert old_updated.settings["overlap_policy"] == "skip_while_open"
    assert old_updated.changes == [
        {"field": "overlap_policy", "old": "skip_while_open", "new": "allow"}
    ]


def test_a_schedule_snapshot_saved_with_skip_reads_as_skip_while_open() -> None:
    schedule = Schedule.create(uuid4(), SETTINGS, True, T0, "ops")

    def skip(state: dict[str, Any]) -> None:
        state["settings"] = replace(state["settings"], overlap_policy="skip")

    older: Schedule = stored_as_version(Snapshot.take(schedule), 2, skip).mutate(None)
    assert older.settings.overlap_policy == "skip_while_open"
    assert older.settings.form_data == SETTINGS.form_data


def test_a_run_registered_with_skip_skips_while_its_instance_is_open() -> None:
    (registered,) = new_run().collect_events()
    older = stored_as_version(registered, 2, lambda s: saved_with_skip(s["frozen"]))
    run: Run = older.mutate(None)
    assert (run.overlap_policy, run.skips_overlap) == ("skip_while_open", True)
    snapshot = stored_as_version(
        Snapshot.take(new_run()), 4, lambda s: saved_with_skip(s["frozen"])
    )
    assert snapshot.mutate(None).overlap_policy == "skip_while_open"


def test_changes_of_other_fields_are_left_as_recorded() -> None:
    changes = [{"field": "misfire_policy", "old": "skip", "new": "once"}]
    assert renamed_changes(changes) == changes
    assert renamed_changes(None) is None


def test_an_overlap_skip_names_the_run_still_being_launched() -> None:
    run = new_run()
    run.skip_overlap(Blocker("the-earlier-run", "RETRY_WAIT"), T0, "w1")
    assert run.skip_reason == {
        "code": "OVERLAP",
        "blocking_run_id": "the-earlier-run",
        "blocking_status": "RETRY_WAIT",
        "blocking_instance_id": None,
        "count": None,
    }


def test_an_overlap_skip_names_the_instance_waiting_for_review() -> None:
    run = new_run()
    run.skip_overlap(Blocker("the-earlier-run", "SUCCEEDED", "its-instance"), T0, "w1")
    assert run.skip_reason is not None
    assert (run.skip_reason["blocking_status"], run.skip_reason["blocking_instance_id"]) == (
        "SUCCEEDED",
        "its-instance",
    )


def test_an_overlap_skip_recorded_before_0_11_0_does_not_say_what_blocked_it() -> None:
    run = new_run()
    run.skip_overlap(Blocker("the-earlier-run", "SUCCEEDED", "its-instance"), T0, "w1")
    skipped = run.collect_events()[-1]
    older = stored_by_an_older_release(skipped, "blocking_status", "blocking_instance_id")
    assert (older.earlier_run_id, older.blocking_status, older.blocking_instance_id) == (
        "the-earlier-run",
        None,
        None,
    )


def test_a_missed_summary_counts_the_missed_cycles() -> None:
    skipping = replace(SETTINGS, misfire_policy="skip")
    schedule = Schedule.create(uuid4(), skipping, True, T0 - timedelta(days=1, hours=1), "ops")
    summary, on_time = schedule.register_due(T0 + timedelta(seconds=2), 10, POLICY)
    assert summary.skip_reason == {
        "code": "MISSED",
        "blocking_run_id": None,
        "blocking_status": None,
        "blocking_instance_id": None,
        "count": 1,
    }
    assert on_time.skip_reason is None


def test_a_run_that_was_not_skipped_has_no_reason() -> None:
    assert new_run().skip_reason is None


def test_a_snapshot_of_an_older_release_reads_without_a_blocking_run() -> None:
    run = new_run()
    older: Run = stored_by_an_older_release(
        Snapshot.take(run), "triggered_by", "blocked_by", "blocking_status", "blocking_instance_id"
    ).mutate(None)
    assert (older.blocker, older.skip_reason, older.status) == (None, None, "PENDING")
