"""Slow clients (issue 32, item 1): connections that send part of a request, or nothing, and
wait. One address may hold no more than `CRONLEDGER_CONNECTIONS_PER_ADDRESS` of them, and each
is closed once silent for `CRONLEDGER_IDLE_CONNECTION_SECONDS`, so that they cannot take every
connection the server accepts (its API and its console) away from everyone else.
"""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from cronledger.config import Settings
from tests.e2e.helpers import answers
from tests.processes import Child, free_port, started
from tests.support import wait_until

ATTACKER = "127.0.0.2"  # one address of the loopback network, not the one clients use
SLOW_CONNECTIONS = 300
# A request that waits behind connections the server will not accept waits for good; one it
# accepts is answered at once. Past this the test fails.
ANSWER_SECONDS = 10
PART_OF_A_REQUEST = b"GET /api/definitions HT"


@contextmanager
def serving(tmp_path: Path, **env: str) -> Iterator[tuple[Child, str]]:
    """`cronledger serve` on a SQLite store (a slow client never reaches the store), answering."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    store_url = f"sqlite:///{tmp_path}/cronledger.sqlite"
    with started(store_url, "serve", "--port", str(port), **env) as child:
        child.wait_for(lambda: answers(f"{base}/healthz"), "serving")
        yield child, base


def slow_connection(base: str, stack: ExitStack) -> socket.socket:
    """A connection from ATTACKER that sends part of a request line, then nothing."""
    host, _, port = base.removeprefix("http://").partition(":")
    sock = stack.enter_context(socket.socket())
    sock.bind((ATTACKER, 0))
    sock.connect((host, int(port)))
    sock.sendall(PART_OF_A_REQUEST)
    return sock


def fetched(url: str) -> str:
    with urllib.request.urlopen(url, timeout=ANSWER_SECONDS) as response:
        return str(response.read().decode())


def closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(0.05)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_slow_connections_from_one_address_leave_the_api_answering(tmp_path: Path) -> None:
    cap = Settings().connections_per_address  # the defaults, as deployed
    with serving(tmp_path) as (child, base), ExitStack() as stack:
        slow = [slow_connection(base, stack) for _ in range(SLOW_CONNECTIONS)]

        assert fetched(f"{base}/healthz")  # a 200: any other status raises
        assert fetched(f"{base}/console/sign-in")
        metrics = fetched(f"{base}/metrics")
        refused = f"cronledger_http_connections_refused_total {SLOW_CONNECTIONS - cap:.1f}"
        assert refused in metrics, metrics
        assert not any(closed_by_server(sock) for sock in slow[:cap])  # the first ones kept
        assert child.process.poll() is None


def test_a_silent_connection_is_closed_after_the_idle_time(tmp_path: Path) -> None:
    with serving(tmp_path, CRONLEDGER_IDLE_CONNECTION_SECONDS="1") as (_, base), ExitStack() as s:
        slow = [slow_connection(base, s) for _ in range(3)]
        wait_until(lambda: all(closed_by_server(sock) for sock in slow), "silent ones closed")
        assert fetched(f"{base}/healthz")
