"""Where the log lives: `CRONLEDGER_DATABASE_URL` mapped onto eventsourcing's recorders."""

from __future__ import annotations

import math
import os
import re
import sqlite3
import time
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, unquote, urlsplit
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool

from cronledger.config import ConfigError
from cronledger.persistence.connections import Limits, WatchfulConnection, answering_within

URL_VARIABLE = "CRONLEDGER_DATABASE_URL"
URL_FORMS = "sqlite:///relative/path, sqlite:////absolute/path or postgresql://user@host:port/db"
# PostgreSQL session locks (advisory), by name: who migrates, who rebuilds read models.
LOCKS = {"migration": "cronledger-migrate", "rebuild": "cronledger-rebuild"}
LOCK_POLL_SECONDS = 0.25
LOCK_REPORT_SECONDS = 5.0  # how often a process waiting for a lock says so
Waiting = Callable[[str], object]  # hears why a process waits, every LOCK_REPORT_SECONDS
# What follows `user:` up to the last `@`, and a `password=` query parameter.
_URL_PASSWORD = re.compile(r"^(?P<keep>[A-Za-z][A-Za-z0-9+.-]*://[^:@/?#]*:).*@")
_QUERY_PASSWORD = re.compile(r"(?P<keep>[?&]password=)[^&#]*", re.IGNORECASE)


def redacted_url(url: str) -> str:
    """The URL with any password shown as `***`, for messages and logs."""
    url = _URL_PASSWORD.sub(r"\g<keep>***@", url)
    return _QUERY_PASSWORD.sub(r"\g<keep>***", url)


# How SQLite keeps instants: fixed-width UTC text (`2026-10-01 09:00:00.000000`), so they sort
# and compare as text, against literals (`'2026-10-01 09:00:00'`) too, and SQLite's date
# functions (`datetime('now')`, `julianday`) read them.
SQLITE_INSTANT = "%Y-%m-%d %H:%M:%S.%f"


def db_value(kind: str, value: Any) -> Any:
    """SQLite keeps instants as SQLITE_INSTANT text, so they sort and compare as text."""
    if isinstance(value, datetime) and kind == "sqlite":
        return value.astimezone(UTC).strftime(SQLITE_INSTANT)
    return value


# A quoted instant literal that names its offset (`'2026-10-01 17:00:00+08'`, `'...T09:00Z'`,
# `'...+08:00'`): on SQLite, `Store.query` writes it in SQLITE_INSTANT (UTC) before running.
_OFFSET_LITERAL = re.compile(
    r"'(\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d{1,6})?)?(?:Z|[+-]\d\d(?::?\d\d)?))'"
)


def stored_instants(statement: str) -> str:
    """The statement with each instant literal that names its offset written as SQLite stores
    instants (UTC, SQLITE_INSTANT), so that it compares as the instant it names, whatever the
    offset: text comparison would otherwise set `'2026-10-01 17:00:00+08'` eight hours late."""
    return _OFFSET_LITERAL.sub(lambda m: f"'{db_value('sqlite', as_instant(m[1]))}'", statement)


def as_instant(value: Any) -> datetime | None:
    """An instant read back from either store: a `datetime`, SQLITE_INSTANT text (UTC), or the
    ISO-8601 text with an offset that releases before 0.2.0 wrote (`...T09:00:00.000000Z`)."""
    if value is None or isinstance(value, datetime):
        return value
    instant = datetime.fromisoformat(str(value))
    return instant if instant.tzinfo else instant.replace(tzinfo=UTC)


def tenant_scope(tenant_id: UUID | None) -> tuple[str, tuple[str, ...]]:
    """A `tenant_id = ? AND` condition and its parameter, or nothing for every tenant."""
    return ("tenant_id = ? AND", (str(tenant_id),)) if tenant_id else ("", ())


@dataclass
class Store:
    """A parsed database URL: which recorder, and how to reach it."""

    kind: Literal["sqlite", "postgresql"]
    sqlite_path: str = ""
    postgres: dict[str, str] = field(default_factory=dict, repr=False)  # holds the password
    schema: str = "public"
    limits: Limits = field(default_factory=Limits.default)
    _pool: ConnectionPool[Any] | None = field(default=None, init=False, repr=False)

    @classmethod
    def from_url(cls, url: str, limits: Limits | None = None) -> Store:
        parts = urlsplit(url)
        limits = limits or Limits.default()
        if parts.scheme == "sqlite" and parts.path not in ("", "/") and not parts.netloc:
            return cls(kind="sqlite", sqlite_path=unquote(parts.path[1:]), limits=limits)
        if parts.scheme in ("postgresql", "postgres") and parts.path.strip("/"):
            store = cls._postgres(parts.path.strip("/"), parts, parse_qs(parts.query))
            store.limits = limits
            return store
        raise ConfigError(URL_VARIABLE, redacted_url(url), URL_FORMS)

    @classmethod
    def _postgres(cls, dbname: str, parts: Any, query: dict[str, list[str]]) -> Store:
        conninfo = {
            "dbname": unquote(dbname),
            "host": parts.hostname or "127.0.0.1",
            "port": str(parts.port or 5432),
            "user": unquote(parts.username or "postgres"),
            "password": unquote(parts.password or ""),
        }
        return cls(kind="postgresql", postgres=conninfo, schema=query.get("schema", ["public"])[0])

    @property
    def position_column(self) -> str:
        """The log position in eventsourcing's events table (`Ledger.events_table`).

        Its recorders name the table in an attribute, but not this column.
        """
        return "rowid" if self.kind == "sqlite" else "notification_id"

    def eventsourcing_env(self) -> dict[str, str]:
        """The recorder settings for eventsourcing; never its in-memory default."""
        if self.kind == "sqlite":
            return {
                "PERSISTENCE_MODULE": "eventsourcing.sqlite",
                "SQLITE_DBNAME": self.sqlite_path,
                "SQLITE_LOCK_TIMEOUT": str(math.ceil(self.limits.sqlite_busy_timeout)),
                "APPLICATION_RECORDER_TOPIC": (
                    "cronledger.persistence.recorders:CheckingSQLiteRecorder"
                ),
            }
        pg = self.postgres
        return {
            "PERSISTENCE_MODULE": "cronledger.persistence.connections:NamedPostgresFactory",
            "POSTGRES_DBNAME": pg["dbname"],
            "POSTGRES_HOST": pg["host"],
            "POSTGRES_PORT": pg["port"],
            "POSTGRES_USER": pg["user"],
            "POSTGRES_PASSWORD": pg["password"],
            "POSTGRES_SCHEMA": self.schema,
            **self.limits.eventsourcing_env(),
            "APPLICATION_RECORDER_TOPIC": "cronledger.persistence.recorders:BinaryAppendRecorder",
        }

    @contextmanager
    def connect(self) -> Iterator[Any]:
        """A plain DB-API connection, for migrations and read models."""
        if self.kind == "sqlite":
            conn = sqlite3.connect(
                self.sqlite_path, timeout=self.limits.sqlite_busy_timeout, isolation_level=None
            )
            try:
                yield conn
            finally:
                conn.close()
        else:
            with self._postgres_pool().connection() as pg_conn:
                yield pg_conn

    def _postgres_pool(self) -> ConnectionPool[Any]:
        """Read-model connections, reused: opening one costs milliseconds.

        A caller waits at most the connect timeout for one (then `PoolTimeout`, an
        `OperationalError`): with the server away, requests fail fast instead of queueing.
        """
        if self._pool is None:
            limits = self.limits
            self._pool = ConnectionPool(
                self.conninfo(search_path=True),
                connection_class=WatchfulConnection,
                kwargs={"autocommit": True},
                min_size=limits.pool_size,
                max_size=limits.pool_size + limits.pool_overflow,
                timeout=limits.connect_timeout,
                check=answering_within(limits.connect_timeout),
                name=f"{limits.application_name}-read-models",
                open=True,
            )
        return self._pool

    def conninfo(self, search_path: bool = False) -> str:
        """This process's connection string: the server, its name, timeouts (and schema)."""
        schema = self.schema if search_path else None
        return make_conninfo("", **self.postgres, **self.limits.connection_kwargs(schema))

    def dedicated(self, search_path: bool = False) -> psycopg.Connection[Any]:
        """A connection of its own, outside the pools (a listener, a lock), in autocommit."""
        return psycopg.connect(self.conninfo(search_path), autocommit=True)

    def missing_file(self) -> bool:
        """Whether a SQLite store's file is absent, checked without creating it or its folder."""
        return self.kind == "sqlite" and not Path(self.sqlite_path).is_file()

    def has_table(self, table: str) -> bool:
        """Whether this store holds that table (named as SQL: `Ledger.events_table`)."""
        if self.kind == "sqlite":
            statement = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
            return bool(self.query(statement, (table,)))
        return self.query("SELECT to_regclass(?) IS NOT NULL", (table,))[0][0] is True

    def ping(self, table: str, timeout: float) -> None:
        """Read one row of `table` on a connection of its own (never the pools'), giving up
        after about `timeout` seconds; raises when the store does not answer."""
        if self.kind == "sqlite":
            self._ping_sqlite(table, timeout)
            return
        quick = replace(self.limits, connect_timeout=timeout, statement_timeout=timeout)
        conninfo = make_conninfo("", **self.postgres, **quick.connection_kwargs(self.schema))
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(sql.SQL("SELECT 1 FROM {} LIMIT 1").format(sql.SQL(table))).fetchall()

    def _ping_sqlite(self, table: str, timeout: float) -> None:
        location = f"{Path(self.sqlite_path).resolve().as_uri()}?mode=rw"  # never creates it
        conn = sqlite3.connect(location, uri=True, timeout=timeout, isolation_level=None)
        try:
            conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchall()  # noqa: S608 (ours)
        finally:
            conn.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()

    @property
    def read_model_pool(self) -> ConnectionPool[Any] | None:
        """The PostgreSQL read-model pool once opened (its figures go to /metrics)."""
        return self._pool

    def query(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one read; `?` placeholders and instants work on both stores, as parameters or
        as literals that name their offset (`stored_instants`)."""
        with self.connect() as conn:
            return list(conn.execute(*self.native(statement, params)).fetchall())

    def write(self, statement: str, params: Sequence[Any] = ()) -> None:
        """Run one write outside the log, committed on its own: for what no event records (a
        person's inbox state)."""
        with self.connect() as conn:
            conn.execute(*self.native(statement, params))

    def native(self, statement: str, params: Sequence[Any]) -> tuple[str, list[Any]]:
        """The statement with this store's placeholders, and its values as the store takes them."""
        if self.kind == "postgresql":
            statement = statement.replace("?", "%s")
        else:
            statement = stored_instants(statement)
        return statement, [db_value(self.kind, p) for p in params]

    @contextmanager
    def scratch(self) -> Iterator[Store]:
        """An empty store beside this one (a file, or a schema), removed afterwards."""
        tag = uuid.uuid4().hex[:10]
        limits = self.limits.for_rebuild()
        if self.kind == "sqlite":
            scratch = Store(
                kind="sqlite", sqlite_path=f"{self.sqlite_path}.scratch-{tag}", limits=limits
            )
        else:
            scratch = Store(
                kind=self.kind, postgres=self.postgres, schema=f"scratch_{tag}", limits=limits
            )
        scratch.create()
        try:
            yield scratch
        finally:
            scratch.close()
            scratch.drop()

    def create(self) -> None:
        """Make sure the store exists: the SQLite file and its folder, or the PostgreSQL schema."""
        if self.kind == "sqlite":
            _create_private_file(Path(self.sqlite_path))
            return
        with self.dedicated() as conn:
            conn.execute(
                sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema))
            )

    def drop(self) -> None:
        """Remove the whole store: its file, or its schema. Only ever for scratch stores."""
        if self.kind == "sqlite":
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(self.sqlite_path + suffix).unlink(missing_ok=True)
            return
        with self.dedicated() as conn:
            conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema))
            )

    @contextmanager
    def migration_lock(self, waiting: Waiting = lambda _: None) -> Iterator[None]:
        """Serialise migrations across processes starting together."""
        with self.advisory_lock("migration", waiting):
            self.create()
            yield

    @contextmanager
    def advisory_lock(self, name: str, waiting: Waiting = lambda _: None) -> Iterator[None]:
        """Hold the session lock `name` of LOCKS (PostgreSQL; SQLite serialises writes itself).

        While it waits, `waiting` hears every LOCK_REPORT_SECONDS (first at once) how long it
        has waited and which session holds the lock.
        """
        if self.kind == "sqlite":
            yield
            return
        key = self.lock_key(name)
        with self.dedicated() as conn:
            _acquire(conn, key, name, waiting)
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))

    def lock_key(self, name: str) -> int:
        """The key of lock `name` for this store: one per schema, so that stores side by side
        never wait on each other (`public` keeps the key releases before 0.4.0 used)."""
        text = LOCKS[name] if self.schema == "public" else f"{LOCKS[name]}:{self.schema}"
        return zlib.crc32(text.encode())


def _acquire(conn: psycopg.Connection[Any], key: int, name: str, waiting: Waiting) -> None:
    started, told = time.monotonic(), -LOCK_REPORT_SECONDS
    while not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchall()[0][0]:
        now = time.monotonic()
        if now - told >= LOCK_REPORT_SECONDS:
            holder = _lock_holder(conn, key)
            waiting(f"waiting {now - started:.0f} s for the {name} lock, held by {holder}")
            told = now
        time.sleep(LOCK_POLL_SECONDS)


def _lock_holder(conn: psycopg.Connection[Any], key: int) -> str:
    """The session holding advisory lock `key` (a bigint's halves: classid 0, objid key)."""
    rows = conn.execute(
        "SELECT a.application_name, a.pid FROM pg_locks l JOIN pg_stat_activity a "
        "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 "
        "AND l.objid::bigint = %s AND l.objsubid = 1 AND l.database = "
        "(SELECT oid FROM pg_database WHERE datname = current_database())",
        (key,),
    ).fetchall()
    if not rows:
        return "another session (gone since)"
    application_name, pid = rows[0]
    return f"{application_name or 'an unnamed session'} (pid {pid})"


def _create_private_file(path: Path) -> None:
    """A missing file and folder are made for their owner alone (0600 and 0700).

    What exists already keeps its mode: the folder may be a shared one such as /tmp. SQLite
    gives its -wal, -shm and -journal files the database file's mode.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
