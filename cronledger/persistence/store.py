"""Where the log lives: `CRONLEDGER_DATABASE_URL` mapped onto eventsourcing's recorders."""

from __future__ import annotations

import os
import re
import sqlite3
import uuid
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
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

URL_VARIABLE = "CRONLEDGER_DATABASE_URL"
URL_FORMS = "sqlite:///relative/path, sqlite:////absolute/path or postgresql://user@host:port/db"
MIGRATION_LOCK = zlib.crc32(b"cronledger-migrate")
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
    _pool: ConnectionPool[Any] | None = field(default=None, init=False, repr=False)

    @classmethod
    def from_url(cls, url: str) -> Store:
        parts = urlsplit(url)
        if parts.scheme == "sqlite" and parts.path not in ("", "/") and not parts.netloc:
            return cls(kind="sqlite", sqlite_path=unquote(parts.path[1:]))
        if parts.scheme in ("postgresql", "postgres") and parts.path.strip("/"):
            return cls._postgres(parts.path.strip("/"), parts, parse_qs(parts.query))
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
                "SQLITE_LOCK_TIMEOUT": "10",
                "APPLICATION_RECORDER_TOPIC": (
                    "cronledger.persistence.recorders:CheckingSQLiteRecorder"
                ),
            }
        pg = self.postgres
        return {
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_DBNAME": pg["dbname"],
            "POSTGRES_HOST": pg["host"],
            "POSTGRES_PORT": pg["port"],
            "POSTGRES_USER": pg["user"],
            "POSTGRES_PASSWORD": pg["password"],
            "POSTGRES_SCHEMA": self.schema,
            "POSTGRES_CONNECT_TIMEOUT": "5",
            "POSTGRES_POOL_SIZE": "10",
            "APPLICATION_RECORDER_TOPIC": "cronledger.persistence.recorders:BinaryAppendRecorder",
        }

    @contextmanager
    def connect(self) -> Iterator[Any]:
        """A plain DB-API connection, for migrations and read models."""
        if self.kind == "sqlite":
            conn = sqlite3.connect(self.sqlite_path, timeout=10, isolation_level=None)
            try:
                yield conn
            finally:
                conn.close()
        else:
            with self._postgres_pool().connection() as pg_conn:
                yield pg_conn

    def _postgres_pool(self) -> ConnectionPool[Any]:
        """Read-model connections, reused: opening one costs milliseconds."""
        if self._pool is None:
            self._pool = ConnectionPool(
                make_conninfo("", **self.postgres, options=f"-c search_path={self.schema}"),
                kwargs={"autocommit": True, "connect_timeout": 5},
                min_size=1,
                max_size=10,
                open=True,
            )
        return self._pool

    def missing_file(self) -> bool:
        """Whether a SQLite store's file is absent, checked without creating it or its folder."""
        return self.kind == "sqlite" and not Path(self.sqlite_path).is_file()

    def has_table(self, table: str) -> bool:
        """Whether this store holds that table (named as SQL: `Ledger.events_table`)."""
        if self.kind == "sqlite":
            statement = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
            return bool(self.query(statement, (table,)))
        return self.query("SELECT to_regclass(?) IS NOT NULL", (table,))[0][0] is True

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()

    def query(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one read; `?` placeholders and instants work on both stores."""
        with self.connect() as conn:
            if self.kind == "postgresql":
                statement = statement.replace("?", "%s")
            values = [db_value(self.kind, p) for p in params]
            return list(conn.execute(statement, values).fetchall())

    @contextmanager
    def scratch(self) -> Iterator[Store]:
        """An empty store beside this one (a file, or a schema), removed afterwards."""
        tag = uuid.uuid4().hex[:10]
        if self.kind == "sqlite":
            scratch = Store(kind="sqlite", sqlite_path=f"{self.sqlite_path}.scratch-{tag}")
        else:
            scratch = Store(kind=self.kind, postgres=self.postgres, schema=f"scratch_{tag}")
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
        with psycopg.connect(make_conninfo("", **self.postgres), autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema))
            )

    def drop(self) -> None:
        """Remove the whole store: its file, or its schema. Only ever for scratch stores."""
        if self.kind == "sqlite":
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(self.sqlite_path + suffix).unlink(missing_ok=True)
            return
        with psycopg.connect(make_conninfo("", **self.postgres), autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema))
            )

    @contextmanager
    def migration_lock(self) -> Iterator[None]:
        """Serialise table creation across processes starting together."""
        if self.kind == "sqlite":
            self.create()
            yield
            return
        with psycopg.connect(
            make_conninfo("", **self.postgres), connect_timeout=5, autocommit=True
        ) as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
            try:
                self.create()
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))


def _create_private_file(path: Path) -> None:
    """A missing file and folder are made for their owner alone (0600 and 0700).

    What exists already keeps its mode: the folder may be a shared one such as /tmp. SQLite
    gives its -wal, -shm and -journal files the database file's mode.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
