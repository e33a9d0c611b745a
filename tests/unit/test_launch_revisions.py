"""Launches: the definition's exact published revision, fire metadata, business-zone titles."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

from eventsourcing.domain import Snapshot

from domain.approvals import ApprovalInstance, fire_metadata
from domain.directory import Definition
from domain.runs import Run
from domain.schedules import Schedule
from tests.support import stored_by_an_older_release
from tests.unit.helpers import POLICY, SETTINGS, T0, definition

WINDOW = {
    "kind": "window-interval",
    "weekdays": [1, 2, 3, 4, 5, 6, 7],
    "windows": [{"start": "09:00", "end": "10:00"}],
    "interval_minutes": 30,
}


def window_of(made: Definition, seconds: int) -> None:
    made.update(made.name, made.external, seconds, [], made.allow_self_approval, T0, "root")


def test_publishing_and_each_published_update_make_a_revision() -> None:
    made = definition(published=False)
    window_of(made, 120)  # a draft: no revision yet
    assert (made.revision, made.revisions) == (0, {})
    made.publish(T0, "root")
    window_of(made, 180)
    assert made.revision == 2
    made.unpublish(T0, "root")
    window_of(made, 240)  # unpublished: the next publish makes it a revision
    assert made.revision == 2
    made.publish(T0, "root")
    assert made.revision == 3
    windows = [made.terms_of(n).review_window_seconds for n in (1, 2, 3)]
    assert windows == [120, 180, 240]


def test_a_run_launches_the_revision_its_schedule_was_saved_against() -> None:
    made = definition()  # revision 1, a 60 s window
    schedule = Schedule.create(uuid4(), SETTINGS, True, T0 - timedelta(hours=1), "ops", 1)
    window_of(made, 600)  # revision 2
    before = schedule.manual_run("r1", T0, "ops", POLICY).approval(made, T0)
    assert before.review_deadline_at == T0 + timedelta(seconds=60)
    schedule.edit(SETTINGS, True, T0, "ops", POLICY, made.revision)
    after = schedule.manual_run("r2", T0, "ops", POLICY)
    assert after.definition_revision == 2
    assert after.approval(made, T0).review_deadline_at == T0 + timedelta(seconds=600)
    schedule.edit(SETTINGS, False, T0, "ops", POLICY)  # disabling keeps the revision
    assert schedule.definition_revision == 2


def test_the_origin_carries_the_fire_metadata() -> None:
    windowed = replace(SETTINGS, trigger=WINDOW)
    schedule = Schedule.create(uuid4(), windowed, True, T0 - timedelta(hours=1), "ops", 1)
    (run,) = schedule.register_due(T0 + timedelta(seconds=1), 10, POLICY)
    origin = run.approval(definition(), T0).origin
    assert origin is not None
    assert {key: origin[key] for key in ("source", "fire_id", "run_id", "trigger_kind")} == {
        "source": "schedule",
        "fire_id": str(run.id),
        "run_id": str(run.id),
        "trigger_kind": "window-interval",
    }
    assert (origin["schedule_id"], origin["schedule_name"]) == (str(schedule.id), "Daily")
    assert (origin["scheduled_for"], origin["trigger"]) == (T0, schedule.settings.trigger)
    assert (origin["definition_revision"], origin["definition_name"]) == (1, "Daily")


def old_origin(trigger_kind: str) -> dict[str, Any]:
    return {
        "source": "schedule",
        "schedule_id": "s",
        "schedule_name": "n",
        "run_id": "r",
        "scheduled_for": T0,
        "trigger_kind": trigger_kind,
        "trigger": {"kind": "cron", "expression": "* * * * *"},
    }


def test_an_old_origin_gets_its_fire_metadata_from_what_it_holds() -> None:
    assert fire_metadata(None) is None
    manual = fire_metadata(old_origin("manual"))
    assert manual == {**old_origin("cron"), "source": "manual", "fire_id": "r"}
    scheduled = fire_metadata(old_origin("schedule"))
    assert scheduled is not None
    assert (scheduled["source"], scheduled["trigger_kind"]) == ("schedule", "cron")


def test_events_and_snapshots_from_before_revisions_count_as_revision_1() -> None:
    made = definition()
    window_of(made, 90)
    published, updated = made.collect_events()[1:]
    assert stored_by_an_older_release(published, "revision").revision == 1
    older_update = stored_by_an_older_release(updated, "revision")
    assert older_update.revision == 1
    snapshot = Snapshot.take(made)
    old = stored_by_an_older_release(snapshot, "revision", "revisions").mutate(None)
    assert isinstance(old, Definition)
    assert (old.revision, old.terms_of(1).review_window_seconds) == (1, 90)


def test_schedules_and_runs_from_before_revisions_launch_revision_1() -> None:
    schedule = Schedule.create(uuid4(), SETTINGS, True, T0 - timedelta(hours=1), "ops", 4)
    schedule.edit(SETTINGS, True, T0, "ops", POLICY, 5)
    created, updated = schedule.collect_events()
    for event in (created, updated):
        assert stored_by_an_older_release(event, "definition_revision").definition_revision == 1
    old_schedule = stored_by_an_older_release(Snapshot.take(schedule), "definition_revision")
    assert old_schedule.mutate(None).definition_revision == 1
    run = schedule.manual_run("r1", T0, "ops", POLICY)
    (registered,) = run.collect_events()
    registered.frozen.pop("definition_revision")
    older = stored_by_an_older_release(registered)
    assert older.frozen["definition_revision"] == 1
    assert isinstance(older.mutate(None), Run)
    state = {"frozen": {"title": "t"}}
    Run.upcast_v2_v3(state)
    assert state == {"frozen": {"title": "t", "definition_revision": 1}}


def test_an_old_instance_snapshot_gets_fire_metadata() -> None:
    state: dict[str, Any] = {"origin": old_origin("manual")}
    ApprovalInstance.upcast_v2_v3(state)
    assert (state["origin"]["fire_id"], state["origin"]["source"]) == ("r", "manual")
    submitted: dict[str, Any] = {"origin": None}
    ApprovalInstance.upcast_v2_v3(submitted)
    assert submitted == {"origin": None}


def test_titles_render_in_the_business_zone_not_the_schedule_zone() -> None:
    """21:00 in New York is 09:00 the next day in Shanghai: the title takes Shanghai's date."""
    evening = replace(
        SETTINGS,
        trigger={"kind": "cron", "expression": "0 21 * * *"},
        timezone="America/New_York",
        title_template="Check {{date}} ({{datetime}})",
    )
    schedule = Schedule.create(uuid4(), evening, True, T0, "ops")
    planned = datetime(2026, 10, 2, 1, 0, tzinfo=UTC)  # 21:00 on 1 October in New York
    shanghai = replace(POLICY, business_timezone="Asia/Shanghai")
    (run,) = schedule.register_due(planned, 10, shanghai)
    assert run.planned_at == planned
    assert run.frozen["title"] == "Check 2026-10-02 (2026-10-02 09:00)"
    manual = schedule.manual_run("r1", planned, "ops", POLICY)  # business zone UTC
    assert manual.frozen["title"] == "Check 2026-10-02 (2026-10-02 01:00)"
