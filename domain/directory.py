"""The directory: tenants, accounts with their API tokens, and process definitions."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.errors import InvalidState, ValidationFailed, VersionConflict
from domain.exports import check_export
from domain.messages import Message
from domain.permissions import ROLES, permissions_of
from domain.reasons import ReasonedEvent, given_no_reason

NAMESPACE = UUID("6f1d3c8e-52a7-4d8b-9a43-0c5e1f2b7d90")
PUBLIC_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
TENANT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
SYSTEM_ACTOR = "system"  # the service's own actors are "system" and "system:<part>"
ADMIN_ROLE = "admin"
UNPUBLISHED_REVISION = 0  # a definition never published has no revision yet
FIRST_REVISION = 1  # what a definition of release 0.1.0 counts as
MAX_REMINDERS = 5  # reminders one definition may carry
Reminder = dict[str, int]  # {"before_seconds": N}: N seconds before an instance's deadline
# {"after_seconds": N, "account_id": whom, "mode": "reassign" or "notify"}: after N s waiting;
# saved before release 0.13.0 without "mode" (it then only notifies).
Escalation = dict[str, Any]


def tenant_uuid(name: str) -> UUID:
    return uuid5(NAMESPACE, f"tenant/{name}")


def account_uuid(tenant_id: UUID, account_id: str) -> UUID:
    return uuid5(NAMESPACE, f"tenant/{tenant_id}/account/{account_id}")


def definition_uuid(tenant_id: UUID, key: str) -> UUID:
    return uuid5(NAMESPACE, f"tenant/{tenant_id}/definition/{key}")


def token_uuid(secret: str) -> UUID:
    """Tokens are found by a hash of their secret; the secret itself is never stored."""
    digest = hashlib.sha256(secret.encode()).hexdigest()
    return uuid5(NAMESPACE, f"token/{digest}")


def check_expected_version(kind: str, actual: int, expected: int | None) -> None:
    if expected is not None and expected != actual:
        raise VersionConflict(kind, expected, actual)


def no_such_accounts(account_ids: Sequence[str]) -> Message:
    return Message("the tenant has no account {ids}", ids=", ".join(account_ids))


def no_such_groups(keys: Sequence[str]) -> Message:
    return Message("the tenant has no group {keys}", keys=", ".join(keys))


def check_roles(roles: list[str]) -> None:
    unknown = sorted(set(roles) - set(ROLES))
    if unknown:
        raise ValidationFailed.of(
            "roles",
            Message(
                "unknown role(s) {unknown}; known: {known}",
                unknown=", ".join(unknown),
                known=", ".join(sorted(ROLES)),
            ),
        )


def check_account_id(account_id: str, field: str = "id") -> None:
    """A new account's id: 1-64 plain characters, never starting like the service's actors."""
    if not PUBLIC_ID.fullmatch(account_id):
        raise ValidationFailed.of(field, Message("use 1-64 letters, digits, '.', '_', '@' or '-'"))
    if account_id.lower().startswith(SYSTEM_ACTOR):
        raise ValidationFailed.of(
            field,
            Message(
                "ids starting with '{prefix}' are reserved for the service itself",
                prefix=SYSTEM_ACTOR,
            ),
        )


def check_notices(
    reminders: Sequence[Mapping[str, int]],
    escalation: Mapping[str, Any] | None,
    review_window_seconds: int,
) -> None:
    """At most MAX_REMINDERS reminders, each at another offset after 0 and within the review
    window; an escalation after some time (its account is the directory's to check)."""
    errors: dict[str, list[str]] = {}
    if len(reminders) > MAX_REMINDERS:
        errors["reminders"] = [Message("at most {count} reminders", count=MAX_REMINDERS)]
    seen: set[int] = set()
    for index, reminder in enumerate(reminders):
        before = reminder["before_seconds"]
        field = f"reminders.{index}.before_seconds"
        if not 0 < before < review_window_seconds:
            errors[field] = [
                Message(
                    "must be more than 0 and less than the review window ({seconds} s)",
                    seconds=review_window_seconds,
                )
            ]
        elif before in seen:
            errors[field] = [
                Message(
                    "another reminder is already {seconds} s before the deadline", seconds=before
                )
            ]
        seen.add(before)
    if escalation is not None:
        errors.update(escalation_problems(escalation))
    if errors:
        raise ValidationFailed(errors)


def escalation_problems(escalation: Mapping[str, Any]) -> dict[str, list[str]]:
    """An escalation waits some time and names one target: an account, or the leader of a
    group (walking up its parents)."""
    problems: dict[str, list[str]] = {}
    if escalation["after_seconds"] <= 0:
        problems["escalation.after_seconds"] = [Message("must be more than 0")]
    targets = [escalation.get("account_id"), escalation.get("group_leader_of")]
    if sum(target is not None for target in targets) != 1:
        problems["escalation"] = [Message("name one target: account_id or group_leader_of")]
    return problems


def notice_terms(
    reminders: Sequence[Mapping[str, int]], escalation: Mapping[str, Any] | None
) -> tuple[list[Reminder], Escalation | None]:
    """Reminders and an escalation as events keep them: plain lists and objects."""
    kept = [{"before_seconds": int(reminder["before_seconds"])} for reminder in reminders]
    if escalation is None:
        return kept, None
    return kept, {
        "after_seconds": int(escalation["after_seconds"]),
        "account_id": escalation.get("account_id"),
        "group_leader_of": escalation.get("group_leader_of"),
        "mode": str(escalation.get("mode", "reassign")),
    }


def check_admin_remains(account_id: str, active_admins: Collection[str]) -> None:
    """A tenant keeps at least one active admin once `account_id` stops being one."""
    if not set(active_admins) - {account_id}:
        raise InvalidState(
            Message(
                "account {account} is the tenant's last active admin: "
                "make another account admin first",
                account=account_id,
            )
        )


class TenantRegistry(Aggregate):
    """The one list of every tenant, so an auditor can look an id up across them."""

    @staticmethod
    def create_id() -> UUID:
        return uuid5(NAMESPACE, "tenants")

    class Started(Aggregate.Created):
        at: datetime
        actor: str

    @event(Started)
    def __init__(self, at: datetime, actor: str) -> None:
        self.tenants: dict[str, UUID] = {}

    class TenantAdded(Aggregate.Event):
        name: str
        tenant_id: UUID
        at: datetime
        actor: str

    @event(TenantAdded)
    def add(self, name: str, tenant_id: UUID, at: datetime, actor: str) -> None:
        self.tenants[name] = tenant_id


def schedules_never_paused(state: dict[str, Any]) -> None:
    """Upcast of a tenant snapshot from before pauses: its schedules were never paused."""
    state["schedules_pause"] = None


class Tenant(Aggregate):
    """A tenant and the index of what it holds, in creation order.

    Version 2 records whether the tick holds all its schedules (`schedules_pause`: when, who
    and why, or None); version 3 the keys of its groups (`group_keys`, live or deleted);
    version 4 the key of its default working calendar (`default_calendar`, or None).
    """

    class_version = 4

    upcast_v1_v2 = staticmethod(schedules_never_paused)

    @staticmethod
    def upcast_v2_v3(state: dict[str, Any]) -> None:
        """A snapshot from before groups: the tenant had none."""
        state["group_keys"] = []

    @staticmethod
    def upcast_v3_v4(state: dict[str, Any]) -> None:
        """A snapshot from before default calendars: the tenant had none."""
        state["default_calendar"] = None

    @staticmethod
    def create_id(name: str) -> UUID:
        return tenant_uuid(name)

    class Registered(Aggregate.Created):
        name: str
        at: datetime
        actor: str

    @event(Registered)
    def __init__(self, name: str, at: datetime, actor: str) -> None:
        self.name = name
        self.account_ids: list[str] = []
        self.definition_ids: list[str] = []
        self.group_keys: list[str] = []
        self.schedules_pause: dict[str, Any] | None = None
        self.default_calendar: str | None = None

    def choose_default_calendar(self, key: str | None, at: datetime, actor: str) -> None:
        """Make `key` the tenant's default working calendar (None: none); choosing the one in
        force records nothing."""
        if key != self.default_calendar:
            self._default_calendar_chosen(calendar_key=key, at=at, actor=actor)

    class DefaultCalendarChosen(Aggregate.Event):
        """The calendar whose working days the analysts' `working_days` table lists."""

        calendar_key: str | None
        at: datetime
        actor: str

    @event(DefaultCalendarChosen)
    def _default_calendar_chosen(self, calendar_key: str | None, at: datetime, actor: str) -> None:
        self.default_calendar = calendar_key

    def pause_schedules(self, at: datetime, actor: str, reason: str) -> None:
        """Hold every schedule of the tenant from the tick; pausing a paused tenant records
        nothing."""
        if self.schedules_pause is None:
            self._schedules_paused(at=at, actor=actor, reason=reason)

    def resume_schedules(self, at: datetime, actor: str, reason: str) -> None:
        """Let the tick register the tenant's cycles again; resuming a running one records
        nothing."""
        if self.schedules_pause is not None:
            self._schedules_resumed(at=at, actor=actor, reason=reason)

    class SchedulesPaused(Aggregate.Event):
        at: datetime
        actor: str
        reason: str

    @event(SchedulesPaused)
    def _schedules_paused(self, at: datetime, actor: str, reason: str) -> None:
        self.schedules_pause = {"at": at, "actor": actor, "reason": reason}

    class SchedulesResumed(Aggregate.Event):
        at: datetime
        actor: str
        reason: str

    @event(SchedulesResumed)
    def _schedules_resumed(self, at: datetime, actor: str, reason: str) -> None:
        self.schedules_pause = None

    class AccountAdded(Aggregate.Event):
        account_id: str

    @event(AccountAdded)
    def add_account(self, account_id: str) -> None:
        self.account_ids.append(account_id)

    class DefinitionAdded(Aggregate.Event):
        definition_id: str

    @event(DefinitionAdded)
    def add_definition(self, definition_id: str) -> None:
        self.definition_ids.append(definition_id)

    class GroupChanged(Aggregate.Event):
        """Recorded with each change of one of the tenant's groups, so that such changes in
        one tenant happen one after the other (a cycle of parents cannot be made by two at
        once), and the tenant knows its groups' keys."""

        key: str
        at: datetime
        actor: str

    @event(GroupChanged)
    def group_changed(self, key: str, at: datetime, actor: str) -> None:
        if key not in self.group_keys:
            self.group_keys.append(key)

    class WebhookAdded(Aggregate.Event):
        """Recorded with each new webhook subscription of the tenant, so that creations in one
        tenant happen one after the other: two at once cannot pass the tenant's cap."""

        webhook_id: UUID
        at: datetime
        actor: str

    @event(WebhookAdded)
    def webhook_added(self, webhook_id: UUID, at: datetime, actor: str) -> None:
        """Changes nothing here: the subscription's own events say what it is."""

    def record_export(
        self,
        listing: str,
        filters: Mapping[str, str],
        file_format: str,
        rows: int,
        at: datetime,
        actor: str,
    ) -> None:
        """Record that `actor` exported `rows` rows of `listing` as `file_format`, as
        `filters` asked (domain/exports.py): refused beyond the cap, with nothing recorded."""
        check_export(listing, file_format, rows)
        self._exported(
            listing=listing,
            filters=dict(filters),
            format=file_format,
            rows=rows,
            at=at,
            actor=actor,
        )

    class Exported(Aggregate.Event):
        """A list taken out as a file, before it was written: which list (`runs`, `schedules`
        or `operations`), the filters as the request named them, the format (`csv` or
        `xlsx`) and how many rows matched. The operations audit lists it."""

        listing: str
        filters: dict[str, str]
        format: str
        rows: int
        at: datetime
        actor: str

    @event(Exported)
    def _exported(
        self,
        listing: str,
        filters: dict[str, str],
        format: str,
        rows: int,
        at: datetime,
        actor: str,
    ) -> None:
        """Changes nothing here: an export is a fact for the audit, not the tenant's state."""

    def remove_admin(
        self, account_id: str, active_admins: Collection[str], at: datetime, actor: str
    ) -> None:
        """Record that an account stops being an active admin; never the last one.

        Saved with the account's change, this event makes such changes in one tenant
        conflict on the tenant's version, so they happen one after the other: two admins
        removing each other at once cannot leave the tenant without one.
        """
        check_admin_remains(account_id, active_admins)
        self._admin_removed(account_id=account_id, at=at, actor=actor)

    class AdminRemoved(Aggregate.Event):
        account_id: str
        at: datetime
        actor: str

    @event(AdminRemoved)
    def _admin_removed(self, account_id: str, at: datetime, actor: str) -> None:
        """Changes nothing here: the account's own events say how it lost the role."""


class Account(Aggregate):
    """A person or system that acts in one tenant, with roles, API tokens and a password.

    Version 2 records when its password was last set and whether it must be changed at the next
    sign-in (`password_set_at`, `password_must_change`); never the password or its hash.
    """

    class_version = 2

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """A snapshot from before passwords: the account had none."""
        state["password_set_at"] = None
        state["password_must_change"] = False

    @staticmethod
    def create_id(tenant_id: UUID, account_id: str) -> UUID:
        return account_uuid(tenant_id, account_id)

    class Registered(Aggregate.Created):
        tenant_id: UUID
        account_id: str
        name: str
        roles: list[str]
        at: datetime
        actor: str

    @event(Registered)
    def __init__(
        self,
        tenant_id: UUID,
        account_id: str,
        name: str,
        roles: list[str],
        at: datetime,
        actor: str,
    ) -> None:
        self.tenant_id = tenant_id
        self.account_id = account_id
        self.name = name
        self.roles = sorted(set(roles))
        self.active = True
        self.created_at = at
        self.tokens: dict[str, bool] = {}  # token id -> revoked
        self.password_set_at: datetime | None = None
        self.password_must_change = False

    @property
    def permissions(self) -> frozenset[str]:
        return permissions_of(self.roles) if self.active else frozenset()

    @property
    def is_active_admin(self) -> bool:
        return self.active and ADMIN_ROLE in self.roles

    def update(
        self, name: str, roles: list[str], at: datetime, actor: str, reason: str | None = None
    ) -> None:
        """Rename and re-role; only what changed becomes an event (a role change with why)."""
        if name != self.name:
            self._renamed(name=name, at=at, actor=actor)
        if sorted(set(roles)) != self.roles:
            self._roles_changed(
                old=self.roles, new=sorted(set(roles)), at=at, actor=actor, reason=reason
            )

    def deactivate(self, at: datetime, actor: str, reason: str | None = None) -> None:
        if self.active:
            self._deactivated(at=at, actor=actor, reason=reason)

    def activate(self, at: datetime, actor: str, reason: str | None = None) -> None:
        if not self.active:
            self._activated(at=at, actor=actor, reason=reason)

    def issue_token(self, token_id: str, at: datetime, actor: str) -> None:
        if not self.active:
            raise InvalidState(
                Message(
                    "account {account} is deactivated: activate it first", account=self.account_id
                )
            )
        self._token_issued(token_id=token_id, at=at, actor=actor)

    def revoke_token(
        self, token_id: str, at: datetime, actor: str, reason: str | None = None
    ) -> None:
        if not self.tokens.get(token_id, True):
            self._token_revoked(token_id=token_id, at=at, actor=actor, reason=reason)

    def holds_live_token(self, token_id: str) -> bool:
        return self.active and self.tokens.get(token_id) is False

    def set_password(self, kind: str, must_change: bool, at: datetime, actor: str) -> None:
        """Record that its password was set (`kind`: set, changed or reset), never which."""
        if not self.active:
            raise InvalidState(
                Message(
                    "account {account} is deactivated: activate it first", account=self.account_id
                )
            )
        self._password_set(kind=kind, must_change=must_change, at=at, actor=actor)

    def password_works_for(self, started_at: datetime) -> bool:
        """Whether a sign-in with its password at `started_at` still holds: the account is
        active and its password has not been set since."""
        set_at = self.password_set_at
        return self.active and set_at is not None and set_at <= started_at

    class Renamed(Aggregate.Event):
        name: str
        at: datetime
        actor: str

    @event(Renamed)
    def _renamed(self, name: str, at: datetime, actor: str) -> None:
        self.name = name

    class RolesChanged(Aggregate.Event):
        """Version 2 added the optional `reason` (None before)."""

        class_version = 2
        old: list[str]
        new: list[str]
        at: datetime
        actor: str
        reason: str | None

        upcast_v1_v2 = staticmethod(given_no_reason)

    @event(RolesChanged)
    def _roles_changed(
        self, old: list[str], new: list[str], at: datetime, actor: str, reason: str | None
    ) -> None:
        self.roles = new

    class Deactivated(ReasonedEvent):
        """Version 2 added the optional `reason` (None before)."""

    @event(Deactivated)
    def _deactivated(self, at: datetime, actor: str, reason: str | None) -> None:
        self.active = False

    class Activated(ReasonedEvent):
        """Version 2 added the optional `reason` (None before)."""

    @event(Activated)
    def _activated(self, at: datetime, actor: str, reason: str | None) -> None:
        self.active = True

    class TokenIssued(Aggregate.Event):
        token_id: str
        at: datetime
        actor: str

    @event(TokenIssued)
    def _token_issued(self, token_id: str, at: datetime, actor: str) -> None:
        self.tokens[token_id] = False

    class TokenRevoked(Aggregate.Event):
        """Version 2 added the optional `reason` (None before)."""

        class_version = 2
        token_id: str
        at: datetime
        actor: str
        reason: str | None

        upcast_v1_v2 = staticmethod(given_no_reason)

    @event(TokenRevoked)
    def _token_revoked(self, token_id: str, at: datetime, actor: str, reason: str | None) -> None:
        self.tokens[token_id] = True

    class PasswordSet(Aggregate.Event):
        """A password was set (`kind` set, changed or reset) by `actor`; `must_change`: it is
        a one-time password, changed at the next sign-in. The password is nowhere on the log."""

        kind: str
        must_change: bool
        at: datetime
        actor: str

    @event(PasswordSet)
    def _password_set(self, kind: str, must_change: bool, at: datetime, actor: str) -> None:
        self.password_set_at = at
        self.password_must_change = must_change


class ApiToken(Aggregate):
    """Points a token's hash at its account; whether it still works is the account's say."""

    @staticmethod
    def create_id(secret_hash: UUID) -> UUID:
        return secret_hash

    class Issued(Aggregate.Created):
        secret_hash: UUID
        tenant_id: UUID
        account_id: str
        at: datetime
        actor: str

    @event(Issued)
    def __init__(
        self, secret_hash: UUID, tenant_id: UUID, account_id: str, at: datetime, actor: str
    ) -> None:
        self.tenant_id = tenant_id
        self.account_id = account_id


def self_approval_was_not_allowed(state: dict[str, Any]) -> None:
    """Upcast from version 1, which had no `allow_self_approval`: nobody approved their own."""
    state["allow_self_approval"] = False


def counted_as_first_revision(state: dict[str, Any]) -> None:
    """Upcast of an event from before revisions: every definition then counts as revision 1."""
    state["revision"] = FIRST_REVISION


def without_notices(state: dict[str, Any]) -> None:
    """Upcast of an event (or terms) from before reminders and escalation: none of either."""
    state["reminders"] = []
    state["escalation"] = None


def without_reviewers(state: dict[str, Any]) -> None:
    """Upcast of an event (or terms) from before reviewers: anyone who may decide reviews."""
    state["reviewers"] = None


def without_levels(state: dict[str, Any]) -> None:
    """Upcast of an event (or terms) from before levels: one level from its reviewers, the
    deadline kept on a revise."""
    state["levels"] = None
    state["restart_deadline_on_revise"] = False


def without_cancellation_definition(state: dict[str, Any]) -> None:
    """Upcast of an event (or snapshot) from before cancellation definitions: none named."""
    state["cancellation_definition"] = None


def before_issue_35(state: dict[str, Any]) -> None:
    """Upcast of a definition's event from before issue 35: one level from its reviewers,
    the deadline kept on a revise, no cancellation definition, no limit on a pause, back to
    the first level after a return."""
    without_levels(state)
    without_cancellation_definition(state)
    with_pause_terms(state)


def seconds_rule(review_window_seconds: int) -> dict[str, Any]:
    """The deadline rule a review window in plain seconds is (docs/calendars.md)."""
    return {"kind": "seconds", "seconds": int(review_window_seconds)}


def ruled_by_review_window(state: dict[str, Any]) -> None:
    """Upcast of an event (or terms) from before deadline rules: its review window in seconds."""
    state["deadline_rule"] = seconds_rule(state["review_window_seconds"])


RETURN_TO_FIRST, RETURN_TO_RETURNING = "first", "returning"
RETURN_TO = (RETURN_TO_FIRST, RETURN_TO_RETURNING)  # where a revise after a return goes


def with_pause_terms(state: dict[str, Any]) -> None:
    """Upcast of an event (or terms) from before pauses and returns: a pause may last any time,
    and a revise after a return goes back to the first level."""
    state.setdefault("max_pause_seconds", None)
    state.setdefault("return_to", RETURN_TO_FIRST)


@dataclass(frozen=True)
class DefinitionTerms:
    """What a launch takes from one published revision of a definition."""

    name: str
    external: bool
    review_window_seconds: int
    allow_self_approval: bool
    reminders: list[Reminder]
    escalation: Escalation | None
    reviewers: dict[str, Any] | None  # None: anyone who may decide (before reviewers)
    deadline_rule: dict[str, Any]  # seconds, working_days or working_hours (docs/calendars.md)
    max_pause_seconds: int | None = None  # the longest a pause stands; None: no limit
    return_to: str = RETURN_TO_FIRST  # where a revise after a return goes: first, returning
    levels: list[dict[str, Any]] | None = None  # None: one level from `reviewers`
    restart_deadline_on_revise: bool = False


class Definition(Aggregate):
    """A process definition that approval instances are started from.

    Publishing, and each update while published, makes a new `revision` (requirement 001:
    a server schedule runs the exact published version); the terms of every published revision
    are kept, so a schedule saved against one launches with it. Version 3 added them; version 4
    `reminders` and `escalation` (docs/approvals.md#reminders-and-escalation); version 5
    `reviewers` (docs/approvals.md#who-reviews); version 6 `deadline_rule`
    (docs/calendars.md#deadlines-in-working-time); version 7 `levels` and
    `restart_deadline_on_revise` (docs/approvals.md#levels-and-countersign),
    `cancellation_definition` (docs/approvals.md#resubmit-and-cancel), `max_pause_seconds` and
    `return_to` (docs/approvals.md#pausing-the-clock).
    """

    class_version = 7

    upcast_v1_v2 = staticmethod(self_approval_was_not_allowed)

    @staticmethod
    def upcast_v2_v3(state: dict[str, Any]) -> None:
        """A snapshot from before revisions: revision 1, with the terms it holds."""
        state["revision"] = FIRST_REVISION
        state["revisions"] = {
            str(FIRST_REVISION): {
                name: state[name]
                for name in ("name", "external", "review_window_seconds", "allow_self_approval")
            }
        }

    @staticmethod
    def upcast_v3_v4(state: dict[str, Any]) -> None:
        """A snapshot from before reminders: none, and no escalation, in any revision either."""
        without_notices(state)
        for terms in state["revisions"].values():
            without_notices(terms)

    @staticmethod
    def upcast_v4_v5(state: dict[str, Any]) -> None:
        """A snapshot from before reviewers: anyone who may decide, in every revision too."""
        without_reviewers(state)
        for terms in state["revisions"].values():
            without_reviewers(terms)

    @staticmethod
    def upcast_v5_v6(state: dict[str, Any]) -> None:
        """A snapshot from before deadline rules: its review window, in every revision too."""
        ruled_by_review_window(state)
        for terms in state["revisions"].values():
            ruled_by_review_window(terms)

    @staticmethod
    def upcast_v6_v7(state: dict[str, Any]) -> None:
        """A snapshot from before issue 35: one level from its reviewers, no cancellation
        definition named, no limit on a pause, back to the first level after a return (in
        every revision too)."""
        without_levels(state)
        for terms in state["revisions"].values():
            without_levels(terms)
        without_cancellation_definition(state)
        with_pause_terms(state)
        for terms in state["revisions"].values():
            with_pause_terms(terms)

    @staticmethod
    def create_id(tenant_id: UUID, key: str) -> UUID:
        return definition_uuid(tenant_id, key)

    class Registered(Aggregate.Created):
        """Version 2 added `allow_self_approval` (false before: self-approval was not allowed);
        version 3 `reminders` and `escalation` (none before); version 4 `reviewers` (None
        before: anyone who may decide); version 5 `deadline_rule` (before: the review window
        in seconds); version 6 `levels` (None before: one level from `reviewers`),
        `restart_deadline_on_revise` (false before), `cancellation_definition` (None
        before: none), `max_pause_seconds` (None: no limit) and `return_to` (`first`)."""

        class_version = 6
        tenant_id: UUID
        key: str
        name: str
        external: bool
        review_window_seconds: int
        schedule_presets: list[dict[str, Any]]
        allow_self_approval: bool
        at: datetime
        actor: str
        reminders: list[Reminder]
        escalation: Escalation | None
        reviewers: dict[str, Any] | None
        deadline_rule: dict[str, Any]
        max_pause_seconds: int | None
        return_to: str
        levels: list[dict[str, Any]] | None
        restart_deadline_on_revise: bool
        cancellation_definition: str | None

        upcast_v1_v2 = staticmethod(self_approval_was_not_allowed)
        upcast_v2_v3 = staticmethod(without_notices)
        upcast_v3_v4 = staticmethod(without_reviewers)
        upcast_v4_v5 = staticmethod(ruled_by_review_window)
        upcast_v5_v6 = staticmethod(before_issue_35)

    @event(Registered)
    def __init__(
        self,
        tenant_id: UUID,
        key: str,
        name: str,
        external: bool,
        review_window_seconds: int,
        schedule_presets: list[dict[str, Any]],
        allow_self_approval: bool,
        at: datetime,
        actor: str,
        reminders: Sequence[Reminder] = (),
        escalation: Escalation | None = None,
        reviewers: dict[str, Any] | None = None,
        deadline_rule: dict[str, Any] | None = None,
        max_pause_seconds: int | None = None,
        return_to: str = RETURN_TO_FIRST,
        levels: list[dict[str, Any]] | None = None,
        restart_deadline_on_revise: bool = False,
        cancellation_definition: str | None = None,
    ) -> None:
        self.tenant_id = tenant_id
        self.key = key
        self.name = name
        self.external = external
        self.review_window_seconds = review_window_seconds
        self.schedule_presets = schedule_presets
        self.allow_self_approval = allow_self_approval
        self.reminders = [dict(reminder) for reminder in reminders]
        self.escalation = escalation
        self.reviewers = reviewers
        self.deadline_rule = deadline_rule or seconds_rule(review_window_seconds)
        self.max_pause_seconds = max_pause_seconds
        self.return_to = return_to
        self.levels = levels
        self.restart_deadline_on_revise = restart_deadline_on_revise
        self.cancellation_definition = cancellation_definition  # the id of another definition
        self.published = False
        self.created_at = at
        self.revision = UNPUBLISHED_REVISION
        self.revisions: dict[str, dict[str, Any]] = {}  # terms of each published revision

    @property
    def terms(self) -> DefinitionTerms:
        """The terms as they stand (an unpublished definition's may not be any revision's)."""
        return DefinitionTerms(**_terms_of(self.__dict__))

    def terms_of(self, revision: int) -> DefinitionTerms:
        """The terms of a published revision, which a launch frozen at it uses (terms kept
        before a field was added read it as its default)."""
        return DefinitionTerms(**self.revisions[str(revision)])

    class Updated(Aggregate.Event):
        """Version 2 added `allow_self_approval` (false before: self-approval was not allowed);
        version 3 added `revision`, the definition's revision after it (1 before); version 4
        `reminders` and `escalation` (none before); version 5 `reviewers` (None before);
        version 6 `deadline_rule` (before: the review window in seconds); version 7 `levels`
        (None before: one level from `reviewers`), `restart_deadline_on_revise` (false),
        `cancellation_definition` (None before: none), `max_pause_seconds` (None: no limit)
        and `return_to` (`first`)."""

        class_version = 7
        name: str
        external: bool
        review_window_seconds: int
        schedule_presets: list[dict[str, Any]]
        allow_self_approval: bool
        revision: int
        at: datetime
        actor: str
        reminders: list[Reminder]
        escalation: Escalation | None
        reviewers: dict[str, Any] | None
        deadline_rule: dict[str, Any]
        max_pause_seconds: int | None
        return_to: str
        levels: list[dict[str, Any]] | None
        restart_deadline_on_revise: bool
        cancellation_definition: str | None

        upcast_v1_v2 = staticmethod(self_approval_was_not_allowed)
        upcast_v2_v3 = staticmethod(counted_as_first_revision)
        upcast_v3_v4 = staticmethod(without_notices)
        upcast_v4_v5 = staticmethod(without_reviewers)
        upcast_v5_v6 = staticmethod(ruled_by_review_window)
        upcast_v6_v7 = staticmethod(before_issue_35)

    def update(
        self,
        name: str,
        external: bool,
        review_window_seconds: int,
        schedule_presets: list[dict[str, Any]],
        allow_self_approval: bool,
        at: datetime,
        actor: str,
        reminders: Sequence[Reminder] = (),
        escalation: Escalation | None = None,
        reviewers: dict[str, Any] | None = None,
        deadline_rule: dict[str, Any] | None = None,
        max_pause_seconds: int | None = None,
        return_to: str = RETURN_TO_FIRST,
        levels: list[dict[str, Any]] | None = None,
        restart_deadline_on_revise: bool | None = None,
        cancellation_definition: str | None = None,
    ) -> None:
        """Change the settings; while published, the change is published as a new revision.
        Reviewers once named stay named (`reviewers` None keeps them); no `deadline_rule`
        means the review window in seconds; `cancellation_definition` None names none. Levels
        given replace the reviewers (kept None); reviewers given replace the levels; neither
        keeps both as they are."""
        check_notices(reminders, escalation, review_window_seconds)
        kept_reminders, kept_escalation = notice_terms(reminders, escalation)
        self._updated(
            name=name,
            external=external,
            review_window_seconds=review_window_seconds,
            schedule_presets=schedule_presets,
            allow_self_approval=allow_self_approval,
            revision=self.revision + 1 if self.published else self.revision,
            at=at,
            actor=actor,
            reminders=kept_reminders,
            escalation=kept_escalation,
            **_review_terms(self, reviewers, levels),
            deadline_rule=deadline_rule or seconds_rule(review_window_seconds),
            max_pause_seconds=max_pause_seconds,
            return_to=return_to,
            restart_deadline_on_revise=(
                self.restart_deadline_on_revise
                if restart_deadline_on_revise is None
                else restart_deadline_on_revise
            ),
            cancellation_definition=cancellation_definition,
        )

    @event(Updated)
    def _updated(
        self,
        name: str,
        external: bool,
        review_window_seconds: int,
        schedule_presets: list[dict[str, Any]],
        allow_self_approval: bool,
        revision: int,
        at: datetime,
        actor: str,
        reminders: list[Reminder],
        escalation: Escalation | None,
        reviewers: dict[str, Any] | None = None,
        deadline_rule: dict[str, Any] | None = None,
        max_pause_seconds: int | None = None,
        return_to: str = RETURN_TO_FIRST,
        levels: list[dict[str, Any]] | None = None,
        restart_deadline_on_revise: bool = False,
        cancellation_definition: str | None = None,
    ) -> None:
        self.name = name
        self.external = external
        self.review_window_seconds = review_window_seconds
        self.schedule_presets = schedule_presets
        self.allow_self_approval = allow_self_approval
        self.reminders = reminders
        self.escalation = escalation
        self.reviewers = reviewers
        self.deadline_rule = deadline_rule or seconds_rule(review_window_seconds)
        self.max_pause_seconds = max_pause_seconds
        self.return_to = return_to
        self.levels = levels
        self.restart_deadline_on_revise = restart_deadline_on_revise
        self.cancellation_definition = cancellation_definition
        self._reach(revision)

    def publish(self, at: datetime, actor: str) -> None:
        """Publish the settings as they stand, as the next revision."""
        if not self.published:
            self._published(revision=self.revision + 1, at=at, actor=actor)

    def unpublish(self, at: datetime, actor: str) -> None:
        if self.published:
            self._unpublished(at=at, actor=actor)

    class Published(Aggregate.Event):
        """Version 2 added `revision`, the revision it published (1 before)."""

        class_version = 2
        revision: int
        at: datetime
        actor: str

        upcast_v1_v2 = staticmethod(counted_as_first_revision)

    @event(Published)
    def _published(self, revision: int, at: datetime, actor: str) -> None:
        self.published = True
        self._reach(revision)

    class Unpublished(Aggregate.Event):
        at: datetime
        actor: str

    @event(Unpublished)
    def _unpublished(self, at: datetime, actor: str) -> None:
        self.published = False

    def _reach(self, revision: int) -> None:
        """Move to `revision`, keeping its terms if they are published."""
        self.revision = revision
        if self.published:
            self.revisions = {**self.revisions, str(revision): _terms_of(self.__dict__)}


def _review_terms(
    definition: Definition,
    reviewers: dict[str, Any] | None,
    levels: list[dict[str, Any]] | None,
) -> dict[str, Any]:
    """Who reviews after an update: levels given win (reviewers None), reviewers given clear
    the levels, neither keeps both."""
    if levels is not None:
        return {"reviewers": None, "levels": levels}
    if reviewers is not None:
        return {"reviewers": reviewers, "levels": None}
    return {"reviewers": definition.reviewers, "levels": definition.levels}


def _terms_of(state: dict[str, Any]) -> dict[str, Any]:
    return {field.name: state[field.name] for field in fields(DefinitionTerms)}


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: one account in one tenant, with its permissions."""

    tenant_id: UUID
    account_id: str
    permissions: frozenset[str]

    def can(self, permission: str) -> bool:
        return permission in self.permissions
