"""Projection catch-up over a log of 200,000+ events, beside reading the same rows raw."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

from bench._stores import empty_store
from cronledger.application.cycles import Ticker
from cronledger.application.services import Services, open_services
from cronledger.clock import ManualClock
from cronledger.config import Settings
from domain.directory import Principal
from domain.schedules import Schedule, ScheduleSettings
from projections.catalog import all_projections

SCHEDULES = 1000
MINUTES = int(os.environ.get("BENCH_PROJECTION_MINUTES", "100"))
T0 = datetime(2026, 10, 1, tzinfo=UTC)
EVERY_MINUTE = {"kind": "cron", "expression": "* * * * *"}


def run() -> list[str]:
    return [_measure(kind) for kind in ("sqlite", "postgresql")]


def _measure(kind: str) -> str:
    with empty_store(kind) as url:
        clock = ManualClock(T0)
        settings = Settings(database_url=url, catchup_per_scan=SCHEDULES)
        services = open_services(settings, clock)
        try:
            events = _log(services, clock)
            _forget_read_models(services)
            raw = _raw_read_seconds(services)
            started = time.perf_counter()
            services.projector.catch_up()
            seconds = time.perf_counter() - started
        finally:
            services.close()
    return (
        f"projections {kind}: {events:,} events projected into {_table_count()} tables in "
        f"{seconds:.1f} s ({events / seconds:,.0f} events/s); reading the same rows raw "
        f"{raw:.1f} s ({events / raw:,.0f} events/s)"
    )


def _log(services: Services, clock: ManualClock) -> int:
    """SCHEDULES every-minute schedules ticked for MINUTES: a cycle and a plan step each."""
    token = services.directory.bootstrap("bench", "root").token
    root = services.directory.authenticate(token)
    assert isinstance(root, Principal)
    settings = ScheduleSettings("m", "d", EVERY_MINUTE, "UTC", "root", "Minute {{datetime}}", {})
    services.ledger.save(
        *(
            Schedule.create(root.tenant_id, settings, True, clock.now, "root")
            for _ in range(SCHEDULES)
        )
    )
    ticker = Ticker.of(services)
    for _ in range(MINUTES):
        clock.advance(60)
        ticker.scan()
    return services.ledger.recorder.max_notification_id() or 0


def _forget_read_models(services: Services) -> None:
    """Empty every table and position: the projections start from zero, as in a rebuild."""
    with services.store.connect() as conn:
        for table in (t for p in all_projections("UTC") for t in p.tables):
            conn.execute(f"DELETE FROM {table}")
        conn.execute("UPDATE projection_positions SET position = 0")


def _raw_read_seconds(services: Services) -> float:
    """The recorder's own reads of every event, in the projector's batch size, nothing done."""
    started = time.perf_counter()
    start = 1
    while page := services.ledger.recorder.select_notifications(start=start, limit=1000):
        start = page[-1].id + 1
    return time.perf_counter() - started


def _table_count() -> int:
    return sum(len(p.tables) for p in all_projections("UTC"))


if __name__ == "__main__":
    print("\n".join(run()))
