"""The tick's capacity: what the defaults keep up with, and the warnings when it falls behind."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from cronledger.application.cycles import Ticker
from cronledger.application.services import Services
from domain.directory import Principal
from domain.schedules import Schedule, ScheduleSettings
from domain.values import FormData
from tests.support import FakeClock, Opener

DUE = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
DAILY = {"kind": "cron", "expression": "0 9 * * *"}
# The defaults are sized for 10,000 cycles due at once, planned at 3,000 a second: the scan ends
# 1 + 10,000 / 3,000 = 4.3 s after they fall due, inside the 5 s grace and budget. `make bench`
# checks that burst (bench/tick.py); the suite checks a tenth of it at a tenth of the pace,
# which takes the scan just as long.
CYCLES_DUE_AT_ONCE = 1_000
PLANNED_PER_SECOND = 300


def daily_schedules(services: Services, clock: FakeClock, count: int) -> list[UUID]:
    """`count` enabled schedules due daily at 09:00 UTC, `skip` policy, saved in big batches."""
    root = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    assert isinstance(root, Principal)
    settings = ScheduleSettings(
        "daily", "d", DAILY, "UTC", "root", "Daily {{date}}", FormData(), "skip"
    )
    made = [
        Schedule.create(root.tenant_id, settings, True, clock.now, "root") for _ in range(count)
    ]
    for start in range(0, count, 1000):
        services.ledger.save(*made[start : start + 1000])
    return [schedule.id for schedule in made]


def paced(clock: FakeClock, per_second: float) -> Callable[[], float]:
    """A scan timer whose every read moves the clock on by one schedule's planning time."""

    def timer() -> float:
        clock.advance(1 / per_second)
        return (clock.now - DUE).total_seconds()

    return timer


def test_a_burst_due_at_once_is_registered_on_time_by_the_defaults(
    open_with: Opener,
) -> None:
    clock = FakeClock(DUE - timedelta(hours=1))
    services = open_with(clock)  # every setting at its default
    daily_schedules(services, clock, CYCLES_DUE_AT_ONCE)
    settings = services.settings
    clock.now = DUE + timedelta(seconds=settings.tick_seconds)  # a whole tick interval late
    ticker = Ticker(
        services.ledger,
        services.projector,
        settings,
        timer=paced(clock, PLANNED_PER_SECOND),
        counters=services.tick,
    )
    report = ticker.scan()
    assert (report.registered, report.skipped_missed, report.stopped) == (
        CYCLES_DUE_AT_ONCE,
        0,
        None,
    )
    assert services.tick.skipped_missed == services.tick.budget_stops == 0


def test_cycles_skipped_as_missed_are_warned_of_and_counted(
    open_with: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(DUE - timedelta(hours=1))
    services = open_with(clock)
    [late] = daily_schedules(services, clock, 1)
    clock.now = DUE + timedelta(seconds=7)  # beyond the 5 s misfire grace
    with caplog.at_level(logging.WARNING, logger="cronledger.tick"):
        report = Ticker.of(services).scan()
    assert report.skipped_missed == 1
    [line] = [r for r in caplog.records if r.message.startswith("cycles skipped as missed")]
    assert (line.levelno, vars(line)["cycles"], vars(line)["schedules"]) == (
        logging.WARNING,
        1,
        1,
    )
    assert vars(line)["missed"] == [
        {
            "schedule_id": str(late),
            "cycles": 1,
            "first_planned_at": DUE.isoformat(),
            "late_seconds": 7.0,
        }
    ]
    assert services.tick.skipped_missed == 1


def test_a_scan_stopped_by_its_cycle_limit_says_how_many_schedules_wait(
    open_with: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(DUE - timedelta(hours=1))
    services = open_with(clock, catchup_per_scan=1)
    daily_schedules(services, clock, 3)
    clock.now = DUE
    with caplog.at_level(logging.WARNING, logger="cronledger.tick"):
        report = Ticker.of(services).scan()
    assert report.registered == 1
    [line] = [r for r in caplog.records if r.message.startswith("scan stopped at")]
    assert (vars(line)["limit"], vars(line)["schedules_left"]) == (
        "CRONLEDGER_CATCHUP_PER_SCAN",
        2,
    )
    assert services.tick.budget_stops == 1


def test_a_scan_out_of_time_stops_at_its_budget_and_says_so(
    open_with: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(DUE - timedelta(hours=1))
    services = open_with(clock, scan_budget_seconds=1.5, misfire_grace_seconds=60)
    daily_schedules(services, clock, 3)
    clock.now = DUE
    ticker = Ticker(
        services.ledger, services.projector, services.settings, paced(clock, 1), services.tick
    )
    with caplog.at_level(logging.WARNING, logger="cronledger.tick"):
        report = ticker.scan()
    assert report.stopped is not None
    assert (report.registered, report.stopped.limit, report.stopped.schedules_left) == (
        1,
        "CRONLEDGER_SCAN_BUDGET_SECONDS",
        2,
    )
    assert any(r.message.startswith("scan stopped at") for r in caplog.records)
