"""10,000 due runs launched as approval instances by one worker, until the `runs` read model
shows every one SUCCEEDED."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta

from bench._results import Figure, Result
from bench._stores import empty_store
from cronledger.application.cycles import Ticker
from cronledger.application.directory import DefinitionFields
from cronledger.application.launches import LAUNCHES_PER_COMMIT, Worker
from cronledger.application.services import Services, open_services
from cronledger.clock import ManualClock
from cronledger.config import Settings
from domain.directory import Principal
from domain.schedules import Schedule, ScheduleSettings
from domain.values import FormData

RUNS = int(os.environ.get("BENCH_WORKER_RUNS", "10000"))
GOAL_SECONDS = 5.0  # issue 17, on both stores
T0 = datetime(2026, 10, 1, 8, 0, tzinfo=UTC)
DAILY = {"kind": "cron", "expression": "0 9 * * *"}


def run() -> list[Result]:
    return [_measure(kind) for kind in ("sqlite", "postgresql")]


def _measure(kind: str) -> Result:
    with empty_store(kind) as url:
        clock = ManualClock(T0)
        services = open_services(Settings(database_url=url, catchup_per_scan=RUNS), clock)
        try:
            _due_runs(services, clock)
            started = time.perf_counter()
            launched = Worker.of(services).drain().succeeded
            services.projector.catch_up()  # until the runs table shows them
            seconds = time.perf_counter() - started
            shown = _succeeded_rows(services)
        finally:
            services.close()
    return Result(
        "worker",
        f"{kind}, {RUNS:,} due runs launched and shown SUCCEEDED",
        (
            Figure("time", seconds, "s", at_most=GOAL_SECONDS * RUNS / 10_000),
            Figure("rate", launched / seconds, "launches/s"),
            Figure("SUCCEEDED rows", shown, at_least=RUNS),
        ),
        settings={"claimed and launched per commit": LAUNCHES_PER_COMMIT},
    )


def _succeeded_rows(services: Services) -> int:
    rows = services.store.query("SELECT COUNT(*) FROM runs WHERE status = 'SUCCEEDED'")
    return int(rows[0][0])


def _due_runs(services: Services, clock: ManualClock) -> None:
    """RUNS daily schedules, due together at 09:00 and registered by the tick (not measured)."""
    directory = services.directory
    root = directory.authenticate(directory.bootstrap("bench", "root").token)
    assert isinstance(root, Principal)
    directory.create_account(root, "reviewer", "Reviewer", ["operator"])  # approves root's
    definition = directory.create_definition(
        root, "d", DefinitionFields("D", False, 3600, [], reviewers={"roles": ["operator"]})
    )
    directory.set_published(root, definition.id, True, None)
    settings = ScheduleSettings(
        "daily", definition.id, DAILY, "UTC", "root", "Daily", FormData({"n": 1})
    )
    for start in range(0, RUNS, 1000):
        batch = [
            Schedule.create(root.tenant_id, settings, True, clock.now, "root")
            for _ in range(min(1000, RUNS - start))
        ]
        services.ledger.save(*batch)
    clock.now = T0 + timedelta(hours=1)
    ticker = Ticker.of(services)
    while ticker.scan().registered:
        pass
    services.projector.catch_up()


if __name__ == "__main__":
    print("\n".join(result.line for result in run()))
