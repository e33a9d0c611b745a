"""Rebuilding read models from position zero, and replaying them to compare with the live ones.

Both build into a scratch store (a SQLite file beside the live one, or a PostgreSQL schema)
while the service keeps answering from the live tables.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
import psycopg.errors
import psycopg.sql

from cronledger.persistence.connections import store_unavailable
from cronledger.persistence.ledger import Ledger
from cronledger.persistence.store import Store
from projections.engine import Projection, Projector, Sql

Progress = Callable[[int], object]  # events projected since the last call
SHOWN_ROWS = 20
UNDECODABLE_TABLE = "undecodable_events"  # where every projector records what it cannot read


STOPPED = "stopped"
CHECKPOINTS = "chain_checkpoints"
SWAP_ATTEMPTS = 5
SETTLE_ATTEMPTS = 20  # a replay's tries at catching the live tables still
log = logging.getLogger("cronledger.projections.maintenance")


@dataclass(frozen=True)
class Difference:
    """A row the live table has and the replay has not (`live`), or the other way round."""

    table: str
    side: str
    row: tuple[Any, ...]


def rebuild(ledger: Ledger, projections: Sequence[Projection], progress: Progress) -> None:
    """Build the projections' tables afresh from the whole log, then swap them in.

    They are built in a scratch store while the live tables keep serving; the swap is one
    transaction. On PostgreSQL it moves the built tables into the live schema (no copy); a
    swap that cannot get its table locks within the lock timeout catches up and tries again.
    """
    refused = [p.name for p in projections if not p.rebuildable]
    if refused:
        raise ValueError(f"{', '.join(refused)} cannot be rebuilt: replay and verify it instead")
    with ledger.store.scratch() as scratch:
        built = Projector(ledger, projections, tables=scratch)
        built.create_tables()
        for attempt in range(1, SWAP_ATTEMPTS + 1):
            built.catch_up(progress=progress)
            try:
                _swap_in(ledger.store, scratch, projections, built.positions())
                return
            except psycopg.errors.LockNotAvailable:
                if attempt == SWAP_ATTEMPTS:
                    raise
                log.warning("the swap waited too long for a table lock; trying again")


def _swap_in(
    store: Store, scratch: Store, projections: Sequence[Projection], positions: dict[str, int]
) -> None:
    """Replace the live tables with the built ones; the live projector goes on from `positions`."""
    with _live(store, scratch) as (sql, prefix), sql.transaction():
        if sql.kind == "postgresql":
            sql.execute("SET LOCAL statement_timeout = 0")  # a lock wait stays bounded
        _lock_positions(sql, projections)
        for projection in projections:
            if sql.kind == "postgresql":
                _move(sql, projection, prefix, store.schema)
            else:
                _swap(sql, projection, prefix)
            sql.execute(
                "UPDATE projection_positions SET position = ?, layout = ? WHERE name = ?",
                (positions[projection.name], projection.layout(sql), projection.name),
            )


def replay(
    ledger: Ledger, projections: Sequence[Projection], progress: Progress
) -> list[Difference]:
    """Rebuild every projection in scratch and compare it, row for row, with the live tables.

    The events the replay cannot decode are compared too: one damaged since the live projectors
    read it is named as a row `only in the replay` of `undecodable_events`. An event the
    projections cannot apply (a forged duplicate breaking a unique key) stops the replay, and
    the replay says so as its one difference (side `stopped`) instead of raising. The store not
    answering (refused, too many clients, a timeout) says nothing of the log: that is raised.
    """
    try:
        return _replayed(ledger, projections, progress)
    except Exception as error:  # whatever a damaged log makes a projection raise
        if store_unavailable(error):
            raise
        return [Difference("(replay)", STOPPED, (f"{type(error).__name__}: {error}",))]


def _replayed(
    ledger: Ledger, projections: Sequence[Projection], progress: Progress
) -> list[Difference]:
    head = ledger.recorder.max_notification_id() or 0
    Projector(ledger, projections).catch_up()  # the live tables reach `head` at least
    with ledger.store.scratch() as scratch:
        built = Projector(ledger, projections, tables=scratch)
        built.create_tables()
        # No further: events written meanwhile may not be in the live tables yet (a writer
        # projects them after its commit); the scratch tables follow the live ones below.
        built.catch_up(until=head, exactly=True, progress=progress)
        for _ in range(SETTLE_ATTEMPTS):
            positions = _caught_up_to_live(ledger, scratch, projections)
            with _live(ledger.store, scratch) as (sql, prefix), _still(sql, projections):
                if _positions(sql, projections) == positions:  # nothing moved meanwhile
                    return _differences(sql, prefix, projections)
        reason = f"the live tables kept moving ({SETTLE_ATTEMPTS} tries); run it again"
        return [Difference("(replay)", STOPPED, (reason,))]


def _caught_up_to_live(
    ledger: Ledger, scratch: Store, projections: Sequence[Projection]
) -> dict[str, int]:
    """The live positions, which the scratch tables are brought to (never written under the
    snapshot: on SQLite that write would wait for the snapshot's own read lock)."""
    with _live(ledger.store, scratch) as (sql, _):
        positions = _positions(sql, projections)
    for projection in projections:
        alone = Projector(ledger, [projection], tables=scratch)
        alone.catch_up(until=positions[projection.name], exactly=True)
    return positions


def _differences(sql: Sql, prefix: str, projections: Sequence[Projection]) -> list[Difference]:
    differences = [
        difference
        for projection in projections
        for table in projection.tables
        for difference in (
            _checkpoints_unproven(sql, prefix)
            if table == CHECKPOINTS
            else _compare(sql, table, prefix)
        )
    ]
    return differences + _compare(sql, UNDECODABLE_TABLE, prefix)


@contextmanager
def _live(store: Store, scratch: Store) -> Iterator[tuple[Sql, str]]:
    """A live connection that can read the scratch tables, and their qualifier."""
    with store.connect() as connection:
        if store.kind == "sqlite":
            connection.execute("ATTACH DATABASE ? AS scratch", (scratch.sqlite_path,))
            yield Sql(store.kind, connection), "scratch."
            connection.execute("DETACH DATABASE scratch")
            return
        yield Sql(store.kind, connection), f'"{scratch.schema}".'


@contextmanager
def _still(sql: Sql, projections: Sequence[Projection]) -> Iterator[None]:
    """The live tables as of one moment, while the scratch ones catch up to it.

    SQLite: a read transaction's snapshot (the scratch file is read only later, so its rows
    committed meanwhile are seen). PostgreSQL: the live projectors are held off instead, since
    a snapshot would hide the scratch rows committed after it.
    """
    sql.execute("BEGIN")
    try:
        _lock_positions(sql, projections)
        yield
    finally:
        sql.execute("ROLLBACK")


def _lock_positions(sql: Sql, projections: Sequence[Projection]) -> None:
    """Hold the live projectors off these projections until the swap commits."""
    if sql.kind == "postgresql":
        marks = ", ".join("?" for _ in projections)
        sql.execute(
            f"SELECT position FROM projection_positions WHERE name IN ({marks}) FOR UPDATE",  # noqa: S608
            [p.name for p in projections],
        )


def _positions(sql: Sql, projections: Sequence[Projection]) -> dict[str, int]:
    rows = sql.execute("SELECT name, position FROM projection_positions").fetchall()
    found = {str(name): int(position) for name, position in rows}
    return {p.name: found[p.name] for p in projections}


def _swap(sql: Sql, projection: Projection, scratch: str) -> None:
    """SQLite: replace the live tables with copies of the rebuilt ones (layout included)."""
    for table in projection.tables:
        sql.execute(f"DROP TABLE IF EXISTS main.{table}")  # else it drops a new table's scratch one
    for statement in projection.ddl(sql):
        sql.execute(statement)
    for table in projection.tables:
        sql.execute(f"INSERT INTO {table} SELECT * FROM {scratch}{table}")  # noqa: S608


def _move(sql: Sql, projection: Projection, scratch: str, live_schema: str) -> None:
    """PostgreSQL: drop the live tables; move the rebuilt ones, indexes and all, in their place."""
    live = psycopg.sql.Identifier(live_schema).as_string(None)
    for table in projection.tables:
        sql.execute(f"DROP TABLE IF EXISTS {live}.{table}")
        sql.execute(f"ALTER TABLE {scratch}{table} SET SCHEMA {live}")


def _compare(sql: Sql, table: str, scratch: str) -> list[Difference]:
    columns = ", ".join(_columns(sql, table, scratch))
    live, rebuilt = f"SELECT {columns} FROM {table}", f"SELECT {columns} FROM {scratch}{table}"  # noqa: S608
    differences = []
    for side, statement in (
        ("live", f"{live} EXCEPT {rebuilt}"),
        ("replay", f"{rebuilt} EXCEPT {live}"),
    ):
        rows = sql.execute(f"{statement} LIMIT {SHOWN_ROWS}").fetchall()
        differences += [Difference(table, side, tuple(row)) for row in rows]
    return differences


def _checkpoints_unproven(sql: Sql, scratch: str) -> list[Difference]:
    """Each live checkpoint that is not the rebuilt chain's head at its position.

    A checkpoint is written where a live batch crosses a multiple of its interval, and a
    replay's batches are not the live ones: its checkpoints fall elsewhere, so the live ones are
    proven against the rebuilt links instead of compared row for row.
    """
    rows = sql.execute(
        f"SELECT c.position, c.hash, c.events FROM {CHECKPOINTS} c "  # noqa: S608
        f"LEFT JOIN {scratch}event_hashes h ON h.position = c.position "
        "WHERE h.hash IS NULL OR h.hash <> c.hash OR c.events <> ("
        f"SELECT COUNT(*) FROM {scratch}event_hashes e WHERE e.position <= c.position) "
        f"ORDER BY c.position LIMIT {SHOWN_ROWS}"
    ).fetchall()
    return [Difference(CHECKPOINTS, "live", tuple(row)) for row in rows]


def _columns(sql: Sql, table: str, scratch: str) -> list[str]:
    """The rebuilt table's columns, in order."""
    if sql.kind == "sqlite":
        return [row[1] for row in sql.execute(f"PRAGMA scratch.table_info({table})").fetchall()]
    rows = sql.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = ? "
        "AND table_name = ? ORDER BY ordinal_position",
        (scratch.strip('".'), table),
    ).fetchall()
    return [str(row[0]) for row in rows]
