"""`cronledger web --workers N`: several processes answer on one port, and stop together."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.e2e.helpers import answers, request
from tests.processes import STOP_SECONDS, Child, free_port, started
from tests.support import wait_until

SERVED = re.compile(
    r'^cronledger_http_requests_total\{method="GET",route="/api/accounts",'
    r'status="200"\} (\S+)$',
    re.MULTILINE,
)


def local(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def two_free_ports() -> int:
    """A port N such that N and N + 1 are both free: the probes of worker 0 and worker 1.

    Drawn below the kernel's ephemeral range, and proven by binding: an outgoing connection
    (to PostgreSQL, say) holds an ephemeral port that refuses connections yet cannot be bound.
    """
    for _ in range(100):
        port = random.randrange(20000, 32000)
        if bindable(port) and bindable(port + 1):
            return port
    raise AssertionError("no two free ports in a row")


def bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextmanager
def two_workers(store_url: str) -> Iterator[tuple[Child, str, list[str]]]:
    """`cronledger web --workers 2` once both workers are ready: the parent, the API's base
    URL, and each worker's probe server."""
    port, probes = free_port(), two_free_ports()
    command = ("web", "--workers", "2", "--port", str(port), "--metrics-port", str(probes))
    with started(store_url, *command) as child:
        probe_urls = [local(probes), local(probes + 1)]
        child.wait_for(lambda: all(answers(f"{url}/readyz") for url in probe_urls), "probes")
        child.wait_for(lambda: len(serving_pids(child)) == 2, "both workers serving")
        yield child, local(port), probe_urls


def served(probes: str) -> float:
    """How many `GET /api/accounts` the worker behind `probes` has answered."""
    with urllib.request.urlopen(f"{probes}/metrics", timeout=10) as scrape:
        found = SERVED.search(scrape.read().decode())
    return float(found.group(1)) if found else 0.0


def serving_pids(child: Child) -> list[int]:
    lines = [json.loads(line) for line in list(child.lines) if line.startswith("{")]
    return [line["pid"] for line in lines if line["message"] == "web worker serving"]


def alive(pid: int) -> bool:
    """Whether the process runs (an exited one nobody has reaped yet does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_two_workers_answer_on_one_port_and_stop_together(store_url: str, token: str) -> None:
    with two_workers(store_url) as (child, base, probes):

        def both_answered() -> bool:
            assert request(f"{base}/api/accounts", token)[0] == 200  # a new connection each
            return all(served(url) > 0 for url in probes)

        child.wait_for(both_answered, "requests answered by both workers")
        pids = serving_pids(child)
        assert len(set(pids)) == 2
        assert child.process.pid not in pids
        assert child.stop() == 0
    assert not [pid for pid in pids if alive(pid)]


def test_a_worker_that_dies_is_replaced(store_url: str, token: str) -> None:
    with two_workers(store_url) as (child, base, _):
        first, second = serving_pids(child)
        os.kill(first, signal.SIGKILL)
        replaced = child.wait_for(
            lambda: [pid for pid in serving_pids(child) if pid not in (first, second)],
            "a new worker serving",
        )
        assert child.logged("web worker exited unexpectedly")
        assert request(f"{base}/api/accounts", token)[0] == 200
        assert child.stop() == 0
    assert not alive(replaced[0])
    assert not alive(second)


def test_workers_stop_once_their_parent_is_killed(store_url: str) -> None:
    with two_workers(store_url) as (child, _, _):
        pids = serving_pids(child)
        child.kill()
        wait_until(
            lambda: not [pid for pid in pids if alive(pid)],
            "the workers gone after their parent",
            timeout=STOP_SECONDS,
        )
