"""The `activity` table: one row per command anyone sent, of every kind of aggregate, for
counting per hour, day and week on both stores (the hour and the day are text, in the
service's zone, computed when applied).

What no one commanded is left out: the tick's registrations and plan advances, and the
worker's attempts. The sweeper's expiries stay: they are the deadline rule's decisions.
An event that does not name its tenant finds it in `activity_subjects`, kept by the same
functions as the `operations` projection's `operation_subjects` (a table of its own, so that
either projection can be rebuilt alone).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from domain.approvals import DEADLINE_ACTOR, SUBMIT, ApprovalInstance
from domain.directory import Account, Definition
from domain.runs import Run
from domain.schedules import Schedule
from projections.business import BusinessTime
from projections.engine import EventClass, Handler, Projection, Sql, Stamped
from projections.operations import Subject, remember_subject, subjects_ddl

APPROVAL, SCHEDULE, RUN, ACCOUNT, DEFINITION = (
    "approval",
    "schedule",
    "run",
    "account",
    "definition",
)
SUBJECTS = "activity_subjects"
ACCEPTED = "ACCEPTED"  # the outcome of every command but an approval instance's
SERVICE = "system:"  # actors the service runs on its own (the tick, the worker, ...)
MANUAL_TRIGGER = "manual"
APPROVAL_COMMANDS = (
    ApprovalInstance.Approved,
    ApprovalInstance.Withdrawn,
    ApprovalInstance.Expired,
    ApprovalInstance.DeadlineExtended,
    ApprovalInstance.CallbackObserved,
    ApprovalInstance.CommandRejected,
)
# Later events of each aggregate (its tenant from `activity_subjects`) and the command's type.
LATER: dict[EventClass, tuple[str, str]] = {
    Schedule.Updated: (SCHEDULE, "update"),
    Schedule.Enabled: (SCHEDULE, "enable"),
    Schedule.Disabled: (SCHEDULE, "disable"),
    Schedule.Deleted: (SCHEDULE, "delete"),
    Schedule.RunRequested: (SCHEDULE, "run-now"),
    Run.Retried: (RUN, "retry"),
    Run.Cancelled: (RUN, "cancel"),
    Account.Renamed: (ACCOUNT, "rename"),
    Account.RolesChanged: (ACCOUNT, "change-roles"),
    Account.Deactivated: (ACCOUNT, "deactivate"),
    Account.Activated: (ACCOUNT, "activate"),
    Account.TokenIssued: (ACCOUNT, "issue-token"),
    Account.TokenRevoked: (ACCOUNT, "revoke-token"),
    Account.PasswordSet: (ACCOUNT, "set-password"),
    Definition.Updated: (DEFINITION, "update"),
    Definition.Published: (DEFINITION, "publish"),
    Definition.Unpublished: (DEFINITION, "unpublish"),
}
NameOf = Callable[[Any], tuple[str, str | None]]  # an aggregate's name and schedule id
# The events that create an aggregate: its type, the command's type, its name and schedule.
CREATED: dict[EventClass, tuple[str, str, NameOf]] = {
    ApprovalInstance.Submitted: (
        APPROVAL,
        SUBMIT,
        lambda e: (e.title, (e.origin or {}).get("schedule_id")),
    ),
    Schedule.Created: (
        SCHEDULE,
        "create",
        lambda e: (e.settings["name"], str(e.originator_id)),
    ),
    Run.Registered: (
        RUN,
        "register",
        lambda e: (e.frozen["schedule_name"], str(e.schedule_id)),
    ),
    Account.Registered: (ACCOUNT, "register", lambda e: (e.account_id, None)),
    Definition.Registered: (DEFINITION, "register", lambda e: (e.key, None)),
}
COLUMNS = (
    "position, tenant_id, aggregate_type, aggregate_id, version, actor, type, outcome, "
    "accepted, at, hour, day, iso_week, iso_year"
)


class ActivityProjection(Projection):
    """Every command sent, accepted or rejected: submissions, decisions, configuration, runs."""

    name = "activity"
    tables = ("activity", "activity_subjects")
    business: BusinessTime

    def __init__(self, zone: str) -> None:
        self.business = BusinessTime(zone)

    def ddl(self, sql: Sql) -> list[str]:
        ts = sql.timestamp_type
        return [
            "CREATE TABLE IF NOT EXISTS activity ("
            "position BIGINT PRIMARY KEY, tenant_id TEXT NOT NULL, aggregate_type TEXT NOT NULL, "
            "aggregate_id TEXT NOT NULL, version INTEGER NOT NULL, actor TEXT NOT NULL, "
            "type TEXT NOT NULL, outcome TEXT NOT NULL, accepted BOOLEAN NOT NULL, "
            f"at {ts} NOT NULL, hour TEXT NOT NULL, day TEXT NOT NULL, "
            "iso_week INTEGER NOT NULL, iso_year INTEGER NOT NULL)",
            "CREATE INDEX IF NOT EXISTS activity_by_tenant_hour ON activity (tenant_id, hour)",
            "CREATE INDEX IF NOT EXISTS activity_by_aggregate ON activity (aggregate_id, version)",
            subjects_ddl(SUBJECTS),
        ]

    def handlers(self) -> dict[EventClass, Handler]:
        zone = self.business
        later = {cls: _later(kind, type_, zone) for cls, (kind, type_) in LATER.items()}
        created = {cls: _created(kind, type_, zone) for cls, (kind, type_, _) in CREATED.items()}
        commands: dict[EventClass, Handler] = dict.fromkeys(
            APPROVAL_COMMANDS, _approval_command(zone)
        )
        return {**created, **commands, **later}

    def passes(self) -> list[dict[EventClass, Handler]]:
        """The subjects of the aggregates the batch created first (later commands read their
        tenant there), then the rows: a batch of submissions writes each table with one
        statement."""
        subjects = {cls: _remembered(name_of) for cls, (_, _, name_of) in CREATED.items()}
        return [subjects, self.handlers()]


Creation = (
    ApprovalInstance.Submitted
    | Schedule.Created
    | Run.Registered
    | Account.Registered
    | Definition.Registered
)


def _remembered(name_of: NameOf) -> Handler:
    """An event that created an aggregate: its subject is remembered (every run's too: a
    tick's may be retried or cancelled)."""

    def handler(sql: Sql, event: Creation, position: int) -> None:
        name, schedule_id = name_of(event)
        subject = Subject(str(event.tenant_id), name, schedule_id, None, None)
        remember_subject(sql, event, subject, SUBJECTS)

    return handler


def _created(aggregate_type: str, type_: str, zone: BusinessTime) -> Handler:
    """An event that created an aggregate, as a command: only a manual run is one, and a
    submission's outcome is `SUBMITTED`."""

    def handler(sql: Sql, event: Creation, position: int) -> None:
        if isinstance(event, Run.Registered) and event.trigger != MANUAL_TRIGGER:
            return
        if _unbidden(event.actor):
            return
        outcome = "SUBMITTED" if aggregate_type == APPROVAL else ACCEPTED
        sql.write(
            f"INSERT INTO activity ({COLUMNS}) "  # noqa: S608
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                position,
                str(event.tenant_id),
                aggregate_type,
                str(event.originator_id),
                event.originator_version,
                event.actor,
                type_,
                outcome,
                True,
                event.at,
                *_business_time(zone, event.at),
            ),
        )

    return handler


def _later(aggregate_type: str, type_: str, zone: BusinessTime) -> Handler:
    """A later accepted command: its tenant is its aggregate's, remembered at its creation."""

    def handler(sql: Sql, event: Stamped, position: int) -> None:
        if not _unbidden(event.actor):
            said = (aggregate_type, type_, ACCEPTED, True)
            _insert_later(sql, event, position, *said, zone)

    return handler


def _approval_command(zone: BusinessTime) -> Handler:
    """A command an instance handled, with the outcome and acceptance it recorded."""

    def handler(sql: Sql, event: ApprovalInstance.CommandHandled, position: int) -> None:
        if not _unbidden(event.actor):
            said = (APPROVAL, event.command, event.outcome, event.accepted)
            _insert_later(sql, event, position, *said, zone)

    return handler


def _insert_later(
    sql: Sql,
    event: Stamped,
    position: int,
    aggregate_type: str,
    type_: str,
    outcome: str,
    accepted: bool,
    zone: BusinessTime,
) -> None:
    sql.write(
        f"INSERT INTO activity ({COLUMNS}) "  # noqa: S608
        "SELECT ?, tenant_id, ?, id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM activity_subjects "
        "WHERE id = ?",
        (
            position,
            aggregate_type,
            event.originator_version,
            event.actor,
            type_,
            outcome,
            accepted,
            event.at,
            *_business_time(zone, event.at),
            str(event.originator_id),
        ),
    )


def _unbidden(actor: str) -> bool:
    """Whether the service acted on its own (the tick, the worker), not on anyone's command;
    the sweeper's expiries count, as the deadline rule's decisions."""
    return actor.startswith(SERVICE) and actor != DEADLINE_ACTOR


def _business_time(zone: BusinessTime, at: datetime) -> tuple[str, str, int, int]:
    """The business hour (`2026-10-01 09:00`), day (`2026-10-01`), ISO week and ISO year of an
    instant in the service's zone."""
    day, hour, week, year = zone.of(at)
    return f"{day} {hour:02d}:00", day, week, year
