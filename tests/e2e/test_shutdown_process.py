"""Real processes: probes on `--metrics-port`, and a SIGTERM that drains within its bound."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from tests.e2e.helpers import answers, request
from tests.processes import STOP_SECONDS, Child, free_port, started
from tests.support import POSTGRES_URL, REVIEWER

STREAM_SECONDS = 60
BOUND_SECONDS = 10  # from SIGTERM to exit with a grace of 1 s: far below the drain of 600 s


def local(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def status_of(url: str) -> int:
    return request(url)[0]


def errors_logged(child: Child) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in child.lines if line.startswith("{")]
    return [line for line in lines if line["level"] in ("ERROR", "CRITICAL")]


@contextmanager
def serving(store_url: str, *args: str, **env: str) -> Iterator[tuple[Child, str, str]]:
    """`cronledger ARGS` with `--port` and `--metrics-port`, once both answer: the child, the
    API's base URL, and the probe server's."""
    port, probes = free_port(), free_port()
    command = (*args, "--port", str(port), "--metrics-port", str(probes))
    with started(store_url, *command, **env) as child:
        child.wait_for(lambda: answers(f"{local(port)}/readyz"), "answering on its port")
        child.wait_for(lambda: status_of(f"{local(probes)}/readyz") == 200, "ready")
        yield child, local(port), local(probes)


def open_stream(base: str, token: str) -> Any:
    stream = urllib.request.Request(
        f"{base}/api/events/stream?max_seconds={STREAM_SECONDS}",
        headers={"Authorization": f"Bearer {token}"},
    )
    response = urllib.request.urlopen(stream, timeout=STREAM_SECONDS)
    assert response.readline().startswith(b"id: ")
    return response


def test_sigterm_on_serve_drains_serves_and_exits(store_url: str, token: str) -> None:
    with serving(store_url, "serve", CRONLEDGER_DRAIN_SECONDS="3") as (child, base, probes):
        stream = open_stream(base, token)
        child.process.send_signal(signal.SIGTERM)
        child.wait_for(lambda: status_of(f"{probes}/readyz") == 503, "no longer ready")
        assert status_of(f"{probes}/livez") == 200  # stopping is no death
        status, body = request(f"{base}/api/accounts", token)  # a request during the drain
        assert (status, [a["id"] for a in body["items"]]) == (200, ["admin", REVIEWER])
        rest = stream.read().decode()  # up to the stream's end
        assert "event: reconnect\n" in rest
        assert "retry: 2000\n" in rest
        assert child.process.wait(STOP_SECONDS) == 0
    assert errors_logged(child) == []


def test_shutdown_is_bounded_even_by_a_longer_drain(store_url: str) -> None:
    """A drain of 600 s under a grace of 1 s: the process is gone within seconds of SIGTERM,
    having stopped draining at the grace (cleanly, or exiting anyway with status 1)."""
    env = {"CRONLEDGER_DRAIN_SECONDS": "600", "CRONLEDGER_SHUTDOWN_GRACE_SECONDS": "1"}
    with serving(store_url, "serve", **env) as (child, _, _):
        asked = time.monotonic()
        status = child.stop()
        took = time.monotonic() - asked
    assert status in (0, 1), child.describe()
    assert took < BOUND_SECONDS, f"exited {took:.1f} s after SIGTERM: the drain was not cut short"


@pytest.mark.parametrize("command", ["worker", "tick", "sweeper", "projections"])
def test_a_loop_process_answers_probes_and_metrics_on_its_port(
    store_url: str, command: str
) -> None:
    probes = free_port()
    with started(store_url, command, "--metrics-port", str(probes)) as child:
        child.wait_for(lambda: answers(f"{local(probes)}/livez"), "answering its probes")
        child.wait_for(lambda: status_of(f"{local(probes)}/readyz") == 200, "ready")
        live = (200, {"status": "ok", "phase": "ready", "loops": [command]})
        # ready once the loop has started; it is listed once its first iteration has beaten
        child.wait_for(lambda: request(f"{local(probes)}/livez") == live, "the loop listed")
        assert request(f"{local(probes)}/healthz")[1]["status"] == "ok"
        with urllib.request.urlopen(f"{local(probes)}/metrics", timeout=10) as scrape:
            assert b"cronledger_build_info" in scrape.read()
        assert child.stop() == 0


@contextmanager
def accounts_locked(store_url: str) -> Iterator[None]:
    """The `accounts` read model locked by another session until the block ends."""
    schema = store_url.rpartition("schema=")[2]
    with psycopg.connect(POSTGRES_URL) as conn:
        conn.execute(f'LOCK TABLE "{schema}".accounts IN ACCESS EXCLUSIVE MODE')
        yield
        conn.rollback()


def waiting_on_the_lock(store_url: str) -> int:
    """How many reads of the account list wait on the lock (the sweeper's join of tasks with
    accounts may wait too, and is not counted)."""
    schema = store_url.rpartition("schema=")[2]
    with psycopg.connect(POSTGRES_URL) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE NOT l.granted AND c.relname = 'accounts' AND n.nspname = %s "
            "AND a.query ILIKE '%%FROM accounts%%'",
            (schema,),
        ).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)  # held by a table lock
def test_probes_answer_while_every_api_thread_is_held(store_url: str, token: str) -> None:
    env = {"CRONLEDGER_LOCK_TIMEOUT_SECONDS": "60", "CRONLEDGER_STATEMENT_TIMEOUT_SECONDS": "60"}
    with serving(store_url, "serve", "--threads", "2", **env) as (child, base, probes):
        answered: list[int] = []
        with accounts_locked(store_url):
            stuck = [
                threading.Thread(
                    target=lambda: answered.append(request(f"{base}/api/accounts", token)[0])
                )
                for _ in range(2)
            ]
            for thread in stuck:
                thread.start()
            child.wait_for(lambda: waiting_on_the_lock(store_url) == 2, "both threads held")
            assert request(f"{probes}/livez")[0] == 200
            assert request(f"{probes}/readyz")[0] == 200
            with urllib.request.urlopen(f"{probes}/metrics", timeout=10) as scrape:
                assert scrape.status == 200
        for thread in stuck:
            thread.join(STREAM_SECONDS)
        assert answered == [200, 200]


def probe(url: str) -> tuple[int, Any]:
    """A probe's status and answer; (0, the error) when nothing answers."""
    try:
        return request(url)
    except OSError as error:
        return 0, repr(error)


def test_a_draining_loop_process_says_so_until_it_exits(store_url: str) -> None:
    """After SIGTERM a loop process's probe port answers on (draining while its loop ends,
    stopped after) until the drain's end, then the process exits cleanly."""
    probes = local(free_port())
    env = {"CRONLEDGER_DRAIN_SECONDS": "5"}
    with started(store_url, "worker", "--metrics-port", probes.rpartition(":")[2], **env) as child:
        child.wait_for(lambda: probe(f"{probes}/readyz")[0] == 200, "ready")
        child.process.send_signal(signal.SIGTERM)
        # the signal is handled by the main thread, the probe by another: wait for the first
        status, body = child.wait_for(
            lambda: (answer := probe(f"{probes}/readyz"))[0] != 200 and answer,
            "the probe no longer ready",
        )
        assert status == 503, body
        assert body["detail"].startswith(("not ready: draining:", "not ready: stopped:")), body
        child.wait_for(lambda: child.logged('"loop stopped"'), "the loop stopped")
        assert probe(f"{probes}/readyz")[1]["detail"] == (
            "not ready: stopped: the loops and the server have stopped; exiting"
        )
        assert probe(f"{probes}/livez") == (
            200,
            {"status": "ok", "phase": "stopped", "loops": ["worker"]},
        )
        assert child.process.wait(STOP_SECONDS) == 0
    assert errors_logged(child) == []


def test_a_just_started_web_worker_says_it_is_starting_until_it_serves(store_url: str) -> None:
    """From its start to its first 200, each worker's probe port says which phase it is in,
    never `not ready: ready`."""
    from tests.e2e.test_web_workers import two_free_ports

    port, first = free_port(), two_free_ports()
    probe_urls = [f"{local(first + i)}/readyz" for i in (0, 1)]
    said: list[str] = []

    def both_ready() -> bool:
        answers = [probe(url) for url in probe_urls]
        said.extend(body["detail"] for status, body in answers if status == 503)
        return all(status == 200 for status, _ in answers)

    command = ("web", "--workers", "2", "--port", str(port), "--metrics-port", str(first))
    with started(store_url, *command) as child:
        child.wait_for(both_ready, "both workers ready")
    assert said, "no worker was ever seen starting"
    assert all(
        detail.startswith(("not ready: starting:", "not ready: migrating:")) for detail in said
    ), said


def test_the_drain_answers_the_connections_waiting_to_be_accepted(store_url: str) -> None:
    """Connections the server had not accepted yet when it stopped accepting (they waited in
    its socket's queue: the server was at its connection limit) are answered, not reset."""
    port = free_port()
    env = {
        "CRONLEDGER_STREAMS_PER_PROCESS": "0",
        "CRONLEDGER_DRAIN_SECONDS": "0",
        "CRONLEDGER_CONNECTIONS_PER_ADDRESS": "1000",  # this one address fills the server
    }
    with started(store_url, "web", "--port", str(port), **env) as child:
        child.wait_for(lambda: answers(f"{local(port)}/livez"), "serving")
        idle = []
        while not child.logged("reached the connection limit") and len(idle) < 200:
            idle.append(socket.create_connection(("127.0.0.1", port)))
            time.sleep(0.01)
        assert child.logged("reached the connection limit"), child.describe()
        queued = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        for sock in queued:
            sock.sendall(b"GET /livez HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        child.process.send_signal(signal.SIGTERM)
        answered = [read_all(sock) for sock in queued]
        for sock in idle + queued:
            sock.close()
        assert child.process.wait(STOP_SECONDS) == 0
    assert all(answer.startswith(b"HTTP/1.1 200 ") for answer in answered), answered


def read_all(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection (a reset raises)."""
    sock.settimeout(STOP_SECONDS)
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)
