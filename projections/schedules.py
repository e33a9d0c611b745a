"""`schedule_plans` (what is due when) and `runs` (one row per cycle)."""

from __future__ import annotations

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


class SchedulePlansProjection(Projection):
    """The tick's index: every live schedule's next fire, across tenants."""

    name = "schedule_plans"

    def ddl(self, sql: Sql) -> list[str]:
        return [
            "CREATE TABLE IF NOT EXISTS schedule_plans ("
            "schedule_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, name TEXT NOT NULL, "
            f"enabled BOOLEAN NOT NULL, next_fire_at {sql.timestamp_type}, "
            f"created_at {sql.timestamp_type} NOT NULL, version INTEGER NOT NULL)",
            "CREATE INDEX IF NOT EXISTS schedule_plans_by_tenant "
            "ON schedule_plans (tenant_id, created_at)",
            "CREATE INDEX IF NOT EXISTS schedule_plans_due ON schedule_plans (next_fire_at)",
        ]

    def handlers(self) -> dict[str, Handler]:
        return {
            "Schedule.Created": self.upsert,
            "Schedule.Updated": self.upsert,
            "Schedule.PlanAdvanced": self.advanced,
            "Schedule.Deleted": self.deleted,
        }

    @staticmethod
    def upsert(sql: Sql, event: Any, position: int) -> None:
        tenant = str(getattr(event, "tenant_id", ""))
        sql.execute(
            "INSERT INTO schedule_plans (schedule_id, tenant_id, name, enabled, next_fire_at, "
            "created_at, version) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (schedule_id) DO "
            "UPDATE SET name = excluded.name, enabled = excluded.enabled, "
            "next_fire_at = excluded.next_fire_at, version = excluded.version",
            (
                str(event.originator_id),
                tenant,
                event.settings["name"],
                event.enabled,
                event.next_fire_at,
                event.at,
                event.originator_version,
            ),
        )

    @staticmethod
    def advanced(sql: Sql, event: Any, position: int) -> None:
        sql.execute(
            "UPDATE schedule_plans SET next_fire_at = ?, version = ? WHERE schedule_id = ?",
            (event.next_fire_at, event.originator_version, str(event.originator_id)),
        )

    @staticmethod
    def deleted(sql: Sql, event: Any, position: int) -> None:
        sql.execute("DELETE FROM schedule_plans WHERE schedule_id = ?", (str(event.originator_id),))


class RunsProjection(Projection):
    """One row per cycle: planned, registered, status, attempts, instance, finish, lag.

    `due_at` is when a worker may next claim it: its next attempt, or its lease's expiry.
    """

    name = "runs"

    def ddl(self, sql: Sql) -> list[str]:
        ts = sql.timestamp_type
        return [
            "CREATE TABLE IF NOT EXISTS runs ("
            "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, schedule_id TEXT NOT NULL, "
            f"planned_at {ts} NOT NULL, trigger TEXT NOT NULL, status TEXT NOT NULL, "
            "title TEXT NOT NULL, initiator_id TEXT NOT NULL, definition_id TEXT NOT NULL, "
            "attempt_count INTEGER NOT NULL, instance_id TEXT, "
            f"next_attempt_at {ts}, lease_expires_at {ts}, due_at {ts}, "
            f"registered_at {ts} NOT NULL, finished_at {ts}, skipped_count INTEGER NOT NULL, "
            "registration_lag_seconds DOUBLE PRECISION NOT NULL, version INTEGER NOT NULL)",
            "CREATE INDEX IF NOT EXISTS runs_by_schedule ON runs (schedule_id, planned_at)",
            "CREATE INDEX IF NOT EXISTS runs_by_status ON runs (tenant_id, status)",
            "CREATE INDEX IF NOT EXISTS runs_due ON runs (due_at)",
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
        lag = (event.at - event.planned_at).total_seconds()
        sql.execute(
            "INSERT INTO runs (id, tenant_id, schedule_id, planned_at, trigger, status, title, "
            "initiator_id, definition_id, attempt_count, instance_id, next_attempt_at, due_at, "
            "registered_at, finished_at, skipped_count, registration_lag_seconds, version) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, NULL, ?, ?, ?, ?, ?, ?, ?)",
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
                event.at if event.status == PENDING else None,
                event.at if event.status == PENDING else None,
                event.at,
                event.at if event.status == SKIPPED_MISSED else None,
                event.skipped_count,
                lag,
                event.originator_version,
            ),
        )

    @staticmethod
    def attempt_started(sql: Sql, event: Any, position: int) -> None:
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
        """A failed or interrupted attempt: waiting to retry, or finished."""
        finished = None if event.next_attempt_at else event.at
        _update(
            sql,
            event,
            status=event.status,
            next_attempt_at=event.next_attempt_at,
            lease_expires_at=None,
            due_at=event.next_attempt_at,
            finished_at=finished,
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


def _update(sql: Sql, event: Any, **columns: Any) -> None:
    """Set these columns of the event's run, and its version."""
    assignments = ", ".join(f"{name} = ?" for name in columns)
    sql.execute(
        f"UPDATE runs SET {assignments}, version = ? WHERE id = ?",  # noqa: S608
        (*columns.values(), event.originator_version, str(event.originator_id)),
    )
