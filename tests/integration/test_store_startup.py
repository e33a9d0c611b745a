"""A process's start on its store: migrations once per schema version, the migration lock's
waiters saying so, read models rebuilt beside the live tables with their progress, and the
connections a process opens (docs/operations.md#connections-and-timeouts)."""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from cronledger.application.launches import Worker
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from cronledger.health import MIGRATING, READY, REBUILDING, Health
from cronledger.persistence.store import Store
from tests.support import POSTGRES_URL, FakeClock, Opener, World, fresh_postgres_url, wait_until

DDL = re.compile(r"\s*(CREATE|ALTER|DROP|LOCK)\b", re.IGNORECASE)


class RecordingHealth(Health):
    """Health that remembers every phase and detail it entered."""

    def __init__(self) -> None:
        super().__init__()
        self.entered: list[tuple[str, str]] = []

    def enter(self, phase: str, detail: str = "") -> None:
        self.entered.append((phase, detail))
        super().enter(phase, detail)


@pytest.fixture
def postgres_url(postgres_ready: None) -> Iterator[str]:
    yield from fresh_postgres_url()


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every SQL statement sent to either store from now on, as text."""
    sent: list[str] = []
    connect = sqlite3.connect

    def traced_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection = connect(*args, **kwargs)
        connection.set_trace_callback(sent.append)
        return connection

    execute = psycopg.Cursor.execute

    def traced_execute(cursor: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(query if isinstance(query, str | bytes) else query.as_string(cursor))
        return execute(cursor, query, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", traced_connect)
    monkeypatch.setattr(psycopg.Cursor, "execute", traced_execute)
    return sent


def _schema_rows(services: Services) -> list[tuple[Any, ...]]:
    return services.store.query("SELECT version, applied_at FROM cronledger_schema")


def test_a_start_on_an_up_to_date_store_runs_no_ddl(
    services: Services, store_url: str, clock: FakeClock, statements: list[str]
) -> None:
    recorded = _schema_rows(services)
    assert len(recorded) == 1
    statements.clear()
    again = open_services(Settings(database_url=store_url), clock, kind="web")
    at_start = list(statements)
    try:
        again.directory.bootstrap("acme", "root")  # and it works
        assert _schema_rows(again) == recorded
    finally:
        again.close()
    assert at_start, "the statements were not traced"
    assert [s for s in at_start if DDL.match(str(s))] == []


def test_the_first_start_records_the_schema_version_once(
    open_with: Opener, clock: FakeClock, statements: list[str]
) -> None:
    first = open_with(clock)
    assert [s for s in statements if DDL.match(str(s))], "the first start made no table"
    assert len(_schema_rows(first)) == 1


def _start_in_background(
    url: str, health: Health, kind: str, **settings: Any
) -> tuple[threading.Thread, list[Services]]:
    opened: list[Services] = []

    def start() -> None:
        opened.append(
            open_services(Settings(database_url=url, **settings), FakeClock(), health, kind)
        )

    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    return thread, opened


@pytest.fixture
def lock_holder(postgres_url: str) -> Iterator[Callable[[str], psycopg.Connection[Any]]]:
    """Sessions named `test-holder` that take a lock of the store at `postgres_url`."""
    held: list[psycopg.Connection[Any]] = []

    def hold(lock: str) -> psycopg.Connection[Any]:
        conn = psycopg.connect(POSTGRES_URL, autocommit=True, application_name="test-holder")
        conn.execute("SELECT pg_advisory_lock(%s)", (Store.from_url(postgres_url).lock_key(lock),))
        held.append(conn)
        return conn

    yield hold
    for conn in held:
        conn.close()


def test_a_process_waiting_for_the_migration_lock_says_so_in_the_log_and_its_health(
    postgres_url: str,
    lock_holder: Callable[[str], psycopg.Connection[Any]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    holder = lock_holder("migration")
    health = RecordingHealth()
    caplog.set_level(logging.INFO)
    thread, opened = _start_in_background(postgres_url, health, "web")
    wait_until(lambda: "test-holder" in health.detail, "the holder named in health")
    assert health.phase == MIGRATING
    assert health.detail.startswith("waiting 0 s for the migration lock, held by test-holder")
    waits = [
        r for r in caplog.records if r.getMessage() == "waiting for another process's migration"
    ]
    assert waits
    assert "held by test-holder (pid" in waits[0].why
    holder.execute("SELECT pg_advisory_unlock_all()")
    thread.join(timeout=30)
    assert opened, "the start did not finish once the lock was free"
    assert health.phase == READY
    opened[0].close()


def _outdate_runs(services: Services) -> None:
    """The `runs` table as an older version left it."""
    with services.store.connect() as conn:
        conn.execute("DROP TABLE runs")
        conn.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, status TEXT NOT NULL)")
        conn.execute("INSERT INTO runs VALUES ('old', 'PENDING')")
        conn.execute("UPDATE projection_positions SET layout = NULL WHERE name = 'runs'")


def test_a_rebuild_reports_its_progress_in_the_log_and_health(
    busy: World, caplog: pytest.LogCaptureFixture
) -> None:
    _outdate_runs(busy.services)
    caplog.set_level(logging.INFO)
    health = RecordingHealth()
    url = busy.services.settings.database_url
    rebuilt = open_services(Settings(database_url=url), busy.clock, health, kind="web")
    try:
        wait_until(lambda: health.phase == READY, "the rebuild done")
        details = [detail for phase, detail in health.entered if phase == REBUILDING]
        assert details[0] == "rebuilding runs: 0%"
        assert any(re.fullmatch(r"rebuilding runs: [1-9]\d?%", d) for d in details), details
        told = [r for r in caplog.records if r.getMessage() == "rebuilding read models"]
        assert told
        assert told[0].events_applied > 0
        assert told[0].events_total >= told[0].events_applied  # type: ignore[attr-defined]
        assert rebuilt.projector.outdated() == []
        assert Worker.of(rebuilt).poll() is not None  # its scan reads the rebuilt columns
    finally:
        rebuilt.close()


def test_a_rebuild_blocks_no_other_start_and_the_old_tables_serve_until_the_swap(
    postgres_url: str, lock_holder: Callable[[str], psycopg.Connection[Any]]
) -> None:
    store_url, clock = postgres_url, FakeClock()
    world = World(open_services(Settings(database_url=store_url), clock), clock)
    world.run_now()
    _outdate_runs(world.services)
    holder = lock_holder("rebuild")  # another process's rebuild, as long as the test wants
    health = RecordingHealth()
    first = open_services(Settings(database_url=store_url), clock, health, kind="web")
    second = open_services(Settings(database_url=store_url), clock, kind="worker")
    try:
        assert health.phase == REBUILDING
        wait_until(lambda: "held by test-holder" in health.detail, "the rebuild's wait told")
        old = first.store.query("SELECT id, status FROM runs")
        assert old == [("old", "PENDING")]  # the old table still serves
        first.schedules.run_now(world.root, world.schedule, "r2")  # commands go on meanwhile
        holder.execute("SELECT pg_advisory_unlock_all()")
        wait_until(lambda: health.phase == READY, "the rebuild done")
        wait_until(lambda: second.health.phase == READY, "the other process ready")
        assert first.projector.outdated() == []
        assert len(first.store.query("SELECT id FROM runs")) == 2
    finally:
        first.close()
        second.close()
        world.services.close()


def _sessions(application_name: str) -> int:
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
            "AND datname = current_database()",
            (application_name,),
        ).fetchone()
    return int(row[0]) if row else 0


def test_a_process_names_its_connections_and_stays_within_its_documented_total(
    postgres_url: str,
) -> None:
    pool_size, overflow = 1, 2
    settings = Settings(database_url=postgres_url, pool_size=pool_size, pool_overflow=overflow)
    kind = f"worker-{uuid.uuid4().hex[:8]}"  # alone under its name on the shared test database
    services = open_services(settings, FakeClock(), kind=kind)
    # docs/operations.md: 2 × (pool size + overflow) + the listener + a lock or probe
    documented = 2 * (pool_size + overflow) + 2
    try:
        clock = services.ledger.clock
        assert isinstance(clock, FakeClock)
        world = World(services, clock)
        most = 0
        stop = threading.Event()

        def load() -> None:
            while not stop.is_set():
                services.backlog(None)  # the read models' pool
                services.ledger.recorder.max_notification_id()  # the log's pool

        threads = [threading.Thread(target=load, daemon=True) for _ in range(8)]
        for thread in threads:
            thread.start()
        for number in range(40):
            world.run_now(f"load-{number}")
            most = max(most, _sessions(f"cronledger-{kind}"))
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        assert 2 <= most <= documented
        with services.store.connect() as conn:
            timeouts = [conn.execute(f"SHOW {name}").fetchone()[0] for name in TIMEOUTS]
        assert timeouts == ["30s", "5s", "10s"]
        with services.ledger.recorder.datastore.get_connection() as conn:  # type: ignore[attr-defined]
            shown = [conn.execute(f"SHOW {name}").fetchone() for name in TIMEOUTS]
        assert [next(iter(row.values())) for row in shown] == ["30s", "5s", "10s"]
    finally:
        services.close()


TIMEOUTS = ("statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout")
