"""A timeline's events in the viewer's language: each type's name, a sentence saying who did
what, and the fields an event changed (old → new), with the fields named in words.

Only for reading: the codes (event types, field names, outcomes) stay beside the words, and
the event's own JSON is one click away.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from flask_babel import gettext as _
from flask_babel import lazy_gettext, ngettext
from markupsafe import Markup

from cronledger.persistence.ledger import UNDECODABLE, TimelineEntry
from web.console.clock import moment
from web.console.field_words import field_label
from web.console.schedule_words import in_words

# Who did it, for the service's own actors (an account or a worker is named as it is).
SYSTEM_ACTORS = {
    "system:tick": lazy_gettext("The scheduler"),
    "system:sweeper": lazy_gettext("The deadline sweeper"),
    "system:notifier": lazy_gettext("The notifier"),
    "system:worker": lazy_gettext("The worker"),
    "system:cancellation": lazy_gettext("The service"),
}

NAMES = {
    "Schedule.Created": lazy_gettext("Schedule created"),
    "Schedule.Updated": lazy_gettext("Schedule edited"),
    "Schedule.Enabled": lazy_gettext("Schedule enabled"),
    "Schedule.Disabled": lazy_gettext("Schedule disabled"),
    "Schedule.CycleFailed": lazy_gettext("Cycle failed"),
    "Schedule.FailuresCleared": lazy_gettext("Failed cycles cleared"),
    "Schedule.AutoPaused": lazy_gettext("Schedule auto-paused"),
    "Schedule.RunRequested": lazy_gettext("Run requested by hand"),
    "Schedule.PlanAdvanced": lazy_gettext("Plan advanced"),
    "Schedule.Deleted": lazy_gettext("Schedule deleted"),
    "Run.Registered": lazy_gettext("Run registered"),
    "Run.AttemptStarted": lazy_gettext("Attempt started"),
    "Run.AttemptSucceeded": lazy_gettext("Attempt succeeded"),
    "Run.AttemptFailed": lazy_gettext("Attempt failed"),
    "Run.AttemptInterrupted": lazy_gettext("Attempt interrupted"),
    "Run.OutcomeRejected": lazy_gettext("Late outcome refused"),
    "Run.SkippedOverlap": lazy_gettext("Skipped: overlap"),
    "Run.Retried": lazy_gettext("Run retried"),
    "Run.Cancelled": lazy_gettext("Run cancelled"),
    "ApprovalInstance.Submitted": lazy_gettext("Submitted"),
    "ApprovalInstance.ReminderDue": lazy_gettext("Reminder due"),
    "ApprovalInstance.Escalated": lazy_gettext("Escalated"),
    "ApprovalInstance.TaskReleased": lazy_gettext("Task released"),
    "ApprovalInstance.Approved": lazy_gettext("Approved"),
    "ApprovalInstance.Withdrawn": lazy_gettext("Withdrawn"),
    "ApprovalInstance.Expired": lazy_gettext("Expired"),
    "ApprovalInstance.Rejected": lazy_gettext("Rejected"),
    "ApprovalInstance.Claimed": lazy_gettext("Claimed"),
    "ApprovalInstance.Unclaimed": lazy_gettext("Unclaimed"),
    "ApprovalInstance.Reassigned": lazy_gettext("Reassigned"),
    "ApprovalInstance.Commented": lazy_gettext("Commented"),
    "ApprovalInstance.Voted": lazy_gettext("Vote counted"),
    "ApprovalInstance.LevelCompleted": lazy_gettext("Level completed"),
    "ApprovalInstance.Revised": lazy_gettext("Material revised"),
    "ApprovalInstance.DeadlineExtended": lazy_gettext("Deadline extended"),
    "ApprovalInstance.DeadlinePaused": lazy_gettext("Clock paused"),
    "ApprovalInstance.DeadlineResumed": lazy_gettext("Clock resumed"),
    "ApprovalInstance.Returned": lazy_gettext("Returned for changes"),
    "ApprovalInstance.CallbackObserved": lazy_gettext("Callback observed"),
    "ApprovalInstance.CommandRejected": lazy_gettext("Command refused"),
    "ApprovalInstance.Resubmitted": lazy_gettext("Resubmitted"),
    "ApprovalInstance.CancellationRequested": lazy_gettext("Cancellation requested"),
    "ApprovalInstance.CancellationSettled": lazy_gettext("Cancellation settled"),
    "Account.Registered": lazy_gettext("Account registered"),
    "Account.Renamed": lazy_gettext("Account renamed"),
    "Account.RolesChanged": lazy_gettext("Roles changed"),
    "Account.Deactivated": lazy_gettext("Account deactivated"),
    "Account.Activated": lazy_gettext("Account activated"),
    "Account.TokenIssued": lazy_gettext("Token issued"),
    "Account.TokenRevoked": lazy_gettext("Token revoked"),
    "Definition.Registered": lazy_gettext("Definition registered"),
    "Definition.Updated": lazy_gettext("Definition edited"),
    "Definition.Published": lazy_gettext("Definition published"),
    "Definition.Unpublished": lazy_gettext("Definition unpublished"),
    UNDECODABLE: lazy_gettext("Unreadable event"),
}

Said = Callable[[str, Mapping[str, Any]], str]  # who, the event's data: the sentence
SENTENCES: dict[str, Said] = {
    "Schedule.Created": lambda who, d: _("%(who)s created the schedule.", who=who),
    "Schedule.Updated": lambda who, d: _("%(who)s edited the schedule.", who=who),
    "Schedule.Enabled": lambda who, d: _("%(who)s enabled the schedule.", who=who),
    "Schedule.Disabled": lambda who, d: _("%(who)s disabled the schedule.", who=who),
    "Schedule.CycleFailed": lambda who, d: _(
        "%(who)s counted a cycle that ended without launching (%(code)s).",
        who=who,
        code=d.get("error_code"),
    ),
    "Schedule.FailuresCleared": lambda who, d: _(
        "%(who)s: a cycle launched, so failed cycles count afresh.", who=who
    ),
    "Schedule.AutoPaused": lambda who, d: ngettext(
        "%(who)s paused the schedule: %(num)s cycle in a row ended without launching.",
        "%(who)s paused the schedule: %(num)s cycles in a row ended without launching.",
        len(d.get("runs") or []),
        who=who,
    ),
    "Schedule.RunRequested": lambda who, d: _("%(who)s asked for a run now.", who=who),
    "Schedule.PlanAdvanced": lambda who, d: ngettext(
        "%(who)s registered %(num)s cycle and planned the next fire.",
        "%(who)s registered %(num)s cycles and planned the next fire.",
        int(d.get("cycles") or 0),
        who=who,
    ),
    "Schedule.Deleted": lambda who, d: _("%(who)s deleted the schedule.", who=who),
    "Run.Registered": lambda who, d: _("%(who)s registered the run.", who=who),
    "Run.AttemptStarted": lambda who, d: _(
        "%(who)s started attempt %(number)s.", who=who, number=d.get("number")
    ),
    "Run.AttemptSucceeded": lambda who, d: _(
        "%(who)s: attempt %(number)s succeeded.", who=who, number=d.get("number")
    ),
    "Run.AttemptFailed": lambda who, d: _(
        "%(who)s: attempt %(number)s failed.", who=who, number=d.get("number")
    ),
    "Run.AttemptInterrupted": lambda who, d: _(
        "%(who)s: attempt %(number)s was interrupted.", who=who, number=d.get("number")
    ),
    "Run.OutcomeRejected": lambda who, d: _(
        "%(who)s reported attempt %(number)s after losing it: not applied.",
        who=who,
        number=d.get("number"),
    ),
    "Run.SkippedOverlap": lambda who, d: _(
        "%(who)s skipped the run: an earlier run had not finished.", who=who
    ),
    "Run.Retried": lambda who, d: _("%(who)s retried the run.", who=who),
    "Run.Cancelled": lambda who, d: _("%(who)s cancelled the run.", who=who),
    "ApprovalInstance.Submitted": lambda who, d: _("%(who)s submitted the instance.", who=who),
    "ApprovalInstance.ReminderDue": lambda who, d: _("%(who)s: a reminder came due.", who=who),
    "ApprovalInstance.Escalated": lambda who, d: _("%(who)s escalated the instance.", who=who),
    "ApprovalInstance.TaskReleased": lambda who, d: _("%(who)s released a task.", who=who),
    "ApprovalInstance.LevelCompleted": lambda who, d: _(
        "Level %(level)s completed with %(who)s's approval.", level=d.get("level"), who=who
    ),
    "ApprovalInstance.CancellationSettled": lambda who, d: _(
        "%(who)s recorded how the cancellation ended: %(state)s.", who=who, state=d.get("state")
    ),
    "Account.Registered": lambda who, d: _("%(who)s registered the account.", who=who),
    "Account.Renamed": lambda who, d: _("%(who)s renamed the account.", who=who),
    "Account.RolesChanged": lambda who, d: _("%(who)s changed the roles.", who=who),
    "Account.Deactivated": lambda who, d: _("%(who)s deactivated the account.", who=who),
    "Account.Activated": lambda who, d: _("%(who)s activated the account.", who=who),
    "Account.TokenIssued": lambda who, d: _("%(who)s issued a token.", who=who),
    "Account.TokenRevoked": lambda who, d: _("%(who)s revoked a token.", who=who),
    "Definition.Registered": lambda who, d: _("%(who)s registered the definition.", who=who),
    "Definition.Updated": lambda who, d: _(
        "%(who)s edited the definition (revision %(revision)s).",
        who=who,
        revision=d.get("revision"),
    ),
    "Definition.Published": lambda who, d: _(
        "%(who)s published revision %(revision)s.", who=who, revision=d.get("revision")
    ),
    "Definition.Unpublished": lambda who, d: _("%(who)s unpublished the definition.", who=who),
    UNDECODABLE: lambda who, d: _("This event cannot be read: the service logged why."),
}

FIELDS = {
    "name": lazy_gettext("Name"),
    "definition_id": lazy_gettext("Definition"),
    "definition_revision": lazy_gettext("Definition revision"),
    "trigger": lazy_gettext("Trigger"),
    "timezone": lazy_gettext("Time zone"),
    "initiator_id": lazy_gettext("Initiator"),
    "title_template": lazy_gettext("Title template"),
    "title": lazy_gettext("Title"),
    "form_data": lazy_gettext("Form data"),
    "misfire_policy": lazy_gettext("Missed cycles"),
    "overlap_policy": lazy_gettext("Overlapping runs"),
    "preset_id": lazy_gettext("Preset"),
    "enabled": lazy_gettext("Enabled"),
    "deleted": lazy_gettext("Deleted"),
    "settings": lazy_gettext("Settings"),
    "next_fire_at": lazy_gettext("Next fire"),
    "revision": lazy_gettext("Revision"),
    "updated_at": lazy_gettext("Last changed"),
    "updated_by": lazy_gettext("Last changed by"),
    "tenant_id": lazy_gettext("Tenant"),
    "schedule_id": lazy_gettext("Schedule"),
    "planned_at": lazy_gettext("Planned"),
    "registered_at": lazy_gettext("Registered"),
    "status": lazy_gettext("Status"),
    "state": lazy_gettext("State"),
    "attempts": lazy_gettext("Attempts"),
    "max_attempts": lazy_gettext("Attempts per round"),
    "next_attempt_at": lazy_gettext("Next attempt"),
    "finished_at": lazy_gettext("Finished"),
    "instance_id": lazy_gettext("Approval instance"),
    "last_error": lazy_gettext("Last error"),
    "skipped_count": lazy_gettext("Cycles skipped"),
    "missed_until": lazy_gettext("Missed until"),
    "frozen": lazy_gettext("Frozen values"),
    "request_id": lazy_gettext("Request id"),
    "triggered_by": lazy_gettext("Registered by"),
    "applicant_id": lazy_gettext("Applicant"),
    "material_version": lazy_gettext("Material version"),
    "review_deadline_at": lazy_gettext("Review deadline"),
    "submitted_at": lazy_gettext("Submitted"),
    "decided_at": lazy_gettext("Decided"),
    "tasks": lazy_gettext("Tasks"),
    "answers": lazy_gettext("Answers"),
    "comments": lazy_gettext("Comments"),
    "extensions": lazy_gettext("Deadline extensions"),
    "reviewers": lazy_gettext("Reviewers"),
    "account_id": lazy_gettext("Account"),
    "roles": lazy_gettext("Roles"),
    "active": lazy_gettext("Active"),
    "tokens": lazy_gettext("Tokens"),
    "created_at": lazy_gettext("Created"),
    "published": lazy_gettext("Published"),
    "external": lazy_gettext("External"),
    "review_window_seconds": lazy_gettext("Review window (seconds)"),
    "allow_self_approval": lazy_gettext("Self-approval allowed"),
    "schedule_presets": lazy_gettext("Schedule presets"),
    "reminders": lazy_gettext("Reminders"),
    "escalation": lazy_gettext("Escalation"),
    "key": lazy_gettext("Key"),
    "linked_id": lazy_gettext("Linked application"),
    "resubmits": lazy_gettext("Original application"),
    "resubmitted_as": lazy_gettext("Resubmitted as"),
    "cancellation_of": lazy_gettext("Cancels the approved application"),
    "cancellation": lazy_gettext("Cancellation"),
}


@dataclass(frozen=True)
class Change:
    """A field an event changed: its code, and its values before and after."""

    field: str
    old: Any
    new: Any


def event_name(event_type: str) -> str:
    """An event type in words; a type this release does not name, as its code."""
    named = NAMES.get(event_type)
    return str(named) if named is not None else event_type


def field_name(name: str) -> str:
    """A changed field in words: as an edit names it, else as a state does (field_label)."""
    named = FIELDS.get(name)
    return str(named) if named is not None else field_label(name)


def who(actor: str | None) -> str:
    """The actor in words: the service's own by their work, anyone else by their id."""
    if actor is None:
        return str(_("Someone unrecorded"))
    named = SYSTEM_ACTORS.get(actor)
    return str(named) if named is not None else actor


def sentence(entry: TimelineEntry, commands: Mapping[str, Any]) -> str:
    """Who did what: `olga sent the command "approve".` (`commands` names an instance's
    commands in words)."""
    said = SENTENCES.get(entry.type)
    if said is not None:
        return said(who(entry.actor), entry.data)
    command = entry.data.get("command")
    if isinstance(command, str):
        named = commands.get(command, command)
        said = _("%(who)s sent the command “%(command)s”.", who=who(entry.actor), command=named)
        return str(said)
    return str(_("%(who)s: %(event)s.", who=who(entry.actor), event=entry.type))


def changes_of(entry: TimelineEntry) -> list[Change]:
    """The fields the event changed, where it records both values: a schedule's edit (its
    `changes`), or an event's `old` and `new` (an account's roles)."""
    recorded = entry.data.get("changes")
    if isinstance(recorded, list):
        return [Change(c["field"], c.get("old"), c.get("new")) for c in recorded]
    if "old" in entry.data and "new" in entry.data and entry.type == "Account.RolesChanged":
        return [Change("roles", entry.data["old"], entry.data["new"])]
    return []


def value_shown(name: str, value: Any) -> Markup:
    """A field's value as a change shows it: yes or no, a trigger in words beside its code,
    an instant in the viewer's zone, other values as compact JSON (— for none)."""
    if value is None:
        return Markup("—")
    if isinstance(value, bool):
        return Markup("{}").format(_("yes") if value else _("no"))
    if name == "trigger" and isinstance(value, Mapping):
        written = value.get("expression") or json.dumps(value, ensure_ascii=False)
        return Markup("{} <code>{}</code>").format(in_words(value), written)
    instant = _instant(value)
    if instant is not None:
        return moment(instant)
    if isinstance(value, str):
        return Markup("<code>{}</code>").format(value)
    return Markup("<code>{}</code>").format(json.dumps(value, ensure_ascii=False))


def _instant(value: Any) -> datetime | None:
    if not isinstance(value, str) or len(value) < 19 or value[4:5] != "-":
        return None
    try:
        found = datetime.fromisoformat(value)
    except ValueError:
        return None
    return found if found.tzinfo else None
