"""The `approvals` table: one row per approval instance, its state, deadline and decision."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from cronledger.persistence.store import Store, as_instant, tenant_scope
from domain.approvals import EXPIRED, TERMINAL, WAITING_REVIEW
from projections.engine import Handler, Projection, Sql
from projections.keyset import Order, Row, Slice, Window, read_slice
from projections.runs import LagHistogram


class ApprovalsProjection(Projection):
    """One row per instance (`approvals`) and one per command it got (`approval_commands`)."""

    name = "approvals"
    tables = ("approvals", "approval_commands")

    def ddl(self, sql: Sql) -> list[str]:
        ts, seconds = sql.timestamp_type, sql.seconds_type
        return [
            "CREATE TABLE IF NOT EXISTS approvals ("
            "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, definition_id TEXT NOT NULL, "
            "applicant_id TEXT NOT NULL, title TEXT NOT NULL, state TEXT NOT NULL, "
            f"review_deadline_at {ts} NOT NULL, submitted_at {ts} NOT NULL, "
            f"decided_at {ts}, outcome TEXT, decision_seconds {seconds}, "
            f"expiry_lag_seconds {seconds}, schedule_id TEXT, run_id TEXT, "
            "version INTEGER NOT NULL, position BIGINT NOT NULL)",
            "CREATE INDEX IF NOT EXISTS approvals_by_tenant_state "
            "ON approvals (tenant_id, state, submitted_at)",
            "CREATE INDEX IF NOT EXISTS approvals_by_tenant "
            "ON approvals (tenant_id, submitted_at DESC, id)",
            "CREATE INDEX IF NOT EXISTS approvals_by_deadline "
            "ON approvals (state, review_deadline_at)",
            "CREATE TABLE IF NOT EXISTS approval_commands ("
            "instance_id TEXT NOT NULL, version INTEGER NOT NULL, tenant_id TEXT NOT NULL, "
            "position BIGINT NOT NULL, command TEXT NOT NULL, command_id TEXT, "
            "outcome TEXT NOT NULL, accepted BOOLEAN NOT NULL, reason TEXT NOT NULL, "
            f"actor TEXT NOT NULL, at {ts} NOT NULL, PRIMARY KEY (instance_id, version))",
            "CREATE INDEX IF NOT EXISTS approval_commands_by_tenant "
            "ON approval_commands (tenant_id, at)",
        ]

    def handlers(self) -> dict[str, Handler]:
        handled = {
            f"ApprovalInstance.{name}": self.handled
            for name in (
                "Approved",
                "Withdrawn",
                "Expired",
                "DeadlineExtended",
                "CallbackObserved",
                "CommandRejected",
            )
        }
        return {"ApprovalInstance.Submitted": self.submitted, **handled}

    @staticmethod
    def submitted(sql: Sql, event: Any, position: int) -> None:
        origin = event.origin or {}
        sql.write(
            "INSERT INTO approvals (id, tenant_id, definition_id, applicant_id, title, state, "
            "review_deadline_at, submitted_at, schedule_id, run_id, version, position) "
            "VALUES (?, ?, ?, ?, ?, 'WAITING_REVIEW', ?, ?, ?, ?, ?, ?)",
            (
                str(event.originator_id),
                str(event.tenant_id),
                event.definition_id,
                event.applicant_id,
                event.title,
                event.review_deadline_at,
                event.at,
                origin.get("schedule_id"),
                origin.get("run_id"),
                event.originator_version,
                position,
            ),
        )
        _command(sql, event, position, "submit", event.command_id, "SUBMITTED", True, "submitted")

    @staticmethod
    def handled(sql: Sql, event: Any, position: int) -> None:
        _command(
            sql,
            event,
            position,
            event.command,
            event.command_id,
            event.outcome,
            event.accepted,
            event.reason,
        )
        key = (event.originator_version, position, str(event.originator_id))
        if event.outcome == "EXTENDED":
            sql.write(
                "UPDATE approvals SET review_deadline_at = ?, version = ?, position = ? "
                "WHERE id = ?",
                (event.payload["new_deadline_at"], *key),
            )
        elif event.outcome in TERMINAL:
            deadline, submitted = sql.execute(
                "SELECT review_deadline_at, submitted_at FROM approvals WHERE id = ?", (key[2],)
            ).fetchone()
            lag = _seconds_between(sql, deadline, event.at) if event.outcome == EXPIRED else None
            sql.write(
                "UPDATE approvals SET state = ?, decided_at = ?, outcome = ?, "
                "decision_seconds = ?, expiry_lag_seconds = ?, version = ?, position = ? "
                "WHERE id = ?",
                (
                    event.outcome,
                    event.at,
                    event.outcome,
                    _seconds_between(sql, submitted, event.at),
                    lag,
                    *key,
                ),
            )
        else:
            sql.write("UPDATE approvals SET version = ?, position = ? WHERE id = ?", key)


def _command(
    sql: Sql,
    event: Any,
    position: int,
    command: str,
    command_id: str | None,
    outcome: str,
    accepted: bool,
    reason: str,
) -> None:
    """One row of `approval_commands`: the command, what it got, who and when."""
    sql.write(
        "INSERT INTO approval_commands (instance_id, version, tenant_id, position, command, "
        "command_id, outcome, accepted, reason, actor, at) SELECT id, ?, tenant_id, ?, ?, ?, ?, "
        "?, ?, ?, ? FROM approvals WHERE id = ?",
        (
            event.originator_version,
            position,
            command,
            command_id,
            outcome,
            accepted,
            reason,
            event.actor,
            event.at,
            str(event.originator_id),
        ),
    )


def _seconds_between(sql: Sql, deadline: Any, at: Any) -> Decimal | float:
    start = as_instant(deadline)
    assert start is not None
    return sql.seconds(at - start)


def overdue_instances(store: Store, now: datetime, limit: int) -> list[UUID]:
    """Instances still waiting for review past their deadline, the longest overdue first."""
    rows = store.query(
        "SELECT id FROM approvals WHERE state = ? AND review_deadline_at <= ? "
        "ORDER BY review_deadline_at LIMIT ?",
        (WAITING_REVIEW, now, limit),
    )
    return [UUID(row[0]) for row in rows]


def overdue_backlog(
    store: Store, tenant_id: UUID | None, now: datetime
) -> tuple[int, datetime | None]:
    """How many instances wait past their deadline, and the oldest deadline (one tenant, or all)."""
    scope, params = tenant_scope(tenant_id)
    rows = store.query(
        "SELECT COUNT(*), MIN(review_deadline_at) FROM approvals "  # noqa: S608
        f"WHERE {scope} state = ? AND review_deadline_at <= ?",
        (*params, WAITING_REVIEW, now),
    )
    count, oldest = rows[0]
    return int(count), as_instant(oldest)


def expiry_lags(store: Store, tenant_id: UUID | None, bounds: Sequence[float]) -> LagHistogram:
    """How late each expiry was recorded after its deadline (one tenant, or all)."""
    scope, params = tenant_scope(tenant_id)
    counts = ", ".join(
        f"SUM(CASE WHEN expiry_lag_seconds <= {float(bound)} THEN 1 ELSE 0 END)" for bound in bounds
    )
    row = store.query(
        f"SELECT {counts}, COUNT(*), SUM(expiry_lag_seconds) FROM approvals "  # noqa: S608
        f"WHERE {scope} state = ?",
        (*params, EXPIRED),
    )[0]
    return LagHistogram(
        at_most=[int(count or 0) for count in row[:-2]],
        total=int(row[-2]),
        sum_seconds=float(row[-1] or 0.0),
    )


@dataclass(frozen=True)
class ApprovalFilter:
    """Which instances of a tenant to list; None leaves a condition out. `schedule_id` is the
    schedule that launched it; `deadline_from` is inclusive, `deadline_to` exclusive."""

    state: str | None = None
    applicant_id: str | None = None
    definition_id: str | None = None
    schedule_id: UUID | None = None
    deadline_from: datetime | None = None
    deadline_to: datetime | None = None

    def where(self, tenant_id: UUID) -> tuple[str, list[Any]]:
        """The SQL condition (fixed text, values as parameters) and its parameters."""
        conditions: list[str] = ["tenant_id = ?"]
        params: list[Any] = [str(tenant_id)]
        for condition, value in (
            ("state = ?", self.state),
            ("applicant_id = ?", self.applicant_id),
            ("definition_id = ?", self.definition_id),
            ("schedule_id = ?", str(self.schedule_id) if self.schedule_id else None),
            ("review_deadline_at >= ?", self.deadline_from),
            ("review_deadline_at < ?", self.deadline_to),
        ):
            if value is not None:
                conditions.append(condition)
                params.append(value)
        return " AND ".join(conditions), params


# Newest submitted first; `id` orders instances submitted at the same instant.
APPROVAL_ORDER = Order("approvals", "submitted_at", descending=True, tie="id")


def approval_page(
    store: Store, tenant_id: UUID, wanted: ApprovalFilter, window: Window
) -> Slice[Row]:
    """One page of the tenant's matching instances' ids, newest submitted first, and how many
    match."""
    return read_slice(store, "approvals", wanted.where(tenant_id), APPROVAL_ORDER, window)
