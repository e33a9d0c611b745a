"""How a process connects: its name on the server, its timeouts and its pools' sizes.

Every PostgreSQL connection a process opens (eventsourcing's pool, the read models' pool, the
listener, the locks) carries `application_name` (`cronledger-<kind>`) and the same timeouts,
so `pg_stat_activity` tells the processes apart and nothing waits without bound. The pools'
connections also give up a statement whose server stopped answering (`WatchfulConnection`).
"""

from __future__ import annotations

import functools
import math
import select
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import psycopg
from eventsourcing import persistence as es_persistence
from eventsourcing.postgres import PostgresFactory
from eventsourcing.utils import Environment, EnvType
from psycopg import pq
from psycopg.abc import PQGen
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from cronledger.config import Settings
from cronledger.persistence.recorders import SnapshotRecorder

UNACKNOWLEDGED_SECONDS = 5  # a server silent this long after being sent something is gone
ANSWERED_SECONDS = 1.0  # a pooled connection answered this recently is lent without a check
CONNINFO = "POSTGRES_CONNINFO"  # our addition to eventsourcing's settings: `connection_kwargs`
RV = TypeVar("RV")


@dataclass(frozen=True)
class Limits:
    """A process's connection settings (docs/operations.md#connections-and-timeouts), made
    from its Settings (`of`), whose defaults are the only ones."""

    application_name: str
    connect_timeout: float
    statement_timeout: float  # 0: none (rebuilds copy whole tables)
    lock_timeout: float
    idle_in_transaction_timeout: float
    sqlite_busy_timeout: float
    pool_size: int
    pool_overflow: int

    @classmethod
    def of(cls, settings: Settings, kind: str) -> Limits:
        """The limits `settings` give a process of `kind` (serve, web, tick, ..., cli)."""
        return cls(
            application_name=f"cronledger-{kind}",
            connect_timeout=settings.connect_timeout_seconds,
            statement_timeout=settings.statement_timeout_seconds,
            lock_timeout=settings.lock_timeout_seconds,
            idle_in_transaction_timeout=settings.idle_in_transaction_timeout_seconds,
            sqlite_busy_timeout=settings.sqlite_busy_timeout_seconds,
            pool_size=settings.pool_size,
            pool_overflow=settings.pool_overflow,
        )

    @classmethod
    def default(cls) -> Limits:
        """The limits of the default settings, for a store opened without any."""
        return cls.of(Settings(), "cli")

    def for_rebuild(self) -> Limits:
        """A rebuild's scratch store: one connection at a time, statements as long as they take."""
        return replace(self, statement_timeout=0, pool_size=1, pool_overflow=1)

    @property
    def whole_connect_seconds(self) -> int:
        """libpq and eventsourcing take whole seconds; libpq reads 1 as 2."""
        return max(2, math.ceil(self.connect_timeout))

    def server_options(self, schema: str | None = None) -> str:
        """libpq `options`: the session's timeouts (and search path), set as it connects."""
        settings: dict[str, object] = {
            "statement_timeout": _milliseconds(self.statement_timeout),
            "lock_timeout": _milliseconds(self.lock_timeout),
            "idle_in_transaction_session_timeout": _milliseconds(self.idle_in_transaction_timeout),
        }
        if schema is not None:
            settings["search_path"] = schema
        return " ".join(f"-c {name}={value}" for name, value in settings.items())

    def connection_kwargs(self, schema: str | None = None) -> dict[str, Any]:
        """What `psycopg.connect` (or a pool) takes besides the server's address.

        `tcp_user_timeout` ends a connection whose server stopped acknowledging what it is
        sent (a host gone without closing its sockets), which no server-side timeout can; the
        keepalives find such a host behind an idle connection.
        """
        return {
            "application_name": self.application_name,
            "connect_timeout": self.whole_connect_seconds,
            "options": self.server_options(schema),
            "tcp_user_timeout": max(UNACKNOWLEDGED_SECONDS, self.whole_connect_seconds) * 1000,
            "keepalives": 1,
            "keepalives_idle": 30,
            "keepalives_interval": 10,
            "keepalives_count": 3,
        }

    def eventsourcing_env(self) -> dict[str, str]:
        """eventsourcing's PostgreSQL settings for the same limits (whole seconds, as it reads)."""
        return {
            "POSTGRES_CONNECT_TIMEOUT": str(self.whole_connect_seconds),  # also the pool's wait
            "POSTGRES_POOL_SIZE": str(self.pool_size),
            "POSTGRES_MAX_OVERFLOW": str(self.pool_overflow),
            "POSTGRES_LOCK_TIMEOUT": str(math.ceil(self.lock_timeout)),  # its LOCK TABLE's
            "POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT": str(
                math.ceil(self.idle_in_transaction_timeout)
            ),
            CONNINFO: make_conninfo("", **self.connection_kwargs()),
        }


def _milliseconds(seconds: float) -> int:
    return round(seconds * 1000)


class NamedPostgresFactory(PostgresFactory):
    """eventsourcing's factory, whose pool's connections also carry the process's name, libpq's
    connect timeout and the session timeouts (`Limits.connection_kwargs`, which eventsourcing
    does not pass); its snapshots' recorder retries once, not ten times."""

    aggregate_recorder_class = SnapshotRecorder

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        pool = self.datastore.pool
        kwargs = pool.kwargs
        assert isinstance(kwargs, dict)  # as eventsourcing makes its pool
        kwargs.update(conninfo_to_dict(self.env.get(CONNINFO) or ""))
        pool.connection_class = WatchfulConnection  # the pool is not open yet: all are watchful
        # eventsourcing's pool takes no check of ours (its POSTGRES_PRE_PING's waits unbounded)
        connect_timeout = float(self.env.get(self.POSTGRES_CONNECT_TIMEOUT) or 2)
        pool._check = answering_within(connect_timeout)


def answering_within(seconds: float) -> Callable[[psycopg.Connection[Any]], None]:
    """A pool's check of a connection it is about to lend: the server answers an empty query
    within `seconds`, else the connection is closed (the pool then opens a fresh one, or the
    caller gets `PoolTimeout`, a 503).

    A pooled connection to a server that stopped answering while keeping its sockets open (a
    frozen process, a stuck proxy) would otherwise hang the request without bound: the
    server's kernel still acknowledges what is sent, so `tcp_user_timeout` never fires. A
    connection whose server answered it within ANSWERED_SECONDS is lent without asking again
    (a round trip per statement, otherwise): a `WatchfulConnection` gives up a statement its
    server does not answer.
    """

    def check(conn: psycopg.Connection[Any]) -> None:
        pgconn = conn.pgconn
        if conn.closed or pgconn.transaction_status != pq.TransactionStatus.IDLE:
            raise psycopg.OperationalError("a pooled connection was not idle")
        if isinstance(conn, WatchfulConnection) and conn.answered_within(ANSWERED_SECONDS):
            return  # it answered just now, and its statements are watched all the same
        deadline = time.monotonic() + seconds
        try:
            pgconn.send_query(b"")
            while pgconn.flush():
                _wait(pgconn.socket, deadline, writing=True)
            while True:
                pgconn.consume_input()
                if not pgconn.is_busy():
                    break
                _wait(pgconn.socket, deadline)
            while (result := pgconn.get_result()) is not None:
                if result.status == pq.ExecStatus.FATAL_ERROR:
                    raise psycopg.OperationalError(result.get_error_message())
        except BaseException:
            conn.close()  # never back in the pool with the check's query pending
            raise

    return check


class WatchfulConnection(psycopg.Connection[Any]):
    """A connection that gives up a statement once its server has said nothing for the connect
    timeout and does not accept a new connection within the connect timeout either (a frozen
    server, a stuck proxy, an unreachable host): the connection is closed and the statement
    raises `OperationalError`, a 503 for a request. A slow statement of a server that still
    answers goes on (to the statement timeout, which the server enforces).

    TCP cannot tell: a frozen server's kernel still acknowledges what is sent, and the server
    timeouts need the server. psycopg waits for the server through `wait`, which wakes every
    tenth of a second; the statement's generator is watched there.
    """

    answered_at = -math.inf  # when the server last finished answering on it (monotonic)

    def wait(self, gen: PQGen[RV], *args: Any, **kwargs: Any) -> RV:
        return super().wait(self._watched(gen), *args, **kwargs)

    def answered_within(self, seconds: float) -> bool:
        return time.monotonic() - self.answered_at < seconds

    def _watched(self, gen: PQGen[RV]) -> PQGen[RV]:
        """`gen`, given up when the server is silent past the connect timeout and frozen."""
        patience = float(self._params.get("connect_timeout") or 2)
        try:
            state = next(gen)
            heard = time.monotonic()
            while True:
                ready = yield state
                if ready:
                    heard = time.monotonic()
                elif time.monotonic() - heard >= patience:
                    self._give_up_unless_answering()
                    heard = time.monotonic()
                state = gen.send(ready)
        except StopIteration as done:
            self.answered_at = time.monotonic()
            result: RV = done.value
            return result

    @functools.cached_property
    def _params(self) -> dict[str, str]:
        """This connection's parameters (its server, credentials and timeouts), read once:
        reading them costs a third of a short statement."""
        return {
            option.keyword.decode(): option.val.decode()
            for option in self.pgconn.info
            if option.val is not None
        }

    def _give_up_unless_answering(self) -> None:
        """Close this connection and raise, unless the server takes a new connection within
        the connect timeout (or answers it at all, if only to refuse it)."""
        params = self._params
        try:
            psycopg.connect(make_conninfo("", **params)).close()
        except psycopg.errors.ConnectionTimeout:
            self.pgconn.finish()  # broken: the pool drops it
            raise psycopg.OperationalError(
                "the server stopped answering during a statement: gave up after "
                f"{params.get('connect_timeout')} s of silence and a connect timeout"
            ) from None
        except psycopg.Error:
            pass  # it answered


def _wait(socket: int, deadline: float, writing: bool = False) -> None:
    remaining = deadline - time.monotonic()
    waiting = ([], [socket]) if writing else ([socket], [])
    if remaining <= 0 or not any(select.select(*waiting, [], remaining)[:2]):
        raise psycopg.OperationalError("the server did not answer within the connect timeout")


# What SQLite says when the file cannot be reached, stays locked past the busy timeout, or
# cannot grow (a full disk, a size limit): nothing was written, and a retry may succeed later.
_SQLITE_AWAY = ("unable to open", "locked", "disk i/o error", "database or disk is full")


def store_unavailable(error: BaseException) -> bool:
    """Whether `error` means the store cannot be reached or answer in time (not a bug): the
    server away or restarting, a full pool, a connect, lock or statement timeout, a busy or full
    file."""
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        return True
    if isinstance(error, es_persistence.OperationalError | es_persistence.InterfaceError):
        cause = error.__cause__
        return not isinstance(cause, sqlite3.Error) or _sqlite_away(cause)
    return isinstance(error, sqlite3.OperationalError) and _sqlite_away(error)


def _sqlite_away(error: sqlite3.Error) -> bool:
    return any(words in str(error).lower() for words in _SQLITE_AWAY)
