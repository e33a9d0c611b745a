"""eventsourcing's recorders with four changes: binary appends on PostgreSQL, appends that
commit only while the aggregates a command read are still as it read them (`unchanged=`), on
PostgreSQL one retry at most instead of ten (`_retried_once`), and each event's MAC written in
the transaction that appends it (cronledger/persistence/event_auth.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import wraps
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.persistence import IntegrityError, InterfaceError, OperationalError, StoredEvent
from eventsourcing.postgres import PostgresAggregateRecorder, PostgresApplicationRecorder
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteCursor
from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Identifier
from psycopg_pool import PoolTimeout

from cronledger.persistence.event_auth import (
    BOUNDARY_TABLE,
    MAC_TABLE,
    Authenticator,
    NoEventKeys,
    table_statements,
)

Unchanged = Sequence[tuple[UUID, int]]  # aggregate id, the version the command read
F = TypeVar("F", bound=Callable[..., Any])


def _retried_once(method: F) -> F:
    """eventsourcing's `method` without its ten attempts (over 20 s with the server away, each
    waiting the pool's timeout): one more attempt after a broken connection (the pool then
    opens a fresh one), none after waiting for a connection in vain."""
    inner = getattr(method, "__wrapped__", method)

    @wraps(inner)
    def once_more(*args: Any, **kwargs: Any) -> Any:
        try:
            return inner(*args, **kwargs)
        except (InterfaceError, OperationalError) as error:
            if isinstance(error.__cause__, PoolTimeout):
                raise
            return inner(*args, **kwargs)

    return once_more  # type: ignore[return-value]


class SnapshotRecorder(PostgresAggregateRecorder):
    """eventsourcing's recorder of snapshots, retrying once."""

    insert_events = _retried_once(PostgresAggregateRecorder.insert_events)
    select_events = _retried_once(PostgresAggregateRecorder.select_events)


class AggregatesMoved(IntegrityError):
    """An aggregate the command read changed before the command committed; nothing was written."""

    def __init__(self, moved: Sequence[UUID]) -> None:
        super().__init__(f"changed since read: {', '.join(str(i) for i in moved)}")


def check_unchanged(unchanged: Unchanged, latest: Mapping[UUID, int]) -> None:
    moved = [i for i, version in unchanged if latest.get(i) != version]
    if moved:
        raise AggregatesMoved(moved)


class BinaryAppendRecorder(PostgresApplicationRecorder):
    """eventsourcing's recorder, sending the array of new events as binary (`%b`), retrying
    once."""

    insert_events = _retried_once(PostgresApplicationRecorder.insert_events)
    select_events = _retried_once(PostgresApplicationRecorder.select_events)
    select_notifications = _retried_once(PostgresApplicationRecorder.select_notifications)
    max_notification_id = _retried_once(PostgresApplicationRecorder.max_notification_id)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = {
            "schema": Identifier(self.datastore.schema),
            "table": Identifier(self.events_table_name),
        }
        self.insert_events_statement = SQL(
            "INSERT INTO {schema}.{table} AS t (originator_id, originator_version, topic, state)"
            " SELECT originator_id, originator_version, topic, state"
            " FROM unnest(%b::{schema}.{stored_event_type}[]) RETURNING notification_id"
        ).format(**names, stored_event_type=Identifier(self.stored_event_type_name))
        self.latest_versions_statement = SQL(
            "SELECT originator_id, MAX(originator_version) AS version FROM {schema}.{table}"
            " WHERE originator_id = ANY(%s) GROUP BY originator_id"
        ).format(**names)
        self.authenticator = Authenticator()
        schema = Identifier(self.datastore.schema)
        self.insert_macs_statement = SQL(
            "INSERT INTO {schema}.{macs} (position, key_id, mac) "
            "SELECT * FROM unnest(%s::bigint[], %s::text[], %s::bytea[])"
        ).format(schema=schema, macs=Identifier(MAC_TABLE))
        self.boundary_statement = SQL("SELECT EXISTS (SELECT 1 FROM {schema}.{table})").format(
            schema=schema, table=Identifier(BOUNDARY_TABLE)
        )
        self.sql_create_statements.extend(
            SQL(statement).format(schema=schema)
            for statement in table_statements("postgresql", "{schema}.")
        )

    def _insert_events(
        self,
        curs: Cursor[DictRow],
        stored_events: Sequence[StoredEvent],
        *,
        unchanged: Unchanged = (),
        **kwargs: Any,
    ) -> None:
        """Take the append lock first, so what is checked stays true until the commit."""
        if self.authenticator.keys is None and self.authenticator.boundary_table:
            curs.execute(self.boundary_statement)
            row = curs.fetchone()
            if row is not None and next(iter(row.values())) and not self.authenticator.may_write():
                raise NoEventKeys()
        if unchanged:
            self._lock_table(curs)
            curs.execute(self.latest_versions_statement, ([i for i, _ in unchanged],))
            check_unchanged(
                unchanged, {row["originator_id"]: row["version"] for row in curs.fetchall()}
            )
        super()._insert_events(curs, stored_events, **kwargs)

    def _fetch_ids_after_insert_events(
        self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """The new events' positions, and their MACs written in the same transaction."""
        ids = super()._fetch_ids_after_insert_events(curs, stored_events, **kwargs)
        if ids and self.authenticator.keys is not None:
            macs = self.authenticator.macs(ids, _parts(stored_events))
            curs.execute(self.insert_macs_statement, macs)
        return ids


def _parts(stored_events: Sequence[StoredEvent]) -> list[tuple[Any, int, str, bytes]]:
    return [(e.originator_id, e.originator_version, e.topic, e.state) for e in stored_events]


class CheckingSQLiteRecorder(SQLiteApplicationRecorder):
    """eventsourcing's recorder; the check runs after the inserts, under the write lock."""

    authenticator = Authenticator()  # replaced by the ledger's

    def construct_create_table_statements(self) -> list[str]:
        return [*super().construct_create_table_statements(), *table_statements("sqlite")]

    def _insert_events(
        self,
        c: SQLiteCursor,
        stored_events: Sequence[StoredEvent],
        *,
        unchanged: Unchanged = (),
        **kwargs: Any,
    ) -> Sequence[int] | None:
        ids = super()._insert_events(c, stored_events, **kwargs)  # first: the write lock
        authenticator = self.authenticator
        if authenticator.keys is None and authenticator.boundary_table:
            c.execute(f"SELECT 1 FROM {BOUNDARY_TABLE}")  # noqa: S608
            if c.fetchone() is not None and not authenticator.may_write():
                raise NoEventKeys()  # nothing written: the transaction is rolled back
        if ids and authenticator.keys is not None:
            c.executemany(
                f"INSERT INTO {MAC_TABLE} (position, key_id, mac) VALUES (?, ?, ?)",  # noqa: S608
                list(zip(*authenticator.macs(ids, _parts(stored_events)), strict=True)),
            )
        if unchanged:
            marks = ", ".join("?" for _ in unchanged)
            c.execute(
                f"SELECT originator_id, MAX(originator_version) FROM {self.events_table_name} "  # noqa: S608
                f"WHERE originator_id IN ({marks}) GROUP BY originator_id",
                [i.hex for i, _ in unchanged],
            )
            check_unchanged(unchanged, {UUID(hex=row[0]): row[1] for row in c.fetchall()})
        return ids
