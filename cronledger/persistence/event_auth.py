"""Events authenticated when written: an HMAC-SHA256 per event, in the transaction that
appends it (table `event_macs`), and the log position from which the store authenticates its
events (table `event_authentication`, itself authenticated). docs/audit.md#event-authentication.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol
from uuid import UUID

from cronledger.persistence.event_keys import KEYS_VARIABLE, EventKeys, load_event_keys

MAC_TABLE = "event_macs"
BOUNDARY_TABLE = "event_authentication"
EVENT_DOMAIN = b"cronledger-event-mac/1\x00"
BOUNDARY_DOMAIN = b"cronledger-event-authentication/1\x00"
# What is wrong with an event at or above the boundary, as `audit verify` names it.
NOT_AUTHENTICATED = "not authenticated: appended or inserted without the event key"
ALTERED = "its authentication does not match: the event was altered"
UNKNOWN_KEY = "authenticated by key id {key_id}, which no event key file holds"
BOUNDARY_ALTERED = (
    "the record of the position events are authenticated from was altered (its "
    "authentication does not match)"
)
BOUNDARY_UNKNOWN_KEY = (
    "the record of the position events are authenticated from names key id {key_id}, which "
    "no event key file holds"
)
BOUNDARY_MISSING = (
    "the store has no record of the position events are authenticated from, although this "
    "process holds event keys: `cronledger migrate` makes one on every store it migrates, so it "
    "was deleted (with every event's authentication, if none is found either), or the store was "
    "never migrated by this release"
)
BOUNDARY_DELETED = (
    "the record of the position events are authenticated from was deleted, while events "
    "carry authentication"
)


class NoEventKeys(Exception):
    """A process without event keys writing to a store that authenticates its events."""

    def __init__(self) -> None:
        super().__init__(
            "this store authenticates its events, and this process has no event key, so it "
            f"writes nothing: set {KEYS_VARIABLE} to the file `cronledger migrate` made "
            "(docs/audit.md#event-authentication)"
        )


class Executes(Protocol):
    """A connection of either store with `?` placeholders (projections.engine.Sql)."""

    def execute(self, statement: str, params: Sequence[Any] = ()) -> Any: ...


def table_statements(kind: str, prefix: str = "") -> list[str]:
    """The two tables, made with the events table (their names after `prefix`)."""
    blob = "BYTEA" if kind == "postgresql" else "BLOB"
    return [
        f"CREATE TABLE IF NOT EXISTS {prefix}{MAC_TABLE} (position BIGINT PRIMARY KEY, "
        f"key_id TEXT NOT NULL, mac {blob} NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {prefix}{BOUNDARY_TABLE} (id INTEGER PRIMARY KEY "
        "CHECK (id = 1), authenticated_from BIGINT NOT NULL, key_id TEXT NOT NULL, "
        f"mac {blob} NOT NULL, started_at TEXT NOT NULL)",
    ]


def event_message(
    position: int, originator_id: UUID | str, version: int, topic: str, state: object
) -> bytes:
    """The canonical bytes a MAC covers: fixed-width numbers, the id's 16 bytes, the topic's
    length before it, the state last (tagged: bytes, or what an edit of the database stored
    instead, which never matches)."""
    topic_bytes = topic.encode()
    return b"".join(
        (
            EVENT_DOMAIN,
            position.to_bytes(8, "big", signed=True),
            as_uuid(originator_id).bytes,
            version.to_bytes(8, "big", signed=True),
            len(topic_bytes).to_bytes(4, "big"),
            topic_bytes,
            _tagged(state),
        )
    )


def _tagged(state: object) -> bytes:
    if isinstance(state, bytes | bytearray | memoryview):
        return b"\x00" + bytes(state)
    return b"\x01" + f"{type(state).__name__}:{state!r}".encode()


def as_uuid(originator_id: UUID | str) -> UUID:
    return originator_id if isinstance(originator_id, UUID) else UUID(str(originator_id))


def mac_of(secret: bytes, message: bytes) -> bytes:
    return hmac.new(secret, message, hashlib.sha256).digest()


def boundary_message(position: int) -> bytes:
    return BOUNDARY_DOMAIN + position.to_bytes(8, "big", signed=True)


@dataclass(frozen=True)
class Boundary:
    """Events at and above `position` are authenticated; those below were written before."""

    position: int
    key_id: str
    mac: bytes
    started_at: str


def read_boundary(sql: Executes) -> Boundary | None:
    row = sql.execute(
        f"SELECT authenticated_from, key_id, mac, started_at FROM {BOUNDARY_TABLE} WHERE id = 1"  # noqa: S608
    ).fetchone()
    return Boundary(int(row[0]), str(row[1]), bytes(row[2]), str(row[3])) if row else None


def boundary_problem(keys: EventKeys, boundary: Boundary) -> str | None:
    """What is wrong with the boundary's own record, or None."""
    key = keys.by_id(boundary.key_id)
    if key is None:
        return BOUNDARY_UNKNOWN_KEY.format(key_id=boundary.key_id)
    expected = mac_of(key.secret, boundary_message(boundary.position))
    return None if hmac.compare_digest(expected, boundary.mac) else BOUNDARY_ALTERED


def event_problem(
    keys: EventKeys,
    position: int,
    event: tuple[UUID | str, int, str, object],
    stored: tuple[str, bytes] | None,
) -> str | None:
    """What is wrong with one event at or above the boundary (None: it is authenticated)."""
    if stored is None:
        return NOT_AUTHENTICATED
    key_id, mac = stored
    key = keys.by_id(key_id)
    if key is None:
        return UNKNOWN_KEY.format(key_id=key_id)
    expected = mac_of(key.secret, event_message(position, *event))
    return None if hmac.compare_digest(expected, mac) else ALTERED


def macs_between(sql: Executes, first: int, last: int) -> dict[int, tuple[str, bytes]]:
    """The stored MACs of positions `first` to `last`: key id and MAC by position."""
    rows = sql.execute(
        f"SELECT position, key_id, mac FROM {MAC_TABLE} WHERE position BETWEEN ? AND ?",  # noqa: S608
        (first, last),
    ).fetchall()
    return {int(p): (str(k), bytes(m)) for p, k, m in rows}


def any_mac(sql: Executes) -> int | None:
    """The lowest position that has a MAC, if any."""
    row = sql.execute(f"SELECT MIN(position) FROM {MAC_TABLE}").fetchone()  # noqa: S608
    return int(row[0]) if row and row[0] is not None else None


@dataclass
class Authenticator:
    """What a recorder writes with: this process's keys (None: it has none), and whether the
    store has the boundary's table (then a process without keys asks it before each write)."""

    keys: EventKeys | None = None
    boundary_table: bool = False
    keys_file: Path | None = None  # where keys a migration makes later appear (None: nowhere)

    def may_write(self) -> bool:
        """Whether this process may write to a store that authenticates its events: with its
        keys, or with those a `cronledger migrate` run since it started made in its keys file."""
        if self.keys is None and self.keys_file is not None:
            self.keys = load_event_keys(self.keys_file)
        return self.keys is not None

    def macs(
        self, positions: Sequence[int], events: Iterable[tuple[UUID | str, int, str, object]]
    ) -> tuple[list[int], list[str], list[bytes]]:
        """The rows of `event_macs` for events written at `positions`, as three columns."""
        if self.keys is None:
            raise NoEventKeys()
        key = self.keys.writer
        macs = [
            mac_of(key.secret, event_message(position, *event))
            for position, event in zip(positions, events, strict=True)
        ]
        return list(positions), [key.key_id] * len(macs), macs


def boundary_row(keys: EventKeys, position: int, now: datetime) -> tuple[Any, ...]:
    """The values of a new boundary record: position, key id, MAC, when."""
    key = keys.writer
    mac = mac_of(key.secret, boundary_message(position))
    return (1, position, key.key_id, mac, now.isoformat(timespec="microseconds"))


INSERT_BOUNDARY = (
    f"INSERT INTO {BOUNDARY_TABLE} (id, authenticated_from, key_id, mac, started_at) "  # noqa: S608
    "VALUES (?, ?, ?, ?, ?)"
)
