"""`schedules` (current state, plan, last run), `runs` (one row per cycle), `attempts`."""

from __future__ import annotations

import json
from typing import Any

from domain.runs import (
    CANCELLED,
    PENDING,
    RUNNING,
    SKIPPED_MISSED,
    SKIPPED_OVERLAP,
    SUCCEEDED,
)
from projections.engine import Handler, Projection, Sql

RUN_STATUS_EVENTS = (
    "AttemptStarted",
    "AttemptSucceeded",
    "AttemptFailed",
    "AttemptInterrupted",
    "SkippedOverlap",
    "Cancelled",
    "Retried",
)


class SchedulesProjection(Projection):
    """Every schedule as it is now, deleted ones included, with its plan and its last run.

    `version` is the aggregate's (the tick checks it); `revision` is the API's `version`.
    """

    name = "schedules"
    tables = ("schedules",)

    def ddl(self, sql: Sql) -> list[str]:
        ts = sql.timestamp_type
        return [
            "CREATE TABLE IF NOT EXISTS schedules ("
            "schedule_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, name TEXT NOT NULL, "
            "definition_id TEXT NOT NULL, initiator_id TEXT NOT NULL, trigger_kind TEXT NOT NULL, "
            "trigger TEXT NOT NULL, timezone TEXT NOT NULL, misfire_policy TEXT NOT NULL, "
            f"overlap_policy TEXT NOT NULL, enabled BOOLEAN NOT NULL, next_fire_at {ts}, "
            f"created_at {ts} NOT NULL, updated_at {ts} NOT NULL, updated_by TEXT NOT NULL, "
            f"deleted_at {ts}, last_run_id TEXT, last_run_planned_at {ts}, last_run_status TEXT, "
            "revision INTEGER NOT NULL, version INTEGER NOT NULL)",
            "CREATE INDEX IF NOT EXISTS schedules_by_tenant ON schedules (tenant_id, created_at)",
            "CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_fire_at)",
            "CREATE INDEX IF NOT EXISTS schedules_by_last_run ON schedules (last_run_id)",
        ]

    def handlers(self) -> dict[str, Handler]:
        return {name: handler for handlers in self.passes() for name, handler in handlers.items()}

    def passes(self) -> list[dict[str, Handler]]:
        """The schedule's own events, then its runs' (which only touch the `last_run_` columns)."""
        return [
            {
                "Schedule.Created": self.created,
                "Schedule.Updated": self.updated,
                "Schedule.PlanAdvanced": self.advanced,
                "Schedule.Deleted": self.deleted,
            },
            {
                "Run.Registered": self.run_registered,
                **{f"Run.{name}": self.run_changed for name in RUN_STATUS_EVENTS},
            },
        ]

    @staticmethod
    def created(sql: Sql, event: Any, position: int) -> None:
        sql.write(
            "INSERT INTO schedules (schedule_id, tenant_id, name, definition_id, initiator_id, "
            "trigger_kind, trigger, timezone, misfire_policy, overlap_policy, enabled, "
            "next_fire_at, created_at, updated_at, updated_by, revision, version) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?)",
            (
                str(event.originator_id),
                str(event.tenant_id),
                *_settings(event.settings),
                event.enabled,
                event.next_fire_at,
                event.at,
                event.at,
                event.actor,
                event.originator_version,
            ),
        )

    @staticmethod
    def updated(sql: Sql, event: Any, position: int) -> None:
        sql.write(
            "UPDATE schedules SET name = ?, definition_id = ?, initiator_id = ?, "
            "trigger_kind = ?, trigger = ?, timezone = ?, misfire_policy = ?, "
            "overlap_policy = ?, enabled = ?, next_fire_at = ?, updated_at = ?, updated_by = ?, "
            "revision = revision + 1, version = ? WHERE schedule_id = ?",
            (
                *_settings(event.settings),
                event.enabled,
                event.next_fire_at,
                event.at,
                event.actor,
                event.originator_version,
                str(event.originator_id),
            ),
        )

    @staticmethod
    def advanced(sql: Sql, event: Any, position: int) -> None:
        sql.write(
            "UPDATE schedules SET next_fire_at = ?, version = ? WHERE schedule_id = ?",
            (event.next_fire_at, event.originator_version, str(event.originator_id)),
        )

    @staticmethod
    def deleted(sql: Sql, event: Any, position: int) -> None:
        sql.write(
            "UPDATE schedules SET enabled = ?, next_fire_at = NULL, deleted_at = ?, "
            "updated_at = ?, updated_by = ?, revision = revision + 1, version = ? "
            "WHERE schedule_id = ?",
            (
                False,
                event.at,
                event.at,
                event.actor,
                event.originator_version,
                str(event.originator_id),
            ),
        )

    @staticmethod
    def run_registered(sql: Sql, event: Any, position: int) -> None:
        """The newest planned run is the schedule's last run."""
        sql.write(
            "UPDATE schedules SET last_run_id = ?, last_run_planned_at = ?, last_run_status = ? "
            "WHERE schedule_id = ? AND (last_run_planned_at IS NULL OR last_run_planned_at < ? "
            "OR (last_run_planned_at = ? AND last_run_id < ?))",
            (
                str(event.originator_id),
                event.planned_at,
                event.status,
                str(event.schedule_id),
                event.planned_at,
                event.planned_at,
                str(event.originator_id),
            ),
        )

    @staticmethod
    def run_changed(sql: Sql, event: Any, position: int) -> None:
        sql.write(
            "UPDATE schedules SET last_run_status = ? WHERE last_run_id = ?",
            (_status_after(event), str(event.originator_id)),
        )


class RunsProjection(Projection):
    """One row per cycle, and one per attempt.

    `runs.due_at` is when a worker may next claim the run: its next attempt, or when the
    lease of its running attempt runs out.
    """

    name = "runs"
    tables = ("runs", "attempts")

    def ddl(self, sql: Sql) -> list[str]:
        ts = sql.timestamp_type
        return [
            "CREATE TABLE IF NOT EXISTS runs ("
            "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, schedule_id TEXT NOT NULL, "
            f"planned_at {ts} NOT NULL, trigger TEXT NOT NULL, status TEXT NOT NULL, "
            "title TEXT NOT NULL, initiator_id TEXT NOT NULL, definition_id TEXT NOT NULL, "
            "attempt_count INTEGER NOT NULL, max_attempts INTEGER NOT NULL, instance_id TEXT, "
            f"next_attempt_at {ts}, lease_expires_at {ts}, due_at {ts}, last_error_code TEXT, "
            f"registered_at {ts} NOT NULL, finished_at {ts}, skipped_count INTEGER NOT NULL, "
            "registration_lag_seconds DOUBLE PRECISION NOT NULL, version INTEGER NOT NULL)",
            "CREATE INDEX IF NOT EXISTS runs_by_schedule ON runs (schedule_id, planned_at)",
            "CREATE INDEX IF NOT EXISTS runs_by_status ON runs (tenant_id, status)",
            "CREATE INDEX IF NOT EXISTS runs_due ON runs (due_at)",
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
            "Run.AttemptFailed": self.attempt_ended,
            "Run.AttemptInterrupted": self.attempt_ended,
            "Run.SkippedOverlap": self.stopped(SKIPPED_OVERLAP),
            "Run.Cancelled": self.stopped(CANCELLED),
            "Run.Retried": self.retried,
        }

    @staticmethod
    def registered(sql: Sql, event: Any, position: int) -> None:
        frozen = event.frozen
        due = event.at if event.status == PENDING else None
        sql.write(
            "INSERT INTO runs (id, tenant_id, schedule_id, planned_at, trigger, status, title, "
            "initiator_id, definition_id, attempt_count, max_attempts, next_attempt_at, due_at, "
            "registered_at, finished_at, skipped_count, registration_lag_seconds, version) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                (event.at - event.planned_at).total_seconds(),
                event.originator_version,
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
        _update(
            sql,
            event,
            status=RUNNING,
            attempt_count=event.number,
            next_attempt_at=None,
            lease_expires_at=event.lease_expires_at,
            due_at=event.lease_expires_at,
        )

    @staticmethod
    def attempt_succeeded(sql: Sql, event: Any, position: int) -> None:
        _end_attempt(sql, event, SUCCEEDED, None, None, event.instance_id)
        _update(
            sql,
            event,
            status=SUCCEEDED,
            instance_id=event.instance_id,
            lease_expires_at=None,
            due_at=None,
            finished_at=event.at,
        )

    @staticmethod
    def attempt_ended(sql: Sql, event: Any, position: int) -> None:
        """A failed or interrupted attempt: the run waits to retry, or is finished."""
        code = getattr(event, "code", "INTERRUPTED")
        message = getattr(event, "message", "the worker's lease ran out")
        _end_attempt(sql, event, "FAILED" if code != "INTERRUPTED" else code, code, message, None)
        _update(
            sql,
            event,
            status=event.status,
            next_attempt_at=event.next_attempt_at,
            lease_expires_at=None,
            due_at=event.next_attempt_at,
            last_error_code=code,
            finished_at=None if event.next_attempt_at else event.at,
        )

    @staticmethod
    def stopped(status: str) -> Handler:
        def handler(sql: Sql, event: Any, position: int) -> None:
            _update(
                sql, event, status=status, next_attempt_at=None, due_at=None, finished_at=event.at
            )

        return handler

    @staticmethod
    def retried(sql: Sql, event: Any, position: int) -> None:
        _update(
            sql, event, status=PENDING, next_attempt_at=event.at, due_at=event.at, finished_at=None
        )


def _settings(settings: dict[str, Any]) -> tuple[Any, ...]:
    """The settings columns, in the order the statements above name them."""
    return (
        settings["name"],
        settings["definition_id"],
        settings["initiator_id"],
        settings["trigger"]["kind"],
        json.dumps(settings["trigger"], ensure_ascii=False, sort_keys=True),
        settings["timezone"],
        settings["misfire_policy"],
        settings["overlap_policy"],
    )


def _status_after(event: Any) -> str:
    """The run's status once a status-changing event applied."""
    fixed = {
        "AttemptStarted": RUNNING,
        "AttemptSucceeded": SUCCEEDED,
        "SkippedOverlap": SKIPPED_OVERLAP,
        "Cancelled": CANCELLED,
        "Retried": PENDING,
    }
    return fixed.get(type(event).__name__) or str(event.status)


def _update(sql: Sql, event: Any, **columns: Any) -> None:
    """Set these columns of the event's run, and its version."""
    assignments = ", ".join(f"{name} = ?" for name in columns)
    sql.write(
        f"UPDATE runs SET {assignments}, version = ? WHERE id = ?",  # noqa: S608
        (*columns.values(), event.originator_version, str(event.originator_id)),
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
