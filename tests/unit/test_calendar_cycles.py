"""Cycles on a working calendar (domain/calendar_cycles.py; docs/calendars.md#schedules-on-a-
calendar): skipped on a day not worked, or moved to the next working day, never added."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from domain.calendar_cycles import NEXT_WORKING_DAY, WORKING_DAYS_ONLY, CycleCalendar
from domain.planning import plan_due_cycles
from domain.runs import PENDING, SKIPPED_CALENDAR, Run
from domain.schedules import Schedule
from tests.support import stored_by_an_older_release
from tests.unit.helpers import new_run
from tests.unit.test_working_time import CN_2026

DAILY_NINE = {"kind": "cron", "expression": "0 9 * * *"}
WEEKDAYS_NINE = {"kind": "cron", "expression": "0 9 * * 1-5"}
FIRST_OF_MONTH = {"kind": "cron", "expression": "0 9 1 * *"}
SHANGHAI = "Asia/Shanghai"
GRACE = timedelta(minutes=5)


def local(text: str) -> datetime:
    return datetime.fromisoformat(f"{text}+08:00").astimezone(UTC)


def on(rule: str) -> CycleCalendar:
    return CycleCalendar("cn", 3, rule, CN_2026)


def cycles(trigger: dict[str, str], rule: str, first: str, now: str, policy: str = "catch_up"):  # type: ignore[no-untyped-def]
    return plan_due_cycles(
        trigger, SHANGHAI, policy, local(first), local(now), 100, GRACE, on(rule)
    ).cycles


def test_working_days_only_skips_the_holiday_and_names_it() -> None:
    found = cycles(DAILY_NINE, WORKING_DAYS_ONLY, "2026-09-30T09:00", "2026-10-02T09:00")
    assert [(c.planned_at, c.status) for c in found] == [
        (local("2026-09-30T09:00"), PENDING),
        (local("2026-10-01T09:00"), SKIPPED_CALENDAR),
        (local("2026-10-02T09:00"), SKIPPED_CALENDAR),
    ]
    assert found[2].calendar is not None
    assert found[2].calendar["holiday"] == "National Day"
    assert found[2].calendar["day"] == "2026-10-02"
    assert found[2].calendar["calendar_revision"] == 3


def test_next_working_day_launches_the_latest_of_those_landing_together() -> None:
    found = cycles(DAILY_NINE, NEXT_WORKING_DAY, "2026-10-01T09:00", "2026-10-08T09:00")
    launched = [c for c in found if c.status == PENDING]
    assert [c.planned_at for c in launched] == [local("2026-10-08T09:00")]
    skipped = [c for c in found if c.status == SKIPPED_CALENDAR]
    assert len(skipped) == 7
    assert all(
        c.calendar and c.calendar["launched_planned_at"] == launched[0].planned_at for c in skipped
    )


def test_a_cycle_alone_on_its_day_moves_and_keeps_its_planned_instant() -> None:
    found = cycles(FIRST_OF_MONTH, NEXT_WORKING_DAY, "2026-10-01T09:00", "2026-10-01T09:00")
    assert [(c.planned_at, c.status, c.moved_to) for c in found] == [
        (local("2026-10-01T09:00"), PENDING, local("2026-10-08T09:00"))
    ]


def test_the_grace_counts_from_the_moved_instant() -> None:
    late = cycles(FIRST_OF_MONTH, NEXT_WORKING_DAY, "2026-10-01T09:00", "2026-10-08T09:04", "skip")
    assert [(c.status, c.moved_to) for c in late] == [(PENDING, local("2026-10-08T09:00"))]
    missed = cycles(
        FIRST_OF_MONTH, NEXT_WORKING_DAY, "2026-10-01T09:00", "2026-10-08T09:06", "skip"
    )
    assert [c.status for c in missed] == ["SKIPPED_MISSED"]


def test_a_rule_never_adds_a_fire_on_a_make_up_saturday() -> None:
    found = cycles(WEEKDAYS_NINE, WORKING_DAYS_ONLY, "2026-10-09T09:00", "2026-10-12T09:00")
    assert [c.planned_at for c in found] == [local("2026-10-09T09:00"), local("2026-10-12T09:00")]
    daily = cycles(DAILY_NINE, WORKING_DAYS_ONLY, "2026-10-10T09:00", "2026-10-11T09:00")
    assert [(c.planned_at, c.status) for c in daily] == [
        (local("2026-10-10T09:00"), PENDING),  # the make-up Saturday is worked
        (local("2026-10-11T09:00"), SKIPPED_CALENDAR),  # Sunday
    ]


def test_a_run_registered_before_version_5_was_moved_by_no_calendar() -> None:
    run = new_run()
    registered = next(e for e in run.collect_events() if isinstance(e, Run.Registered))
    older = stored_by_an_older_release(registered, "moved_to", "calendar")
    assert (older.moved_to, older.calendar) == (None, None)
    state: dict[str, object] = {}
    Run.upcast_v7_v8(state)
    assert state == {"moved_to": None, "calendar": None}


def test_a_schedule_saved_before_calendars_names_none() -> None:
    settings = {"name": "n", "overlap_policy": "skip"}
    state: dict[str, Any] = {"settings": settings}
    Schedule.Created.upcast_v3_v4(state)
    assert state["settings"] == {**settings, "calendar": None, "calendar_rule": None}
    state = {"settings": settings}
    Schedule.Updated.upcast_v4_v5(state)
    assert state["settings"]["calendar_rule"] is None
