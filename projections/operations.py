"""`operations`: the tenant's operations audit (requirement 002), read from the log.

One row per event that changed configuration or started (or stopped) work, with who, when,
what kind and which aggregate; `operation_subjects` is the projection's bookkeeping (each
aggregate's tenant and what a later event's row needs). Tick registrations, the worker's
attempts, submissions and approval decisions are not operations.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple
from uuid import UUID

from cronledger.persistence.store import Store, as_instant
from domain.approvals import ApprovalInstance
from domain.directory import Account, Definition, Tenant
from domain.messages import N_, Message
from domain.reason_codes import recorded_words
from domain.runs import Run
from domain.schedules import Schedule, runs_listed
from projections.business import BusinessTime
from projections.engine import EventClass, Handler, Projection, Sql, Stamped
from projections.json_columns import json_text, json_value
from projections.keyset import (
    ListSpec,
    Order,
    Slice,
    Window,
    count_up_to,
    read_slice,
    searched_where,
    walk,
)

# Aggregate types with a view of their own.
SCHEDULE, RUN, APPROVAL, DEFINITION = "schedule", "run", "approval", "definition"
TENANT = "tenant"
MANUAL_TRIGGER = "manual"
KINDS = (
    "account.registered",
    "account.renamed",
    "account.roles_changed",
    "account.deactivated",
    "account.activated",
    "account.token_issued",
    "account.token_revoked",
    "account.password_set",
    "account.password_changed",
    "account.password_reset",
    "definition.registered",
    "definition.updated",
    "definition.published",
    "definition.unpublished",
    "schedule.created",
    "schedule.updated",
    "schedule.enabled",
    "schedule.disabled",
    "schedule.auto_paused",
    "schedule.deleted",
    "run.manual",
    "run.retried",
    "run.cancelled",
    "approval.deadline_extended",
    "approval.deadline_paused",
    "approval.deadline_resumed",
    "approval.revised",
    "approval.resubmitted",
    "approval.cancellation_requested",
    "tenant.schedules_paused",
    "tenant.schedules_resumed",
    "tenant.exported",
)
COLUMNS = "position, at, actor, kind, aggregate_type, aggregate_id, schedule_id, summary_words"
# What a plain operation's summary says: its aggregate, named, and what happened to it.
PLAIN = {
    "account.deactivated": N_("account {name} deactivated"),
    "account.activated": N_("account {name} activated"),
    "definition.published": N_("definition {name} published"),
    "definition.unpublished": N_("definition {name} unpublished"),
    "schedule.deleted": N_("schedule {name!r} deleted"),
    "run.retried": N_("a run of schedule {name!r} retried"),
    "run.cancelled": N_("a run of schedule {name!r} cancelled"),
}
NONE = Message("none")  # no roles
SUBJECTS = "operation_subjects"


class Subject(NamedTuple):
    """What `operation_subjects` keeps of an aggregate for the rows of its later events."""

    tenant_id: str
    name: str
    schedule_id: str | None
    enabled: bool | None
    settings_digest: str | None


@dataclass(frozen=True)
class Row:
    """One operation, as its handler works it out; its kind starts with its aggregate's type."""

    kind: str
    summary: Message

    @property
    def aggregate_type(self) -> str:
        return self.kind.partition(".")[0]


class Operation(NamedTuple):
    """One row of `operations`, as the API lists it; its summary is a `Message`, so that the
    console says it in its reader's language (the API answers its English)."""

    position: int
    at: datetime
    actor: str
    kind: str
    aggregate_type: str
    aggregate_id: str
    schedule_id: str | None
    summary: Message


@dataclass(frozen=True)
class OperationFilter:
    """Which operations of one tenant to list: by actor, kind, `since <= at < until`, and the
    aggregate they were done to."""

    tenant_id: UUID
    actor: str | None = None
    kind: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    aggregate_id: str | None = None


class OperationsProjection(Projection):
    """The operations audit: configuration changes (the service's auto-pauses too), manual runs,
    retries, cancels, extensions."""

    name = "operations"
    tables = ("operations", "operation_subjects")
    revision = 2  # 0.11.0: settings digests of schedules saved with `skip` read `skip_while_open`
    # Each summary is kept as its template and values (JSON): the console says it in its reader's
    # language, the API answers its English. Rows of the older layout are rebuilt on upgrade.
    business: BusinessTime

    def __init__(self, zone: str) -> None:
        self.business = BusinessTime(zone)

    def ddl(self, sql: Sql) -> list[str]:
        ts = sql.timestamp_type
        return [
            "CREATE TABLE IF NOT EXISTS operations ("
            f"position BIGINT PRIMARY KEY, tenant_id TEXT NOT NULL, at {ts} NOT NULL, "
            "actor TEXT NOT NULL, kind TEXT NOT NULL, aggregate_type TEXT NOT NULL, "
            "aggregate_id TEXT NOT NULL, schedule_id TEXT, summary_words TEXT NOT NULL, "
            f"{BusinessTime.ddl()})",
            "CREATE INDEX IF NOT EXISTS operations_by_tenant ON operations (tenant_id, position)",
            "CREATE INDEX IF NOT EXISTS operations_by_time ON operations (tenant_id, at)",
            subjects_ddl(SUBJECTS),
        ]

    def handlers(self) -> dict[EventClass, Handler]:
        zone = self.business
        return {
            Account.Registered: self.account_registered,
            Account.Renamed: _later(_renamed, zone),
            Account.RolesChanged: _later(_roles_changed, zone),
            Account.Deactivated: _later(_plain("account.deactivated"), zone),
            Account.Activated: _later(_plain("account.activated"), zone),
            Account.TokenIssued: _later(_token("issued"), zone),
            Account.TokenRevoked: _later(_token("revoked"), zone),
            Account.PasswordSet: _later(_password_set, zone),
            Definition.Registered: self.definition_registered,
            Definition.Updated: _later(_definition_updated, zone),
            Definition.Published: _later(_plain("definition.published"), zone),
            Definition.Unpublished: _later(_plain("definition.unpublished"), zone),
            Schedule.Created: self.schedule_created,
            Schedule.Updated: self.schedule_updated,
            Schedule.Enabled: self.schedule_switched,
            Schedule.Disabled: self.schedule_switched,
            Schedule.AutoPaused: self.schedule_auto_paused,
            Schedule.Deleted: _later(_plain("schedule.deleted"), zone),
            Run.Registered: self.run_registered,
            Run.Retried: _later(_plain("run.retried"), zone),
            Run.Cancelled: _later(_plain("run.cancelled"), zone),
            ApprovalInstance.Submitted: self.approval_submitted,
            ApprovalInstance.DeadlineExtended: _later(_deadline_extended, zone),
            ApprovalInstance.DeadlinePaused: _later(_deadline_paused, zone),
            ApprovalInstance.DeadlineResumed: _later(_deadline_resumed, zone),
            ApprovalInstance.Revised: _later(_revised, zone),
            ApprovalInstance.Resubmitted: _later(_linked("approval.resubmitted"), zone),
            ApprovalInstance.CancellationRequested: _later(
                _linked("approval.cancellation_requested"), zone
            ),
            Tenant.SchedulesPaused: _tenant_pause("paused", zone),
            Tenant.SchedulesResumed: _tenant_pause("resumed", zone),
            Tenant.Exported: _tenant_export(zone),
        }

    def account_registered(self, sql: Sql, event: Account.Registered, position: int) -> None:
        subject = Subject(str(event.tenant_id), event.account_id, None, None, None)
        remember_subject(sql, event, subject)
        summary = Message(
            "account {account} registered with roles {roles}",
            account=event.account_id,
            roles=_roles(sorted(set(event.roles))),
        )
        _insert(sql, event, position, self.business, subject, Row("account.registered", summary))

    def definition_registered(self, sql: Sql, event: Definition.Registered, position: int) -> None:
        subject = Subject(str(event.tenant_id), event.key, None, None, None)
        remember_subject(sql, event, subject)
        summary = Message(
            "definition {key} registered as {name!r}, unpublished", key=event.key, name=event.name
        )
        row = Row("definition.registered", summary)
        _insert(sql, event, position, self.business, subject, row)

    def schedule_created(self, sql: Sql, event: Schedule.Created, position: int) -> None:
        name = event.settings["name"]
        subject = Subject(
            str(event.tenant_id),
            name,
            str(event.originator_id),
            event.enabled,
            _digest(event.settings),
        )
        remember_subject(sql, event, subject)
        if event.enabled:
            summary = Message("schedule {name!r} created, enabled", name=name)
        else:
            summary = Message("schedule {name!r} created, disabled", name=name)
        _insert(sql, event, position, self.business, subject, Row("schedule.created", summary))

    def schedule_updated(self, sql: Sql, event: Schedule.Updated, position: int) -> None:
        """`schedule.enabled` or `.disabled` when the switch moved, else `schedule.updated`."""
        before = subject_of(sql, event)
        if before is None:
            return
        digest = _digest(event.settings)
        after = before._replace(
            name=event.settings["name"], enabled=event.enabled, settings_digest=digest
        )
        sql.write(
            "UPDATE operation_subjects SET name = ?, enabled = ?, settings_digest = ? WHERE id = ?",
            (after.name, after.enabled, digest, str(event.originator_id)),
        )
        changed = digest != before.settings_digest
        row = _schedule_change(after, before.enabled, changed)
        _insert(sql, event, position, self.business, after, row)

    def schedule_switched(
        self, sql: Sql, event: Schedule.Enabled | Schedule.Disabled, position: int
    ) -> None:
        """`schedule.enabled` or `.disabled`, as the event names it."""
        before = subject_of(sql, event)
        if before is None:
            return
        after = before._replace(enabled=isinstance(event, Schedule.Enabled))
        sql.write(
            "UPDATE operation_subjects SET enabled = ? WHERE id = ?",
            (after.enabled, str(event.originator_id)),
        )
        row = _schedule_change(after, before.enabled, False)
        _insert(sql, event, position, self.business, after, row)

    def schedule_auto_paused(self, sql: Sql, event: Schedule.AutoPaused, position: int) -> None:
        """`schedule.auto_paused`: the service disabled it, naming the failed cycles."""
        before = subject_of(sql, event)
        if before is None:
            return
        after = before._replace(enabled=False)
        sql.write(
            "UPDATE operation_subjects SET enabled = ? WHERE id = ?",
            (False, str(event.originator_id)),
        )
        summary = Message(
            "schedule {name!r} paused: {count} cycle(s) in a row ended without launching: {runs}",
            name=after.name,
            count=len(event.runs),
            runs=runs_listed(event.runs),
        )
        row = Row("schedule.auto_paused", summary)
        _insert(sql, event, position, self.business, after, row)

    def run_registered(self, sql: Sql, event: Run.Registered, position: int) -> None:
        """Every run is remembered (a tick's may be retried); only a manual one is an operation."""
        schedule_name = event.frozen["schedule_name"]
        subject = Subject(str(event.tenant_id), schedule_name, str(event.schedule_id), None, None)
        remember_subject(sql, event, subject)
        if event.trigger != MANUAL_TRIGGER:
            return
        summary = Message(
            "manual run of schedule {name!r} at {at}",
            name=schedule_name,
            at=_instant(event.planned_at),
        )
        _insert(sql, event, position, self.business, subject, Row("run.manual", summary))

    @staticmethod
    def approval_submitted(sql: Sql, event: ApprovalInstance.Submitted, position: int) -> None:
        origin = event.origin or {}
        subject = Subject(str(event.tenant_id), event.title, origin.get("schedule_id"), None, None)
        remember_subject(sql, event, subject)


Describe = Callable[[Subject, Any], Row]


PAUSES = {
    "paused": N_("every schedule of the tenant paused: {reason}"),
    "resumed": N_("every schedule of the tenant resumed: {reason}"),
}


def _tenant_pause(verb: str, zone: BusinessTime) -> Handler:
    """A tenant's event: the tenant is its own aggregate, named by its id."""

    def handler(
        sql: Sql, event: Tenant.SchedulesPaused | Tenant.SchedulesResumed, position: int
    ) -> None:
        tenant_id = str(event.originator_id)
        summary = Message(PAUSES[verb], reason=event.reason)
        row = Row(f"tenant.schedules_{verb}", summary)
        subject = Subject(tenant_id, "", None, None, None)
        _insert(sql, event, position, zone, subject, row)

    return handler


# What each list is called in an export's summary (domain/exports.py's LISTINGS).
EXPORTED = {
    "runs": N_("the execution log"),
    "schedules": N_("the schedules list"),
    "operations": N_("the operations audit"),
}
EXPORTS = {
    True: N_("{listing} exported as `{format}`: {rows} rows; filters: {filters}"),
    False: N_("{listing} exported as `{format}`: {rows} rows, unfiltered"),
}


def _tenant_export(zone: BusinessTime) -> Handler:
    """An export: which list, how many rows, in which format, with which filters (each as
    `name=value`, a code, in the order the request named them)."""

    def handler(sql: Sql, event: Tenant.Exported, position: int) -> None:
        filters = ", ".join(f"`{name}={value}`" for name, value in event.filters.items())
        summary = Message(
            EXPORTS[bool(filters)],
            listing=Message(EXPORTED[event.listing]),
            format=event.format,
            rows=event.rows,
            filters=filters,
        )
        subject = Subject(str(event.originator_id), "", None, None, None)
        _insert(sql, event, position, zone, subject, Row("tenant.exported", summary))

    return handler


def _later(describe: Describe, zone: BusinessTime) -> Handler:
    """A handler for an event that does not name its tenant: the subject remembered does."""

    def handler(sql: Sql, event: Stamped, position: int) -> None:
        subject = subject_of(sql, event)
        if subject is not None:
            _insert(sql, event, position, zone, subject, describe(subject, event))

    return handler


def _plain(kind: str) -> Describe:
    """An operation whose summary is its aggregate, named, and what happened to it."""

    def describe(subject: Subject, event: object) -> Row:
        return Row(kind, Message(PLAIN[kind], name=subject.name))

    return describe


def _roles(roles: Sequence[str]) -> str:
    return ", ".join(roles) or NONE


def _renamed(subject: Subject, event: Account.Renamed) -> Row:
    summary = Message(
        "account {account} renamed to {name!r}", account=subject.name, name=event.name
    )
    return Row("account.renamed", summary)


def _roles_changed(subject: Subject, event: Account.RolesChanged) -> Row:
    summary = Message(
        "account {account} roles {old} -> {new}",
        account=subject.name,
        old=_roles(event.old),
        new=_roles(event.new),
    )
    return Row("account.roles_changed", summary)


TOKENS = {
    "issued": N_("an API token of account {account} issued"),
    "revoked": N_("an API token of account {account} revoked"),
}


def _token(verb: str) -> Describe:
    """Token ids are shown once, to whoever issues a token: the summary leaves them out."""

    def describe(subject: Subject, event: object) -> Row:
        return Row(f"account.token_{verb}", Message(TOKENS[verb], account=subject.name))

    return describe


PASSWORDS = {
    ("set", False): N_("password of account {account} set"),
    ("set", True): N_("one-time password of account {account} set (changed at the next sign-in)"),
    ("changed", False): N_("password of account {account} changed"),
    ("reset", False): N_("password of account {account} reset"),
    ("reset", True): N_(
        "password of account {account} reset to a one-time password (changed at the next sign-in)"
    ),
}


def _password_set(subject: Subject, event: Account.PasswordSet) -> Row:
    """Never the password: only that it was set, changed or reset."""
    template = PASSWORDS[event.kind, event.must_change and event.kind != "changed"]
    return Row(f"account.password_{event.kind}", Message(template, account=subject.name))


def _definition_updated(subject: Subject, event: Definition.Updated) -> Row:
    summary = Message(
        "definition {key} updated: name {name!r}, review window {seconds} s",
        key=subject.name,
        name=event.name,
        seconds=event.review_window_seconds,
    )
    return Row("definition.updated", summary)


def _deadline_extended(subject: Subject, event: ApprovalInstance.DeadlineExtended) -> Row:
    summary = Message(
        "review deadline of {title!r} extended to {deadline}: {reason}",
        title=subject.name,
        deadline=_instant(event.payload["new_deadline_at"]),
        reason=event.reason,
    )
    return Row("approval.deadline_extended", summary)


def _deadline_paused(subject: Subject, event: ApprovalInstance.DeadlinePaused) -> Row:
    summary = Message(
        "review clock of {title!r} paused: {reason}",
        title=subject.name,
        reason=event.payload["reason"],
    )
    return Row("approval.deadline_paused", summary)


def _deadline_resumed(subject: Subject, event: ApprovalInstance.DeadlineResumed) -> Row:
    """A person's resume, or the deadline rule's at the longest pause (its reason in words)."""
    summary = Message(
        "review clock of {title!r} resumed, deadline moved from {old} to {new}: {reason}",
        title=subject.name,
        old=_instant(event.clock["old_deadline_at"]),
        new=_instant(event.clock["new_deadline_at"]),
        reason=recorded_words(event.reason_code, event.reason_params, event.reason),
    )
    return Row("approval.deadline_resumed", summary)


def _revised(subject: Subject, event: ApprovalInstance.Revised) -> Row:
    """A revise: the material an instance is decided on changed, its earlier votes lapsed."""
    summary = Message(
        "material of {title!r} revised to version {version} ({lapsed} vote(s) lapsed): {reason}",
        title=subject.name,
        version=event.payload["material_version"],
        lapsed=event.lapsed_votes,
        reason=event.payload["reason"],
    )
    return Row("approval.revised", summary)


LINKED = {
    "approval.resubmitted": N_("{title!r} resubmitted as instance {linked_id}: {reason}"),
    "approval.cancellation_requested": N_(
        "cancellation of {title!r} requested as instance {linked_id}: {reason}"
    ),
}


def _linked(kind: str) -> Describe:
    """A resubmit, or a cancellation request: a person's command that starts a new instance,
    with their reason (docs/approvals.md#resubmit-and-cancel)."""

    def describe(subject: Subject, event: ApprovalInstance.CommandHandled) -> Row:
        linked_id = getattr(event, "linked_id", "")
        summary = Message(
            LINKED[kind], title=subject.name, linked_id=linked_id, reason=event.payload["reason"]
        )
        return Row(kind, summary)

    return describe


SCHEDULE_CHANGES = {
    (None, True): N_("schedule {name!r} settings changed"),
    (None, False): N_("schedule {name!r} settings saved unchanged"),
    (True, False): N_("schedule {name!r} enabled"),
    (True, True): N_("schedule {name!r} enabled with new settings"),
    (False, False): N_("schedule {name!r} disabled"),
    (False, True): N_("schedule {name!r} disabled with new settings"),
}


def _schedule_change(after: Subject, was_enabled: bool | None, settings_changed: bool) -> Row:
    """`schedule.updated`, or `.enabled`/`.disabled` when the switch moved (`None`: it did not)."""
    switched = None if after.enabled == was_enabled else after.enabled
    summary = Message(SCHEDULE_CHANGES[switched, settings_changed], name=after.name)
    kind = (
        "schedule.updated"
        if switched is None
        else f"schedule.{'enabled' if switched else 'disabled'}"
    )
    return Row(kind, summary)


def subjects_ddl(table: str) -> str:
    """A table of subjects, keyed by aggregate id (`activity` keeps one of its own)."""
    return (
        f"CREATE TABLE IF NOT EXISTS {table} ("
        "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, name TEXT NOT NULL, "
        "schedule_id TEXT, enabled BOOLEAN, settings_digest TEXT)"
    )


def remember_subject(sql: Sql, event: Stamped, subject: Subject, table: str = SUBJECTS) -> None:
    """Keep the subject of the aggregate an event created."""
    sql.write(
        f"INSERT INTO {table} (id, tenant_id, name, schedule_id, enabled, "  # noqa: S608
        "settings_digest) VALUES (?, ?, ?, ?, ?, ?)",
        (str(event.originator_id), *subject),
    )


def subject_of(sql: Sql, event: Stamped, table: str = SUBJECTS) -> Subject | None:
    """The aggregate's subject; None for one of no tenant's (an event a handler never expects)."""
    row = sql.execute(
        f"SELECT tenant_id, name, schedule_id, enabled, settings_digest FROM {table} "  # noqa: S608
        "WHERE id = ?",
        (str(event.originator_id),),
    ).fetchone()
    if row is None:
        return None
    tenant_id, name, schedule_id, enabled, digest = row
    return Subject(tenant_id, name, schedule_id, None if enabled is None else bool(enabled), digest)


def _insert(
    sql: Sql, event: Stamped, position: int, zone: BusinessTime, subject: Subject, row: Row
) -> None:
    """The operation's row, with the business time of its instant."""
    sql.write(
        "INSERT INTO operations (position, tenant_id, at, actor, kind, aggregate_type, "
        "aggregate_id, schedule_id, summary_words, local_date, local_hour, iso_week, iso_year) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            position,
            subject.tenant_id,
            event.at,
            event.actor,
            row.kind,
            row.aggregate_type,
            str(event.originator_id),
            subject.schedule_id,
            json_text(row.summary.as_data()),
            *zone.of(event.at),
        ),
    )


def _digest(settings: Mapping[str, Any]) -> str:
    """A fingerprint of a schedule's settings, to tell an edit from a bare switch."""
    text = json.dumps(settings, sort_keys=True, ensure_ascii=False, default=_plain_value)
    return hashlib.sha256(text.encode()).hexdigest()


def _plain_value(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else str(value)


def _instant(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


# Newest first: the operations' log positions are unique.
OPERATION_ORDER = Order("operations", "position", descending=True)
OPERATION_LISTING = ListSpec(
    OPERATION_ORDER,
    "-at",
    {"at": "position", "actor": "actor", "kind": "kind"},
    tie="position",
    searched=("LOWER(summary_words)", "LOWER(actor)"),  # the words and the names in them
)


def operation_page(store: Store, wanted: OperationFilter, window: Window) -> Slice[Operation]:
    """One page of the tenant's operations matching `wanted` (newest first unless sorted),
    and how many."""
    where = _where(wanted)
    found = read_slice(store, "operations", where, OPERATION_LISTING, window, columns=COLUMNS)
    return found.mapped(_operation)


def operation_count(store: Store, wanted: OperationFilter, search: str | None, cap: int) -> int:
    """How many of the tenant's operations match, up to `cap + 1`."""
    where = searched_where(_where(wanted), OPERATION_LISTING, search)
    return count_up_to(store, "operations", where, cap)


def operation_batches(
    store: Store, wanted: OperationFilter, search: str | None, limit: int
) -> Iterator[list[Operation]]:
    """The tenant's matching operations, at most `limit`, newest first, a batch at a time (an
    export's)."""
    where = searched_where(_where(wanted), OPERATION_LISTING, search)
    for rows in walk(store, "operations", where, OPERATION_ORDER, COLUMNS, limit):
        yield [_operation(row) for row in rows]


def _where(wanted: OperationFilter) -> tuple[str, list[Any]]:
    conditions = [
        ("tenant_id = ?", str(wanted.tenant_id)),
        ("actor = ?", wanted.actor),
        ("kind = ?", wanted.kind),
        ("at >= ?", wanted.since),
        ("at < ?", wanted.until),
        ("aggregate_id = ?", wanted.aggregate_id),
    ]
    kept = [(condition, value) for condition, value in conditions if value is not None]
    return " AND ".join(c for c, _ in kept), [v for _, v in kept]


def _operation(row: tuple[Any, ...]) -> Operation:
    position, at, actor, kind, aggregate_type, aggregate_id, schedule_id, words = row
    instant = as_instant(at)
    assert instant is not None
    summary = Message.from_data(json_value(words))
    return Operation(
        int(position), instant, actor, kind, aggregate_type, aggregate_id, schedule_id, summary
    )
