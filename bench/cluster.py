"""The layout of docs/deployment.md at full scale, and the ceiling of one log's writes.

- layout: N due schedules, 2 `cronledger tick`, 2 `worker`, 1 `projections` and 1 `web` as
  processes on one PostgreSQL schema; seconds from the tick's resume until every cycle is
  registered, then launched (counted on the log itself), while one client reads the web API.
  Also the CPU seconds each kind of process used meanwhile.
- ceiling: 1, 2 and 4 writer processes appending to one log (transactions of 1, 10 and 100
  events): events/s, and how many writers wait on the log's append lock on average; the median
  of REPEATS runs, the cases taking turns.
- groups: two logs (schemas) with 2 writers each against one log with 4; and the layout as two
  tenant groups of N/2 schedules each, at once, against one group of N.

BENCH_CLUSTER_SCHEDULES (10,000), BENCH_CLUSTER_WRITE_SECONDS (2 per run) and
BENCH_CLUSTER_REPEATS (3) make it smaller or longer: a few minutes on 2 cores by default.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any
from uuid import uuid4

import psycopg

from bench._processes import wait_for
from bench._results import Figure, Result
from bench._seed import seed_due_schedules
from bench._stores import POSTGRES_URL, empty_store
from cronledger.application.services import open_services
from cronledger.clock import system_clock
from cronledger.config import Settings
from cronledger.persistence.connections import Limits
from cronledger.persistence.ledger import Ledger
from cronledger.persistence.store import Store
from domain.schedules import Schedule, ScheduleSettings
from domain.values import FormData

SCHEDULES = int(os.environ.get("BENCH_CLUSTER_SCHEDULES", "10000"))
WRITE_SECONDS = float(os.environ.get("BENCH_CLUSTER_WRITE_SECONDS", "2"))
REPEATS = int(os.environ.get("BENCH_CLUSTER_REPEATS", "3"))
CLI = str(Path(sys.executable).parent / "cronledger")
LAYOUT = {"tick": 2, "worker": 2, "projections": 1}
LOOP_POOLS = {"CRONLEDGER_POOL_SIZE": "1", "CRONLEDGER_POOL_OVERFLOW": "1"}
REGISTERED, LAUNCHED = "domain.runs:Run.Registered", "domain.approvals:ApprovalInstance.Submitted"
WRITERS = (1, 2, 4)
EVENTS_PER_TRANSACTION = (1, 10, 100)
WRITER_KIND = "bench-writer"  # its connections' application_name: cronledger-bench-writer
READY_SECONDS = 60.0
WORK_SECONDS = 600.0
POLL_SECONDS = 0.02
BENCH = "cluster"


def run() -> Iterator[Result]:
    yield _layout_result(1)
    yield from _ceiling_results()
    yield _layout_result(2)


# -- the layout ---------------------------------------------------------------------------


@dataclass
class Group:
    """One tenant group: its store, its processes and, once resumed, what its log shows."""

    url: str
    token: str = ""
    events_table: str = ""
    processes: list[Process] = field(default_factory=list)
    base: str = ""
    resumed_at: float = 0.0
    registered_at: float | None = None
    launched_at: float | None = None
    first_position: int = 0
    position: int = 0
    counts: dict[str, int] = field(default_factory=dict)


def _layout_result(groups: int) -> Result:
    each = SCHEDULES // groups
    with ExitStack() as stack:
        urls = [stack.enter_context(empty_store("postgresql")) for _ in range(groups)]
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        cluster = [_seeded_group(url, each, f"group{n}") for n, url in enumerate(urls)]
        with ExitStack() as running:
            for number, group in enumerate(cluster):
                running.enter_context(_processes(group, folder / f"group{number}"))
            reads = _Reader(cluster[0].base, cluster[0].token)
            with reads.running():
                before = [_cpu(group) for group in cluster]
                for group in cluster:
                    _resume(group)
                _watch(cluster, each)
                used = _cpu_used(before, [_cpu(group) for group in cluster])
        errors = sum(process.errors() for group in cluster for process in group.processes)
    return _layout_figures(cluster, each, reads, errors, used)


def _layout_figures(
    cluster: list[Group], each: int, reads: _Reader, errors: int, cpu: dict[str, list[float]]
) -> Result:
    registered = max(_since(g.registered_at, g.resumed_at) for g in cluster)
    launched = max(_since(g.launched_at, g.resumed_at) for g in cluster)
    events = sum(g.position - g.first_position for g in cluster)
    groups = len(cluster)
    case = (
        f"{each * groups:,} due cycles, one group, PostgreSQL"
        if groups == 1
        else f"{each * groups:,} due cycles in {groups} tenant groups of {each:,}, PostgreSQL"
    )
    return Result(
        BENCH,
        case,
        (
            Figure("all registered", registered, "s", at_most=1.0 if groups == 1 else None),
            Figure("all launched", launched, "s", at_most=5.0 if groups == 1 else None),
            Figure("events written", events / launched, "events/s"),
            Figure("web reads meanwhile", len(reads.latencies), ""),
            Figure("web read p99", reads.p99(), "ms"),
            Figure("errors logged", errors, "", at_most=0),
            *(Figure(f"CPU {kind}", sum(seconds), "s") for kind, seconds in cpu.items()),
            Figure("CPU of the less busy tick", min(cpu["tick"]), "s"),
        ),
        settings={
            "per group": "2 tick, 2 worker, 1 projections, 1 web processes",
            "tick_seconds": Settings().tick_seconds,
            "loop pools": "1 + 1 overflow",
            "timed from": "the tick's resume, all processes up",
            "CPU": "seconds each kind of process used until all launched, every group",
            "load average": _load(),
        },
    )


def _seeded_group(url: str, schedules: int, tenant: str) -> Group:
    """`schedules` daily schedules of one tenant, due a minute ago, with the tick paused."""
    services = open_services(Settings(database_url=url))
    try:
        first_due_at = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=1)
        seeded = seed_due_schedules(services, schedules, first_due_at, tenant=tenant)
        services.pauses.pause_tick("system:bench", "the processes start")
    finally:
        services.close()
    return Group(url, seeded.token)


@contextmanager
def _processes(group: Group, folder: Path) -> Iterator[None]:
    """The group's processes, each answering /readyz; stopped with SIGTERM afterwards."""
    folder.mkdir()
    port = _free_port()
    group.base = f"http://127.0.0.1:{port}"
    web = Process(group.url, ["web", "--port", str(port)], folder / "web.log")
    group.processes.append(web)
    probes = [f"{group.base}/readyz"]
    for command, count in LAYOUT.items():
        for number in range(count):
            metrics = _free_port()
            args = [command, "--metrics-port", str(metrics)]
            log = folder / f"{command}{number}.log"
            group.processes.append(Process(group.url, args, log, LOOP_POOLS))
            probes.append(f"http://127.0.0.1:{metrics}/readyz")
    try:
        wait_for(lambda: all(_ok(url) for url in probes), READY_SECONDS, "every process ready")
        yield
    finally:
        for process in group.processes:
            process.stop()


def _resume(group: Group) -> None:
    services = open_services(Settings(database_url=group.url))
    try:
        group.events_table = services.ledger.events_table
        group.first_position = group.position = services.ledger.recorder.max_notification_id() or 0
        group.resumed_at = time.perf_counter()
        services.pauses.resume_tick("system:bench", "every process is up")
    finally:
        services.close()


def _watch(cluster: list[Group], cycles: int) -> None:
    """Count registrations and launches on each group's log until all are launched."""
    with ExitStack() as stack:
        connections = [
            stack.enter_context(psycopg.connect(POSTGRES_URL, autocommit=True)) for group in cluster
        ]
        deadline = time.perf_counter() + WORK_SECONDS
        while any(group.launched_at is None for group in cluster):
            if time.perf_counter() > deadline:
                raise RuntimeError(f"not all launched within {WORK_SECONDS} s" + _state(cluster))
            for group, connection in zip(cluster, connections, strict=True):
                _count_new_events(group, connection, cycles)
            time.sleep(POLL_SECONDS)


def _count_new_events(group: Group, connection: psycopg.Connection[Any], cycles: int) -> None:
    table = group.events_table
    end = connection.execute(f"SELECT MAX(notification_id) FROM {table}").fetchone()
    head = int(end[0] or 0) if end else 0
    rows = connection.execute(
        f"SELECT topic, COUNT(*) FROM {table} WHERE notification_id > %s "
        "AND notification_id <= %s AND topic = ANY(%s) GROUP BY topic",
        (group.position, head, [REGISTERED, LAUNCHED]),
    ).fetchall()
    now = time.perf_counter()
    group.position = head
    for topic, count in rows:
        group.counts[topic] = group.counts.get(topic, 0) + int(count)
    if group.registered_at is None and group.counts.get(REGISTERED, 0) >= cycles:
        group.registered_at = now
    if group.launched_at is None and group.counts.get(LAUNCHED, 0) >= cycles:
        group.launched_at = now


def _state(cluster: list[Group]) -> str:
    """What each group's log shows, and the last lines each of its processes logged."""
    return "".join(
        f"\n{group.url}: {group.counts}"
        + "".join(f"\n  {process.log.name}: {process.tail()}" for process in group.processes)
        for group in cluster
    )


class Process:
    """A `cronledger` command running, its log in a file."""

    def __init__(
        self, url: str, args: list[str], log: Path, env: dict[str, str] | None = None
    ) -> None:
        self.log = log
        self.command = args[0]
        variables = {**os.environ, "CRONLEDGER_DATABASE_URL": url, **(env or {})}
        variables["CRONLEDGER_DRAIN_SECONDS"] = "0.2"
        with log.open("w") as stderr:
            self.process = subprocess.Popen(
                [CLI, *args],
                env=variables,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def cpu_seconds(self) -> float:
        """User and system CPU time the process has used so far (from /proc)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def tail(self, lines: int = 5) -> str:
        return "\n    ".join(self.log.read_text().splitlines()[-lines:])

    def errors(self) -> int:
        """Lines logged at ERROR or above, and tracebacks outside the log."""
        count = 0
        for line in self.log.read_text().splitlines():
            if line.startswith("{"):
                count += json.loads(line).get("level") in ("ERROR", "CRITICAL")
            else:
                count += line.startswith("Traceback")
        return count


class _Reader:
    """One client reading the runs list of the web API, one request after another."""

    def __init__(self, base: str, token: str) -> None:
        self.url = f"{base}/api/workflows/runs?page_size=50"
        self.token = token
        self.latencies: list[float] = []
        self._stop = threading.Event()

    @contextmanager
    def running(self) -> Iterator[None]:
        thread = threading.Thread(target=self._read, daemon=True)
        thread.start()
        try:
            yield
        finally:
            self._stop.set()
            thread.join(30)

    def _read(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        while not self._stop.is_set():
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(
                    urllib.request.Request(self.url, headers=headers), timeout=30
                ) as answer:
                    answer.read()
            except (urllib.error.URLError, OSError):
                continue  # counted as no read
            self.latencies.append((time.perf_counter() - started) * 1000)

    def p99(self) -> float:
        if len(self.latencies) < 2:
            return float("nan")
        return statistics.quantiles(self.latencies, n=100)[98]


# -- the ceiling of one log -----------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """`writers` processes on each of `logs` logs, appending transactions of `size` events."""

    writers: int
    size: int
    logs: int

    @property
    def name(self) -> str:
        where = "one log" if self.logs == 1 else f"{self.logs} logs (schemas)"
        return (
            f"write ceiling, {where}, {self.writers * self.logs} writer processes, "
            f"{self.size} events a transaction"
        )


@dataclass(frozen=True)
class Measured:
    events_per_second: float
    transactions_per_second: float
    waiting: float


def _ceiling_results() -> Iterator[Result]:
    """Each case REPEATS times, the cases taking turns (so that a change in the machine's load
    falls on all of them); the median run of each."""
    cases = [
        Case(writers, size, logs)
        for size in EVENTS_PER_TRANSACTION
        for writers, logs in (*((w, 1) for w in WRITERS), (2, 2))
    ]
    runs: dict[Case, list[Measured]] = {case: [] for case in cases}
    with ExitStack() as stack:
        logs = [stack.enter_context(empty_store("postgresql")) for _ in range(2)]
        for url in logs:
            open_services(Settings(database_url=url)).close()  # migrated once, not by writers
        loads = []
        for _ in range(REPEATS):
            loads.append(_load())
            for case in cases:
                runs[case].append(_measure(case, logs))
    for case in cases:
        yield _ceiling_result(case, runs[case], loads)


def _measure(case: Case, logs: list[str]) -> Measured:
    urls = [url for url in logs[: case.logs] for _ in range(case.writers)]
    per_writer, waiting = _write_together(urls, case.size)
    events = sum(count for count, _ in per_writer)
    seconds = max(elapsed for _, elapsed in per_writer)
    return Measured(events / seconds, events / case.size / seconds, waiting)


def _ceiling_result(case: Case, runs: list[Measured], loads: list[str]) -> Result:
    median = sorted(runs, key=lambda run: run.events_per_second)[len(runs) // 2]
    return Result(
        BENCH,
        case.name,
        (
            Figure("appended", median.events_per_second, "events/s"),
            Figure("transactions", median.transactions_per_second, "/s"),
            Figure("writers waiting on the append lock", median.waiting, ""),
        ),
        settings={
            "seconds": WRITE_SECONDS,
            "event": "Schedule.Created",
            "runs": ", ".join(f"{run.events_per_second:.0f}" for run in runs),
            "load average": ", ".join(loads),
        },
        note=f"median of {len(runs)} runs, events/s",
    )


def _write_together(urls: list[str], size: int) -> tuple[list[tuple[int, float]], float]:
    """One writer process per URL, started together: (events, seconds) of each, and the mean
    number of them waiting for a lock meanwhile (sampled from pg_stat_activity)."""
    context = multiprocessing.get_context("spawn")  # no connection of this process is shared
    barrier = context.Barrier(len(urls) + 1)
    results = context.Queue()
    writers = [
        context.Process(target=_writer, args=(url, size, WRITE_SECONDS, barrier, results))
        for url in urls
    ]
    for writer in writers:
        writer.start()
    barrier.wait(READY_SECONDS)
    waiting = _lock_waits(WRITE_SECONDS)
    counts = [results.get(timeout=READY_SECONDS) for _ in writers]
    for writer in writers:
        writer.join()
    return counts, waiting


def _writer(url: str, size: int, seconds: float, barrier: Barrier, results: Any) -> None:
    """Append new schedules, `size` to a transaction, for `seconds`; report (events, seconds)."""
    store = Store.from_url(url, Limits.of(Settings(), WRITER_KIND))
    ledger = Ledger(store, system_clock, create_tables=False)  # migrated by the benchmark
    trigger = {"kind": "cron", "expression": "0 9 * * *"}
    form = FormData({"n": 1})
    settings = ScheduleSettings("w", str(uuid4()), trigger, "UTC", "root", "W", form)
    tenant = uuid4()
    at = datetime.now(UTC)
    ledger.save(Schedule.create(tenant, settings, True, at, "root"))  # connections warm
    barrier.wait()
    written = 0
    started = time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        ledger.save(*(Schedule.create(tenant, settings, True, at, "root") for _ in range(size)))
        written += size
    results.put((written, time.perf_counter() - started))
    ledger.close()
    store.close()


def _lock_waits(seconds: float) -> float:
    """The mean number of writer sessions waiting on a lock, sampled for `seconds`."""
    samples: list[int] = []
    deadline = time.perf_counter() + seconds
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        while time.perf_counter() < deadline:
            row = connection.execute(
                "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = %s "
                "AND wait_event_type = 'Lock'",
                (f"cronledger-{WRITER_KIND}",),
            ).fetchone()
            samples.append(int(row[0]) if row else 0)
            time.sleep(POLL_SECONDS)
    return statistics.fmean(samples) if samples else 0.0


# -- helpers --------------------------------------------------------------------------------


def _cpu(group: Group) -> list[tuple[str, float]]:
    return [(process.command, process.cpu_seconds()) for process in group.processes]


def _cpu_used(
    before: list[list[tuple[str, float]]], after: list[list[tuple[str, float]]]
) -> dict[str, list[float]]:
    """CPU seconds each process used between the two samples, by command."""
    used: dict[str, list[float]] = {}
    for started, ended in zip(before, after, strict=True):
        for (command, first), (_, last) in zip(started, ended, strict=True):
            used.setdefault(command, []).append(last - first)
    return used


def _load() -> str:
    """The machine's load average over 1 minute, as measured alongside."""
    return f"{os.getloadavg()[0]:.1f}"


def _since(at: float | None, start: float) -> float:
    assert at is not None  # `_watch` returned: every group reached it
    return at - start


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return int(answer.status) == 200
    except (urllib.error.URLError, OSError):
        return False


if __name__ == "__main__":
    for result in run():
        print(result.line, flush=True)
