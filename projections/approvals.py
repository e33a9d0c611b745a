"""The `approvals` table: one row per approval instance, its state, deadline and decision."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple
from uuid import UUID

from cronledger.persistence.ledger import jsonable
from cronledger.persistence.store import Store, as_instant, tenant_scope
from domain.approvals import (
    CLAIMED,
    EXPIRED,
    FORBIDDEN,
    PAUSE_KIND,
    REASSIGNED,
    RETURN_KIND,
    RETURNED,
    SIGN,
    TERMINAL,
    UNCLAIMED,
    VOTED,
    VOTING,
    WAITING_REVIEW,
    ApprovalInstance,
    at_offset,
    cancellation_asked,
    closed_pause,
    comment_of,
    escalated_tasks,
    extended_policy,
    levels_after,
    opened_pause,
    owed_notices,
    policy_after_stood,
    restarted_deadline,
    stood_seconds,
    tasks_after,
    unmoved,
    votes_after,
)
from domain.levels import APPROVE_VOTE, Revision, completed, initial_review, revised
from domain.reviewers import Task
from projections.business import BusinessTime, BusinessValues
from projections.engine import EventClass, Handler, Projection, Sql, Stamped
from projections.json_columns import json_text, json_value
from projections.keyset import ListSpec, Order, Row, Slice, Window, read_slice, searched_text
from projections.runs import LagHistogram

COMMANDS = (
    ApprovalInstance.Approved,
    ApprovalInstance.Withdrawn,
    ApprovalInstance.Expired,
    ApprovalInstance.DeadlineExtended,
    ApprovalInstance.CallbackObserved,
    ApprovalInstance.CommandRejected,
    ApprovalInstance.Rejected,
    ApprovalInstance.Claimed,
    ApprovalInstance.Unclaimed,
    ApprovalInstance.Reassigned,
    ApprovalInstance.Commented,
    ApprovalInstance.DeadlinePaused,
    ApprovalInstance.DeadlineResumed,
    ApprovalInstance.Returned,
    ApprovalInstance.Voted,
    ApprovalInstance.Revised,
    ApprovalInstance.Resubmitted,
    ApprovalInstance.CancellationRequested,
)


class ApprovalsProjection(Projection):
    """One row per instance (`approvals`) and one per command it got (`approval_commands`);
    reminders and escalations are no commands: they show on the instance's row only."""

    name = "approvals"
    tables = ("approvals", "approval_commands")
    business: BusinessTime

    def __init__(self, zone: str) -> None:
        self.business = BusinessTime(zone)

    def ddl(self, sql: Sql) -> list[str]:
        ts, seconds = sql.timestamp_type, sql.seconds_type
        return [
            "CREATE TABLE IF NOT EXISTS approvals ("
            "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, definition_id TEXT NOT NULL, "
            "applicant_id TEXT NOT NULL, title TEXT NOT NULL, state TEXT NOT NULL, "
            f"review_deadline_at {ts} NOT NULL, submitted_at {ts} NOT NULL, "
            f"decided_at {ts}, outcome TEXT, decision_seconds {seconds}, "
            f"expiry_lag_seconds {seconds}, schedule_id TEXT, run_id TEXT, "
            "version INTEGER NOT NULL, position BIGINT NOT NULL, form_data TEXT NOT NULL, "
            "material_version INTEGER NOT NULL, review_deadline_offset_minutes INTEGER, "
            "deadline_policy TEXT NOT NULL, origin TEXT, allow_self_approval BOOLEAN NOT NULL, "
            "winning_command TEXT, observations TEXT NOT NULL, contract_id TEXT, "
            "extensions TEXT NOT NULL, reminders TEXT NOT NULL, escalation TEXT, "
            f"reminders_sent TEXT NOT NULL, escalated_account_id TEXT, escalated_at {ts}, "
            f"next_notice_at {ts}, reviewers TEXT, tasks TEXT NOT NULL, comments TEXT NOT NULL, "
            "search_text TEXT NOT NULL, levels TEXT NOT NULL, votes TEXT NOT NULL, "
            "current_level INTEGER NOT NULL, blocked_levels TEXT NOT NULL, "
            f"paused_since {ts}, paused_seconds {seconds} NOT NULL, pauses TEXT NOT NULL, "
            f"pause_ends_at {ts}, max_pause_seconds INTEGER, return_to TEXT NOT NULL, "
            "resubmits TEXT, resubmitted_as TEXT, "
            "cancellation_of TEXT, cancellation TEXT, "
            f"{BusinessTime.ddl('submitted_')}, {BusinessTime.ddl('decided_')})",
            "CREATE INDEX IF NOT EXISTS approvals_by_tenant_state "
            "ON approvals (tenant_id, state, submitted_at)",
            "CREATE INDEX IF NOT EXISTS approvals_by_tenant "
            "ON approvals (tenant_id, submitted_at DESC, id)",
            "CREATE INDEX IF NOT EXISTS approvals_by_deadline "
            "ON approvals (state, review_deadline_at)",
            "CREATE INDEX IF NOT EXISTS approvals_by_next_notice "
            "ON approvals (state, next_notice_at)",
            "CREATE INDEX IF NOT EXISTS approvals_by_pause_end ON approvals (pause_ends_at)",
            "CREATE TABLE IF NOT EXISTS approval_commands ("
            "instance_id TEXT NOT NULL, version INTEGER NOT NULL, tenant_id TEXT NOT NULL, "
            "position BIGINT NOT NULL, command TEXT NOT NULL, command_id TEXT, "
            "outcome TEXT NOT NULL, accepted BOOLEAN NOT NULL, reason TEXT NOT NULL, "
            f"actor TEXT NOT NULL, at {ts} NOT NULL, {BusinessTime.ddl()}, "
            "PRIMARY KEY (instance_id, version))",
            "CREATE INDEX IF NOT EXISTS approval_commands_by_tenant "
            "ON approval_commands (tenant_id, at)",
        ]

    search_columns = (("approvals", "search_text"),)

    def handlers(self) -> dict[EventClass, Handler]:
        return {
            ApprovalInstance.Submitted: self.submitted,
            **dict.fromkeys(COMMANDS, self.handled),
            ApprovalInstance.ReminderDue: _reminder_due,
            ApprovalInstance.Escalated: _escalated,
            ApprovalInstance.TaskReleased: _task_released,
            ApprovalInstance.LevelCompleted: _level_completed,
            ApprovalInstance.LevelBlocked: _level_blocked,
            ApprovalInstance.CancellationSettled: _cancellation_settled,
        }

    def passes(self) -> list[dict[EventClass, Handler]]:
        """The instances' rows, then their commands' rows (which copy the instance's tenant),
        so that a batch of submissions writes each table with one statement."""
        commands = (ApprovalInstance.Submitted, *COMMANDS)
        return [self.handlers(), dict.fromkeys(commands, self.command_row)]

    def command_row(
        self,
        sql: Sql,
        event: ApprovalInstance.Submitted | ApprovalInstance.CommandHandled,
        position: int,
    ) -> None:
        """The `approval_commands` row of a submission, or of a later command."""
        _command_of(sql, event, position, self.business.values(event.at))

    def submitted(self, sql: Sql, event: ApprovalInstance.Submitted, position: int) -> None:
        origin = event.origin or {}
        levels, tasks = initial_review(event.levels, event.reviewers, event.candidates, event.at)
        sql.write(
            "INSERT INTO approvals (id, tenant_id, definition_id, applicant_id, title, state, "
            "review_deadline_at, submitted_at, schedule_id, run_id, version, position, "
            "form_data, material_version, review_deadline_offset_minutes, deadline_policy, "
            "origin, allow_self_approval, observations, extensions, reminders, escalation, "
            "reminders_sent, next_notice_at, reviewers, tasks, comments, search_text, "
            "levels, votes, current_level, blocked_levels, "
            "paused_seconds, pauses, max_pause_seconds, return_to, resubmits, cancellation_of, "
            "submitted_local_date, submitted_local_hour, submitted_iso_week, submitted_iso_year) "
            "VALUES (?, ?, ?, ?, ?, 'WAITING_REVIEW', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "'[]', '[]', ?, ?, '[]', ?, ?, ?, '[]', ?, ?, '[]', 1, '[]', 0, '[]', "
            "?, ?, ?, ?, ?, ?, ?, ?)",
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
                json_text(event.form_data),
                event.material_version,
                event.review_deadline_offset_minutes,
                json_text(event.deadline_policy),
                None if event.origin is None else json_text(event.origin),
                event.allow_self_approval,
                json_text(event.reminders),
                _json_or_null(event.escalation),
                _next_notice_at(
                    event.review_deadline_at,
                    event.at,
                    event.reminders,
                    [],
                    event.escalation,
                    False,
                    event.deadline_policy.get("working_time_notices"),
                ),
                _json_or_null(event.reviewers),
                json_text(tasks),
                searched_text(event.title),
                json_text(levels),
                event.max_pause_seconds,
                event.return_to,
                event.resubmits,
                event.cancellation_of,
                *self.business.values(event.at),
            ),
        )

    def handled(self, sql: Sql, event: ApprovalInstance.CommandHandled, position: int) -> None:
        key = (event.originator_version, position, str(event.originator_id))
        if event.command == SIGN and event.outcome != FORBIDDEN:
            _observed(sql, event)
        if isinstance(event, ApprovalInstance.DeadlineExtended):
            _extended(sql, event, key)
        elif isinstance(event, CLOCK_EVENTS):
            _clock(sql, event, key)
        elif isinstance(event, ApprovalInstance.Resubmitted):
            sql.write(
                "UPDATE approvals SET resubmitted_as = ?, version = ?, position = ? WHERE id = ?",
                (event.linked_id, *key),
            )
        elif isinstance(event, ApprovalInstance.CancellationRequested):
            sql.write(
                "UPDATE approvals SET cancellation = ?, version = ?, position = ? WHERE id = ?",
                (json_text(cancellation_asked(event)), *key),
            )
        elif event.outcome in TERMINAL:
            _ended_pause(sql, key[2], event.at)
            deadline, submitted = sql.execute(
                "SELECT review_deadline_at, submitted_at FROM approvals WHERE id = ?", (key[2],)
            ).fetchone()
            lag = sql.seconds_since(deadline, event.at) if event.outcome == EXPIRED else None
            winner = {"command_id": event.command_id, "kind": event.command, "actor": event.actor}
            sql.write(
                "UPDATE approvals SET state = ?, decided_at = ?, outcome = ?, "
                "decision_seconds = ?, expiry_lag_seconds = ?, "
                "winning_command = COALESCE(winning_command, ?), next_notice_at = NULL, "
                "decided_local_date = ?, decided_local_hour = ?, decided_iso_week = ?, "
                "decided_iso_year = ?, version = ?, position = ? WHERE id = ?",
                (
                    event.outcome,
                    event.at,
                    event.outcome,
                    sql.seconds_since(submitted, event.at),
                    lag,
                    json_text(winner),  # a late command's rejection keeps the expiry's
                    *self.business.values(event.at),
                    *key,
                ),
            )
        else:
            sql.write("UPDATE approvals SET version = ?, position = ? WHERE id = ?", key)
        if isinstance(event, ApprovalInstance.Revised):
            _revised(sql, event)
        if event.accepted and (event.outcome in REVIEW_WORK or comment_of(event)):
            _review_work(sql, event)
        if event.accepted and event.command in VOTING:
            _voted(sql, event)


# Outcomes that move a task or add a comment (as `ApprovalInstance.record` does).
REVIEW_WORK = frozenset(TERMINAL | {CLAIMED, UNCLAIMED, REASSIGNED, RETURNED, VOTED})
CLOCK_EVENTS = (
    ApprovalInstance.DeadlinePaused,
    ApprovalInstance.DeadlineResumed,
    ApprovalInstance.Returned,
)


class Stood(NamedTuple):
    """What an instance's row keeps of its review clock (as the instance does)."""

    paused_since: datetime | None
    paused_seconds: float
    pauses: list[dict[str, Any]]
    max_pause_seconds: int | None


def _stood(sql: Sql, instance_id: str) -> Stood:
    since, seconds, pauses, most = sql.execute(
        "SELECT paused_since, paused_seconds, pauses, max_pause_seconds FROM approvals "
        "WHERE id = ?",
        (instance_id,),
    ).fetchone()
    return Stood(as_instant(since), float(seconds), json.loads(pauses), most)


def _clock(sql: Sql, event: ApprovalInstance.CommandHandled, key: tuple[int, int, str]) -> None:
    """A pause or a return stops the clock (a return ending a pause first); a resume runs
    it again, the deadline and the notices still owed moved (as `ApprovalInstance` does)."""
    clock = getattr(event, "clock", None)
    if clock is not None:
        ran_again(sql, key[2], clock)
    if isinstance(event, ApprovalInstance.DeadlineResumed):
        sql.write("UPDATE approvals SET version = ?, position = ? WHERE id = ?", key)
        return
    kind = RETURN_KIND if isinstance(event, ApprovalInstance.Returned) else PAUSE_KIND
    stood = _stood(sql, key[2])
    (deadline,) = sql.execute(
        "SELECT review_deadline_at FROM approvals WHERE id = ?", (key[2],)
    ).fetchone()
    opened = opened_pause(kind, event, _instant(deadline))
    ends_at = (
        event.at + timedelta(seconds=stood.max_pause_seconds)
        if kind == PAUSE_KIND and stood.max_pause_seconds is not None
        else None
    )
    sql.write(
        "UPDATE approvals SET state = ?, paused_since = ?, pauses = ?, pause_ends_at = ?, "
        "next_notice_at = NULL, version = ?, position = ? WHERE id = ?",
        (
            RETURNED if kind == RETURN_KIND else WAITING_REVIEW,
            event.at,
            json_text([*stood.pauses, opened]),
            ends_at,
            *key,
        ),
    )


def ran_again(sql: Sql, instance_id: str, clock: dict[str, Any]) -> None:
    """The clock runs again as `clock` says: the open pause closed, the deadline moved, the
    next notice owed again."""
    stood = _stood(sql, instance_id)
    notices = _notices(sql, instance_id)
    policy = policy_after_stood(notices.policy, clock)
    closed = [*stood.pauses[:-1], closed_pause(stood.pauses[-1], clock)]
    sql.write(
        "UPDATE approvals SET paused_since = NULL, pause_ends_at = NULL, pauses = ?, "
        "paused_seconds = ?, review_deadline_at = ?, deadline_policy = ?, next_notice_at = ? "
        "WHERE id = ?",
        (
            json_text(closed),
            stood.paused_seconds + stood_seconds(clock),
            clock["new_deadline_at"],
            json_text(policy),
            notices.next_at(
                review_deadline_at=clock["new_deadline_at"],
                counted=policy.get("working_time_notices"),
                policy=policy,
            ),
            instance_id,
        ),
    )


def _ended_pause(sql: Sql, instance_id: str, at: datetime) -> None:
    """A decision while the clock stands ends the open pause; nothing moves."""
    stood = _stood(sql, instance_id)
    if stood.paused_since is None:
        return
    (deadline,) = sql.execute(
        "SELECT review_deadline_at FROM approvals WHERE id = ?", (instance_id,)
    ).fetchone()
    clock = unmoved(stood.paused_since, at, _instant(deadline))
    closed = [*stood.pauses[:-1], closed_pause(stood.pauses[-1], clock)]
    sql.write(
        "UPDATE approvals SET paused_since = NULL, pause_ends_at = NULL, pauses = ?, "
        "paused_seconds = ? WHERE id = ?",
        (json_text(closed), stood.paused_seconds + stood_seconds(clock), instance_id),
    )


def _voted(sql: Sql, event: ApprovalInstance.CommandHandled) -> None:
    """A vote kept on the current level and material; the level completed or failed with
    the decision (as `ApprovalInstance.record` does)."""
    instance_id = str(event.originator_id)
    levels, votes, current, version = sql.execute(
        "SELECT levels, votes, current_level, material_version FROM approvals WHERE id = ?",
        (instance_id,),
    ).fetchone()
    sql.write(
        "UPDATE approvals SET votes = ?, levels = ? WHERE id = ?",
        (
            json_text(votes_after(json.loads(votes), event, current, version)),
            json_text(levels_after(json.loads(levels), event, current)),
            instance_id,
        ),
    )


def _revised(sql: Sql, event: ApprovalInstance.Revised) -> None:
    """The new material: votes lapsed, review back to its level, tasks moved, the deadline
    restarted when the definition says so (as `ApprovalInstance.revise` does)."""
    instance_id = str(event.originator_id)
    levels, votes, tasks, extensions = sql.execute(
        "SELECT levels, votes, tasks, extensions FROM approvals WHERE id = ?", (instance_id,)
    ).fetchone()
    revision = Revision(
        event.lapsed_votes, event.back_to_level, event.reopened_tasks, event.closed_tasks
    )
    kept_levels, kept_tasks, kept_votes = revised(
        json.loads(levels), json.loads(tasks), json.loads(votes), revision, event.at
    )
    payload = event.payload
    if event.clock is not None:  # a revise that answers a return: back to review
        ran_again(sql, instance_id, event.clock)
        sql.write("UPDATE approvals SET state = ? WHERE id = ?", (WAITING_REVIEW, instance_id))
    sql.write(
        "UPDATE approvals SET levels = ?, tasks = ?, votes = ?, current_level = ?, "
        "material_version = ? WHERE id = ?",
        (
            json_text(kept_levels),
            json_text(kept_tasks),
            json_text(kept_votes),
            event.back_to_level,
            payload["material_version"],
            instance_id,
        ),
    )
    if payload.get("form_data") is not None:
        sql.write(
            "UPDATE approvals SET form_data = ? WHERE id = ?",
            (json_text(payload["form_data"]), instance_id),
        )
    if payload.get("new_deadline_at") is not None:
        kept = [*json.loads(extensions), restarted_deadline(event)]
        sql.write(
            "UPDATE approvals SET review_deadline_at = ?, review_deadline_offset_minutes = NULL, "
            "deadline_policy = ?, extensions = ? WHERE id = ?",
            (
                payload["new_deadline_at"],
                json_text(payload["deadline_policy"]),
                json_text(kept),
                instance_id,
            ),
        )


def _level_blocked(sql: Sql, event: ApprovalInstance.LevelBlocked, position: int) -> None:
    """A level that can no longer complete, kept on the row (as the instance does)."""
    instance_id = str(event.originator_id)
    (blocked,) = sql.execute(
        "SELECT blocked_levels FROM approvals WHERE id = ?", (instance_id,)
    ).fetchone()
    kept = [
        *json.loads(blocked),
        {
            "level": event.level,
            "approvals_required": event.approvals_required,
            "possible": event.possible,
            "at": event.at,
        },
    ]
    sql.write(
        "UPDATE approvals SET blocked_levels = ?, version = ?, position = ? WHERE id = ?",
        (json_text(kept), event.originator_version, position, instance_id),
    )


def _level_completed(sql: Sql, event: ApprovalInstance.LevelCompleted, position: int) -> None:
    """A level completed: its tasks closed, the next level open (as the instance does)."""
    instance_id = str(event.originator_id)
    levels, tasks = sql.execute(
        "SELECT levels, tasks FROM approvals WHERE id = ?", (instance_id,)
    ).fetchone()
    kept_levels, kept_tasks = completed(
        json.loads(levels), json.loads(tasks), event.level, event.at
    )
    sql.write(
        "UPDATE approvals SET levels = ?, tasks = ?, current_level = ?, version = ?, "
        "position = ? WHERE id = ?",
        (
            json_text(kept_levels),
            json_text(kept_tasks),
            event.next_level or event.level,
            event.originator_version,
            position,
            instance_id,
        ),
    )


def _review_work(sql: Sql, event: ApprovalInstance.CommandHandled) -> None:
    """The tasks after the command, and the comment it carried."""
    state, tasks, comments = sql.execute(
        "SELECT state, tasks, comments FROM approvals WHERE id = ?", (str(event.originator_id),)
    ).fetchone()
    comment = comment_of(event)
    kept = [*json.loads(comments), *([comment] if comment else [])]
    sql.write(
        "UPDATE approvals SET tasks = ?, comments = ? WHERE id = ?",
        (
            json_text(tasks_after(json.loads(tasks), event, state)),
            json_text(kept),
            str(event.originator_id),
        ),
    )


def _observed(sql: Sql, event: ApprovalInstance.CommandHandled) -> None:
    """A signing callback kept as an observation, matched against the instance; the first
    binds the instance's contract (as `ApprovalInstance.observe` does)."""
    material_version, contract_id, observations = sql.execute(
        "SELECT material_version, contract_id, observations FROM approvals WHERE id = ?",
        (str(event.originator_id),),
    ).fetchone()
    given = event.payload["contract_id"]
    bound = given if contract_id is None else contract_id
    observation = {
        **event.payload,
        "outcome": event.outcome,
        "recorded_at": event.at,
        "command_id": event.command_id,
        "material_matches": event.payload["material_version"] == material_version,
        "contract_matches": given == bound,
    }
    sql.write(
        "UPDATE approvals SET contract_id = ?, observations = ? WHERE id = ?",
        (bound, json_text([*json.loads(observations), observation]), str(event.originator_id)),
    )


def _extended(
    sql: Sql, event: ApprovalInstance.DeadlineExtended, key: tuple[int, int, str]
) -> None:
    """The deadline moved, the old one kept with who, when, why and under which rules (as
    `ApprovalInstance.extend` does); the reminders still owed move with it."""
    notices = _notices(sql, key[2])
    (extensions,) = sql.execute(
        "SELECT extensions FROM approvals WHERE id = ?", (key[2],)
    ).fetchone()
    new_deadline = event.payload["new_deadline_at"]
    extension = {
        "old_deadline_at": notices.review_deadline_at,
        "new_deadline_at": new_deadline,
        "reason": event.reason,
        "actor": event.actor,
        "at": event.at,
        "rule_version": event.rule_version,
    }
    policy = extended_policy(notices.policy, event.reason, event.rule_version, event.payload)
    sql.write(
        "UPDATE approvals SET review_deadline_at = ?, review_deadline_offset_minutes = ?, "
        "deadline_policy = ?, extensions = ?, next_notice_at = ?, version = ?, position = ? "
        "WHERE id = ?",
        (
            new_deadline,
            event.deadline_offset_minutes,
            json_text(policy),
            json_text([*json.loads(extensions), extension]),
            notices.next_at(
                review_deadline_at=new_deadline,
                counted=policy.get("working_time_notices"),
                policy=policy,
            ),
            *key,
        ),
    )


class Notices(NamedTuple):
    """What an instance's row keeps of its reminders and escalation (as the instance does)."""

    review_deadline_at: datetime
    submitted_at: datetime
    reminders: list[dict[str, int]]
    reminders_sent: list[dict[str, Any]]
    escalation: dict[str, Any] | None
    escalated: bool
    counted: dict[str, Any] | None  # the deadline policy's `working_time_notices`
    policy: dict[str, Any]  # the deadline policy

    def next_at(self, **changed: Any) -> datetime | None:
        """When the next reminder or the escalation still owed is due, after `changed`."""
        return _next_notice_at(*self._replace(**changed)[:7])


def _notices(sql: Sql, instance_id: str) -> Notices:
    deadline, submitted, reminders, sent, escalation, escalated_at, policy = sql.execute(
        "SELECT review_deadline_at, submitted_at, reminders, reminders_sent, escalation, "
        "escalated_at, deadline_policy FROM approvals WHERE id = ?",
        (instance_id,),
    ).fetchone()
    kept_policy = json.loads(policy)
    return Notices(
        _instant(deadline),
        _instant(submitted),
        json.loads(reminders),
        json.loads(sent),
        None if escalation is None else json.loads(escalation),
        escalated_at is not None,
        kept_policy.get("working_time_notices"),
        kept_policy,
    )


def _next_notice_at(
    deadline: datetime,
    submitted_at: datetime,
    reminders: list[dict[str, int]],
    reminders_sent: list[dict[str, Any]],
    escalation: dict[str, Any] | None,
    escalated: bool,
    counted: dict[str, Any] | None = None,
) -> datetime | None:
    owed = owed_notices(
        deadline, submitted_at, reminders, reminders_sent, escalation, escalated, counted
    )
    return owed[0].due_at if owed else None


def _reminder_due(sql: Sql, event: ApprovalInstance.ReminderDue, position: int) -> None:
    """A reminder recorded: kept in `reminders_sent`; the next one owed becomes due."""
    instance_id = str(event.originator_id)
    notices = _notices(sql, instance_id)
    sent = [
        *notices.reminders_sent,
        {"before_seconds": event.before_seconds, "due_at": event.due_at, "at": event.at},
    ]
    sql.write(
        "UPDATE approvals SET reminders_sent = ?, next_notice_at = ?, version = ?, position = ? "
        "WHERE id = ?",
        (
            json_text(sent),
            notices.next_at(reminders_sent=sent),
            event.originator_version,
            position,
            instance_id,
        ),
    )


def _cancellation_settled(
    sql: Sql, event: ApprovalInstance.CancellationSettled, position: int
) -> None:
    """How the cancellation's instance ended (as `ApprovalInstance` records it)."""
    instance_id = str(event.originator_id)
    (cancellation,) = sql.execute(
        "SELECT cancellation FROM approvals WHERE id = ?", (instance_id,)
    ).fetchone()
    settled = {
        **json.loads(cancellation),
        "state": event.state,
        "settled_at": event.at,
        "outcome": event.outcome,
    }
    sql.write(
        "UPDATE approvals SET cancellation = ?, version = ?, position = ? WHERE id = ?",
        (json_text(settled), event.originator_version, position, instance_id),
    )


def _task_released(sql: Sql, event: ApprovalInstance.TaskReleased, position: int) -> None:
    """The task back with its candidates (as `ApprovalInstance.release_task` does)."""
    instance_id = str(event.originator_id)
    (tasks,) = sql.execute("SELECT tasks FROM approvals WHERE id = ?", (instance_id,)).fetchone()
    released = [
        Task.of(t).released().as_dict() if t["id"] == event.task_id else t
        for t in json.loads(tasks)
    ]
    sql.write(
        "UPDATE approvals SET tasks = ?, version = ?, position = ? WHERE id = ?",
        (json_text(released), event.originator_version, position, instance_id),
    )


def _escalated(sql: Sql, event: ApprovalInstance.Escalated, position: int) -> None:
    """The escalation recorded: to whom and when, what it did to the task; the next reminder
    owed becomes due."""
    instance_id = str(event.originator_id)
    notices = _notices(sql, instance_id)
    (tasks,) = sql.execute("SELECT tasks FROM approvals WHERE id = ?", (instance_id,)).fetchone()
    moved = escalated_tasks(
        json.loads(tasks), event.task_id, event.mode, event.to_assignee, event.at
    )
    sql.write(
        "UPDATE approvals SET escalated_account_id = ?, escalated_at = ?, next_notice_at = ?, "
        "tasks = ?, version = ?, position = ? WHERE id = ?",
        (
            event.account_id,
            event.at,
            notices.next_at(escalated=True),
            json_text(moved),
            event.originator_version,
            position,
            instance_id,
        ),
    )


def _json_or_null(value: Any) -> str | None:
    return None if value is None else json_text(value)


def _instant(value: Any) -> datetime:
    instant = as_instant(value)
    assert instant is not None  # a NOT NULL column
    return instant


def _command_of(
    sql: Sql,
    event: ApprovalInstance.Submitted | ApprovalInstance.CommandHandled,
    position: int,
    local: BusinessValues,
) -> None:
    """The `approval_commands` row of a submission, or of a later command."""
    said: tuple[str, str | None, str, bool, str]
    if isinstance(event, ApprovalInstance.Submitted):
        said = ("submit", event.command_id, "SUBMITTED", True, "submitted")
    else:
        said = (event.command, event.command_id, event.outcome, event.accepted, event.reason)
    _command(sql, event, position, *said, local)


def _command(
    sql: Sql,
    event: Stamped,
    position: int,
    command: str,
    command_id: str | None,
    outcome: str,
    accepted: bool,
    reason: str,
    local: BusinessValues,
) -> None:
    """One row of `approval_commands`: the command, what it got, who and when."""
    sql.write(
        "INSERT INTO approval_commands (instance_id, version, tenant_id, position, command, "
        "command_id, outcome, accepted, reason, actor, at, local_date, local_hour, iso_week, "
        "iso_year) "
        "SELECT id, ?, tenant_id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM approvals WHERE id = ?",
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
            *local,
            str(event.originator_id),
        ),
    )


def overdue_instances(store: Store, now: datetime, limit: int) -> list[UUID]:
    """Instances still waiting for review past their deadline, the longest overdue first; one
    whose clock stands (paused) is never due."""
    rows = store.query(
        "SELECT id FROM approvals WHERE state = ? AND review_deadline_at <= ? "
        "AND paused_since IS NULL ORDER BY review_deadline_at LIMIT ?",
        (WAITING_REVIEW, now, limit),
    )
    return [UUID(row[0]) for row in rows]


def pauses_ending(store: Store, now: datetime, limit: int) -> list[UUID]:
    """Instances whose pause reached its `max_pause_seconds` by `now`, the longest first."""
    rows = store.query(
        "SELECT id FROM approvals WHERE pause_ends_at <= ? ORDER BY pause_ends_at LIMIT ?",
        (now, limit),
    )
    return [UUID(row[0]) for row in rows]


def instances_owing_notices(store: Store, now: datetime, limit: int) -> list[UUID]:
    """Instances still waiting for review, their deadline to come, with a reminder or the
    escalation due by `now` (`next_notice_at`), the longest due first."""
    rows = store.query(
        "SELECT id FROM approvals WHERE state = ? AND next_notice_at <= ? "
        "AND review_deadline_at > ? ORDER BY next_notice_at LIMIT ?",
        (WAITING_REVIEW, now, now, limit),
    )
    return [UUID(row[0]) for row in rows]


def overdue_backlog(
    store: Store, tenant_id: UUID | None, now: datetime
) -> tuple[int, datetime | None]:
    """How many instances wait past their deadline, and the oldest deadline (one tenant, or all)."""
    scope, params = tenant_scope(tenant_id)
    rows = store.query(
        "SELECT COUNT(*), MIN(review_deadline_at) FROM approvals "  # noqa: S608
        f"WHERE {scope} state = ? AND review_deadline_at <= ? AND paused_since IS NULL",
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
APPROVAL_LISTING = ListSpec(
    APPROVAL_ORDER,
    "-submitted_at",
    {
        "submitted_at": "submitted_at",
        "title": "title",
        "state": "state",
        "review_deadline_at": "review_deadline_at",
        "decided_at": "decided_at",
    },
    nullable=frozenset({"decided_at"}),
    searched=("search_text",),
)


class ApprovalRow(NamedTuple):
    """An instance as its `approvals` row keeps it: what the API answers of it (nested values
    as the API answers them, instants in them as text)."""

    id: str
    definition_id: str
    title: str
    form_data: dict[str, Any]
    applicant_id: str
    state: str
    material_version: int
    review_deadline_at: datetime
    review_deadline_offset_minutes: int | None
    deadline_policy: dict[str, Any]
    origin: dict[str, Any] | None
    allow_self_approval: bool
    submitted_at: datetime
    decided_at: datetime | None
    winning_command: dict[str, str | None] | None
    version: int
    observations: list[dict[str, Any]]
    contract_id: str | None
    extensions: list[dict[str, Any]]
    reminders: list[dict[str, int]]
    escalation: dict[str, Any] | None
    reminders_sent: list[dict[str, Any]]
    escalated_account_id: str | None
    escalated_at: datetime | None
    next_notice_at: datetime | None
    reviewers: dict[str, Any] | None
    tasks: list[dict[str, Any]]
    comments: list[dict[str, Any]]
    paused_since: datetime | None
    paused_seconds: float
    pauses: list[dict[str, Any]]
    pause_ends_at: datetime | None
    max_pause_seconds: int | None
    return_to: str
    levels: list[dict[str, Any]]
    votes: list[dict[str, Any]]
    current_level: int
    blocked_levels: list[dict[str, Any]]
    resubmits: str | None
    resubmitted_as: str | None
    cancellation_of: str | None
    cancellation: dict[str, Any] | None

    @classmethod
    def of(cls, row: Row) -> ApprovalRow:
        """The row as read: instants as either store gives them, JSON columns as text."""
        values = dict(zip(cls._fields, row, strict=True))
        for name in (
            "review_deadline_at",
            "submitted_at",
            "decided_at",
            "escalated_at",
            "next_notice_at",
            "paused_since",
            "pause_ends_at",
        ):
            values[name] = as_instant(values[name])
        for name in (
            "form_data",
            "deadline_policy",
            "observations",
            "extensions",
            "reminders",
            "reminders_sent",
            "tasks",
            "comments",
            "pauses",
            "levels",
            "votes",
            "blocked_levels",
        ):
            values[name] = json.loads(values[name])
        values["paused_seconds"] = float(values["paused_seconds"])
        for name in ("origin", "winning_command", "escalation", "reviewers", "cancellation"):
            values[name] = json_value(values[name])
        values["allow_self_approval"] = bool(values["allow_self_approval"])
        return cls(**values)

    @classmethod
    def of_aggregate(cls, instance: ApprovalInstance) -> ApprovalRow:
        """The instance as a command left it: what its row holds once the read model has
        applied the command's events."""
        escalated = instance.escalated
        return cls(
            id=str(instance.id),
            definition_id=instance.definition_id,
            title=instance.title,
            form_data=jsonable(instance.form_data),
            applicant_id=instance.applicant_id,
            state=instance.state,
            material_version=instance.material_version,
            review_deadline_at=instance.review_deadline_at,
            review_deadline_offset_minutes=instance.review_deadline_offset_minutes,
            deadline_policy=jsonable(instance.deadline_policy),
            origin=jsonable(instance.origin),
            allow_self_approval=instance.allow_self_approval,
            submitted_at=instance.submitted_at,
            decided_at=instance.decided_at,
            winning_command=instance.winning_command,
            version=instance.version,
            observations=jsonable(instance.observations),
            contract_id=instance.contract_id,
            extensions=jsonable(instance.extensions),
            reminders=jsonable(instance.reminders),
            escalation=jsonable(instance.escalation),
            reminders_sent=jsonable(instance.reminders_sent),
            escalated_account_id=escalated["account_id"] if escalated else None,
            escalated_at=escalated["at"] if escalated else None,
            next_notice_at=instance.next_notice_at,
            reviewers=jsonable(instance.reviewers),
            tasks=jsonable(instance.tasks),
            comments=jsonable(instance.comments),
            paused_since=instance.paused_since,
            paused_seconds=instance.paused_seconds,
            pauses=jsonable(instance.pauses),
            pause_ends_at=instance.pause_ends_at,
            max_pause_seconds=instance.max_pause_seconds,
            return_to=instance.return_to,
            levels=jsonable(instance.levels),
            votes=jsonable(instance.votes),
            current_level=instance.current_level,
            blocked_levels=jsonable(instance.blocked_levels),
            resubmits=instance.resubmits,
            resubmitted_as=instance.resubmitted_as,
            cancellation_of=instance.cancellation_of,
            cancellation=jsonable(instance.cancellation),
        )

    @property
    def review_deadline_at_local(self) -> datetime:
        """The review deadline at the offset it was given with; in UTC when none was."""
        return at_offset(self.review_deadline_at, self.review_deadline_offset_minutes)

    @property
    def review_levels(self) -> list[dict[str, Any]]:
        """The levels with their votes, approvals counted and tasks (as the API shows them)."""
        shown = []
        for level in self.levels:
            number = level["number"]
            votes = [v for v in self.votes if v["level"] == number]
            counted = [v for v in votes if v["vote"] == APPROVE_VOTE and not v["lapsed"]]
            tasks = [t["id"] for t in self.tasks if t.get("level", 1) == number]
            shown.append({**level, "votes": votes, "approvals": len(counted), "tasks": tasks})
        return shown

    @property
    def decided_by(self) -> str | None:
        """Who decided the instance (the deadline rule's actor for an expiry); None while it
        waits."""
        return self.winning_command["actor"] if self.winning_command else None


def approval_row(store: Store, tenant_id: UUID, instance_id: UUID) -> ApprovalRow | None:
    """The tenant's instance as its row keeps it; None if there is none (or another tenant's)."""
    rows = store.query(
        f"SELECT {', '.join(ApprovalRow._fields)} FROM approvals "  # noqa: S608
        "WHERE id = ? AND tenant_id = ?",
        (str(instance_id), str(tenant_id)),
    )
    return ApprovalRow.of(rows[0]) if rows else None


def approval_page(
    store: Store, tenant_id: UUID, wanted: ApprovalFilter, window: Window
) -> Slice[ApprovalRow]:
    """One page of the tenant's matching instances, newest submitted first, and how many
    match."""
    found = read_slice(
        store,
        "approvals",
        wanted.where(tenant_id),
        APPROVAL_LISTING,
        window,
        ", ".join(ApprovalRow._fields),
    )
    return found.mapped(ApprovalRow.of)
