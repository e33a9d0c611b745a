"""The database away (issue 20, item 2): PostgreSQL taken away from running processes through a
proxy, and a SQLite file locked by another writer or full.

While the store is away, `/healthz` says 503 and every API request answers a 503 `UNAVAILABLE`
problem document within the connect timeout (never a hang), and a refused command writes
nothing. A request whose statement the server was running when it froze is answered the same,
within three connect timeouts (issue 32, item 5). When it comes back, every process serves again
by itself, and the cycles that fell due meanwhile are registered by their misfire policy, each
planned instant exactly once.
"""

from __future__ import annotations

import json
import sqlite3
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cronledger.application.services import open_services
from cronledger.config import Settings
from cronledger.persistence.store import Store
from tests.e2e.helpers import answers, request
from tests.faults.conftest import Proxied
from tests.faults.proxy import Proxy
from tests.processes import Child, free_port, run_cli, started
from tests.support import DECIDERS, Api, wait_until
from web import create_app

EVERY_SECOND = {"kind": "cron", "expression": "* * * * * *"}
OUTAGE_CYCLES = 4  # planned instants that fall due while the store is away, at least
DEFINITION = {
    "key": "k",
    "name": "K",
    "external": False,
    "review_window_seconds": 600,
    "reviewers": DECIDERS,
}
# An answer while the store is away comes within the connect timeout (2 s) and one retry; a
# request that hangs fails the test when this client-side limit runs out.
AWAY_ANSWER_SECONDS = 15


def bootstrap(url: str) -> str:
    """The admin token of tenant `demo` on a migrated store."""
    result = run_cli(url, "bootstrap", "--tenant", "demo", "--admin", "admin")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def answer(url: str, token: str, body: Any = None) -> tuple[int, Any]:
    """A request that must be answered (whatever the status) within AWAY_ANSWER_SECONDS."""
    headers = {"Authorization": f"Bearer {token}"}
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=AWAY_ANSWER_SECONDS) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def assert_unavailable(status: int, document: Any) -> None:
    assert status == 503, document
    assert document["code"] == "UNAVAILABLE", document
    assert document["status"] == 503


def every_second_schedule(base: str, token: str) -> str:
    """An enabled schedule firing every second, catching up what it missed; its id."""
    status, definition = request(f"{base}/api/definitions", token, DEFINITION)
    assert status == 201, definition
    request(f"{base}/api/definitions/{definition['id']}/publish", token, {})
    status, schedule = request(
        f"{base}/api/workflows/schedules",
        token,
        {
            "name": "every second",
            "definition_id": definition["id"],
            "trigger": EVERY_SECOND,
            "initiator_id": "admin",
            "enabled": True,
            "misfire_policy": "catch_up",
            "overlap_policy": "allow",
        },
    )
    assert status == 201, schedule
    return str(schedule["id"])


def planned(direct: Store, schedule_id: str) -> Counter[datetime]:
    """How many runs the read model holds for each planned instant of the schedule."""
    rows = direct.query("SELECT planned_at FROM runs WHERE schedule_id = ?", (schedule_id,))
    return Counter(row[0].astimezone(UTC) for row in rows)


def assert_each_instant_once(counts: Counter[datetime], through: datetime) -> None:
    """One run per planned instant, every second from the first up to `through`: none lost
    while the store was away, none doubled when it came back."""
    assert counts, "no runs"
    doubled = {instant: n for instant, n in counts.items() if n > 1}
    assert not doubled, f"cycles registered twice: {doubled}"
    first = min(counts)
    expected = [first + timedelta(seconds=s) for s in range(int((through - first).total_seconds()))]
    lost = [instant for instant in expected if instant not in counts]
    assert not lost, f"cycles lost: {lost}"


def registered_through(direct: Store, schedule_id: str, instant: datetime) -> bool:
    counts = planned(direct, schedule_id)
    return bool(counts) and max(counts) >= instant


def take_away(proxy: Proxy, how: str) -> datetime:
    """The store away, and when it went: `refused` (a stopped server: connections closed, new
    ones refused) or `frozen` (open connections kept but never answered again, new ones
    accepted but never answered: a frozen server, a stuck proxy, an unreachable host)."""
    if how == "refused":
        proxy.refuse()
        proxy.cut()
    else:
        proxy.pause()
    return datetime.now(UTC)


def wait_for_outage_cycles(child: Child, since: datetime) -> None:
    """Until OUTAGE_CYCLES planned instants have passed since the store went away."""
    until = since + timedelta(seconds=OUTAGE_CYCLES)
    child.wait_for(lambda: datetime.now(UTC) > until, f"{OUTAGE_CYCLES} s of outage")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["refused", "frozen"])
def test_serve_answers_503_while_the_store_is_away_and_recovers_by_itself(
    proxied: Proxied, how: str
) -> None:
    token = bootstrap(proxied.direct_url)
    direct = Store.from_url(proxied.direct_url)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with started(proxied.url, "serve", "--port", str(port)) as child:
        child.wait_for(lambda: answers(f"{base}/healthz"), "serving")
        schedule_id = every_second_schedule(base, token)
        child.wait_for(lambda: planned(direct, schedule_id), "a first cycle registered")
        definitions_before = answer(f"{base}/api/definitions", token)[1]["items"]

        went = take_away(proxied.proxy, how)
        assert_unavailable(*answer(f"{base}/healthz", token))
        assert_unavailable(*answer(f"{base}/api/workflows/schedules/{schedule_id}", token))
        assert_unavailable(*answer(f"{base}/api/definitions", token, {**DEFINITION, "key": "x"}))
        wait_for_outage_cycles(child, went)
        assert_unavailable(*answer(f"{base}/api/workflows/schedules", token))

        proxied.proxy.restore()
        back = datetime.now(UTC)
        child.wait_for(lambda: answer(f"{base}/healthz", token)[0] == 200, "healthy again")
        # A pooled connection the outage broke may answer one more 503 (and is dropped): on a
        # loaded machine the pool's check can be slower than the first request after the ping.
        child.wait_for(
            lambda: answer(f"{base}/api/workflows/schedules/{schedule_id}", token)[0] == 200,
            "the schedule readable again",
        )
        child.wait_for(
            lambda: registered_through(direct, schedule_id, back + timedelta(seconds=2)),
            "the cycles after the outage registered",
        )
        assert child.process.poll() is None
    assert_each_instant_once(planned(direct, schedule_id), back)
    rows = direct.query("SELECT key FROM definitions", ())
    assert "x" not in {row[0] for row in rows}, "the refused POST wrote a definition"
    assert len(rows) == len(definitions_before)
    direct.close()


@pytest.mark.slow
def test_tick_worker_and_projections_keep_running_through_an_outage(proxied: Proxied) -> None:
    token = bootstrap(proxied.direct_url)
    direct = Store.from_url(proxied.direct_url)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with started(proxied.direct_url, "web", "--port", str(port)) as web:
        web.wait_for(lambda: answers(f"{base}/healthz"), "serving")
        schedule_id = every_second_schedule(base, token)
    with (
        started(proxied.url, "tick") as tick,
        started(proxied.url, "worker") as worker,
        started(proxied.url, "projections") as projections,
    ):
        children = (tick, worker, projections)
        tick.wait_for(lambda: launched(direct, schedule_id), "a first cycle launched")

        went = take_away(proxied.proxy, "refused")
        for child in children:
            child.wait_for(lambda c=child: outage_logged(c), "the outage logged")  # type: ignore[misc]
        wait_for_outage_cycles(tick, went)

        proxied.proxy.restore()
        back = datetime.now(UTC)
        tick.wait_for(
            lambda: launched(direct, schedule_id, after=back + timedelta(seconds=2)),
            "cycles after the outage registered, projected and launched",
        )
        for child in children:
            assert child.process.poll() is None, child.describe()
    assert_each_instant_once(planned(direct, schedule_id), back)
    direct.close()


def outage_logged(child: Child) -> bool:
    return child.logged("loop iteration failed") or child.logged("unavailable")


def launched(direct: Store, schedule_id: str, after: datetime | None = None) -> bool:
    """Whether a run planned at or after `after` (any, if None) has left PENDING: registered
    by the tick, projected, and launched by the worker."""
    rows = direct.query(
        "SELECT planned_at FROM runs WHERE schedule_id = ? AND status <> 'PENDING'",
        (schedule_id,),
    )
    return any(after is None or row[0] >= after for row in rows)


# A request in flight: its statement waits for a lock the test holds (the server answering all
# along), then the store freezes, then the lock is released: the server runs the statement, but
# its answer never comes back through the proxy.
IN_FLIGHT = {
    "read": ("GET", "/api/definitions", None),
    "command": ("POST", "/api/definitions", {**DEFINITION, "key": "in-flight"}),
}


@pytest.mark.parametrize("request_kind", list(IN_FLIGHT))
def test_a_request_in_flight_when_the_store_freezes_is_answered_503(
    proxied: Proxied, request_kind: str
) -> None:
    settings = Settings(database_url=proxied.url, lock_timeout_seconds=60, pool_size=1)
    services = open_services(settings, kind="web")
    api = Api(
        create_app({"SERVICES": services, "TESTING": True}).test_client(),
        services.directory.bootstrap("acme", "root").token,
    )
    method, path, body = IN_FLIGHT[request_kind]
    table = "definitions" if method == "GET" else services.ledger.events_table
    direct = Store.from_url(proxied.direct_url).dedicated(search_path=True)
    with ThreadPoolExecutor(1) as pool:
        try:
            with direct.transaction():
                direct.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
                in_flight = pool.submit(api.call, method, path, body)
                wait_until(lambda: waiting_for_a_lock(direct, proxied.proxy), "a statement waiting")
                proxied.proxy.pause()
            answered = in_flight.result(timeout=AWAY_ANSWER_SECONDS)  # about 4 s (6 s: command)
        finally:
            proxied.proxy.restore()
    assert_unavailable(answered.status_code, answered.json)
    assert api.get("/api/definitions").json["items"] == []  # type: ignore[index]
    direct.close()
    services.close()


def test_a_slow_statement_of_a_server_that_answers_runs_on(proxied: Proxied) -> None:
    """Silent past the connect timeout (2 s), the server still takes new connections: the
    statement is not given up."""
    store = Store.from_url(proxied.url)
    try:
        assert store.query("SELECT 1 FROM pg_sleep(3)") == [(1,)]
    finally:
        store.close()


def waiting_for_a_lock(direct: Any, proxy: Proxy) -> bool:
    """Whether a connection through `proxy` runs a statement waiting for a lock."""
    ports = list(proxy.server_ports())
    statement = "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'relation'"
    return bool(direct.execute(f"{statement} AND client_port = ANY(%s)", (ports,)).fetchone()[0])


# SQLite: another writer holding the file, and a file that cannot grow.


class Capped:
    """Every SQLite connection this process opens, so that a test can stop the file growing
    (`PRAGMA max_page_count`: SQLite then answers "database or disk is full", as on a full
    disk)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.connections: list[sqlite3.Connection] = []
        self.pages: int | None = None
        connect: Callable[..., sqlite3.Connection] = sqlite3.connect

        def recorded(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = connect(*args, **kwargs)
            self.connections.append(conn)
            if self.pages is not None:
                conn.execute(f"PRAGMA max_page_count = {self.pages}")
            return conn

        monkeypatch.setattr(sqlite3, "connect", recorded)

    def cap(self, pages: int) -> None:
        self.pages = pages
        for conn in self.connections:
            with suppress(sqlite3.ProgrammingError):  # closed
                conn.execute(f"PRAGMA max_page_count = {pages}")


@pytest.fixture
def sqlite_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Capped, Api, str]]:
    capped = Capped(monkeypatch)
    path = tmp_path / "cronledger.sqlite"
    services = open_services(
        Settings(database_url=f"sqlite:///{path}", sqlite_busy_timeout_seconds=1)
    )
    client = create_app({"SERVICES": services, "TESTING": True}).test_client()
    api = Api(client, services.directory.bootstrap("acme", "root").token)
    yield capped, api, str(path)
    services.close()


def log_length(path: str) -> int:
    with closing(sqlite3.connect(path)) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%events'"
            )
        ]
        return sum(conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables)


def definition_keys(api: Api) -> set[str]:
    answered = api.get("/api/definitions")
    assert answered.status_code == 200, answered.json
    return {d["key"] for d in answered.json["items"]}  # type: ignore[index]


def test_sqlite_locked_by_another_writer_answers_503_and_writes_nothing(
    sqlite_app: tuple[Capped, Api, str],
) -> None:
    _, api, path = sqlite_app
    before = log_length(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        refused = api.post("/api/definitions", {**DEFINITION, "key": "locked"})
        assert refused.status_code == 503, refused.json
        assert refused.json["code"] == "UNAVAILABLE"  # type: ignore[index]
        assert refused.headers["Retry-After"]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert log_length(path) == before
    assert "locked" not in definition_keys(api)
    accepted = api.post("/api/definitions", {**DEFINITION, "key": "later"})
    assert accepted.status_code == 201, accepted.json
    assert "later" in definition_keys(api)


def test_sqlite_full_answers_a_problem_and_writes_nothing(
    sqlite_app: tuple[Capped, Api, str],
) -> None:
    capped, api, path = sqlite_app
    with closing(sqlite3.connect(path)) as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
    capped.cap(pages + 2)
    refused = None
    for number in range(200):
        before = log_length(path)
        answered = api.post("/api/definitions", {**DEFINITION, "key": f"k{number}"})
        if answered.status_code != 201:
            refused = (number, answered, before)
            break
    assert refused is not None, "the capped store never filled"
    number, answered, before = refused
    assert answered.status_code == 503, answered.json
    assert answered.json["code"] == "UNAVAILABLE"  # type: ignore[index]
    assert log_length(path) == before
    capped.cap(1_000_000)
    assert f"k{number}" not in definition_keys(api)
    assert api.post("/api/definitions", {**DEFINITION, "key": "after"}).status_code == 201
