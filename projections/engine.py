"""Projections: the log, replayed in batches into SQL tables, exactly once.

Each projection keeps its position in `projection_positions`, written in the same transaction
as its rows, so a crash mid-batch rolls both back and the batch is simply done again. A batch
takes the projection's row lock (PostgreSQL `FOR UPDATE`, SQLite `BEGIN IMMEDIATE`), so any
number of processes may run the same projection: they take turns and never double count.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol
from uuid import UUID

import psycopg
from eventsourcing.persistence import Notification

from cronledger.persistence.ledger import Ledger, Undecodable
from cronledger.persistence.store import SQLITE_INSTANT, Store, as_instant, db_value
from projections.business import BusinessTime

log = logging.getLogger("cronledger.projections")
Handler = Callable[["Sql", Any, int], None]  # each takes the event its class is keyed by
EventClass = type[object]  # a domain event's class, or a projection's own (`runs.Launch`)

MULTI_ROW_INSERT = re.compile(r"INSERT INTO \w+ \([\w, ]+\) VALUES \([\w?, ]+\)")
ROWS_PER_INSERT = 500  # well under both stores' limits on parameters per statement

POSITIONS_DDL = (
    "CREATE TABLE IF NOT EXISTS projection_positions ("
    "name TEXT PRIMARY KEY, position BIGINT NOT NULL, layout TEXT)"
)
SCHEMA_TABLE = "cronledger_schema"  # the versions whose tables were made (`Projector.migrate`)
# Bump when `create_tables` changes in a way no projection's layout shows (2: the tables
# outside the log that `Projection.outside_ddl` names; 3: the events' MACs and the position
# they start at, made with the events table).
SCHEMA_REVISION = 3
UNDECODABLE_DDL = (
    "CREATE TABLE IF NOT EXISTS undecodable_events ("
    "position BIGINT PRIMARY KEY, originator_id TEXT NOT NULL, originator_version BIGINT NOT NULL, "
    "topic TEXT NOT NULL, error TEXT NOT NULL)"
)


class Stamped(Protocol):
    """What a handler of many event classes reads of each: its aggregate, the aggregate's
    version, when and by whom."""

    @property
    def originator_id(self) -> UUID: ...

    @property
    def originator_version(self) -> int: ...

    @property
    def at(self) -> datetime: ...

    @property
    def actor(self) -> str: ...


class Sql:
    """One connection with one dialect: `?` placeholders and instants on both stores."""

    def __init__(self, kind: str, connection: Any) -> None:
        self.kind = kind
        self.connection = connection
        self._writes: list[tuple[str, Sequence[Any]]] = []

    @property
    def timestamp_type(self) -> str:
        return "TIMESTAMPTZ" if self.kind == "postgresql" else "TEXT"

    @property
    def seconds_type(self) -> str:
        """Durations in seconds: PostgreSQL `NUMERIC` (its `ROUND(x, n)` takes no `DOUBLE
        PRECISION`), SQLite `DOUBLE PRECISION` (`REAL`, which rounds fine)."""
        return "NUMERIC" if self.kind == "postgresql" else "DOUBLE PRECISION"

    def seconds(self, delta: timedelta) -> Decimal | float:
        """A duration as a seconds column takes it: exact to the microsecond on PostgreSQL."""
        if self.kind == "postgresql":
            whole = delta.days * 86400 + delta.seconds
            return Decimal(whole) + Decimal(delta.microseconds) / 1_000_000
        return delta.total_seconds()

    def seconds_since(self, start: Any, at: datetime) -> Decimal | float:
        """The seconds from an instant read from a column (`start`) to `at`."""
        instant = as_instant(start)
        assert instant is not None
        return self.seconds(at - instant)

    def execute(self, statement: str, params: Sequence[Any] = ()) -> Any:
        """Run a statement now (the queued writes first): for reads, and what must not wait."""
        self.flush()
        return self.connection.execute(self._native(statement), [self.value(p) for p in params])

    def write(self, statement: str, params: Sequence[Any] = ()) -> None:
        """Queue a write; consecutive writes of one statement reach the database together."""
        values = list(params) if self.kind == "postgresql" else [self.value(p) for p in params]
        self._writes.append((statement, values))

    def write_rows(self, statement: str, rows: Iterable[Sequence[Any]]) -> None:
        """`write` for many rows of plain values (no instants): queued as they are."""
        self._writes.extend((statement, row) for row in rows)

    def flush(self) -> None:
        """Send the queued writes in order; a run of one statement goes as one statement.

        A plain `INSERT ... VALUES (...)` becomes one multi-row insert per ROWS_PER_INSERT rows;
        any other statement one `executemany`.
        """
        writes, self._writes = self._writes, []
        for statement, group in itertools.groupby(writes, key=lambda write: write[0]):
            rows = [params for _, params in group]
            if len(rows) > 1 and MULTI_ROW_INSERT.fullmatch(statement):
                self._insert_rows(statement, rows)
            elif len(rows) > 1:
                self.connection.cursor().executemany(self._native(statement), rows)
            else:
                self.connection.execute(self._native(statement), rows[0])

    def _insert_rows(self, statement: str, rows: list[Sequence[Any]]) -> None:
        head, _, values = statement.partition(" VALUES ")
        for start in range(0, len(rows), ROWS_PER_INSERT):
            part = rows[start : start + ROWS_PER_INSERT]
            params = [v for row in part for v in row]
            if self.kind == "postgresql":
                many = f"{head} VALUES {_numbered(values, len(part))}"
                psycopg.RawCursor(self.connection).execute(many, params)
            else:
                self.connection.execute(f"{head} VALUES {', '.join([values] * len(part))}", params)

    def executemany(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        self.flush()
        cursor = self.connection.cursor()
        cursor.executemany(self._native(statement), [[self.value(p) for p in r] for r in rows])

    def value(self, param: Any) -> Any:
        return db_value(self.kind, param)

    def _native(self, statement: str) -> str:
        return statement.replace("?", "%s") if self.kind == "postgresql" else statement

    @contextmanager
    def pipeline(self) -> Iterator[None]:
        """On PostgreSQL, send statements without waiting for each answer."""
        if self.kind != "postgresql":
            yield
            return
        with self.connection.pipeline():
            yield

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if self.kind == "postgresql":
            with self.connection.transaction():
                yield
            return
        self.connection.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        self.connection.execute("COMMIT")


class Projection:
    """A read model: its tables and one handler per event class it cares about."""

    name: str = ""
    tables: tuple[str, ...] = ()  # what it owns, in the order a rebuild copies them
    rebuildable = True
    # Bumped when an upcast changes what the handlers read of events already stored, so that
    # rows written from the older reading are rebuilt (the tables themselves stay as they are).
    revision = 1
    # (table, column) of the lower-cased text lists search by substring: on PostgreSQL each
    # gets a trigram index where pg_trgm can be had (`_trigram_indexes`), outside the layout.
    search_columns: tuple[tuple[str, str], ...] = ()
    # The zone of its business-time columns (`projections.business`), for those that keep any.
    business: BusinessTime | None = None

    def ddl(self, sql: Sql) -> list[str]:
        raise NotImplementedError

    def handlers(self) -> dict[EventClass, Handler]:
        raise NotImplementedError

    def outside_ddl(self, sql: Sql) -> list[str]:
        """Tables kept beside the projection's but written by the application, never by an
        event (credentials, sign-in failures): every migration makes them, even while the
        projection waits for a rebuild, and no rebuild or replay touches them. They are no part
        of the layout: adding one bumps SCHEMA_REVISION."""
        return []

    def layout(self, sql: Sql) -> str:
        """A fingerprint of the tables' definitions: when it changes, the tables need rebuilding.

        On SQLite it covers the form instants are stored in, so rows of an older form are
        rebuilt (projections that cannot be rebuilt hold no instants); everywhere, the
        `revision` of what the handlers read, and the zone of any business-time columns.
        """
        text = "\n".join(self.ddl(sql))
        if sql.kind == "sqlite" and self.rebuildable:
            text += f"\ninstants as {SQLITE_INSTANT}"
        if self.revision > 1:
            text += f"\nrevision {self.revision}"
        if self.business is not None:
            text += f"\nbusiness time in {self.business.zone}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def passes(self) -> list[dict[EventClass, Handler]]:
        """The handlers in passes over each batch: groups that touch disjoint rows or columns.

        Within a pass events apply in log order; a later pass sees the batch again. Separate
        passes let one statement run for many events at once (`Sql.write` groups runs of it).
        """
        return [self.handlers()]

    def apply(self, sql: Sql, batch: Sequence[tuple[Notification, Any]]) -> None:
        """Apply a batch of (stored notification, decoded event), oldest first."""
        for handlers in self.passes():
            for notification, event in batch:
                handler = handlers.get(type(event))
                if handler is not None:
                    handler(sql, event, notification.id)


class Projector:
    """Runs projections over the ledger's log, in batches, each batch one transaction."""

    def __init__(
        self,
        ledger: Ledger,
        projections: Sequence[Projection],
        batch: int = 2000,
        tables: Store | None = None,
    ) -> None:
        self.ledger = ledger
        self.projections = list(projections)
        self.batch = batch
        self.tables = tables or ledger.store  # where the rows go (a scratch store to rebuild)
        self._lock = threading.Lock()
        self._held: set[str] = set()  # being rebuilt beside the live tables: left alone here
        # A position every projection not held was seen to have reached (they only move on).
        self._reached = 0

    def migrate(self) -> None:
        """`create_tables`, then record this version as applied (`schema_current` then holds)."""
        self.create_tables()
        with self._sql() as sql:
            sql.execute(
                f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version TEXT PRIMARY KEY, "
                f"applied_at {sql.timestamp_type} NOT NULL DEFAULT CURRENT_TIMESTAMP)"
            )
            sql.execute(
                f"INSERT INTO {SCHEMA_TABLE} (version) VALUES (?) ON CONFLICT DO NOTHING",  # noqa: S608
                (schema_version(sql.kind, self.projections),),
            )

    def create_tables(self) -> None:
        """Create what is missing; tables an older definition made are left for a rebuild."""
        with self._sql() as sql:
            sql.execute(POSITIONS_DDL)
            sql.execute(UNDECODABLE_DDL)
            _add_layout_column(sql)
            outdated = {p.name for p in self._outdated(sql)}
            for projection in self.projections:
                for statement in projection.outside_ddl(sql):
                    sql.execute(statement)
                if projection.name in outdated:
                    continue
                for statement in projection.ddl(sql):
                    sql.execute(statement)
                sql.execute(
                    "INSERT INTO projection_positions (name, position, layout) VALUES (?, 0, ?) "
                    "ON CONFLICT (name) DO NOTHING",
                    (projection.name, projection.layout(sql)),
                )
            current = [p for p in self.projections if p.name not in outdated]
            _trigram_indexes(sql, [column for p in current for column in p.search_columns])

    def outdated(self) -> list[Projection]:
        """The projections whose tables an older definition made (a rebuild brings them up)."""
        with self._sql() as sql:
            return self._outdated(sql)

    def hold(self, projections: Sequence[Projection]) -> None:
        """Leave these alone (their live tables keep an older layout) until `release`."""
        with self._lock:
            self._held |= {p.name for p in projections}

    def release(self, projections: Sequence[Projection]) -> None:
        """Project these again (their rebuilt tables were swapped in)."""
        with self._lock:
            self._held -= {p.name for p in projections}
            self._reached = 0  # the released ones may be behind the others

    def _active(self) -> list[Projection]:
        return [p for p in self.projections if p.name not in self._held]

    def _outdated(self, sql: Sql) -> list[Projection]:
        layouts = dict(sql.execute("SELECT name, layout FROM projection_positions").fetchall())
        return [
            p for p in self.projections if p.name in layouts and layouts[p.name] != p.layout(sql)
        ]

    def catch_up(
        self,
        until: int | None = None,
        exactly: bool = False,
        progress: Callable[[int], object] | None = None,
    ) -> int:
        """Project until the log's end (or `until`); the number of events projected.

        The projections furthest behind go first, together: each batch is read and decoded
        once for all of them. With `exactly`, no projection goes past `until`.
        """
        if self._has_reached(until, exactly):
            return 0
        with self._lock:
            if self._has_reached(until, exactly):  # by the catch-up this one waited for
                return 0
            return self._caught_up(until, until if exactly else None, progress)

    def _caught_up(
        self, until: int | None, stop: int | None, progress: Callable[[int], object] | None
    ) -> int:
        """`catch_up`'s batches, under its lock; the number of events projected."""
        done = 0
        with self._sql() as sql:
            while True:
                count, lowest = self._run_batch(sql, stop)
                done += count
                if progress is not None:
                    progress(count)
                if until is not None and lowest >= until:
                    break
                if count == 0 and lowest >= self._end():
                    break
        return done

    def _has_reached(self, until: int | None, exactly: bool) -> bool:
        """Whether every projection is known to be at `until` already (so a save's catch-up
        that waited for another thread's costs no query)."""
        return until is not None and not exactly and self._reached >= until

    def lag(self) -> int:
        """How many positions the slowest projection is behind the log."""
        with self._sql() as sql:
            return self._end() - min(self._positions(sql).values(), default=self._end())

    def _end(self) -> int:
        return self.ledger.recorder.max_notification_id() or 0

    def positions(self) -> dict[str, int]:
        with self._sql() as sql:
            return self._positions(sql)

    def _run_batch(self, sql: Sql, stop: int | None = None) -> tuple[int, int]:
        """Read a batch first, then apply it under the lock if nobody applied it meanwhile.

        Reading outside the lock matters on SQLite: a write lock held while waiting for the
        recorder's reader would deadlock with a writer waiting for that lock.
        """
        positions = self._positions(sql)
        if not positions:
            return 0, self._end()  # every projection is held for a rebuild
        start = min(positions.values())
        group = [p for p in self._active() if positions[p.name] == start]
        self._reached = max(self._reached, start)
        if stop is not None and start >= stop:
            return 0, start
        notifications = self.ledger.recorder.select_notifications(
            start=start + 1, limit=self.batch, stop=stop
        )
        if not notifications:
            return 0, start if stop is None else stop
        with sql.transaction():
            if any(self._positions(sql, lock=True)[p.name] != start for p in group):
                return 0, start  # another projector applied it; read again
            self._apply(sql, group, notifications)
            sql.executemany(
                "UPDATE projection_positions SET position = ? WHERE name = ?",
                [(notifications[-1].id, p.name) for p in group],
            )
        if len(group) == len(positions):  # all of them moved there
            self._reached = max(self._reached, notifications[-1].id)
        return len(notifications), notifications[-1].id

    def _apply(
        self, sql: Sql, group: list[Projection], notifications: Sequence[Notification]
    ) -> None:
        batch = [(n, self.ledger.decode(n)) for n in notifications]
        with sql.pipeline():
            _record_undecodable(sql, batch)
            for projection in group:
                projection.apply(sql, batch)
            sql.flush()

    def _positions(self, sql: Sql, lock: bool = False) -> dict[str, int]:
        suffix = " FOR UPDATE" if lock and sql.kind == "postgresql" else ""
        names = [p.name for p in self._active()]
        if not names:
            return {}
        marks = ", ".join("?" for _ in names)
        rows = sql.execute(  # locked in one order by every process, so two never deadlock
            f"SELECT name, position FROM projection_positions WHERE name IN ({marks})"  # noqa: S608
            f" ORDER BY name{suffix}",
            names,
        ).fetchall()
        return {name: int(position) for name, position in rows}

    @contextmanager
    def _sql(self) -> Iterator[Sql]:
        with self.tables.connect() as connection:
            yield Sql(self.tables.kind, connection)


@functools.lru_cache(maxsize=256)
def _numbered(values: str, rows: int) -> str:
    """`rows` copies of a `(?, ...)` tuple with PostgreSQL's own `$n` placeholders.

    psycopg parses a statement's `%s` placeholders anew whenever it has more than 50 parameters;
    a raw cursor's `$n` skip that parse, which took half of a PostgreSQL catch-up (py-spy).
    """
    width = values.count("?")
    pieces = values.split("?")
    numbered = []
    for row in range(rows):
        marks = (f"${row * width + i + 1}" for i in range(width))
        numbered.append("".join(p + m for p, m in zip(pieces, marks, strict=False)) + pieces[-1])
    return ", ".join(numbered)


def schema_version(kind: str, projections: Sequence[Projection]) -> str:
    """What `Projector.migrate` makes, named: the revision and every projection's layout."""
    sql = Sql(kind, None)
    layouts = "\n".join(sorted(f"{p.name} {p.layout(sql)}" for p in projections))
    digest = hashlib.sha256(f"{SCHEMA_REVISION}\n{layouts}".encode()).hexdigest()
    return f"{SCHEMA_REVISION}-{digest[:12]}"


def schema_current(store: Store, projections: Sequence[Projection]) -> bool:
    """Whether `Projector.migrate` ran for this version already: then a start runs no DDL."""
    if store.missing_file() or not store.has_table(SCHEMA_TABLE):
        return False
    version = schema_version(store.kind, projections)
    statement = f"SELECT 1 FROM {SCHEMA_TABLE} WHERE version = ?"  # noqa: S608
    return bool(store.query(statement, (version,)))


def _record_undecodable(sql: Sql, batch: Sequence[tuple[Notification, Any]]) -> None:
    """Events no projection can read, kept for operators (metric `cronledger_undecodable_events`).

    Projections skip them (no handler is keyed by `Undecodable`) and go on; the hash chain
    still covers their bytes.
    """
    for notification, event in batch:
        if isinstance(event, Undecodable):
            sql.write(
                "INSERT INTO undecodable_events "
                "(position, originator_id, originator_version, topic, error) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (position) DO NOTHING",
                (
                    notification.id,
                    str(event.originator_id),
                    event.originator_version,
                    event.topic,
                    event.error,
                ),
            )


def undecodable_count(store: Store) -> int:
    """How many events on the log no projection can read."""
    return int(store.query("SELECT COUNT(*) FROM undecodable_events")[0][0])


def _trigram_indexes(sql: Sql, columns: Sequence[tuple[str, str]]) -> None:
    """On PostgreSQL, a trigram index (pg_trgm) on each searched column, so that `LIKE
    '%text%'` need not read the whole table: where the extension is installed, or this role
    may install it (into `public`, which no scratch schema's drop takes with it). Without it
    lists search all the same, by reading their rows; so does SQLite."""
    if sql.kind != "postgresql" or not columns:
        return
    schema = _trigram_schema(sql)
    if schema is None:
        return
    for table, column in columns:
        sql.execute(
            f"CREATE INDEX IF NOT EXISTS {table}_{column}_trigrams ON {table} "
            f'USING gin ({column} "{schema}".gin_trgm_ops)'
        )


def _trigram_schema(sql: Sql) -> str | None:
    """The schema pg_trgm is installed in, after installing it if it was not; None if it
    cannot be (not available on the server, or not allowed to this role)."""
    found = "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
    found += "WHERE e.extname = 'pg_trgm'"
    rows = sql.execute(found).fetchall()
    if not rows:
        try:
            with sql.connection.transaction():
                sql.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public")
        except psycopg.Error as refused:
            log.info("no trigram indexes for searches: %s", refused)
        rows = sql.execute(found).fetchall()
    return str(rows[0][0]) if rows else None


def _add_layout_column(sql: Sql) -> None:
    """Stores made before layouts were recorded get the column; their layouts count as old."""
    if sql.kind == "postgresql":
        sql.execute("ALTER TABLE projection_positions ADD COLUMN IF NOT EXISTS layout TEXT")
        return
    columns = [row[1] for row in sql.execute("PRAGMA table_info(projection_positions)")]
    if "layout" not in columns:
        sql.execute("ALTER TABLE projection_positions ADD COLUMN layout TEXT")
