"""Cycle planning (周期计划): which instants are due, and how missed ones are registered."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from domain.runs import PENDING, SKIPPED_MISSED
from domain.triggers import Trigger, fire_times, following_fire, load_zone, next_fire, parse_trigger

MAX_MISSED_COUNTED = 1_000_000


@dataclass(frozen=True)
class Cycle:
    """A planned instant to register, or a summary of missed ones."""

    planned_at: datetime
    status: str = PENDING
    skipped_count: int = 0
    missed_until: datetime | None = None


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
) -> CyclePlan:
    """The cycles due at `now`, from the plan's next fire on, and the plan's next fire after.

    A cycle is missed when `now` is more than `grace` past it. `catch_up` registers every due
    cycle, at most `limit` at a time (the rest stay due); `skip` summarises the missed ones in one
    SKIPPED_MISSED run and registers those still on time; `once` also registers the newest
    missed cycle.
    """
    parsed, zone = parse_trigger(trigger), load_zone(timezone)
    times = _fires_from(parsed, zone, next_fire_at)
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


def _catch_up(times: Iterator[datetime], now: datetime, limit: int) -> CyclePlan:
    cycles: list[Cycle] = []
    for instant in times:
        if instant > now or len(cycles) == limit:
            return CyclePlan(cycles, instant)
        cycles.append(Cycle(instant))
    return CyclePlan(cycles, None)


def _skipping(
    times: Iterator[datetime], now: datetime, grace: timedelta, keep_newest: bool
) -> CyclePlan:
    missed: list[datetime] = []  # the first and the last two missed instants
    count = 0
    on_time: list[Cycle] = []
    upcoming = None
    for instant in times:
        if instant > now:
            upcoming = instant
            break
        if now - instant <= grace:
            on_time.append(Cycle(instant))
            continue
        count += 1
        missed = [missed[0], *missed[1:][-1:], instant] if missed else [instant]
        if count == MAX_MISSED_COUNTED:
            break  # counted enough; planning resumes after now
    return CyclePlan(_missed_cycles(missed, count, keep_newest) + on_time, upcoming)


def _missed_cycles(missed: list[datetime], count: int, keep_newest: bool) -> list[Cycle]:
    """One summary of the missed cycles; with `once`, the newest is registered instead."""
    if count == 0:
        return []
    if not keep_newest:
        return [Cycle(missed[0], SKIPPED_MISSED, count, missed[-1])]
    newest = Cycle(missed[-1])
    if count == 1:
        return [newest]
    return [Cycle(missed[0], SKIPPED_MISSED, count - 1, missed[-2]), newest]
