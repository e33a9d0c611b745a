"""`runs` (one row per cycle) and `attempts` (one row per attempt of a run)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from cronledger.persistence.store import Store, as_instant, tenant_scope
from domain.approvals import WAITING_REVIEW
from domain.runs import (
    ATTEMPT_FAILED,
    ATTEMPT_SUCCEEDED,
    DEAD_LETTER,
    INTERRUPTED,
    PENDING,
    RETRY_WAIT,
    RUNNING,
    SKIP_MISSED,
    SKIP_OVERLAP,
    SKIPPED_MISSED,
    UNFINISHED,
)
from projections.engine import Handler, Projection, Sql
from projections.keyset import Order, Row, Slice, Window, read_slice


class RunsProjection(Projection):
    """One row per cycle, and one per attempt.

    `runs.due_at` is when a worker may next claim the run: its next attempt, or when the
    lease of its running attempt runs out. `started_at` is its first attempt's start, and
    `duration_seconds` runs from there to `finished_at`.
    """

    name = "runs"
    tables = ("runs", "attempts")

    def ddl(self, sql: Sql) -> list[str]:
        ts, seconds = sql.timestamp_type, sql.seconds_type
        return [
            "CREATE TABLE IF NOT EXISTS runs ("
            "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, schedule_id TEXT NOT NULL, "
            f"planned_at {ts} NOT NULL, trigger TEXT NOT NULL, status TEXT NOT NULL, "
            "title TEXT NOT NULL, initiator_id TEXT NOT NULL, definition_id TEXT NOT NULL, "
            "attempt_count INTEGER NOT NULL, max_attempts INTEGER NOT NULL, instance_id TEXT, "
            f"next_attempt_at {ts}, lease_expires_at {ts}, due_at {ts}, last_error_code TEXT, "
            f"registered_at {ts} NOT NULL, finished_at {ts}, skipped_count INTEGER NOT NULL, "
            f"registration_lag_seconds {seconds} NOT NULL, version INTEGER NOT NULL, "
            "skip_reason TEXT, blocking_run_id TEXT, schedule_version INTEGER NOT NULL, "
            "triggered_by TEXT NOT NULL, request_id TEXT, trace_id TEXT NOT NULL, "
            f"started_at {ts}, duration_seconds {seconds}, last_error_message TEXT)",
            "CREATE INDEX IF NOT EXISTS runs_by_schedule "
            "ON runs (schedule_id, planned_at DESC, id)",
            "CREATE INDEX IF NOT EXISTS runs_by_status ON runs (tenant_id, status)",
            "CREATE INDEX IF NOT EXISTS runs_by_tenant ON runs (tenant_id, planned_at DESC, id)",
            "CREATE INDEX IF NOT EXISTS runs_due ON runs (due_at)",
            "CREATE INDEX IF NOT EXISTS runs_skips ON runs (schedule_id, finished_at) "
            "WHERE skip_reason IS NOT NULL",
            "CREATE TABLE IF NOT EXISTS attempts ("
            "run_id TEXT NOT NULL, number INTEGER NOT NULL, tenant_id TEXT NOT NULL, "
            f"schedule_id TEXT NOT NULL, worker TEXT NOT NULL, started_at {ts} NOT NULL, "
            f"lease_expires_at {ts} NOT NULL, finished_at {ts}, outcome TEXT, error_code TEXT, "
            "error_message TEXT, instance_id TEXT, "
            "PRIMARY KEY (run_id, number))",
            "CREATE INDEX IF NOT EXISTS attempts_by_tenant ON attempts (tenant_id, started_at)",
        ]

    def handlers(self) -> dict[str, Handler]:
        return {
            "Run.Registered": self.registered,
            "Run.AttemptStarted": self.attempt_started,
            "Run.AttemptSucceeded": self.attempt_succeeded,
            "Run.AttemptFailed": self.attempt_ended(ATTEMPT_FAILED),
            "Run.AttemptInterrupted": self.attempt_ended(INTERRUPTED),
            "Run.SkippedOverlap": self.skipped_overlap,
            "Run.Cancelled": self.stopped,
            "Run.Retried": self.retried,
        }

    @staticmethod
    def registered(sql: Sql, event: Any, position: int) -> None:
        frozen = event.frozen
        due = event.at if event.status == PENDING else None
        sql.write(
            "INSERT INTO runs (id, tenant_id, schedule_id, planned_at, trigger, status, title, "
            "initiator_id, definition_id, attempt_count, max_attempts, next_attempt_at, due_at, "
            "registered_at, finished_at, skipped_count, registration_lag_seconds, version, "
            "skip_reason, schedule_version, triggered_by, request_id, trace_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                str(event.originator_id),
                str(event.tenant_id),
                str(event.schedule_id),
                event.planned_at,
                event.trigger,
                event.status,
                frozen["title"],
                frozen["initiator_id"],
                frozen["definition_id"],
                event.max_attempts,
                due,
                due,
                event.at,
                event.at if event.status == SKIPPED_MISSED else None,
                event.skipped_count,
                sql.seconds(event.at - event.planned_at),
                event.originator_version,
                SKIP_MISSED if event.status == SKIPPED_MISSED else None,
                frozen["schedule_revision"],
                event.actor,
                event.request_id,
                event.originator_id.hex,
            ),
        )

    @staticmethod
    def attempt_started(sql: Sql, event: Any, position: int) -> None:
        run_id = str(event.originator_id)
        sql.write(
            "INSERT INTO attempts (run_id, number, tenant_id, schedule_id, worker, started_at, "
            "lease_expires_at) SELECT id, ?, tenant_id, schedule_id, ?, ?, ? FROM runs "
            "WHERE id = ?",
            (event.number, event.worker, event.at, event.lease_expires_at, run_id),
        )
        sql.write(
            "UPDATE runs SET started_at = ? WHERE id = ? AND started_at IS NULL", (event.at, run_id)
        )
        _update(
            sql,
            event,
            status=event.status,
            attempt_count=event.number,
            next_attempt_at=None,
            lease_expires_at=event.lease_expires_at,
            due_at=event.lease_expires_at,
        )

    @staticmethod
    def attempt_succeeded(sql: Sql, event: Any, position: int) -> None:
        _end_attempt(sql, event, ATTEMPT_SUCCEEDED, None, None, event.instance_id)
        _update(
            sql,
            event,
            status=event.status,
            instance_id=event.instance_id,
            lease_expires_at=None,
            due_at=None,
            finished_at=event.at,
            last_error_code=None,
            last_error_message=None,
        )
        _set_duration(sql, event)

    @staticmethod
    def attempt_ended(outcome: str) -> Handler:
        """A failed or interrupted attempt: the run waits to retry, or is finished."""

        def handler(sql: Sql, event: Any, position: int) -> None:
            _end_attempt(sql, event, outcome, event.code, event.message, None)
            _update(
                sql,
                event,
                status=event.status,
                next_attempt_at=event.next_attempt_at,
                lease_expires_at=None,
                due_at=event.next_attempt_at,
                last_error_code=event.code,
                last_error_message=event.message,
                finished_at=None if event.next_attempt_at else event.at,
            )
            if not event.next_attempt_at:
                _set_duration(sql, event)

        return handler

    @staticmethod
    def stopped(sql: Sql, event: Any, position: int) -> None:
        _update(
            sql, event, status=event.status, next_attempt_at=None, due_at=None, finished_at=event.at
        )
        _set_duration(sql, event)

    @staticmethod
    def skipped_overlap(sql: Sql, event: Any, position: int) -> None:
        _update(
            sql,
            event,
            status=event.status,
            next_attempt_at=None,
            due_at=None,
            finished_at=event.at,
            skip_reason=SKIP_OVERLAP,
            blocking_run_id=event.earlier_run_id,
        )

    @staticmethod
    def retried(sql: Sql, event: Any, position: int) -> None:
        _update(
            sql,
            event,
            status=event.status,
            next_attempt_at=event.at,
            due_at=event.at,
            finished_at=None,
            duration_seconds=None,
        )


def _update(sql: Sql, event: Any, **columns: Any) -> None:
    """Set these columns of the event's run, and its version."""
    assignments = ", ".join(f"{name} = ?" for name in columns)
    sql.write(
        f"UPDATE runs SET {assignments}, version = ? WHERE id = ?",  # noqa: S608
        (*columns.values(), event.originator_version, str(event.originator_id)),
    )


def _set_duration(sql: Sql, event: Any) -> None:
    """`duration_seconds`: from the run's first start to this event, which finished it."""
    if sql.kind == "postgresql":
        seconds = "EXTRACT(EPOCH FROM (CAST(? AS TIMESTAMPTZ) - started_at))"
    else:
        seconds = "ROUND((julianday(?) - julianday(started_at)) * 86400, 3)"
    sql.write(
        f"UPDATE runs SET duration_seconds = {seconds} WHERE id = ?",  # noqa: S608
        (event.at, str(event.originator_id)),
    )


def _end_attempt(
    sql: Sql,
    event: Any,
    outcome: str,
    code: str | None,
    message: str | None,
    instance_id: str | None,
) -> None:
    sql.write(
        "UPDATE attempts SET finished_at = ?, outcome = ?, error_code = ?, error_message = ?, "
        "instance_id = ? WHERE run_id = ? AND number = ?",
        (event.at, outcome, code, message, instance_id, str(event.originator_id), event.number),
    )


class LagHistogram(NamedTuple):
    """Runs registered within each bound (cumulative), all runs, and their summed lag."""

    at_most: list[int]
    total: int
    sum_seconds: float


def due_runs(store: Store, now: datetime, limit: int) -> list[tuple[str, str]]:
    """(run id, schedule id) of the runs a worker may claim now, oldest due first."""
    rows = store.query(
        "SELECT id, schedule_id FROM runs WHERE due_at <= ? ORDER BY due_at, planned_at, id "
        "LIMIT ?",
        (now, limit),
    )
    return [(str(run_id), str(schedule_id)) for run_id, schedule_id in rows]


def running_per_schedule(
    store: Store, schedule_ids: Collection[str], now: datetime
) -> dict[str, int]:
    """Attempts still held (lease not run out) per schedule: an abandoned one counts none."""
    if not schedule_ids:
        return {}
    marks = ", ".join("?" for _ in schedule_ids)
    rows = store.query(
        f"SELECT schedule_id, COUNT(*) FROM runs WHERE status = ? "  # noqa: S608
        f"AND lease_expires_at > ? AND schedule_id IN ({marks}) GROUP BY schedule_id",
        (RUNNING, now, *schedule_ids),
    )
    return {str(schedule_id): int(count) for schedule_id, count in rows}


def unfinished_earlier(
    store: Store, schedule_id: UUID, planned_at: datetime, registered_at: datetime, run_id: UUID
) -> str | None:
    """An earlier cycle of the schedule not finished, or its instance still in review.

    Cycles planned at the same instant (a manual run and a scheduled one) come in the order they
    were registered, then by id, so the first blocks the other and never the other way round.
    """
    marks = ", ".join("?" for _ in UNFINISHED)
    rows = store.query(
        "SELECT r.id FROM runs r LEFT JOIN approvals a ON a.id = r.instance_id "  # noqa: S608
        "WHERE r.schedule_id = ? AND (r.planned_at < ? OR (r.planned_at = ? AND "
        "(r.registered_at < ? OR (r.registered_at = ? AND r.id < ?)))) "
        f"AND (r.status IN ({marks}) OR a.state = ?) ORDER BY r.planned_at, r.registered_at, r.id "
        "LIMIT 1",
        (
            str(schedule_id),
            planned_at,
            planned_at,
            registered_at,
            registered_at,
            str(run_id),
            *sorted(UNFINISHED),
            WAITING_REVIEW,
        ),
    )
    return str(rows[0][0]) if rows else None


class LastSkip(NamedTuple):
    """The schedule's most recently skipped run, and why."""

    run_id: str
    planned_at: datetime | None
    skipped_at: datetime | None
    skip_reason: str
    blocking_run_id: str | None
    skipped_count: int


def last_skip_of(store: Store, schedule_id: UUID) -> LastSkip | None:
    """The schedule's run skipped last (an overlap, or a summary of missed cycles), if any."""
    rows = store.query(
        "SELECT id, planned_at, finished_at, skip_reason, blocking_run_id, skipped_count "
        "FROM runs WHERE schedule_id = ? AND skip_reason IS NOT NULL "
        "ORDER BY finished_at DESC, planned_at DESC, id DESC LIMIT 1",
        (str(schedule_id),),
    )
    if not rows:
        return None
    run_id, planned_at, skipped_at, reason, blocking_run_id, count = rows[0]
    return LastSkip(
        str(run_id),
        as_instant(planned_at),
        as_instant(skipped_at),
        str(reason),
        blocking_run_id,
        int(count),
    )


def unfinished_count(store: Store, schedule_id: UUID) -> int:
    """Runs of the schedule not yet finished."""
    marks = ", ".join("?" for _ in UNFINISHED)
    rows = store.query(
        f"SELECT COUNT(*) FROM runs WHERE schedule_id = ? AND status IN ({marks})",  # noqa: S608
        (str(schedule_id), *sorted(UNFINISHED)),
    )
    return int(rows[0][0])


@dataclass(frozen=True)
class RunFilter:
    """Which runs of a tenant to list; None leaves a condition out. `planned_from` is
    inclusive, `planned_to` exclusive."""

    schedule_id: UUID | None = None
    status: str | None = None
    trigger: str | None = None
    planned_from: datetime | None = None
    planned_to: datetime | None = None

    def where(self, tenant_id: UUID) -> tuple[str, list[Any]]:
        """The SQL condition (fixed text, values as parameters) and its parameters."""
        conditions: list[str] = ["tenant_id = ?"]
        params: list[Any] = [str(tenant_id)]
        for condition, value in (
            ("schedule_id = ?", str(self.schedule_id) if self.schedule_id else None),
            ("status = ?", self.status),
            ("trigger = ?", self.trigger),
            ("planned_at >= ?", self.planned_from),
            ("planned_at < ?", self.planned_to),
        ):
            if value is not None:
                conditions.append(condition)
                params.append(value)
        return " AND ".join(conditions), params


# Newest planned first; `id` orders runs planned for the same instant.
RUN_ORDER = Order("runs", "planned_at", descending=True, tie="id")


def run_log_page(
    store: Store, tenant_id: UUID, run_filter: RunFilter, window: Window
) -> Slice[Row]:
    """One page of the tenant's matching runs' ids, newest planned first, and how many match
    (requirement 002: scheduled tasks, the execution log by task and status, paged)."""
    return read_slice(store, "runs", run_filter.where(tenant_id), RUN_ORDER, window)


def backlog_by_status(store: Store, tenant_id: UUID | None) -> dict[str, int]:
    """How many runs are PENDING, RETRY_WAIT and DEAD_LETTER (one tenant, or all)."""
    scope, params = tenant_scope(tenant_id)
    rows = store.query(
        f"SELECT status, COUNT(*) FROM runs WHERE {scope} status IN (?, ?, ?) "  # noqa: S608
        "GROUP BY status",
        (*params, PENDING, RETRY_WAIT, DEAD_LETTER),
    )
    counts = {str(status): int(count) for status, count in rows}
    return {status: counts.get(status, 0) for status in (PENDING, RETRY_WAIT, DEAD_LETTER)}


class RunQueue(NamedTuple):
    """The runs that wait for a worker, or for someone, across every tenant."""

    pending: int
    retry_wait: int
    dead_letter: int
    expired_leases: int  # RUNNING runs whose lease ran out: their worker is gone
    oldest_due_at: datetime | None  # when the run waiting longest became claimable


def run_queue(store: Store, now: datetime) -> RunQueue:
    """Index ranges only: one `runs_by_status` range per tenant and status, and the `runs_due`
    index (finished runs have no `due_at`). The cost follows the queue and the tenants, not how
    many runs ever finished."""
    rows = store.query(
        "SELECT r.status, COUNT(*) FROM tenants t JOIN runs r "
        "ON r.tenant_id = t.id AND r.status IN (?, ?, ?) GROUP BY r.status",
        (PENDING, RETRY_WAIT, DEAD_LETTER),
    )
    counts = {str(status): int(count) for status, count in rows}
    expired = store.query(
        "SELECT COUNT(*) FROM runs WHERE due_at <= ? AND status = ?", (now, RUNNING)
    )[0][0]
    oldest = store.query("SELECT MIN(due_at) FROM runs WHERE due_at IS NOT NULL")[0][0]
    return RunQueue(
        pending=counts.get(PENDING, 0),
        retry_wait=counts.get(RETRY_WAIT, 0),
        dead_letter=counts.get(DEAD_LETTER, 0),
        expired_leases=int(expired),
        oldest_due_at=as_instant(oldest),
    )
