"""Stores written by earlier releases (tests/fixtures), opened on either kind of store."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent

from cronledger.application.services import open_services
from cronledger.clock import Clock
from cronledger.config import Settings

FIXTURES = Path(__file__).parent / "fixtures"
WORKING = "release-0.1.0-working"  # a store release 0.1.0 wrote in use (see its script)


def facts(name: str) -> dict[str, Any]:
    """What the script that wrote the store noted beside it: tokens, ids."""
    return json.loads((FIXTURES / f"{name}.json").read_text())  # type: ignore[no-any-return]


def stored(name: str, table: str) -> list[StoredEvent]:
    """The rows of the fixture's `stored_events` (in log order) or `stored_snapshots`."""
    order = "rowid" if table == "stored_events" else "originator_id, originator_version"
    with sqlite3.connect(FIXTURES / f"{name}.sqlite") as old:
        rows = old.execute(
            f"SELECT originator_id, originator_version, topic, state FROM {table} ORDER BY {order}"
        ).fetchall()
    return [StoredEvent(UUID(hex=i), v, t, bytes(s)) for i, v, t, s in rows]


def store_written_by(name: str, store_url: str, tmp_path: Path, clock: Clock) -> str:
    """The URL of a store holding the fixture's log: the SQLite file itself, or its events
    (and snapshots) copied into an empty PostgreSQL schema."""
    if store_url.startswith("sqlite"):
        shutil.copy(FIXTURES / f"{name}.sqlite", tmp_path / "old.sqlite")
        return f"sqlite:///{tmp_path}/old.sqlite"
    empty = open_services(Settings(database_url=store_url), clock)
    try:
        empty.ledger.recorder.insert_events(stored(name, "stored_events"))
        snapshots = empty.ledger.snapshots
        assert snapshots is not None
        snapshots.recorder.insert_events(stored(name, "stored_snapshots"))
    finally:
        empty.close()
    return store_url
