"""Cycle planning (周期计划): which instants are due, and how missed ones are registered."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from domain.calendar_cycles import CycleCalendar, Placement, place
from domain.runs import PENDING, SKIPPED_CALENDAR, SKIPPED_MISSED
from domain.triggers import Trigger, fire_times, following_fire, load_zone, next_fire, parse_trigger

MAX_MISSED_COUNTED = 1_000_000


@dataclass(frozen=True)
class Cycle:
    """A planned instant to register, or a summary of missed ones."""

    planned_at: datetime
    status: str = PENDING
    skipped_count: int = 0
    missed_until: datetime | None = None
    moved_to: datetime | None = None  # launched then instead (a calendar's next working day)
    calendar: dict[str, Any] | None = None  # what the calendar found, if it skipped or moved it

    @classmethod
    def placed(cls, placement: Placement) -> Cycle:
        """The cycle of a fire as its calendar placed it (skipped, moved, or as planned)."""
        status = SKIPPED_CALENDAR if placement.skipped else PENDING
        return cls(
            placement.planned_at,
            status,
            moved_to=placement.moved_to,
            calendar=placement.why,
        )


@dataclass(frozen=True)
class CyclePlan:
    cycles: list[Cycle]
    next_fire_at: datetime | None


def plan_due_cycles(
    trigger: dict[str, Any],
    timezone: str,
    misfire_policy: str,
    next_fire_at: datetime,
    now: datetime,
    limit: int,
    grace: timedelta,
    calendar: CycleCalendar | None = None,
) -> CyclePlan:
    """The cycles due at `now`, from the plan's next fire on, and the plan's next fire after.

    A cycle is registered at its planned instant, placed on the schedule's `calendar` if it
    names one (skipped, or moved to a later `launch_at`: domain.calendar_cycles). A cycle is
    missed when `now` is more than `grace` past the instant it launches at; one the calendar
    skips is recorded as such, never missed. `catch_up` registers every due
    cycle, at most `limit` at a time (the rest stay due); `skip` summarises the missed ones in one
    SKIPPED_MISSED run and registers those still on time; `once` also registers the newest
    missed cycle.
    """
    parsed, zone = parse_trigger(trigger), load_zone(timezone)
    times = (
        place(calendar, parsed, zone, fire) if calendar else Placement(fire, fire)
        for fire in _fires_from(parsed, zone, next_fire_at)
    )
    if misfire_policy == "catch_up":
        return _catch_up(times, now, limit)
    plan = _skipping(times, now, grace, keep_newest=misfire_policy == "once")
    if plan.next_fire_at is None and plan.cycles:
        return CyclePlan(plan.cycles, next_fire(parsed, zone, now))
    return plan


def _fires_from(trigger: Trigger, zone: ZoneInfo, first: datetime) -> Iterator[datetime]:
    """The plan's instant (a fire time) and the fires after it, the second one from the memo."""
    yield first
    second = following_fire(trigger, zone, first)
    if second is not None:
        yield second
        yield from fire_times(trigger, zone, second)


def _catch_up(times: Iterator[Placement], now: datetime, limit: int) -> CyclePlan:
    cycles: list[Cycle] = []
    for placed in times:
        if placed.planned_at > now or len(cycles) == limit:
            return CyclePlan(cycles, placed.planned_at)
        cycles.append(Cycle.placed(placed))
    return CyclePlan(cycles, None)


def _skipping(
    times: Iterator[Placement], now: datetime, grace: timedelta, keep_newest: bool
) -> CyclePlan:
    missed: list[Placement] = []  # the first and the last two missed
    count = 0
    on_time: list[Cycle] = []
    upcoming = None
    for placed in times:
        if placed.planned_at > now:
            upcoming = placed.planned_at
            break
        if placed.skipped or now - placed.launch_at <= grace:
            on_time.append(Cycle.placed(placed))
            continue
        count += 1
        missed = [missed[0], *missed[1:][-1:], placed] if missed else [placed]
        if count == MAX_MISSED_COUNTED:
            break  # counted enough; planning resumes after now
    return CyclePlan(_missed_cycles(missed, count, keep_newest) + on_time, upcoming)


def _missed_cycles(missed: list[Placement], count: int, keep_newest: bool) -> list[Cycle]:
    """One summary of the missed cycles; with `once`, the newest is registered instead."""
    if count == 0:
        return []
    first, last = missed[0].planned_at, missed[-1].planned_at
    if not keep_newest:
        return [Cycle(first, SKIPPED_MISSED, count, last)]
    newest = Cycle.placed(missed[-1])
    if count == 1:
        return [newest]
    return [Cycle(first, SKIPPED_MISSED, count - 1, missed[-2].planned_at), newest]
