"""Cycles on a working calendar (docs/calendars.md#schedules-on-a-calendar).

A schedule that names a calendar keeps the fires its trigger makes and only takes away or moves
the ones that fall on a day the calendar does not work (in the calendar's time zone):

- `working_days_only`: such a cycle is recorded as skipped (`CALENDAR`, naming the day and
  why it is not worked) and never launched;
- `next_working_day`: it is launched at the same local time on the next working day. It keeps
  its key (the schedule and the instant it was planned at) and records `moved_to`. When several
  cycles land on the same instant (a week of holidays), the latest planned of them is launched
  and the others are recorded as skipped, naming it.

A rule never adds a fire: a Monday-to-Friday trigger does not fire on a make-up Saturday.
Everything here is a value in, a value out: the calendar's data is given, nothing is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from domain.triggers import Trigger, following_fire
from domain.working_time import Day, WorkingCalendar, day_of, next_working_day

WORKING_DAYS_ONLY = "working_days_only"
NEXT_WORKING_DAY = "next_working_day"
CALENDAR_RULES = (WORKING_DAYS_ONLY, NEXT_WORKING_DAY)
JUST_BEFORE = timedelta(microseconds=1)


@dataclass(frozen=True)
class CycleCalendar:
    """The calendar a schedule's cycles are placed on: its key, the revision read, the rule."""

    key: str
    revision: int
    rule: str
    working: WorkingCalendar


@dataclass(frozen=True)
class Placement:
    """Where the calendar puts one fire: launched at `launch_at` (itself, or moved), or
    skipped (`skipped`); `why` says what the calendar found (None on a working day)."""

    planned_at: datetime
    launch_at: datetime
    skipped: bool = False
    why: dict[str, Any] | None = None

    @property
    def moved_to(self) -> datetime | None:
        return None if self.skipped or self.launch_at == self.planned_at else self.launch_at


def place(calendar: CycleCalendar, trigger: Trigger, zone: ZoneInfo, fire: datetime) -> Placement:
    """Where the calendar's rule puts the trigger's `fire`."""
    working = calendar.working
    local = fire.astimezone(working.zone)
    day = day_of(working, local.date())
    if day.working:
        return Placement(fire, fire)
    why = _why(calendar, day)
    if calendar.rule == WORKING_DAYS_ONLY:
        return Placement(fire, fire, skipped=True, why=why)
    target = next_working_day(working, local.date(), [])
    launch_at = _at_local_time(target.date, local, working.zone)
    launched = _latest_landing(trigger, zone, fire, local, target.date, working.zone)
    if launched == fire:
        return Placement(fire, launch_at, why=why)
    return Placement(fire, launch_at, skipped=True, why={**why, "launched_planned_at": launched})


def _why(calendar: CycleCalendar, day: Day) -> dict[str, Any]:
    return {
        "calendar": calendar.key,
        "calendar_revision": calendar.revision,
        "rule": calendar.rule,
        "day": day.date.isoformat(),
        "day_reason": day.reason,
        "holiday": day.name,
        "assumed": day.assumed,
    }


def _at_local_time(day: date, local: datetime, zone: ZoneInfo) -> datetime:
    """The instant (in UTC) of `local`'s wall-clock time on `day` in `zone`."""
    return datetime.combine(day, local.time(), tzinfo=zone).astimezone(UTC)


def _is_fire(trigger: Trigger, zone: ZoneInfo, instant: datetime) -> bool:
    return following_fire(trigger, zone, instant - JUST_BEFORE) == instant


def _latest_landing(
    trigger: Trigger, zone: ZoneInfo, fire: datetime, local: datetime, target: date, cz: ZoneInfo
) -> datetime:
    """The latest planned fire that lands where `fire` does: the target day's own fire at that
    local time if the trigger makes one, else the latest non-working day's before it (the days
    between `fire`'s and the target are all not worked, so all move there)."""
    day = target
    while day > local.date():
        candidate = _at_local_time(day, local, cz)
        if _is_fire(trigger, zone, candidate):
            return candidate
        day -= timedelta(days=1)
    return fire
