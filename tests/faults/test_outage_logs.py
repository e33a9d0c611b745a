"""An outage in the log (issue 32, item 10): each loop says once that it fails, with the first
error's trace, and once more when the store is back, with how many iterations failed; never a
line per iteration.

The store goes away under a running `serve`: PostgreSQL through a proxy that refuses every
connection, a SQLite file held by another writer (every write waits out the busy timeout and
fails). A schedule firing every second makes the tick write at every iteration.
"""

from __future__ import annotations

import json
import sqlite3
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import answers
from tests.faults.conftest import Proxied
from tests.faults.test_database_away import bootstrap, every_second_schedule
from tests.processes import Child, free_port, started

FAILURES = 3  # iterations of the tick that fail before the store comes back, at least


def json_lines(child: Child) -> list[dict[str, Any]]:
    return [json.loads(line) for line in list(child.lines) if line.startswith("{")]


def said(child: Child, message: str) -> list[dict[str, Any]]:
    """The child's log lines with this message."""
    return [line for line in json_lines(child) if line["message"] == message]


def tick_failures(metrics: str) -> float:
    """`cronledger_loop_failures_total{loop="tick"}` on the process's metrics port."""
    with urllib.request.urlopen(f"{metrics}/metrics", timeout=10) as scrape:
        for line in scrape.read().decode().splitlines():
            if line.startswith('cronledger_loop_failures_total{loop="tick"}'):
                return float(line.rpartition(" ")[2])
    return 0.0


@contextmanager
def sqlite_held(url: str) -> Iterator[None]:
    """Another writer holds the SQLite file until the block ends."""
    holder = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def outage(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[str, str, Callable[[], Any]]]:
    """A store's URL for `serve`, the URL to bootstrap it by, and what takes it away (a context
    manager: it is back when the block ends)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/cronledger.sqlite"
        yield url, url, lambda: sqlite_held(url)
        return
    proxied: Proxied = request.getfixturevalue("proxied")

    @contextmanager
    def refused() -> Iterator[None]:
        proxied.proxy.refuse()
        proxied.proxy.cut()
        try:
            yield
        finally:
            proxied.proxy.restore()

    yield proxied.url, proxied.direct_url, refused


def test_an_outage_is_one_line_per_loop_and_one_when_the_store_is_back(
    outage: tuple[str, str, Callable[[], Any]],
) -> None:
    url, direct_url, away = outage
    token = bootstrap(direct_url)
    port, probes = free_port(), free_port()
    base, metrics = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{probes}"
    command = ("serve", "--port", str(port), "--metrics-port", str(probes))
    with started(url, *command, CRONLEDGER_SQLITE_BUSY_TIMEOUT_SECONDS="1") as child:
        child.wait_for(lambda: answers(f"{base}/healthz"), "serving")
        every_second_schedule(base, token)
        child.wait_for(lambda: said(child, "registered cycles"), "a first cycle registered")
        with away():
            child.wait_for(lambda: tick_failures(metrics) >= FAILURES, "the tick failing")
        child.wait_for(
            lambda: any(line["loop"] == "tick" for line in said(child, "loop recovered")),
            "the tick recovered",
        )
        failed = said(child, "loop iteration failed")
        recovered = said(child, "loop recovered")
    failing_loops = [line["loop"] for line in failed]
    assert "tick" in failing_loops, child.describe()
    assert sorted(failing_loops) == sorted(set(failing_loops)), "a loop logged twice"
    assert all(line["level"] == "ERROR" and "exc_info" in line for line in failed)
    tick = next(line for line in recovered if line["loop"] == "tick")
    assert tick["failures"] >= FAILURES
    assert tick["suppressed"] == tick["failures"] - 1
    assert tick["outage_seconds"] > 0
    assert {line["loop"] for line in recovered} <= set(failing_loops)
