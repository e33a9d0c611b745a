"""`tasks`: each approval instance's review tasks, and `task_candidates`: who may claim each.

What a reviewer's inbox reads (我的待办 / 待领取 / 我已处理): the tasks assigned to them, those
they may claim, and those they decided.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from cronledger.persistence.store import Store, as_instant
from domain.approvals import (
    APPROVED,
    REASSIGNED,
    REJECTED,
    RETURNED,
    TERMINAL,
    ApprovalInstance,
)
from domain.levels import initial_review
from domain.reviewers import ASSIGNED, CLOSED, FIRST_TASK, HIGH, OPEN
from projections.business import BusinessTime, BusinessValues
from projections.engine import EventClass, Handler, Projection, Sql
from projections.json_columns import json_text
from projections.keyset import ListSpec, Order, Row, Slice, Window, read_slice, searched_text

ASSIGNED_TO_ME, CLAIMABLE, DECIDED = "assigned", "claimable", "decided"
SCOPES = (ASSIGNED_TO_ME, CLAIMABLE, DECIDED)
# Assigned and claimable tasks: the latest deadline first; decided ones: the latest decided
# first. Each scope's own order name keeps its cursors to its own list.
ORDERS = {
    ASSIGNED_TO_ME: Order("tasks-assigned", "review_deadline_at", descending=True, tie="id"),
    CLAIMABLE: Order("tasks-claimable", "review_deadline_at", descending=True, tie="id"),
    DECIDED: Order("tasks-decided", "decided_at", descending=True, tie="id"),
}
TASK_SORTABLE = {
    "review_deadline_at": "review_deadline_at",
    "submitted_at": "submitted_at",
    "title": "title",
    "decided_at": "decided_at",
}
TASK_LISTINGS = {
    scope: ListSpec(
        order,
        f"-{order.column}",
        TASK_SORTABLE,
        nullable=frozenset({"decided_at"}),
        searched=("search_text",),
    )
    for scope, order in ORDERS.items()
}
TASK_EVENTS = (
    ApprovalInstance.Claimed,
    ApprovalInstance.Unclaimed,
    ApprovalInstance.Reassigned,
    ApprovalInstance.Approved,
    ApprovalInstance.Rejected,
    ApprovalInstance.Withdrawn,
    ApprovalInstance.Expired,
    ApprovalInstance.Returned,
)


def task_key(instance_id: str, task_id: str) -> str:
    return f"{instance_id}/{task_id}"


class TasksProjection(Projection):
    """One row per task of every instance; a decision closes them with who decided, how."""

    name = "tasks"
    tables = ("tasks", "task_candidates")
    business: BusinessTime

    def __init__(self, zone: str) -> None:
        self.business = BusinessTime(zone)

    def ddl(self, sql: Sql) -> list[str]:
        ts = sql.timestamp_type
        return [
            "CREATE TABLE IF NOT EXISTS tasks ("
            "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, instance_id TEXT NOT NULL, "
            "task_id TEXT NOT NULL, title TEXT NOT NULL, definition_id TEXT NOT NULL, "
            f"applicant_id TEXT NOT NULL, review_deadline_at {ts} NOT NULL, "
            "priority TEXT NOT NULL, state TEXT NOT NULL, assignee_id TEXT, "
            f"claimed_at {ts}, candidates TEXT, decided_by TEXT, decided_at {ts}, outcome TEXT, "
            f"position BIGINT NOT NULL, submitted_at {ts} NOT NULL, first_claimed_at {ts}, "
            f"claim_seconds {sql.seconds_type}, held_seconds {sql.seconds_type}, "
            "search_text TEXT NOT NULL, level INTEGER NOT NULL, "
            f"{BusinessTime.ddl('submitted_')}, {BusinessTime.ddl('decided_')})",
            "CREATE INDEX IF NOT EXISTS tasks_by_assignee "
            "ON tasks (tenant_id, assignee_id, state, review_deadline_at)",
            "CREATE INDEX IF NOT EXISTS tasks_by_decider "
            "ON tasks (tenant_id, decided_by, decided_at)",
            # an instance's tasks: its level's others (the claimable list), its updates
            "CREATE INDEX IF NOT EXISTS tasks_by_instance ON tasks (instance_id, level)",
            "CREATE TABLE IF NOT EXISTS task_candidates ("
            "task TEXT NOT NULL, tenant_id TEXT NOT NULL, account_id TEXT NOT NULL, "
            "PRIMARY KEY (task, account_id))",
            "CREATE INDEX IF NOT EXISTS task_candidates_by_account "
            "ON task_candidates (tenant_id, account_id)",
        ]

    search_columns = (("tasks", "search_text"),)

    def handlers(self) -> dict[EventClass, Handler]:
        return {
            ApprovalInstance.Submitted: self.submitted,
            ApprovalInstance.DeadlineExtended: _extended,
            ApprovalInstance.DeadlineResumed: _resumed,
            **dict.fromkeys(TASK_EVENTS, self.worked_on),
            ApprovalInstance.TaskReleased: _released,
            ApprovalInstance.Escalated: _escalated,
            ApprovalInstance.Voted: _voted,
            ApprovalInstance.LevelCompleted: _level_completed,
            ApprovalInstance.Revised: _revised,
        }

    def submitted(self, sql: Sql, event: ApprovalInstance.Submitted, position: int) -> None:
        key = task_key(str(event.originator_id), FIRST_TASK)
        sql.write(
            "INSERT INTO tasks (id, tenant_id, instance_id, task_id, title, definition_id, "
            "applicant_id, review_deadline_at, priority, state, candidates, position, "
            "submitted_at, search_text, level, submitted_local_date, submitted_local_hour, "
            "submitted_iso_week, submitted_iso_year) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'normal', ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)",
            (
                key,
                str(event.tenant_id),
                str(event.originator_id),
                FIRST_TASK,
                event.title,
                event.definition_id,
                event.applicant_id,
                event.review_deadline_at,
                OPEN,
                None if event.candidates is None else json_text(sorted(event.candidates)),
                position,
                event.at,
                searched_text(event.title),
                *self.business.values(event.at),
            ),
        )
        for account_id in event.candidates or ():
            _add_candidate(sql, key, str(event.tenant_id), account_id)
        _, tasks = initial_review(event.levels, event.reviewers, event.candidates, event.at)
        for task in tasks[1:]:  # a countersign level's further tasks
            _inserted(sql, str(event.originator_id), task, position)

    def worked_on(self, sql: Sql, event: ApprovalInstance.CommandHandled, position: int) -> None:
        """A claim, unclaim or reassignment moves its task; an accepted decision closes them
        all (as `tasks_after` does on the instance)."""
        instance_id = str(event.originator_id)
        if not event.accepted:
            return
        if event.outcome in TERMINAL or event.outcome == RETURNED:
            _moved(sql, instance_id, getattr(event, "clock", None))
            _closed(sql, instance_id, event, self.business.values(event.at))
            return
        key = task_key(instance_id, event.payload.get("task_id") or FIRST_TASK)
        if isinstance(event, ApprovalInstance.Unclaimed):
            _open(sql, key)
            return
        assignee = event.payload["assignee_id"] if event.outcome == REASSIGNED else event.actor
        _assigned(sql, key, assignee, event.at)


def _inserted(sql: Sql, instance_id: str, task: dict[str, Any], position: int) -> None:
    """A further task's row (and its candidates'), copying its instance's from its first."""
    key = task_key(instance_id, task["id"])
    candidates = task["candidates"]
    sql.write(
        "INSERT INTO tasks (id, tenant_id, instance_id, task_id, title, definition_id, "
        "applicant_id, review_deadline_at, priority, state, candidates, position, "
        "submitted_at, search_text, level, submitted_local_date, submitted_local_hour, "
        "submitted_iso_week, submitted_iso_year) "
        "SELECT ?, tenant_id, instance_id, ?, title, definition_id, applicant_id, "
        "review_deadline_at, 'normal', ?, ?, ?, submitted_at, search_text, ?, "
        "submitted_local_date, submitted_local_hour, submitted_iso_week, submitted_iso_year "
        "FROM tasks WHERE id = ?",
        (
            key,
            task["id"],
            OPEN,
            None if candidates is None else json_text(sorted(candidates)),
            position,
            task["level"],
            task_key(instance_id, FIRST_TASK),
        ),
    )
    tenant = sql.execute("SELECT tenant_id FROM tasks WHERE id = ?", (key,)).fetchone()
    for account_id in candidates or ():
        _add_candidate(sql, key, str(tenant[0]), account_id)


def _voted(sql: Sql, event: ApprovalInstance.CommandHandled, position: int) -> None:
    """A vote closes its task, decided by the voter (approve: APPROVED, reject: REJECTED)."""
    if not event.accepted:
        return
    key = task_key(str(event.originator_id), event.payload.get("task_id") or FIRST_TASK)
    outcome = APPROVED if event.command == "approve" else REJECTED
    sql.write(
        "UPDATE tasks SET state = ?, decided_by = ?, decided_at = ?, outcome = ? WHERE id = ?",
        (CLOSED, event.actor, event.at, outcome, key),
    )


def _level_completed(sql: Sql, event: ApprovalInstance.LevelCompleted, position: int) -> None:
    """The next level's tasks: new rows, or its earlier rows open again after a revise."""
    instance_id = str(event.originator_id)
    for task in event.opened_tasks:
        _inserted(sql, instance_id, task, position)
    if event.next_level is not None and not event.opened_tasks:
        sql.write(
            "UPDATE tasks SET state = ?, assignee_id = NULL, claimed_at = NULL, "
            "decided_by = NULL, decided_at = NULL, outcome = NULL "
            "WHERE instance_id = ? AND level = ?",
            (OPEN, instance_id, event.next_level),
        )


def _revised(sql: Sql, event: ApprovalInstance.Revised, position: int) -> None:
    """Tasks whose votes lapsed open again; a later level's open tasks close."""
    instance_id = str(event.originator_id)
    for task_id in event.reopened_tasks:
        sql.write(
            "UPDATE tasks SET state = ?, assignee_id = NULL, claimed_at = NULL, "
            "decided_by = NULL, decided_at = NULL, outcome = NULL WHERE id = ?",
            (OPEN, task_key(instance_id, task_id)),
        )
    for task_id in event.closed_tasks:
        sql.write(
            "UPDATE tasks SET state = ? WHERE id = ?", (CLOSED, task_key(instance_id, task_id))
        )
    deadline = event.payload.get("new_deadline_at") or (event.clock or {}).get("new_deadline_at")
    if deadline is not None:
        sql.write(
            "UPDATE tasks SET review_deadline_at = ? WHERE instance_id = ?", (deadline, instance_id)
        )


def _add_candidate(sql: Sql, key: str, tenant_id: str, account_id: str) -> None:
    sql.write(
        "INSERT INTO task_candidates (task, tenant_id, account_id) VALUES (?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        (key, tenant_id, account_id),
    )


def _extended(sql: Sql, event: ApprovalInstance.DeadlineExtended, position: int) -> None:
    sql.write(
        "UPDATE tasks SET review_deadline_at = ? WHERE instance_id = ?",
        (event.payload["new_deadline_at"], str(event.originator_id)),
    )


def _resumed(sql: Sql, event: ApprovalInstance.DeadlineResumed, position: int) -> None:
    _moved(sql, str(event.originator_id), event.clock)


def _moved(sql: Sql, instance_id: str, clock: dict[str, Any] | None) -> None:
    """The tasks' deadline once the instance's clock ran again (None: it did not)."""
    if clock is not None:
        sql.write(
            "UPDATE tasks SET review_deadline_at = ? WHERE instance_id = ?",
            (clock["new_deadline_at"], instance_id),
        )


def _closed(
    sql: Sql, instance_id: str, event: ApprovalInstance.CommandHandled, decided: BusinessValues
) -> None:
    """Every task of the instance closed by its decision, with the decision's business time;
    `held_seconds` when its assignee decided it, from when they got it."""
    for key, assignee, claimed_at in sql.execute(
        "SELECT id, assignee_id, claimed_at FROM tasks WHERE instance_id = ? AND state <> ?",
        (instance_id, CLOSED),
    ).fetchall():
        held = sql.seconds_since(claimed_at, event.at) if assignee == event.actor else None
        sql.write(
            "UPDATE tasks SET state = ?, decided_by = ?, decided_at = ?, outcome = ?, "
            "held_seconds = ?, decided_local_date = ?, decided_local_hour = ?, "
            "decided_iso_week = ?, decided_iso_year = ? WHERE id = ?",
            (CLOSED, event.actor, event.at, event.outcome, held, *decided, key),
        )


def _released(sql: Sql, event: ApprovalInstance.TaskReleased, position: int) -> None:
    _open(sql, task_key(str(event.originator_id), event.task_id))


def _escalated(sql: Sql, event: ApprovalInstance.Escalated, position: int) -> None:
    """High priority, and the target's task when the escalation gave it (version 1: nothing)."""
    if event.mode is None:
        return
    key = task_key(str(event.originator_id), event.task_id)
    sql.write("UPDATE tasks SET priority = ? WHERE id = ?", (HIGH, key))
    if event.to_assignee is not None:
        _assigned(sql, key, event.to_assignee, event.at)


def _open(sql: Sql, key: str) -> None:
    sql.write(
        "UPDATE tasks SET state = ?, assignee_id = NULL, claimed_at = NULL WHERE id = ?",
        (OPEN, key),
    )


def _assigned(sql: Sql, key: str, assignee: str, at: datetime) -> None:
    """The task is the assignee's, who becomes one of its candidates if not one yet; the
    first time anyone gets it is kept with how long after submission that was."""
    tenant_id, candidates, submitted_at, first_claimed_at = sql.execute(
        "SELECT tenant_id, candidates, submitted_at, first_claimed_at FROM tasks WHERE id = ?",
        (key,),
    ).fetchone()
    if candidates is not None and assignee not in json.loads(candidates):
        candidates = json_text(sorted([*json.loads(candidates), assignee]))
        _add_candidate(sql, key, tenant_id, assignee)
    sql.write(
        "UPDATE tasks SET state = ?, assignee_id = ?, claimed_at = ?, candidates = ? WHERE id = ?",
        (ASSIGNED, assignee, at, candidates, key),
    )
    if first_claimed_at is None:
        sql.write(
            "UPDATE tasks SET first_claimed_at = ?, claim_seconds = ? WHERE id = ?",
            (at, sql.seconds_since(submitted_at, at), key),
        )


class TaskRow(NamedTuple):
    """A task as a reviewer's inbox shows it; `time_left_seconds` (no column) is made when
    it is read, from the reader's clock."""

    instance_id: str
    task_id: str
    title: str
    definition_id: str
    applicant_id: str
    review_deadline_at: datetime
    priority: str
    state: str
    assignee_id: str | None
    claimed_at: datetime | None
    candidates: list[str] | None
    decided_by: str | None
    decided_at: datetime | None
    outcome: str | None
    level: int = 1
    time_left_seconds: float | None = None

    @classmethod
    def of(cls, row: Row) -> TaskRow:
        values = dict(zip(COLUMNS, row, strict=True))
        for name in ("review_deadline_at", "claimed_at", "decided_at"):
            values[name] = as_instant(values[name])
        candidates = values["candidates"]
        values["candidates"] = None if candidates is None else json.loads(candidates)
        return cls(**values)

    def at(self, now: datetime) -> TaskRow:
        """The task as read at `now`: how long is left until its deadline, while it is open."""
        if self.state == CLOSED:
            return self
        return self._replace(time_left_seconds=(self.review_deadline_at - now).total_seconds())


COLUMNS = TaskRow._fields[:-1]  # all but time_left_seconds


def in_scope(
    scope: str, tenant_id: UUID, account_id: str, may_decide: bool
) -> tuple[str, list[Any]]:
    """Which of the tenant's tasks are in the account's `scope`."""
    tenant = str(tenant_id)
    if scope == ASSIGNED_TO_ME:
        return "tenant_id = ? AND state = ? AND assignee_id = ?", [tenant, ASSIGNED, account_id]
    if scope == DECIDED:
        return (
            "tenant_id = ? AND state = ? AND decided_by = ? AND outcome IN (?, ?)",
            [tenant, CLOSED, account_id, APPROVED, REJECTED],
        )
    mine = "id IN (SELECT task FROM task_candidates WHERE tenant_id = ? AND account_id = ?)"
    anyones = " OR candidates IS NULL" if may_decide else ""  # before reviewers: anyone's
    return (
        f"tenant_id = ? AND state = ? AND ({mine}{anyones}) AND {ONE_A_LEVEL}",
        [tenant, OPEN, tenant, account_id, OPEN, account_id, account_id],
    )


# A countersign level opens a task per approval it needs, but a reviewer takes one at most:
# the claimable list shows a level once (its first open task), and not at all to a reviewer
# who holds or decided one of its tasks.
ONE_A_LEVEL = (
    "NOT EXISTS (SELECT 1 FROM tasks o WHERE o.instance_id = tasks.instance_id "
    "AND o.level = tasks.level AND ((o.state = ? AND o.task_id < tasks.task_id) "
    "OR o.assignee_id = ? OR o.decided_by = ?))"
)


def task_page(
    store: Store, tenant_id: UUID, account_id: str, may_decide: bool, scope: str, window: Window
) -> Slice[TaskRow]:
    """One page of the account's tasks in `scope`, in the scope's order, and how many."""
    columns = ", ".join(COLUMNS)
    where = in_scope(scope, tenant_id, account_id, may_decide)
    found = read_slice(store, "tasks", where, TASK_LISTINGS[scope], window, columns)
    return found.mapped(TaskRow.of)


def held_by_those_who_may_not_decide(
    store: Store, deciding_roles: list[str], limit: int
) -> list[tuple[str, str]]:
    """Assigned tasks (instance id, task id) whose assignee's row says it is inactive, or
    holds none of the roles that may decide; the caller checks each against the log."""
    holds_one = " OR ".join("(',' || a.roles || ',') LIKE ?" for _ in deciding_roles) or "1 = 0"
    may_not = f"NOT a.active OR NOT ({holds_one})"
    joined = "tasks t JOIN accounts a ON a.tenant_id = t.tenant_id AND a.id = t.assignee_id"
    sql = f"SELECT t.instance_id, t.task_id FROM {joined} WHERE t.state = ? AND ({may_not}) "  # noqa: S608
    sql += "ORDER BY t.instance_id LIMIT ?"
    rows = store.query(sql, [ASSIGNED, *(f"%,{role},%" for role in deciding_roles), limit])
    return [(str(instance_id), str(task_id)) for instance_id, task_id in rows]


def with_inactive_candidates(store: Store, limit: int) -> list[str]:
    """Instances with an open task one of whose candidates' row says it is inactive (the
    caller checks each against the log)."""
    rows = store.query(
        "SELECT DISTINCT t.instance_id FROM tasks t "
        "JOIN task_candidates c ON c.task = t.id "
        "JOIN accounts a ON a.tenant_id = c.tenant_id AND a.id = c.account_id "
        "WHERE t.state <> ? AND NOT a.active ORDER BY t.instance_id LIMIT ?",
        [CLOSED, limit],
    )
    return [str(row[0]) for row in rows]


def task_counts(store: Store, tenant_id: UUID, account_id: str, may_decide: bool) -> dict[str, int]:
    """How many of the account's tasks each scope holds."""
    counts = {}
    for scope in SCOPES:
        condition, params = in_scope(scope, tenant_id, account_id, may_decide)
        counts[scope] = int(
            store.query(f"SELECT COUNT(*) FROM tasks WHERE {condition}", params)[0][0]  # noqa: S608
        )
    return counts
