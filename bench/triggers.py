"""Fire-time speed: the trigger engine against plain croniter, side by side in one run."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar
from zoneinfo import ZoneInfo

from croniter import croniter

from domain.triggers import CronTrigger, fire_times, next_fire

EXPRESSION = "*/5 * * * *"
ZONE = "America/New_York"
COUNT = 100_000
CALLS = 10_000
ROUNDS = 3
T = TypeVar("T")


def _best_of(rounds: int, work: Callable[[], T]) -> tuple[float, T]:
    """Shortest wall time of `rounds` runs, with the last run's result."""
    timings = []
    for _ in range(rounds):
        started = time.perf_counter()
        result = work()
        timings.append(time.perf_counter() - started)
    return min(timings), result


def _engine(zone: ZoneInfo, start: datetime) -> list[datetime]:
    return list(itertools.islice(fire_times(CronTrigger(EXPRESSION), zone, start), COUNT))


def _croniter(zone: ZoneInfo, start: datetime) -> list[datetime]:
    schedule = croniter(EXPRESSION, start)
    return [schedule.get_next(datetime) for _ in range(COUNT)]


def _next_fire_calls(zone: ZoneInfo, start: datetime) -> None:
    trigger = CronTrigger(EXPRESSION)
    for minute in range(CALLS):
        next_fire(trigger, zone, start.replace(minute=minute % 60, second=minute % 59))


def run() -> list[str]:
    zone = ZoneInfo(ZONE)
    start = datetime(2026, 1, 1, tzinfo=zone)
    engine_s, engine_fires = _best_of(ROUNDS, lambda: _engine(zone, start))
    cron_s, cron_fires = _best_of(ROUNDS, lambda: _croniter(zone, start))
    calls_s, _ = _best_of(ROUNDS, lambda: _next_fire_calls(zone, start))
    # compare in UTC: an aware time in a repeated hour never equals one in another zone (PEP 495)
    same = engine_fires == [fire.astimezone(UTC) for fire in cron_fires]
    return [
        f"triggers: {EXPRESSION.split()[0]} {ZONE} {COUNT:,} fires: "
        f"engine {engine_s:.2f} s ({COUNT / engine_s:,.0f}/s), "
        f"croniter {cron_s:.2f} s ({COUNT / cron_s:,.0f}/s), ratio {cron_s / engine_s:.1f}x "
        f"(best of {ROUNDS}; same instants: {'yes' if same else 'NO'})",
        f"triggers: next_fire {EXPRESSION.split()[0]} {ZONE} from {CALLS:,} starts: "
        f"{calls_s / CALLS * 1e6:.0f} µs per call (best of {ROUNDS})",
    ]


if __name__ == "__main__":
    print("\n".join(run()))
