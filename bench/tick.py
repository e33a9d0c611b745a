"""10,000 simultaneously due cycles: the tick beside plain SQL doing the same work."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

from eventsourcing.domain import Aggregate, event

from bench._results import Figure, Result
from bench._stores import empty_store
from cronledger.application.cycles import ScanReport, Ticker
from cronledger.application.services import Services, open_services
from cronledger.clock import ManualClock
from cronledger.config import Settings
from cronledger.persistence.store import db_value
from domain.directory import Principal
from domain.runs import run_uuid
from domain.schedules import Schedule, ScheduleSettings
from domain.triggers import following_fire, load_zone, parse_trigger
from domain.values import FormData

CYCLES = 10_000
T0 = datetime(2026, 10, 1, 8, 0, tzinfo=UTC)
DUE = datetime(2026, 10, 1, 9, 0, 0, 500000, tzinfo=UTC)
DAILY = {"kind": "cron", "expression": "0 9 * * *"}


# The pace the defaults are sized for: a scan plans at least this many cycles a second (the
# suite checks a tenth of the burst at a tenth of the pace: tests/integration/
# test_tick_capacity_store.py).
PLANNED_PER_SECOND = 3_000


def run() -> list[str | Result]:
    return [
        outcome
        for kind in ("sqlite", "postgresql")
        for outcome in (*_measure(kind), _burst_on_the_defaults(kind))
    ]


def _measure(kind: str) -> list[str]:
    with empty_store(kind) as url:
        cold, warm = _tick_seconds(url)
    with empty_store(kind) as url:
        baseline = _baseline_seconds(url)
    with empty_store(kind) as url:
        floor = _floor_seconds(url)
    with empty_store(kind) as url:
        defaults = _on_default_settings(url)
    return [
        f"tick {kind}: {CYCLES:,} due cycles registered in {cold:.2f} s by a tick that just "
        f"started ({baseline / cold:.2f} of the baseline's throughput), {warm:.2f} s by one "
        f"that ran the day before ({baseline / warm:.2f}); plain SQL baseline {baseline:.2f} s "
        f"({CYCLES / baseline:,.0f}/s); bare eventsourcing floor {floor:.2f} s "
        f"({baseline / floor:.2f})",
        f"tick {kind} on the default settings: {defaults}",
    ]


def _tick_seconds(url: str) -> tuple[float, float]:
    """Day 1 at 09:00 with a fresh tick (loads every schedule), then day 2 at 09:00."""
    clock = ManualClock(T0)
    settings = Settings(database_url=url, catchup_per_scan=CYCLES, scan_budget_seconds=600)
    services = open_services(settings, clock)
    try:
        _schedules(services, clock)
        ticker = Ticker.of(services)
        clock.now = DUE
        cold = _register_all(ticker)
        services.projector.catch_up()  # what the projections loop does during the day
        clock.now = DUE + timedelta(days=1)
        return cold, _register_all(ticker)
    finally:
        services.close()


class _MovingClock:
    """A clock that runs at the real pace from a set instant: lateness is measured, not set."""

    def __init__(self, start: datetime) -> None:
        self.start, self.started = start, time.perf_counter()

    def __call__(self) -> datetime:
        return self.start + timedelta(seconds=time.perf_counter() - self.started)

    def skip(self, seconds: float) -> None:
        """The tick loop's pause between scans, without waiting it."""
        self.start += timedelta(seconds=seconds)


def _on_default_settings(url: str) -> str:
    """10,000 `skip` schedules due at once, a tick that just started scanning one tick interval
    after: how many are registered on time, how many skipped as missed."""
    settings = Settings(database_url=url)
    clock = _MovingClock(T0)
    services = open_services(settings, clock)
    try:
        _schedules(services, ManualClock(T0), misfire_policy="skip")
        ticker = Ticker.of(services)
        clock.start, clock.started = (
            DUE.replace(microsecond=0) + timedelta(seconds=settings.tick_seconds),
            time.perf_counter(),
        )
        reports: list[ScanReport] = []
        while not reports or reports[-1].registered:
            reports.append(ticker.scan())
            clock.skip(settings.tick_seconds)
        seconds = time.perf_counter() - clock.started
    finally:
        services.close()
    missed = sum(r.skipped_missed for r in reports)
    on_time = sum(r.registered for r in reports) - sum(len(r.missed) for r in reports)
    return (
        f"{on_time:,} cycles registered on time, {missed:,} skipped as missed, by "
        f"{len(reports) - 1} scans in {seconds:.2f} s (catchup_per_scan "
        f"{settings.catchup_per_scan:,}, scan_budget_seconds {settings.scan_budget_seconds:g}, "
        f"tick_seconds {settings.tick_seconds:g}, misfire_grace_seconds "
        f"{settings.misfire_grace_seconds:g})"
    )


def _burst_on_the_defaults(kind: str) -> Result:
    """10,000 `skip` schedules due at once, the scan a whole tick interval late and planning at
    `PLANNED_PER_SECOND` (its timer paced, so the machine's speed does not count): every cycle
    registered on time in one scan, on the default settings."""
    due = DUE.replace(microsecond=0)
    clock = ManualClock(due - timedelta(hours=1))
    with empty_store(kind) as url:
        services = open_services(Settings(database_url=url), clock)
        try:
            _schedules(services, clock, misfire_policy="skip")
            settings = services.settings
            late = due + timedelta(seconds=settings.tick_seconds)
            clock.now = late

            def paced() -> float:
                clock.now += timedelta(seconds=1 / PLANNED_PER_SECOND)
                return (clock.now - late).total_seconds()

            ticker = Ticker(services.ledger, services.projector, settings, paced, services.tick)
            started = time.perf_counter()
            report = ticker.scan()
            seconds = time.perf_counter() - started
        finally:
            services.close()
    return Result(
        "tick",
        f"{CYCLES:,} cycles due at once on the default settings, {kind}",
        (
            Figure("registered on time", report.registered, "", at_least=CYCLES),
            Figure("skipped as missed", report.skipped_missed, "", at_most=0),
            Figure("scans stopped by a limit", int(report.stopped is not None), "", at_most=0),
            Figure("scan", seconds, "s"),
        ),
        settings={"planned per second (paced)": PLANNED_PER_SECOND, "first scan late": "1 tick"},
    )


def _register_all(ticker: Ticker) -> float:
    started = time.perf_counter()
    registered = 0
    while registered < CYCLES:
        registered += ticker.scan().registered
    return time.perf_counter() - started


def _schedules(services: Services, clock: ManualClock, misfire_policy: str = "catch_up") -> None:
    """10,000 enabled daily schedules, written in big batches (set-up, not measured)."""
    token = services.directory.bootstrap("bench", "root").token
    root = services.directory.authenticate(token)
    assert isinstance(root, Principal)
    settings = ScheduleSettings(
        "daily", "d", DAILY, "UTC", "root", "Daily {{date}}", FormData({"n": 1}), misfire_policy
    )
    for _ in range(CYCLES // 1000):
        batch = [
            Schedule.create(root.tenant_id, settings, True, clock.now, "root") for _ in range(1000)
        ]
        services.ledger.save(*batch)


class _Bare(Aggregate):
    """The least a cycle can cost on the log: a one-field aggregate created, another changed."""

    def __init__(self, n: int) -> None:
        self.n = n

    @event("Changed")
    def change(self, n: int) -> None:
        self.n = n


def _floor_seconds(url: str) -> float:
    """Two one-field events per cycle through the same ledger, nothing loaded or computed."""
    services = open_services(Settings(database_url=url))
    try:
        plans = [_Bare(n=0) for _ in range(CYCLES)]
        for start in range(0, CYCLES, 1000):
            services.ledger.save(*plans[start : start + 1000])
        started = time.perf_counter()
        with services.ledger.projections_deferred():
            for start in range(0, CYCLES, 500):
                cycles: list[_Bare] = []
                for plan in plans[start : start + 500]:
                    plan.change(n=1)
                    cycles += [_Bare(n=1), plan]
                services.ledger.save(*cycles)
        return time.perf_counter() - started
    finally:
        services.close()


def _baseline_seconds(url: str) -> float:
    """The same work as raw SQL: read due plans, insert-if-absent each run, advance each plan."""
    services = open_services(Settings(database_url=url))
    store = services.store
    try:
        with store.connect() as conn:
            _baseline_tables(conn, store.kind)
            rows = [
                (str(uuid4()), db_value(store.kind, DUE - timedelta(seconds=0.5)))
                for _ in range(CYCLES)
            ]
            _many(conn, store.kind, "INSERT INTO baseline_plans VALUES (?, ?)", rows)
            started = time.perf_counter()
            _baseline_scan(conn, store.kind)
            return time.perf_counter() - started
    finally:
        services.close()


def _baseline_scan(conn: Any, kind: str) -> None:
    zone, trigger = load_zone("UTC"), parse_trigger(DAILY)
    _begin(conn, kind)
    due = conn.execute(
        _native(kind, "SELECT id, next_fire_at FROM baseline_plans WHERE next_fire_at <= ?"),
        (db_value(kind, DUE),),
    ).fetchall()
    runs, plans = [], []
    for schedule_id, _ in due:
        planned = DUE - timedelta(seconds=0.5)
        runs.append(
            (
                str(run_uuid(uuid4(), planned)),
                schedule_id,
                db_value(kind, planned),
                "Daily 2026-10-01",
                json.dumps({"n": 1}),
                "root",
                "PENDING",
            )
        )
        plans.append((db_value(kind, following_fire(trigger, zone, planned)), schedule_id))
    _many(
        conn,
        kind,
        "INSERT INTO baseline_runs VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
        runs,
    )
    _many(conn, kind, "UPDATE baseline_plans SET next_fire_at = ? WHERE id = ?", plans)
    conn.execute("COMMIT")


def _baseline_tables(conn: Any, kind: str) -> None:
    ts = "TIMESTAMPTZ" if kind == "postgresql" else "TEXT"
    conn.execute(f"CREATE TABLE baseline_plans (id TEXT PRIMARY KEY, next_fire_at {ts})")
    conn.execute(
        f"CREATE TABLE baseline_runs (id TEXT PRIMARY KEY, schedule_id TEXT, planned_at {ts}, "
        "title TEXT, form_data TEXT, initiator_id TEXT, status TEXT)"
    )


def _begin(conn: Any, kind: str) -> None:
    conn.execute("BEGIN" if kind == "postgresql" else "BEGIN IMMEDIATE")


def _many(conn: Any, kind: str, statement: str, rows: list[tuple[Any, ...]]) -> None:
    conn.cursor().executemany(_native(kind, statement), rows)


def _native(kind: str, statement: str) -> str:
    return statement.replace("?", "%s") if kind == "postgresql" else statement


if __name__ == "__main__":
    print("\n".join(run()))
