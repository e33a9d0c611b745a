"""Tamper evidence: a running SHA-256 chain over the log, kept by a projection.

Each event's link covers the previous link and the event as stored (position, aggregate id,
version, topic and state bytes), so an edited, deleted or inserted event row changes every
link from its position on. `chain_checkpoints` keeps the head every CHECKPOINT_EVERY events,
for copying somewhere the database's writers cannot reach.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from eventsourcing.persistence import Notification

from projections.engine import EventClass, Handler, Projection, Sql

GENESIS = "0" * 64
CHECKPOINT_EVERY = 10_000


def link(previous: str, notification: Notification) -> str:
    """The chain's link for one stored event, after `previous`."""
    digest = hashlib.sha256(previous.encode())
    for part in (
        str(notification.id),
        str(notification.originator_id),
        str(notification.originator_version),
        notification.topic,
    ):
        digest.update(b"\x00" + part.encode())
    digest.update(_stored_bytes(notification.state))
    return digest.hexdigest()


def _stored_bytes(state: object) -> bytes:
    """The state as hashed: bytes as they are; any other type (only an edit of the database
    stores one) tagged with its type, so it never matches the link of the original bytes."""
    if isinstance(state, bytes | bytearray | memoryview):
        return b"\x00" + bytes(state)
    return b"\x01" + f"{type(state).__name__}:{state!r}".encode()


class HashChainProjection(Projection):
    name = "audit_chain"
    tables = ("event_hashes", "chain_head", "chain_checkpoints")
    rebuildable = False  # rebuilt from an edited log, it would vouch for the edit

    def ddl(self, sql: Sql) -> list[str]:
        return [
            "CREATE TABLE IF NOT EXISTS event_hashes ("
            "position BIGINT PRIMARY KEY, hash TEXT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS chain_head ("
            "id INTEGER PRIMARY KEY, position BIGINT NOT NULL, hash TEXT NOT NULL, "
            "events BIGINT NOT NULL)",
            "CREATE TABLE IF NOT EXISTS chain_checkpoints ("
            "position BIGINT PRIMARY KEY, hash TEXT NOT NULL, events BIGINT NOT NULL)",
        ]

    def handlers(self) -> dict[EventClass, Handler]:
        return {}

    def apply(self, sql: Sql, batch: Sequence[tuple[Notification, Any]]) -> None:
        head = sql.execute("SELECT hash, events FROM chain_head WHERE id = 1").fetchone()
        previous, events = (str(head[0]), int(head[1])) if head else (GENESIS, 0)
        rows = []
        for notification, _ in batch:
            previous = link(previous, notification)
            rows.append((notification.id, previous))
        for row in rows:
            sql.write("INSERT INTO event_hashes (position, hash) VALUES (?, ?)", row)
        sql.write(
            "INSERT INTO chain_head (id, position, hash, events) VALUES (1, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET position = excluded.position, "
            "hash = excluded.hash, events = excluded.events",
            (*rows[-1], events + len(rows)),
        )
        if (events + len(rows)) // CHECKPOINT_EVERY > events // CHECKPOINT_EVERY:
            sql.write(
                "INSERT INTO chain_checkpoints (position, hash, events) VALUES (?, ?, ?)",
                (*rows[-1], events + len(rows)),
            )


@dataclass(frozen=True)
class Break:
    """Where the log stops matching the chain, and how."""

    position: int
    problem: str


def first_break(
    log: Iterable[Notification], chained: Iterable[tuple[int, str]], previous: str = GENESIS
) -> Break | None:
    """Walk the log and the stored links together; the first position where they part.

    Both are ascending by position, and start after the link `previous` (the genesis: from
    the first event). Log events after the chain's head are not judged (the projection has
    not reached them yet).
    """
    links = iter(chained)
    expected = next(links, None)
    for notification in log:
        if expected is None:
            return None
        if expected[0] < notification.id:
            return Break(expected[0], "an event was deleted (its link has no event)")
        if expected[0] > notification.id:
            return Break(notification.id, "an event was inserted (it has no link)")
        previous = link(previous, notification)
        if previous != expected[1]:
            return Break(notification.id, "the event was altered (its link does not match)")
        expected = next(links, None)
    if expected is not None:
        return Break(expected[0], "an event was deleted (its link has no event)")
    return None


def stored_links(
    sql: Sql, after: int = 0, upto: int | None = None, page: int = 10_000
) -> Iterator[tuple[int, str]]:
    """Every stored link after position `after` (up to `upto`, if given), ascending."""
    last = " AND position <= ?" if upto is not None else ""
    bound = (upto,) if upto is not None else ()
    while True:
        rows = sql.execute(
            f"SELECT position, hash FROM event_hashes WHERE position > ?{last} "  # noqa: S608
            "ORDER BY position LIMIT ?",
            (after, *bound, page),
        ).fetchall()
        if not rows:
            return
        yield from ((int(p), str(h)) for p, h in rows)
        after = int(rows[-1][0])


def stored_link(sql: Sql, position: int) -> str | None:
    """The stored link of the event at `position`, if there is one."""
    row = sql.execute("SELECT hash FROM event_hashes WHERE position = ?", (position,)).fetchone()
    return None if row is None else str(row[0])
