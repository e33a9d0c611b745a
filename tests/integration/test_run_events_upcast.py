"""Run events of release 0.1.0 read today: each names the status (and error) it leaves.

Release 0.1.0 wrote its own `runs`, `attempts` and `schedules` tables beside its log. Rebuilt
from that log by today's projections, which copy what the events say instead of deriving it
from their types, they come out row for row as the release built them.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cronledger.application.services import open_services
from cronledger.config import Settings
from cronledger.persistence.store import as_instant, db_value
from domain.runs import RUN_STATUSES
from projections.maintenance import rebuild
from projections.runs import RunsProjection
from projections.schedules import SchedulesProjection
from tests.release_stores import FIXTURES, store_written_by, stored
from tests.support import FakeClock

RELEASES = ["release-0.1.0", "release-0.1.0-working"]
OLD_INSTANT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
STATUS_OF = {
    "Run.AttemptStarted": "RUNNING",
    "Run.AttemptSucceeded": "SUCCEEDED",
    "Run.Retried": "PENDING",
}


def rows(path: Path, statement: str) -> list[tuple[Any, ...]]:
    """The release's own rows of a read model, in a stable order, instants in today's form."""
    with sqlite3.connect(path) as store:
        return sorted((today(row) for row in store.execute(statement).fetchall()), key=repr)


def today(row: Sequence[Any]) -> tuple[Any, ...]:
    """A row with its instants in the form SQLite keeps them today (0.1.0 wrote `...T...Z`)."""
    return tuple(
        db_value("sqlite", as_instant(v)) if isinstance(v, str) and OLD_INSTANT.fullmatch(v) else v
        for v in row
    )


def columns_of(path: Path, statement: str) -> list[str]:
    """The columns the release's read model had (today's may have more)."""
    with sqlite3.connect(path) as store:
        return [column[0] for column in store.execute(statement).description]


RENAMED = {"schedules": {"schedule_id": "id"}}  # 0.2.0 gave read models the API's names


@pytest.mark.parametrize("release", RELEASES)
def test_stored_run_events_decode_with_their_status(
    release: str, tmp_path: Path, clock: FakeClock
) -> None:
    services = open_services(Settings(database_url=f"sqlite:///{tmp_path}/x.sqlite"), clock)
    try:
        runs = [e for e in stored(release, "stored_events") if ":Run." in e.topic]
        events = [services.ledger.decode(stored_event) for stored_event in runs]
    finally:
        services.close()
    assert {"Run.Registered", "Run.AttemptStarted"} <= {type(e).__qualname__ for e in events}
    for event in events:
        expected = STATUS_OF.get(type(event).__qualname__)
        assert getattr(event, "status", None) == (expected or event.status) in RUN_STATUSES


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize(
    ("name", "columns"),
    [
        ("runs", "*"),
        ("attempts", "*"),
        ("schedules", "schedule_id, last_run_id, last_run_planned_at, last_run_status"),
    ],
)
def test_read_models_rebuilt_from_the_log_equal_the_releases_own(
    release: str, name: str, columns: str, tmp_path: Path, clock: FakeClock
) -> None:
    """Schedules the release could not read (a poisoned log) are left out of the comparison."""
    statement = f"SELECT {columns} FROM {name}"
    written = rows(FIXTURES / f"{release}.sqlite", statement)
    url = store_written_by(release, f"sqlite:///{tmp_path}/x.sqlite", tmp_path, clock)
    services = open_services(Settings(database_url=url), clock)
    try:
        rebuild(services.ledger, [RunsProjection("UTC"), SchedulesProjection()], lambda _: None)
        renamed = RENAMED.get(name, {})  # today's name of a column the release had
        old = columns_of(FIXTURES / f"{release}.sqlite", statement)
        wanted = ", ".join(renamed.get(column, column) for column in old)
        rebuilt = services.store.query(statement.replace(columns, wanted))
    finally:
        services.close()
    kept = {row[0] for row in written}
    expected = sorted((success_clears_error(old, row) for row in written), key=repr)
    assert sorted((tuple(r) for r in rebuilt if r[0] in kept), key=repr) == expected


def success_clears_error(columns: list[str], row: tuple[Any, ...]) -> tuple[Any, ...]:
    """0.2.0 clears a run's last error once it succeeds (its attempts keep every error)."""
    if "last_error_code" not in columns or row[columns.index("status")] != "SUCCEEDED":
        return row
    cleared = list(row)
    cleared[columns.index("last_error_code")] = None
    return tuple(cleared)
