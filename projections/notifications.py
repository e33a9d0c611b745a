"""`notifications`: each account's notices, made from the approval events by domain/notices.py.

Whether a person has read a notice is their inbox's state, not the instance's: marking one
read is no event. It is kept in `notification_reads`, which the migration makes with the
projection's tables but no rebuild or replay touches (a rebuild of `notifications` from the log
makes the same notice ids again, so the marks still apply).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from cronledger.persistence.store import Store, as_instant
from domain.approvals import CLAIMED, REASSIGNED, UNCLAIMED, ApprovalInstance
from domain.notices import (
    Handled,
    NoticeDraft,
    TaskFacts,
    assigned_notices,
    assumed_deadline_notices,
    blocked_notices,
    claimable_notices,
    escalation_notices,
    notice_id,
    notices_of_command,
    reminder_notices,
)
from projections.approvals import COMMANDS
from projections.engine import EventClass, Handler, Projection, Sql, Stamped
from projections.json_columns import json_text, json_value
from projections.keyset import ListSpec, Order, Row, Slice, Window, read_slice


class NotificationsProjection(Projection):
    """One row per notice (`notifications`) and one per instance (`notice_applicants`: whom
    its decisions and callbacks concern, and its title)."""

    name = "notifications"
    tables = ("notice_applicants", "notifications")

    def ddl(self, sql: Sql) -> list[str]:
        ts = sql.timestamp_type
        return [
            "CREATE TABLE IF NOT EXISTS notice_applicants ("
            "instance_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, "
            "applicant_id TEXT NOT NULL, title TEXT NOT NULL, candidates TEXT, "
            "assignee_id TEXT)",
            "CREATE TABLE IF NOT EXISTS notifications ("
            "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, account_id TEXT NOT NULL, "
            "kind TEXT NOT NULL, instance_id TEXT NOT NULL, params TEXT NOT NULL, "
            f"created_at {ts} NOT NULL, position BIGINT NOT NULL)",
            "CREATE INDEX IF NOT EXISTS notifications_of_account "
            "ON notifications (tenant_id, account_id, created_at DESC, id)",
            # Not the projection's own (not in `tables`: no rebuild or replay touches it): when
            # each person read each notice, written by the application (`mark_read`).
            "CREATE TABLE IF NOT EXISTS notification_reads ("
            "notification_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, "
            f"account_id TEXT NOT NULL, read_at {ts} NOT NULL)",
            # Not the projection's own either: each person's contact details, personal data
            # kept out of the log, the bundles and the exports, erased on request.
            "CREATE TABLE IF NOT EXISTS account_contacts ("
            "tenant_id TEXT NOT NULL, account_id TEXT NOT NULL, email TEXT, "
            f"language TEXT NOT NULL, updated_at {ts} NOT NULL, "
            "PRIMARY KEY (tenant_id, account_id))",
            # Nor this: each attempt to email a notice (cronledger/application/mailer.py),
            # never the address it went to.
            "CREATE TABLE IF NOT EXISTS notice_emails ("
            f"notice_id TEXT NOT NULL, attempt INTEGER NOT NULL, at {ts} NOT NULL, "
            "outcome TEXT NOT NULL, error TEXT, PRIMARY KEY (notice_id, attempt))",
        ]

    def handlers(self) -> dict[EventClass, Handler]:
        return {
            ApprovalInstance.Submitted: _submitted,
            **dict.fromkeys(COMMANDS, _handled),
            ApprovalInstance.TaskReleased: _released,
            ApprovalInstance.Escalated: _escalated,
            ApprovalInstance.ReminderDue: _reminder_due,
            ApprovalInstance.LevelBlocked: _level_blocked,
        }


def _submitted(sql: Sql, event: ApprovalInstance.Submitted, position: int) -> None:
    candidates = None if event.candidates is None else sorted(event.candidates)
    sql.write(
        "INSERT INTO notice_applicants (instance_id, tenant_id, applicant_id, title, "
        "candidates) VALUES (?, ?, ?, ?, ?)",
        (
            str(event.originator_id),
            str(event.tenant_id),
            event.applicant_id,
            event.title,
            None if candidates is None else json_text(candidates),
        ),
    )
    task = TaskFacts(str(event.originator_id), event.title, _tuple(candidates), None)
    for draft in claimable_notices(task):
        _notify(sql, event, position, str(event.tenant_id), draft)
    assumed = assumed_deadline_notices(task.instance_id, event.title, event.deadline_policy)
    for draft in assumed:
        _notify(sql, event, position, str(event.tenant_id), draft)


def _tuple(candidates: list[str] | None) -> tuple[str, ...] | None:
    return None if candidates is None else tuple(candidates)


def _task_of(sql: Sql, instance_id: str) -> tuple[str, TaskFacts] | None:
    """The instance's tenant and what the notices know of its task; None if never seen."""
    found = sql.execute(
        "SELECT tenant_id, title, candidates, assignee_id FROM notice_applicants "
        "WHERE instance_id = ?",
        (instance_id,),
    ).fetchall()
    if not found:
        return None
    tenant_id, title, candidates, assignee_id = found[0]
    listed = json_value(candidates)
    facts = TaskFacts(instance_id, str(title), _tuple(listed), assignee_id)
    return str(tenant_id), facts


def _assign(sql: Sql, task: TaskFacts, assignee: str | None) -> None:
    """Who holds the task now (a new assignee joins its candidates)."""
    candidates = task.candidates
    if candidates is not None and assignee is not None and assignee not in candidates:
        candidates = tuple(sorted((*candidates, assignee)))
    sql.write(
        "UPDATE notice_applicants SET assignee_id = ?, candidates = ? WHERE instance_id = ?",
        (
            assignee,
            None if candidates is None else json_text(list(candidates)),
            task.instance_id,
        ),
    )


def _task_work(
    sql: Sql, event: ApprovalInstance.CommandHandled, position: int, tenant: str, task: TaskFacts
) -> None:
    """A claim, reassignment or unclaim moves the task; a reassignment and an unclaim tell."""
    if not event.accepted:
        return
    drafts: list[NoticeDraft] = []
    if event.outcome == CLAIMED:
        _assign(sql, task, event.actor)
    elif event.outcome == REASSIGNED:
        assignee = event.payload["assignee_id"]
        _assign(sql, task, assignee)
        drafts = assigned_notices(task, assignee, event.actor)
    elif event.outcome == UNCLAIMED:
        _assign(sql, task, None)
        drafts = claimable_notices(task, leaving_out=event.actor)
    for draft in drafts:
        _notify(sql, event, position, tenant, draft)


def _released(sql: Sql, event: ApprovalInstance.TaskReleased, position: int) -> None:
    """A task back with its candidates (its assignee may no longer decide): they are told."""
    found = _task_of(sql, str(event.originator_id))
    if found is None:
        return
    tenant, task = found
    _assign(sql, task, None)
    for draft in claimable_notices(task, leaving_out=event.account_id):
        _notify(sql, event, position, tenant, draft)


def _escalated(sql: Sql, event: ApprovalInstance.Escalated, position: int) -> None:
    """An escalation tells its target (unless it may not approve the instance) and the
    assignee it took the task from (an escalation of an earlier release, which moved nothing,
    tells nobody)."""
    found = _task_of(sql, str(event.originator_id))
    if found is None or event.mode is None:
        return
    tenant, task = found
    if event.to_assignee is not None:
        _assign(sql, task, event.to_assignee)
    target = event.account_id if event.reason_code is None else None
    for draft in escalation_notices(task, target, event.to_assignee):
        _notify(sql, event, position, tenant, draft)


def _level_blocked(sql: Sql, event: ApprovalInstance.LevelBlocked, position: int) -> None:
    """A level that can no longer complete: its candidates are told."""
    found = _task_of(sql, str(event.originator_id))
    if found is None:
        return
    tenant, task = found
    drafts = blocked_notices(
        task.instance_id, task.title, event.candidates, event.level, event.approvals_required
    )
    for draft in drafts:
        _notify(sql, event, position, tenant, draft)


def _reminder_due(sql: Sql, event: ApprovalInstance.ReminderDue, position: int) -> None:
    found = _task_of(sql, str(event.originator_id))
    if found is None:
        return
    tenant, task = found
    for draft in reminder_notices(task, event.before_seconds):
        _notify(sql, event, position, tenant, draft)


def _handled(sql: Sql, event: ApprovalInstance.CommandHandled, position: int) -> None:
    instance_id = str(event.originator_id)
    found = sql.execute(
        "SELECT tenant_id, applicant_id, title FROM notice_applicants WHERE instance_id = ?",
        (instance_id,),
    ).fetchall()
    if not found:
        return  # an instance this model never saw submitted: nobody to notify
    tenant_id, applicant_id, title = found[0]
    handled = Handled(instance_id, event.command, event.outcome, event.actor, event.reason_params)
    for draft in notices_of_command(str(applicant_id), str(title), handled):
        _notify(sql, event, position, str(tenant_id), draft)
    task = _task_of(sql, instance_id)
    if task is not None:
        _task_work(sql, event, position, str(tenant_id), task[1])


def _notify(sql: Sql, event: Stamped, position: int, tenant: str, draft: NoticeDraft) -> None:
    """The notice's row: at the event's instant and position."""
    sql.write(
        "INSERT INTO notifications (id, tenant_id, account_id, kind, instance_id, params, "
        "created_at, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            str(
                notice_id(
                    event.originator_id, event.originator_version, draft.account_id, draft.kind
                )
            ),
            tenant,
            draft.account_id,
            draft.kind,
            draft.instance_id,
            json_text(dict(draft.params)),
            event.at,
            position,
        ),
    )


# Newest first; one event may notify one account of two kinds: equal instants by id.
NOTIFICATION_ORDER = Order(
    "notifications", "notifications.created_at", descending=True, tie="notifications.id"
)
NOTIFICATION_LISTING = ListSpec(
    NOTIFICATION_ORDER,
    "-created_at",
    {"created_at": "notifications.created_at", "kind": "kind"},
    tie="notifications.id",
    # The title of the instance it is about, as that instance's row keeps it.
    searched=(
        "(SELECT approvals.search_text FROM approvals "
        "WHERE approvals.id = notifications.instance_id)",
    ),
)
COLUMNS = "notifications.id, kind, instance_id, params, created_at, notification_reads.read_at"
READS = (
    "notifications LEFT JOIN notification_reads "
    "ON notification_reads.notification_id = notifications.id"
)


class NotificationRow(NamedTuple):
    """A notice as the API answers it: what happened (`kind`, `params`) on which instance,
    and when the person read it (None while unread)."""

    id: str
    kind: str
    instance_id: str
    params: dict[str, Any]
    created_at: datetime
    read_at: datetime | None

    @classmethod
    def of(cls, row: Row) -> NotificationRow:
        notice_id_, kind, instance_id, params, created_at, read_at = row
        created = as_instant(created_at)
        assert created is not None  # a NOT NULL column
        return cls(
            str(notice_id_),
            str(kind),
            str(instance_id),
            json_value(params),
            created,
            as_instant(read_at),
        )


def _where(tenant_id: UUID, account_id: str, unread_only: bool) -> tuple[str, list[Any]]:
    clause = "notifications.tenant_id = ? AND notifications.account_id = ?"
    if unread_only:
        clause += " AND notification_reads.read_at IS NULL"
    return clause, [str(tenant_id), account_id]


def notification_page(
    store: Store, tenant_id: UUID, account_id: str, window: Window, *, unread_only: bool = False
) -> Slice[NotificationRow]:
    """One page of the account's notices (newest first unless sorted), and how many."""
    where = _where(tenant_id, account_id, unread_only)
    found = read_slice(store, READS, where, NOTIFICATION_LISTING, window, COLUMNS)
    return found.mapped(NotificationRow.of)


def unread_count(store: Store, tenant_id: UUID, account_id: str) -> int:
    clause, params = _where(tenant_id, account_id, unread_only=True)
    rows = store.query(f"SELECT COUNT(*) FROM {READS} WHERE {clause}", params)  # noqa: S608
    return int(rows[0][0])


def notification_row(
    store: Store, tenant_id: UUID, account_id: str, notification_id: str
) -> NotificationRow | None:
    """The account's notice of this id: None for another account's."""
    clause, params = _where(tenant_id, account_id, unread_only=False)
    rows: Sequence[Row] = store.query(
        f"SELECT {COLUMNS} FROM {READS} WHERE {clause} AND notifications.id = ?",  # noqa: S608
        (*params, notification_id),
    )
    return NotificationRow.of(rows[0]) if rows else None
