"""A tenant's recent hours, one UTC hour at a time, read from `runs` and `attempts`: how late
cycles were registered, how launches ended, and how many cycles were skipped (the console's
operations charts)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple
from uuid import UUID

from cronledger.persistence.store import Store
from domain.runs import ATTEMPT_SUCCEEDED, DEAD_LETTER, SKIPPED_MISSED, SKIPPED_OVERLAP

HOUR_KEY = "%Y-%m-%d %H"  # how an hour is named below: its start, UTC


class LagHour(NamedTuple):
    """The runs planned in one hour: how many, and their mean and highest registration lag."""

    runs: int = 0
    mean_seconds: float = 0.0
    max_seconds: float = 0.0


class OutcomeHour(NamedTuple):
    """The attempts started in one hour, by how they ended: succeeded; failed (the run retried,
    or failed for good); dead-lettered (the last attempt of a run now in the dead letters)."""

    succeeded: int = 0
    failed: int = 0
    dead_lettered: int = 0


def hour_key(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime(HOUR_KEY)


def _hour_of(store: Store, column: str) -> str:
    """SQL naming the UTC hour of an instant column as `hour_key` does."""
    if store.kind == "postgresql":
        return f"to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24')"
    return f"strftime('%Y-%m-%d %H', {column})"


def registration_lag_by_hour(store: Store, tenant_id: UUID, since: datetime) -> dict[str, LagHour]:
    """Per hour (by `hour_key` of the planned instant) from `since`: the runs planned in it."""
    rows = store.query(
        f"SELECT {_hour_of(store, 'planned_at')}, COUNT(*), AVG(registration_lag_seconds), "  # noqa: S608
        "MAX(registration_lag_seconds) FROM runs WHERE tenant_id = ? AND planned_at >= ? "
        "GROUP BY 1",
        (str(tenant_id), since),
    )
    return {str(key): LagHour(int(n), float(mean), float(top)) for key, n, mean, top in rows}


def launch_outcomes_by_hour(
    store: Store, tenant_id: UUID, since: datetime
) -> dict[str, OutcomeHour]:
    """Per hour (by `hour_key` of the attempt's start) from `since`: the attempts that ended."""
    last_of_dead = f"(r.status = '{DEAD_LETTER}' AND a.number = r.attempt_count)"
    rows = store.query(
        f"SELECT {_hour_of(store, 'a.started_at')}, "  # noqa: S608
        "SUM(CASE WHEN a.outcome = ? THEN 1 ELSE 0 END), "
        f"SUM(CASE WHEN a.outcome <> ? AND NOT {last_of_dead} THEN 1 ELSE 0 END), "
        f"SUM(CASE WHEN a.outcome <> ? AND {last_of_dead} THEN 1 ELSE 0 END) "
        "FROM attempts a JOIN runs r ON r.id = a.run_id "
        "WHERE a.tenant_id = ? AND a.started_at >= ? AND a.outcome IS NOT NULL GROUP BY 1",
        (ATTEMPT_SUCCEEDED, ATTEMPT_SUCCEEDED, ATTEMPT_SUCCEEDED, str(tenant_id), since),
    )
    return {str(key): OutcomeHour(int(ok), int(bad), int(dead)) for key, ok, bad, dead in rows}


def skipped_cycles_by_hour(store: Store, tenant_id: UUID, since: datetime) -> dict[str, int]:
    """Per hour (by `hour_key` of when the skip was recorded) from `since`: the cycles skipped,
    an overlap's one each and a summary of missed cycles as many as it stands for."""
    rows = store.query(
        f"SELECT {_hour_of(store, 'finished_at')}, "  # noqa: S608
        "SUM(CASE WHEN status = ? THEN skipped_count ELSE 1 END) "
        "FROM runs WHERE tenant_id = ? AND status IN (?, ?) AND finished_at >= ? GROUP BY 1",
        (SKIPPED_MISSED, str(tenant_id), SKIPPED_MISSED, SKIPPED_OVERLAP, since),
    )
    return {str(key): int(count) for key, count in rows}
