"""HTTP load: requests per second and p50/p99 per operation, with and without open streams.

Three deployments, each on a fresh store seeded with `BENCH_HTTP_SCHEDULES` daily schedules that
were due a minute ago, so that the loops register and launch them at start (runs and approval
instances exist before any figure is taken):

- `cronledger serve` (API and loops in one process) on SQLite, and on PostgreSQL;
- `cronledger web --workers BENCH_HTTP_WORKERS` on PostgreSQL, with the loops in a
  `cronledger serve` beside it (its own API unused).

Against each, locust (gevent clients on loopback, headless) runs 32 clients for
`BENCH_HTTP_SECONDS` (default 30) sending the runs list, the approval list, an approve and a
schedule create (bench/_locustfile.py), then 4 clients sending the two lists only. Then the
same again while `BENCH_HTTP_STREAMS` (default 500) event streams are held open by another
process (bench/_streams.py); the figures with streams are also given as ratios to those without,
with the servers' CPU time per request. First, a fresh `serve`'s resident memory allowing no
stream, allowing `BENCH_HTTP_STREAMS` (their threads idle) and with as many open gives a
stream's cost.
The load generator shares the machine's CPUs with the servers it measures.
"""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]  # installed with locust

from bench._results import Figure, Result
from bench._seed import Seeded, seed_due_schedules
from bench._stores import empty_store
from cronledger.application.services import open_services
from cronledger.config import Settings

SECONDS = float(os.environ.get("BENCH_HTTP_SECONDS", "30"))
STREAMS = int(os.environ.get("BENCH_HTTP_STREAMS", "500"))
SCHEDULES = int(os.environ.get("BENCH_HTTP_SCHEDULES", "3000"))
WORKERS = int(os.environ.get("BENCH_HTTP_WORKERS", "2"))  # the recommendation for 2 cores
CLIENTS, READ_CLIENTS = 32, 4
HERE = Path(__file__).parent
BIN = Path(sys.executable).parent
READY_SECONDS = 120.0  # for a server to answer, and for its loops to launch the seeded cycles
OPERATIONS = ("GET runs list", "GET approval list", "POST approve", "POST schedule")
READS = OPERATIONS[:2]


@dataclass(frozen=True)
class Load:
    """One locust run: who, how many clients."""

    user: str  # a class of bench/_locustfile.py
    clients: int


MIXED, READERS = Load("Mixed", CLIENTS), Load("Reader", READ_CLIENTS)


@dataclass(frozen=True)
class Stats:
    """One operation's figures in one run."""

    requests_per_second: float
    p50_ms: float
    p99_ms: float
    failures: int


@dataclass(frozen=True)
class Run:
    """One locust run's figures: each operation's, and the servers' CPU time per request."""

    operations: dict[str, Stats]
    cpu_ms_per_request: float


def run() -> Iterator[Result | str]:
    yield (
        f"http: locust clients and the servers share this machine's {os.cpu_count()} CPUs; "
        f"{SECONDS:g} s per run (BENCH_HTTP_SECONDS)"
    )
    yield _stream_memory()
    yield from _measure("serve", "sqlite")
    yield from _measure("serve", "postgresql")
    yield from _measure(f"web --workers {WORKERS}", "postgresql")


def _measure(command: str, kind: str) -> Iterator[Result | str]:
    with empty_store(kind) as url, tempfile.TemporaryDirectory() as folder:
        seeded = _seed(url)
        with _deployment(command, url) as (base, pids):
            approver = _approver_token(base, seeded.token)
            pending = _pending(base, seeded.token)
            deployment = f"{command}, {kind}"
            env = _client_env(seeded, approver)
            halves = [pending[: len(pending) // 2], pending[len(pending) // 2 :]]
            quiet = _runs(base, env, halves[0], Path(folder) / "quiet", pids)
            yield from _results(deployment, "no stream", quiet)
            with _streams_held(base, seeded.token) as opened:
                busy = _runs(base, env, halves[1], Path(folder) / "busy", pids)
            label = f"{opened} streams open"
            yield from _results(deployment, label, busy)
            yield from _ratios(deployment, label, quiet, busy)


def _stream_memory() -> Result:
    """What streams cost in memory: a fresh `serve` allowing none, one allowing `STREAMS` (its
    threads started, idle), and the same with `STREAMS` streams open."""
    with empty_store("sqlite") as url:
        services = open_services(Settings(database_url=url))
        token = services.directory.bootstrap("bench", "root").token
        services.close()
        with _deployment("serve", url, 0) as (_, pids):
            time.sleep(2.0)  # past its start
            without = _rss_mib(pids())
        with _deployment("serve", url) as (base, pids):
            time.sleep(2.0)
            threads = _rss_mib(pids())
            with _streams_held(base, token) as opened:
                held = _rss_mib(pids())
    return Result(
        "http",
        f"serve, sqlite: memory of {opened} open streams",
        (
            Figure("RSS allowing no stream", without, "MiB"),
            Figure(f"allowing {STREAMS}, idle", threads, "MiB"),
            Figure(f"with {opened} open", held, "MiB"),
            Figure("per stream thread", (threads - without) * 1024 / STREAMS, "KiB"),
            Figure("per open stream", (held - threads) * 1024 / max(opened, 1), "KiB"),
        ),
    )


def _seed(url: str) -> Seeded:
    """The seeded schedules, first due at the last whole minute: the tick catches them up."""
    due = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=1)
    services = open_services(Settings(database_url=url))
    try:
        return seed_due_schedules(services, SCHEDULES, due)
    finally:
        services.close()


@contextmanager
def _deployment(
    command: str, url: str, streams: int = STREAMS
) -> Iterator[tuple[str, Callable[[], list[int]]]]:
    """The deployment running, once it answers, allowing `streams` open streams: its API's
    base URL, and a function giving the ids of the processes that serve the API."""
    limits = {f"CRONLEDGER_STREAMS_PER_{of}": str(max(streams, 1)) for of in ("ACCOUNT", "TENANT")}
    env = {
        **os.environ,
        "CRONLEDGER_DATABASE_URL": url,
        "CRONLEDGER_DRAIN_SECONDS": "0.2",
        **limits,
        "CRONLEDGER_STREAMS_PER_PROCESS": str(streams),
        # the streams are opened at once from one address, each waiting to be answered
        "CRONLEDGER_CONNECTIONS_PER_ADDRESS": str(streams + CLIENTS + 100),
    }
    with ExitStack() as stack:
        if command.startswith("web"):  # the loops, in a `serve` whose API nobody calls
            loops_port = _free_port()
            loops = stack.enter_context(_process(["serve", "--port", str(loops_port)], env))
            _wait_for(f"http://127.0.0.1:{loops_port}/readyz", loops)
        port = _free_port()
        server = stack.enter_context(_process([*command.split(), "--port", str(port)], env))
        base = f"http://127.0.0.1:{port}"
        _wait_for(f"{base}/readyz", server)

        def pids() -> list[int]:
            """The workers of `web --workers`, else the server itself."""
            return [child.pid for child in psutil.Process(server.pid).children()] or [server.pid]

        yield base, pids


@contextmanager
def _process(args: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """`cronledger ARGS`, stopped with SIGTERM (killed if it outlives 30 s) when done."""
    process = subprocess.Popen(
        [str(BIN / "cronledger"), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for(url: str, process: subprocess.Popen[bytes]) -> None:
    """Until `url` answers 200; fails if the process exits or time runs out first."""
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {READY_SECONDS:g} s")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _call(url: str, token: str, body: object = None) -> Any:
    """One request to the server under test: its JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    request = urllib.request.Request(url, data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def _approver_token(base: str, root_token: str) -> str:
    """A token of an operator who is not the instances' applicant (root)."""
    account = {"id": "approver", "name": "Approver", "roles": ["operator"]}
    _call(f"{base}/api/accounts", root_token, account)
    return str(_call(f"{base}/api/accounts/approver/tokens", root_token, {})["token"])


def _pending(base: str, token: str) -> list[list[object]]:
    """Every seeded cycle's instance waiting for review, once the loops launched them all."""
    deadline = time.monotonic() + READY_SECONDS
    while True:
        pending = _waiting_review(base, token)
        if len(pending) >= SCHEDULES:
            return pending
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(pending)} of {SCHEDULES} cycles launched")
        time.sleep(1.0)


def _waiting_review(base: str, token: str) -> list[list[object]]:
    found: list[list[object]] = []
    query = "state=WAITING_REVIEW&page_size=200"
    page = _call(f"{base}/api/approvals?{query}", token)
    while True:
        found += [[item["id"], item["material_version"]] for item in page["items"]]
        if not page.get("next_cursor"):
            return found
        page = _call(f"{base}/api/approvals?{query}&cursor={page['next_cursor']}", token)


def _client_env(seeded: Seeded, approver: str) -> dict[str, str]:
    return {
        **os.environ,
        "BENCH_TOKEN": seeded.token,
        "BENCH_APPROVER_TOKEN": approver,
        "BENCH_DEFINITION_ID": str(seeded.definition_id),
    }


def _runs(
    base: str,
    env: dict[str, str],
    pending: list[list[object]],
    folder: Path,
    pids: Callable[[], list[int]],
) -> dict[Load, Run]:
    """The 32-client mixed run, then the 4-client read run."""
    folder.mkdir()
    instances = folder / "pending.json"
    instances.write_text(json.dumps(pending))
    env = {**env, "BENCH_PENDING": str(instances)}
    runs = {}
    for load in (MIXED, READERS):
        before = _cpu_seconds(pids())
        stats = _locust(base, env, load, folder / load.user)
        spent = _cpu_seconds(pids()) - before
        answered = sum(s.requests_per_second for s in stats.values()) * SECONDS
        runs[load] = Run(stats, spent * 1000 / max(answered, 1.0))
    return runs


def _locust(base: str, env: dict[str, str], load: Load, prefix: Path) -> dict[str, Stats]:
    """One headless locust run: each operation's figures, from its CSV summary."""
    clients = str(load.clients)
    command = [
        *(str(BIN / "locust"), "-f", str(HERE / "_locustfile.py"), "--headless"),
        *("--only-summary", "--loglevel", "WARNING", "--stop-timeout", "5"),
        *("-u", clients, "-r", clients, "-t", f"{SECONDS:g}s", "--host", base),
        *("--csv", str(prefix), load.user),
    ]
    subprocess.run(command, env=env, check=False, capture_output=True, timeout=SECONDS + 120)
    with open(f"{prefix}_stats.csv", newline="") as stats:
        rows = list(csv.DictReader(stats))
    return {
        row["Name"]: Stats(
            float(row["Requests/s"]),
            float(row["50%"]),
            float(row["99%"]),
            int(row["Failure Count"]),
        )
        for row in rows
        if row["Name"] in OPERATIONS
    }


def _results(deployment: str, streams: str, runs: dict[Load, Run]) -> Iterator[Result]:
    for load, run in runs.items():
        stats = run.operations
        yield Result(
            "http",
            f"{deployment}, {streams}, {load.clients} clients, the servers' CPU",
            (Figure("per request", run.cpu_ms_per_request, "ms"),),
        )
        for operation, figures in stats.items():
            reads = operation in READS
            p99_goal = 15.0 if load is READERS else (100.0 if reads else 200.0)
            yield Result(
                "http",
                f"{deployment}, {streams}, {load.clients} clients, {operation}",
                (
                    Figure("throughput", figures.requests_per_second, "req/s"),
                    Figure("p50", figures.p50_ms, "ms"),
                    Figure("p99", figures.p99_ms, "ms", at_most=p99_goal),
                    Figure("failures", figures.failures),
                ),
            )
        reads_per_second = sum(stats[o].requests_per_second for o in READS if o in stats)
        yield Result(
            "http",
            f"{deployment}, {streams}, {load.clients} clients, both lists together",
            (Figure("throughput", reads_per_second, "req/s", at_least=700.0),),
        )


def _ratios(
    deployment: str,
    streams: str,
    quiet: dict[Load, Run],
    busy: dict[Load, Run],
) -> Iterator[Result]:
    """With the streams open, as a ratio to without them: within 20% is the goal."""
    for load in (MIXED, READERS):
        cpu = busy[load].cpu_ms_per_request / max(quiet[load].cpu_ms_per_request, 1e-9)
        yield Result(
            "http",
            f"{deployment}, {streams} vs none, {load.clients} clients, the servers' CPU",
            (Figure("per request ratio", cpu, "x"),),
        )
        for operation in OPERATIONS:
            before = quiet[load].operations.get(operation)
            after = busy[load].operations.get(operation)
            if before is None or after is None or not before.requests_per_second:
                continue
            yield Result(
                "http",
                f"{deployment}, {streams} vs none, {load.clients} clients, {operation}",
                (
                    Figure(
                        "throughput ratio",
                        after.requests_per_second / before.requests_per_second,
                        "x",
                        at_least=0.8,
                    ),
                    Figure("p99 ratio", after.p99_ms / max(before.p99_ms, 1.0), "x", at_most=1.2),
                ),
            )


@contextmanager
def _streams_held(base: str, token: str) -> Iterator[int]:
    """`STREAMS` event streams open (held by another process) while the block runs: how many
    the server accepted."""
    host, port = base.removeprefix("http://").split(":")
    holder = subprocess.Popen(
        [sys.executable, "-m", "bench._streams", host, port, token, str(STREAMS), "100000"],
        cwd=HERE.parent,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        opened = int(holder.stdout.readline().split()[1])
        time.sleep(2.0)  # every stream past its first frames
        yield opened
    finally:
        holder.terminate()
        holder.wait(30)


def _cpu_seconds(pids: list[int]) -> float:
    return sum(float(sum(psutil.Process(pid).cpu_times()[:2])) for pid in pids)


def _rss_mib(pids: list[int]) -> float:
    return float(sum(psutil.Process(pid).memory_info().rss for pid in pids)) / 2**20
