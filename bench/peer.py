"""The peer, side by side: APScheduler 3 launching N jobs due at one instant, on the same
PostgreSQL, beside cronledger launching N cycles due at once (bench/e2e.py).

Each APScheduler job's "launch" inserts one row (its planned and launch instants) into a table
of its own; the time to all launched runs from the due instant until every row exists. Its
SQLAlchemyJobStore keeps the jobs in a uniquely named table, dropped afterwards; its
MemoryJobStore, the in-process reference, keeps them in memory (the launches still go to
PostgreSQL). The jobs are added to a paused scheduler before the due instant, chosen far enough
ahead for the adding to end first.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy
from apscheduler.executors.pool import ThreadPoolExecutor  # type: ignore[import-untyped]
from apscheduler.jobstores.memory import MemoryJobStore  # type: ignore[import-untyped]
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore  # type: ignore[import-untyped]
from apscheduler.schedulers.background import BackgroundScheduler  # type: ignore[import-untyped]

from bench import e2e
from bench._processes import in_child, memory_of, reset_peak_memory, wait_for
from bench._results import Figure, Result, percentile, spread
from bench._stores import POSTGRES_URL

SIZES = {"small": (100, 1000), "default": (1000, 10_000), "large": (1000, 10_000)}
WORKERS = 20  # the executor's threads, and the launch connections
JOB_DEFAULTS = {"coalesce": False, "misfire_grace_time": 3600, "max_instances": 1}
CALIBRATION_JOBS = 100  # added first, to time the adding and choose the due instant
LEAD_SECONDS = 3.0  # between the end of the adding and the due instant, at the least
STORES = ("sqlalchemy", "memory")
GOAL_RATIO = 0.8  # cronledger's time to all launched, at most this share of APScheduler's
SQLALCHEMY_URL = POSTGRES_URL.replace("postgresql://", "postgresql+psycopg://", 1)


def run() -> Iterator[Result]:
    for cycles in SIZES.get(e2e.SCALE, SIZES["default"]):
        peers = {store: in_child(launched_by_apscheduler, store, cycles) for store in STORES}
        yield from (peer.result() for peer in peers.values())
        for kind in ("postgresql", "sqlite"):  # both against the one APScheduler run
            yield compared(e2e.launched_in_process(kind, cycles), peers["sqlalchemy"])


def compared(burst: e2e.Burst, theirs: Peer) -> Result:
    """cronledger's burst against APScheduler's SQLAlchemyJobStore on PostgreSQL."""
    ours = burst.lateness
    goal = GOAL_RATIO if burst.cycles == e2e.GOAL_CYCLES else None
    return Result(
        "peer",
        f"cronledger / APScheduler, {burst.kind}, {burst.cycles:,} due at once",
        (
            Figure(
                "time to all launched",
                max(ours.launched) / theirs.all_launched,
                "x",
                at_most=goal,
            ),
            Figure(
                "launch lag p99",
                percentile(ours.launched, 0.99) / percentile(theirs.lags, 0.99),
                "x",
            ),
        ),
        note=f"cronledger: one serve process on {burst.kind}, its loops on the default settings "
        f"(bench/e2e.py), measured at {burst.measured_at}; APScheduler: its SQLAlchemyJobStore "
        f"on postgresql, measured at {theirs.measured_at}; above 1, cronledger is slower. A "
        "cronledger launch records a run's attempt and creates an approval instance, an "
        "APScheduler launch inserts one row",
    )


@dataclass(frozen=True)
class Peer:
    store: str
    cycles: int
    lags: list[float]  # seconds from the due instant to each launch row's insert
    adding_seconds: float
    peak_mib: float
    measured_at: str

    @property
    def all_launched(self) -> float:
        return max(self.lags)

    def result(self) -> Result:
        where = {"sqlalchemy": "SQLAlchemyJobStore on postgresql", "memory": "MemoryJobStore"}
        return Result(
            "peer",
            f"APScheduler {where[self.store]}, {self.cycles:,} jobs due at once",
            (
                Figure("all launched", self.all_launched, "s"),
                *spread("launch lag", self.lags),
                Figure("jobs added", self.cycles / self.adding_seconds, "jobs/s"),
                Figure("peak RSS", self.peak_mib, "MiB"),
            ),
            settings={
                "scheduler": "BackgroundScheduler, timezone UTC",
                "executor": f"ThreadPoolExecutor({WORKERS})",
                **JOB_DEFAULTS,
                "trigger": "DateTrigger at one instant, added while paused",
                "launch": "INSERT of one row on postgresql (SQLAlchemy pool of "
                f"{WORKERS} connections)",
            },
        )


class Launches:
    """The table each job's launch inserts its row into, and its connections."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.engine = sqlalchemy.create_engine(SQLALCHEMY_URL, pool_size=WORKERS, max_overflow=0)
        self.insert = sqlalchemy.text(
            f"INSERT INTO {table} (job_id, planned_at, launched_at) "
            "VALUES (:job_id, :planned_at, :launched_at)"
        )

    def create(self) -> None:
        self._execute(
            f"CREATE TABLE {self.table} (job_id TEXT PRIMARY KEY, "
            "planned_at TIMESTAMPTZ NOT NULL, launched_at TIMESTAMPTZ NOT NULL)"
        )

    def record(self, job_id: str, planned_at: datetime) -> None:
        row = {"job_id": job_id, "planned_at": planned_at, "launched_at": datetime.now(UTC)}
        with self.engine.begin() as conn:
            conn.execute(self.insert, row)

    def count(self) -> int:
        return int(self._execute(f"SELECT COUNT(*) FROM {self.table}")[0][0])

    def lags(self) -> list[float]:
        """Seconds from each job's planned instant to its launch."""
        rows = self._execute(
            f"SELECT EXTRACT(EPOCH FROM launched_at - planned_at) FROM {self.table}"
        )
        return [float(lag) for (lag,) in rows]

    def drop(self, *tables: str) -> None:
        self._execute(f"DROP TABLE IF EXISTS {', '.join((self.table, *tables))}")
        self.engine.dispose()

    def _execute(self, statement: str) -> list[sqlalchemy.Row[Any]]:
        with self.engine.begin() as conn:
            result = conn.execute(sqlalchemy.text(statement))
            return list(result.all()) if result.returns_rows else []


_launches: Launches | None = None  # in the scheduler's process, once it is measuring


def launch(job_id: str, planned_at: datetime) -> None:
    """A job's work: record its launch (APScheduler stores a reference to this function)."""
    assert _launches is not None
    _launches.record(job_id, planned_at)


def launched_by_apscheduler(store: str, cycles: int) -> Peer:
    """In a child process: `cycles` jobs due at one instant, until every launch row exists."""
    global _launches
    tag = uuid.uuid4().hex[:10]
    jobs_table = f"peer_jobs_{tag}"
    _launches = launches = Launches(f"peer_launches_{tag}")
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    try:
        launches.create()
        return _measure(_scheduler(store, jobs_table), cycles, launches, store)
    finally:
        launches.drop(jobs_table)


def _scheduler(store: str, jobs_table: str) -> Any:
    jobstore = (
        SQLAlchemyJobStore(url=SQLALCHEMY_URL, tablename=jobs_table)
        if store == "sqlalchemy"
        else MemoryJobStore()
    )
    return BackgroundScheduler(
        jobstores={"default": jobstore},
        executors={"default": ThreadPoolExecutor(WORKERS)},
        job_defaults=JOB_DEFAULTS,
        timezone=UTC,
    )


def _measure(scheduler: Any, cycles: int, launches: Launches, store: str) -> Peer:
    scheduler.start(paused=True)
    try:
        due = _due_after_adding(scheduler, cycles)
        started = time.perf_counter()
        for number in range(cycles):
            job_id = f"job-{number}"
            scheduler.add_job(launch, "date", run_date=due, id=job_id, args=(job_id, due))
        adding = time.perf_counter() - started
        if datetime.now(UTC) > due - timedelta(seconds=0.5):
            raise RuntimeError(f"adding {cycles:,} jobs overran their due instant")
        reset_peak_memory()
        scheduler.resume()
        wait_for(lambda: datetime.now(UTC) >= due, 600, "the due instant", every=0.05)
        wait_for(lambda: launches.count() >= cycles, 120 + cycles * 0.05, "every launch row")
        peak = memory_of().peak
    finally:
        scheduler.shutdown(wait=True)
    return Peer(store, cycles, launches.lags(), adding, peak, e2e.utc_time())


def _due_after_adding(scheduler: Any, cycles: int) -> datetime:
    """A whole second far enough ahead to add `cycles` jobs first, timed on CALIBRATION_JOBS
    jobs (due in a year, then removed)."""
    far = datetime.now(UTC) + timedelta(days=365)
    started = time.perf_counter()
    for number in range(CALIBRATION_JOBS):
        scheduler.add_job(launch, "date", run_date=far, id=f"calibration-{number}", args=("", far))
    per_job = (time.perf_counter() - started) / CALIBRATION_JOBS
    scheduler.remove_all_jobs()
    ahead = datetime.now(UTC) + timedelta(seconds=1.5 * per_job * cycles + LEAD_SECONDS)
    return ahead.replace(microsecond=0) + timedelta(seconds=1)


if __name__ == "__main__":
    for outcome in run():
        print(outcome.line, flush=True)
