"""`approval_levels` and `approval_votes`: each instance's review levels and votes, for analysts.

One `approval_levels` row per level an instance reached (opened, completed or failed, with how
long it took: docs/analytics.md Q28), and one `approval_votes` row per approve or reject, kept
when a revise lapses it (`lapsed`: Q29). An instance without levels has its one level.
"""

from __future__ import annotations

from datetime import datetime

from domain.approvals import APPROVED, REJECTED, VOTING, ApprovalInstance
from domain.levels import COMPLETED, FAILED, OPEN, WAITING
from projections.engine import EventClass, Handler, Projection, Sql

VOTES = (ApprovalInstance.Voted, ApprovalInstance.Approved, ApprovalInstance.Rejected)


class LevelsProjection(Projection):
    """Levels reached and votes given, per instance."""

    name = "levels"
    tables = ("approval_levels", "approval_votes")

    def ddl(self, sql: Sql) -> list[str]:
        ts, seconds = sql.timestamp_type, sql.seconds_type
        return [
            "CREATE TABLE IF NOT EXISTS approval_levels ("
            "instance_id TEXT NOT NULL, level INTEGER NOT NULL, tenant_id TEXT NOT NULL, "
            "definition_id TEXT NOT NULL, name TEXT, approvals_required INTEGER NOT NULL, "
            f"state TEXT NOT NULL, opened_at {ts}, completed_at {ts}, level_seconds {seconds}, "
            "PRIMARY KEY (instance_id, level))",
            "CREATE INDEX IF NOT EXISTS approval_levels_by_tenant "
            "ON approval_levels (tenant_id, definition_id, level)",
            "CREATE TABLE IF NOT EXISTS approval_votes ("
            "instance_id TEXT NOT NULL, version INTEGER NOT NULL, tenant_id TEXT NOT NULL, "
            "definition_id TEXT NOT NULL, level INTEGER NOT NULL, task_id TEXT NOT NULL, "
            f"actor TEXT NOT NULL, vote TEXT NOT NULL, at {ts} NOT NULL, "
            "material_version INTEGER NOT NULL, lapsed BOOLEAN NOT NULL, "
            "PRIMARY KEY (instance_id, version))",
            "CREATE INDEX IF NOT EXISTS approval_votes_by_tenant "
            "ON approval_votes (tenant_id, definition_id)",
        ]

    def handlers(self) -> dict[EventClass, Handler]:
        return {
            ApprovalInstance.Submitted: _submitted,
            **dict.fromkeys(VOTES, _voted),
            ApprovalInstance.LevelCompleted: _level_completed,
            ApprovalInstance.Revised: _revised,
        }


def _submitted(sql: Sql, event: ApprovalInstance.Submitted, position: int) -> None:
    """Every level of the instance: level 1 open from the submission, the others waiting."""
    levels = event.levels or [{"name": None, "approvals_required": 1}]
    for number, level in enumerate(levels, start=1):
        sql.write(
            "INSERT INTO approval_levels (instance_id, level, tenant_id, definition_id, name, "
            "approvals_required, state, opened_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                str(event.originator_id),
                number,
                str(event.tenant_id),
                event.definition_id,
                level.get("name"),
                int(level.get("approvals_required") or 1),
                OPEN if number == 1 else WAITING,
                event.at if number == 1 else None,
            ),
        )


def _current(sql: Sql, instance_id: str) -> tuple[int, str, str] | None:
    """The open level, and the instance's tenant and definition (None: no level is open)."""
    found = sql.execute(
        "SELECT level, tenant_id, definition_id FROM approval_levels "
        "WHERE instance_id = ? AND state = ? ORDER BY level DESC",
        (instance_id, OPEN),
    ).fetchone()
    return None if found is None else (int(found[0]), str(found[1]), str(found[2]))


def _voted(sql: Sql, event: ApprovalInstance.CommandHandled, position: int) -> None:
    """An accepted approve or reject: a vote on the open level; approved or refused, that
    level completed or failed."""
    if not event.accepted or event.command not in VOTING:
        return
    instance_id = str(event.originator_id)
    current = _current(sql, instance_id)
    if current is None:
        return
    level, tenant, definition = current
    offered = event.payload.get("material_version")
    sql.write(
        "INSERT INTO approval_votes (instance_id, version, tenant_id, definition_id, level, "
        "task_id, actor, vote, at, material_version, lapsed) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            instance_id,
            event.originator_version,
            tenant,
            definition,
            level,
            event.payload.get("task_id") or "1",
            event.actor,
            "approve" if event.command == "approve" else "reject",
            event.at,
            int(offered) if offered is not None else 0,
            False,
        ),
    )
    if event.outcome == APPROVED:
        _ended(sql, instance_id, level, COMPLETED, event.at)
    elif event.outcome == REJECTED:
        _ended(sql, instance_id, level, FAILED, event.at)


def _ended(sql: Sql, instance_id: str, level: int, state: str, at: datetime) -> None:
    """The level completed (with how long it was open) or failed at `at`."""
    (opened_at,) = sql.execute(
        "SELECT opened_at FROM approval_levels WHERE instance_id = ? AND level = ?",
        (instance_id, level),
    ).fetchone()
    took = sql.seconds_since(opened_at, at) if state == COMPLETED and opened_at else None
    sql.write(
        "UPDATE approval_levels SET state = ?, completed_at = ?, level_seconds = ? "
        "WHERE instance_id = ? AND level = ?",
        (state, at, took, instance_id, level),
    )


def _level_completed(sql: Sql, event: ApprovalInstance.LevelCompleted, position: int) -> None:
    """A level completed (the last is already, with the approval), the next one open."""
    instance_id = str(event.originator_id)
    (state,) = sql.execute(
        "SELECT state FROM approval_levels WHERE instance_id = ? AND level = ?",
        (instance_id, event.level),
    ).fetchone()
    if state != COMPLETED:
        _ended(sql, instance_id, event.level, COMPLETED, event.at)
    if event.next_level is not None:
        sql.write(
            "UPDATE approval_levels SET state = ?, opened_at = ?, completed_at = NULL, "
            "level_seconds = NULL WHERE instance_id = ? AND level = ?",
            (OPEN, event.at, instance_id, event.next_level),
        )


def _revised(sql: Sql, event: ApprovalInstance.Revised, position: int) -> None:
    """Votes lapsed: every vote kept lapses, and the review starts again at level 1."""
    if not event.lapsed_votes:
        return
    instance_id = str(event.originator_id)
    sql.write("UPDATE approval_votes SET lapsed = ? WHERE instance_id = ?", (True, instance_id))
    sql.write(
        "UPDATE approval_levels SET state = ?, opened_at = NULL, completed_at = NULL, "
        "level_seconds = NULL WHERE instance_id = ?",
        (WAITING, instance_id),
    )
    sql.write(
        "UPDATE approval_levels SET state = ?, opened_at = ? WHERE instance_id = ? AND level = 1",
        (OPEN, event.at, instance_id),
    )
