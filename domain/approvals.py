"""Approval instances (审批实例): one rule decides every command against a durable deadline."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.directory import (
    NAMESPACE,
    RETURN_TO_FIRST,
    RETURN_TO_RETURNING,
    Definition,
    DefinitionTerms,
    Escalation,
    Reminder,
    self_approval_was_not_allowed,
    with_pause_terms,
    without_notices,
)
from domain.errors import (
    DomainError,
    Forbidden,
    InvalidState,
    NotAReviewer,
    ValidationFailed,
    every_problem,
)
from domain.levels import (
    COMPLETED,
    FAILED,
    Revision,
    Tally,
    completed,
    current_task_id,
    initial_review,
    legacy_level,
    opened_tasks,
    revised,
    revision_after,
    tally_of,
    vote_of,
    with_level_state,
)
from domain.messages import Message
from domain.permissions import (
    ALL_PERMISSIONS,
    APPROVAL_CALLBACK,
    APPROVAL_DECIDE,
    APPROVAL_SUBMIT,
)
from domain.reason_codes import (
    ALREADY_CANCELLED,
    ALREADY_DECIDED,
    ALREADY_RESUBMITTED,
    ALREADY_VOTED_ON_LEVEL,
    APPROVAL_COUNTED,
    APPROVED_IN_TIME,
    ASSIGNEE_MAY_NOT_DECIDE,
    CALLBACK_OBSERVED,
    CANCELLATION_BY_APPLICANT_ONLY,
    CANCELLATION_PENDING,
    CANCELLATION_REQUESTED_AS,
    CLAIMED_BY_OTHER,
    CLAIMED_IN_TIME,
    CLOCK_ALREADY_PAUSED,
    CLOCK_NOT_PAUSED,
    CLOCK_RESUMED_AT_MAX_PAUSE,
    COMMENTED_IN_TIME,
    CONTRACT_MISMATCH,
    DEADLINE_EXTENDED,
    DEADLINE_NOT_DUE,
    DEADLINE_PASSED,
    DEADLINE_PAUSED,
    DEADLINE_RESUMED,
    ESCALATION_TARGET_INELIGIBLE,
    EXTENSION_NOT_LATER,
    EXTENSION_TOO_FAR,
    INSTANCE_RETURNED,
    LEVEL_CANNOT_REACH,
    MATERIAL_NOT_NEWER,
    MATERIAL_REVISED,
    MATERIAL_STALE,
    NO_CANCELLATION_DEFINITION,
    NOT_A_REVIEWER,
    NOT_APPROVED,
    NOT_RESUBMITTABLE,
    NOT_THE_APPLICANT,
    NOT_THE_APPLICANT_REVISE,
    NOT_THE_ASSIGNEE,
    NOT_WAITING_FOR_REVIEW,
    PERMISSION_MISSING,
    REASSIGNED_IN_TIME,
    REJECTED_IN_TIME,
    REJECTION_COUNTED,
    RESUBMIT_BY_APPLICANT_ONLY,
    RESUBMITTED_AS,
    RETURNED_FOR_CHANGES,
    REVIEWER_INELIGIBLE,
    SELF_APPROVAL_APPLICANT,
    SELF_APPROVAL_SAVER_UNKNOWN,
    SELF_APPROVAL_SCHEDULE_SAVER,
    TASK_CLOSED,
    UNCLAIMED_IN_TIME,
    WITHDRAWN_IN_TIME,
    Reason,
)
from domain.reviewers import BY_ANYONE, CLOSED, FIRST_TASK, HIGH, Reviewers, Task
from domain.values import FormData, checked_form_data

WAITING_REVIEW = "WAITING_REVIEW"
APPROVED = "APPROVED"
WITHDRAWN = "WITHDRAWN"
EXPIRED = "EXPIRED"
REJECTED = "REJECTED"  # 拒绝: the application is refused
RETURNED = "RETURNED"  # 退回: sent back to the applicant for changes; not final, the clock stops
TERMINAL = frozenset({APPROVED, WITHDRAWN, EXPIRED, REJECTED})
MAX_EXTENSION = timedelta(days=30)
# What an escalation does: take the task to its target, or only raise its priority and tell.
REASSIGN_TASK, NOTIFY = "reassign", "notify"
ESCALATION_MODES = (REASSIGN_TASK, NOTIFY)
MAX_DEADLINE_AHEAD = timedelta(days=366)
# The version of the deadline rules above (inclusive deadline, 366 days ahead, extensions later
# and within 30 days); deadline policies and extensions record it. 0.1.0 applied version 1.
DEADLINE_RULES_VERSION = 1

# Outcomes of a command (stored on the log), besides the states it can lead to.
SELF_APPROVAL = "SELF_APPROVAL"
STALE_MATERIAL = "STALE_MATERIAL"
EXTENDED = "EXTENDED"
OBSERVED = "OBSERVED"
NOT_DUE = "NOT_DUE"
CONFLICT = "CONFLICT"
LATE_OR_CONFLICT = "LATE_OR_CONFLICT"
FORBIDDEN = "FORBIDDEN"  # refused, recorded, answered 403
RULE_BROKEN = "RULE_BROKEN"  # refused, recorded, answered 422 on the command's field
CLAIMED = "CLAIMED"
UNCLAIMED = "UNCLAIMED"
REASSIGNED = "REASSIGNED"
COMMENTED = "COMMENTED"
PAUSED = "PAUSED"  # the clock stopped (pause-deadline)
RESUMED = "RESUMED"  # the clock runs again, the deadline moved by the time it stood
TAKEN = "CLAIMED_BY_OTHER"  # refused, recorded, answered 409: another account holds the task
VOTED = "VOTED"  # an approve or reject counted on its level; the instance still waits
ALREADY_VOTED = "ALREADY_VOTED"  # refused, recorded, 409: one task per reviewer per level
REVISED = "REVISED"  # the applicant revised the material; earlier votes lapsed
RESUBMITTED = "RESUBMITTED"  # a decided instance got a new one: its state stays
CANCELLATION_REQUESTED = "CANCELLATION_REQUESTED"  # an approved one got a cancellation instance
# What an approved instance's `cancellation` says: requested, and how its instance ended.
REQUESTED, CANCELLED, REFUSED = "REQUESTED", "CANCELLED", "REFUSED"
RESUBMITTABLE = frozenset({WITHDRAWN, EXPIRED, REJECTED})

SUBMIT = "submit"
APPROVE, WITHDRAW, EXTEND, SIGN, SWEEP = "approve", "withdraw", "extend-deadline", "sign", "sweep"
CLAIM, UNCLAIM, REASSIGN, REJECT, COMMENT = "claim", "unclaim", "reassign", "reject", "comment"
REVISE = "revise"
VOTING = frozenset({"approve", "reject"})
RESUBMIT, REQUEST_CANCELLATION = "resubmit", "request-cancellation"
LINKING = frozenset({RESUBMIT, REQUEST_CANCELLATION})  # commands that start a linked instance
PAUSE, RESUME, RETURN = "pause-deadline", "resume-deadline", "return"
REVIEWING = frozenset({APPROVE, REJECT, CLAIM, RETURN})  # commands only a task's reviewers send
CLOCK = frozenset({PAUSE, RESUME})  # commands on the review clock, by whoever may extend
# What a RETURNED instance still takes: the applicant's withdraw, a comment, a callback, a sweep.
WHILE_RETURNED = frozenset({WITHDRAW, COMMENT, SIGN, SWEEP, REVISE})
CLOCK_OUTCOMES = {PAUSE: (PAUSED, DEADLINE_PAUSED), RESUME: (RESUMED, DEADLINE_RESUMED)}
# Why the clock stood: a pause (pause-deadline) or a return (退回).
PAUSE_KIND, RETURN_KIND = "pause", "return"
HOLDING = frozenset({UNCLAIM, REASSIGN})  # commands only the assignee or an admin may send
DEADLINE_ACTOR = "system:sweeper"  # who expires an instance: the deadline rule, run by the service
PERMISSION_OF_COMMAND = {
    APPROVE: APPROVAL_DECIDE,
    REJECT: APPROVAL_DECIDE,
    CLAIM: APPROVAL_DECIDE,
    UNCLAIM: APPROVAL_DECIDE,
    REASSIGN: APPROVAL_DECIDE,
    WITHDRAW: APPROVAL_SUBMIT,
    REVISE: APPROVAL_SUBMIT,
    EXTEND: APPROVAL_DECIDE,
    PAUSE: APPROVAL_DECIDE,
    RESUME: APPROVAL_DECIDE,
    RETURN: APPROVAL_DECIDE,
    SIGN: APPROVAL_CALLBACK,
    RESUBMIT: APPROVAL_SUBMIT,
    REQUEST_CANCELLATION: APPROVAL_SUBMIT,
}
SETTLER = "system:cancellation"  # who records how an approved instance's cancellation ended
FIELD_OF_RULE = {
    EXTEND: "new_deadline_at",
    REASSIGN: "assignee_id",
    REVISE: "material_version",
}  # the field a RULE_BROKEN answer is about


def approval_uuid(tenant_id: UUID, applicant_id: str, command_id: str) -> UUID:
    """One submission per applicant and command id: a repeated submission finds the first."""
    return uuid5(NAMESPACE, f"tenant/{tenant_id}/approval/{applicant_id}/{command_id}")


def linked_command_id(kind: str, original_id: UUID | str, command_id: str) -> str:
    """The submission command id of the instance a resubmit or a cancellation request on
    `original_id` starts: fixed by the command, so a retry after a crash finds the instance
    (its id is `approval_uuid` of this)."""
    return f"{kind}:{original_id}:{command_id}"


@dataclass(frozen=True)
class Links:
    """What the rule needs to decide a resubmit or a cancellation request: the instance the
    command would start (`new_id`), what the original already links to, and the cancellation
    definition its definition now names (None: none)."""

    new_id: str | None = None
    resubmitted_as: str | None = None
    cancellation: Mapping[str, Any] | None = None
    cancellation_definition: str | None = None


class CommandIdReused(DomainError):
    code = "COMMAND_ID_REUSED"

    def __init__(self, command_id: str) -> None:
        super().__init__(
            Message(
                "command_id {command_id} was already used with a different body; use a new one",
                command_id=command_id,
            )
        )


@dataclass(frozen=True)
class Command:
    """What someone asks of an instance; `payload` is everything but the command id."""

    kind: str
    command_id: str | None
    payload: dict[str, Any] = field(default_factory=dict)
    # The offset (minutes east of UTC) a deadline in the payload was given with, which the
    # payload holds in UTC; not part of the fingerprint, so a repeat of the same instant matches.
    deadline_offset_minutes: int | None = None

    @property
    def fingerprint(self) -> str:
        """What a repeat is compared with: what the caller sent (not what the server counted
        of an extension in working days)."""
        payload = self.payload
        if "working_days" in payload:
            payload = {k: v for k, v in payload.items() if k not in COUNTED_EXTENSION}
        elif self.kind == REVISE:
            payload = {k: v for k, v in payload.items() if k not in COUNTED_REVISE}
        canonical = json.dumps([self.kind, payload], sort_keys=True, default=_plain)
        return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class Submission:
    """What an applicant asks to start; a repeat of its command id must ask the same."""

    command_id: str
    definition_id: str
    title: str
    form_data: Mapping[str, Any]
    material_version: int
    review_deadline_at: datetime | None
    review_deadline_offset_minutes: int | None = None  # as given beside the UTC deadline

    @property
    def fingerprint(self) -> str:
        """What a repeat is compared with; instances keep it, so it must never change (the
        deadline's given offset is left out: the same instant, however written, matches)."""
        payload = {
            "definition_id": self.definition_id,
            "title": self.title,
            "form_data": self.form_data,
            "material_version": self.material_version,
            "review_deadline_at": self.review_deadline_at,
        }
        return Command(SUBMIT, None, payload).fingerprint

    def check(self, now: datetime) -> None:
        """A caller's own deadline lies within 366 days of now, and the form data is small
        (both named at once)."""
        deadline = self.review_deadline_at
        errors = every_problem(lambda: checked_form_data(self.form_data))
        if deadline is not None and not now < deadline <= now + MAX_DEADLINE_AHEAD:
            errors["review_deadline_at"] = [Message("must be after now and within 366 days of it")]
        if errors:
            raise ValidationFailed(errors)

    def deadline(
        self,
        review_window_seconds: int,
        now: datetime,
        revision: dict[str, int],
        ruled: Ruled | None = None,
    ) -> tuple[datetime, dict[str, Any]]:
        """The review deadline and how it was set (the deadline policy): as asked, or the
        window of the definition (at `revision`, when known), or (`ruled`) as its rule in
        working time counted it, under the deadline rules' version."""
        if self.review_deadline_at is not None:
            return self.review_deadline_at, {
                "source": "explicit",
                "rule_version": DEADLINE_RULES_VERSION,
            }
        return definition_deadline(review_window_seconds, now, revision, ruled)


def definition_deadline(
    review_window_seconds: int, now: datetime, revision: dict[str, int], ruled: Ruled | None
) -> tuple[datetime, dict[str, Any]]:
    """The deadline a definition's rule sets from `now`, and its policy: its review window in
    seconds, or (`ruled`) as its rule in working time counted it."""
    if ruled is not None:
        deadline_at, policy = ruled
        return deadline_at, {
            "source": WORKING_TIME,
            **policy,
            **revision,
            "rule_version": DEADLINE_RULES_VERSION,
        }
    return now + timedelta(seconds=review_window_seconds), {
        "source": "definition",
        "review_window_seconds": review_window_seconds,
        **revision,
        "rule_version": DEADLINE_RULES_VERSION,
    }


WORKING_TIME = "working_time"  # the source of a deadline a rule in working time counted
# What the server adds to an extension given in working days: the deadline it counted, on
# which calendar revision (docs/calendars.md#extensions-in-working-days).
COUNTED_EXTENSION = ("new_deadline_at", "calendar", "calendar_revision")
# A deadline a rule in working time set, and how (cronledger/application/calendars.py): the
# policy keeps, under `working_time_notices`, when each reminder and the escalation fall due,
# counted in working time too.
Ruled = tuple[datetime, dict[str, Any]]
# What the server adds to a revise that restarts the deadline: the new deadline and its policy.
COUNTED_REVISE = ("new_deadline_at", "deadline_policy")


@dataclass(frozen=True)
class Clock:
    """How the review clock counts the time it stood (docs/approvals.md#pausing-the-clock):
    `measure` is the time counted between two instants, `add` moves an instant by it. In plain
    time by default; the service gives one in working time for a deadline counted on a
    calendar (cronledger/application/calendars.py)."""

    measure: Callable[[datetime, datetime], timedelta] = lambda start, end: end - start
    add: Callable[[datetime, timedelta], datetime] = lambda instant, counted: instant + counted


PLAIN_CLOCK = Clock()


def moved_notices(
    counted: Mapping[str, Any] | None,
    escalation_due: datetime | None,
    since: datetime,
    move: Callable[[datetime], datetime],
) -> dict[str, Any]:
    """The counted reminder and escalation instants after the clock stood from `since`: those
    still to come then move with the deadline (an escalation is counted from the submission,
    so it is kept here once the clock moved it)."""
    kept = dict(counted or {})
    reminders = {
        before: move(due).isoformat() if due > since else due.isoformat()
        for before, due in (
            (b, datetime.fromisoformat(text)) for b, text in kept.get("reminders", {}).items()
        )
    }
    if reminders:
        kept["reminders"] = reminders
    if escalation_due is not None:
        kept["escalation_due_at"] = (
            move(escalation_due) if escalation_due > since else escalation_due
        ).isoformat()
    return kept


def offset_minutes_of(moment: datetime) -> int:
    """The offset (minutes east of UTC) an aware instant was given with."""
    offset = moment.utcoffset()
    assert offset is not None, "an instant carries its offset"
    return int(offset.total_seconds() // 60)


def at_offset(moment: datetime, offset_minutes: int | None) -> datetime:
    """`moment` at the offset it was given with; in UTC when none was given (None)."""
    zone = UTC if offset_minutes is None else timezone(timedelta(minutes=offset_minutes))
    return moment.astimezone(zone)


def revision_of(definition: Definition | DefinitionTerms) -> dict[str, int]:
    """The definition revision whose review window sets a deadline, when known: a definition's
    current (published) one; a launch's frozen terms do not name their revision."""
    if isinstance(definition, Definition):
        return {"definition_revision": definition.revision}
    return {}


@dataclass(frozen=True)
class Parties:
    """Who asked for an instance, and whether they may also approve it.

    `launched` says a schedule launched it; `schedule_saver_id` is the account that last saved
    that schedule, None when the launch did not record it (an instance of an older release).
    """

    applicant_id: str
    launched: bool
    schedule_saver_id: str | None
    allow_self_approval: bool

    def interest_of(self, actor: str) -> Reason | None:
        """Why `actor` may not approve the instance (the self-approval rule), or None."""
        if self.allow_self_approval:
            return None
        if actor == self.applicant_id:
            return Reason(SELF_APPROVAL_APPLICANT, {"actor": actor})
        if actor == self.schedule_saver_id:
            return Reason(SELF_APPROVAL_SCHEDULE_SAVER, {"actor": actor})
        if self.launched and self.schedule_saver_id is None:
            return Reason(SELF_APPROVAL_SAVER_UNKNOWN)
        return None


@dataclass(frozen=True)
class Notice:
    """A reminder (`before_seconds` before the deadline) or, with None, the escalation that an
    instance still owes, and when it is due."""

    due_at: datetime
    before_seconds: int | None


def reminder_due_at(
    deadline: datetime,
    submitted_at: datetime,
    before_seconds: int,
    counted: Mapping[str, Any] | None = None,
) -> datetime:
    """A reminder is due `before_seconds` before the deadline, or at submission when the
    deadline was already closer than that; for a deadline in working time, `before_seconds`
    of working time before it, as counted at submission (`counted`: the deadline policy's
    `working_time_notices`, gone once an extension replaced the policy)."""
    reminders = (counted or {}).get("reminders", {})
    if str(before_seconds) in reminders:
        return max(datetime.fromisoformat(reminders[str(before_seconds)]), submitted_at)
    return max(deadline - timedelta(seconds=before_seconds), submitted_at)


def escalation_due_at(
    submitted_at: datetime, escalation: Mapping[str, Any], counted: Mapping[str, Any] | None = None
) -> datetime:
    """An escalation is due `after_seconds` after the submission: of working time, for a
    deadline in working time (as counted at submission)."""
    due = (counted or {}).get("escalation_due_at")
    if due is not None:
        return datetime.fromisoformat(due)
    return submitted_at + timedelta(seconds=escalation["after_seconds"])


def owed_notices(
    deadline: datetime,
    submitted_at: datetime,
    reminders: Sequence[Mapping[str, int]],
    sent: Sequence[Mapping[str, Any]],
    escalation: Mapping[str, Any] | None,
    escalated: bool,
    counted: Mapping[str, Any] | None = None,
) -> list[Notice]:
    """The reminders not yet recorded, and the escalation unless recorded, that fall due before
    the deadline (the current one: an extension moves the reminders), earliest first; in
    working time as `counted` when the deadline is."""
    done = {reminder["before_seconds"] for reminder in sent}
    owed = [
        Notice(
            reminder_due_at(deadline, submitted_at, r["before_seconds"], counted),
            r["before_seconds"],
        )
        for r in reminders
        if r["before_seconds"] not in done
    ]
    if escalation is not None and not escalated:
        owed.append(Notice(escalation_due_at(submitted_at, escalation, counted), None))
    due = [notice for notice in owed if notice.due_at < deadline]
    return sorted(due, key=lambda n: (n.due_at, n.before_seconds is None, -(n.before_seconds or 0)))


def fire_metadata(origin: dict[str, Any] | None) -> dict[str, Any] | None:
    """A launch's origin as written before fire metadata (requirement 001: workflow schedules),
    completed from what it holds: `fire_id` is the run id, `source` the run's trigger
    (`schedule` or `manual`, which was stored as `trigger_kind`), and `trigger_kind` the kind of
    the frozen trigger (`cron` or `window-interval`)."""
    if origin is None:
        return None
    return {
        **origin,
        "source": origin["trigger_kind"],
        "fire_id": origin["run_id"],
        "trigger_kind": origin["trigger"]["kind"],
    }


def _plain(value: object) -> object:
    """Form data as the object it stands for; anything else as its text."""
    return dict(value) if isinstance(value, Mapping) else str(value)


@dataclass(frozen=True)
class Decision:
    outcome: str
    state: str
    accepted: bool
    why: Reason
    completes_level: bool = False  # an approve that brought its level to its approvals

    @property
    def reason(self) -> str:
        return self.why.text


@dataclass(frozen=True)
class Answer:
    """What a command got; a repeat of the command gets it again. `reason_code` is None for
    an answer recorded before release 0.11.0, which kept the words alone."""

    outcome: str
    state: str
    accepted: bool
    reason: str
    fingerprint: str
    reason_code: str | None = None
    reason_params: dict[str, Any] | None = None

    @classmethod
    def of(cls, decision: Decision, fingerprint: str) -> Answer:
        why = decision.why
        return cls(
            decision.outcome,
            decision.state,
            decision.accepted,
            why.text,
            fingerprint,
            why.code,
            dict(why.params),
        )


@dataclass(frozen=True)
class Review:
    """Who reviews, as the rule needs it when a command arrives: the task the command is
    about, which reviewer rule admits the actor (None: none does), whether the actor is an
    admin, and for a reassignment whether its target is an eligible reviewer."""

    task: Task = field(default_factory=lambda: Task(FIRST_TASK, None))
    admission: dict[str, str] | None = field(default_factory=lambda: {"rule": BY_ANYONE})
    admin: bool = False
    target_eligible: bool = True
    tally: Tally = field(default_factory=Tally)


def decide(
    state: str,
    deadline: datetime,
    material_version: int,
    command: Command,
    now: datetime,
    actor: str,
    parties: Parties,
    *,
    granted: frozenset[str] = ALL_PERMISSIONS,
    contract_id: str | None = None,
    review: Review = Review(),
    paused_since: datetime | None = None,
    links: Links = Links(),
) -> Decision:
    """The one transition rule (docs/approvals.md), whatever the entry point.

    `granted` are the actor's permissions (the service's own actors hold them all);
    `contract_id` is the contract the instance's callbacks are bound to, if any yet; `links`
    what a resubmit or a cancellation request is decided on; `paused_since` when its review
    clock stands (paused or returned): its deadline never passes then.
    """
    refusal = refusal_of(command, actor, parties, granted, review)
    if refusal is not None:
        return Decision(FORBIDDEN, state, False, refusal)
    decision = _decide_in_time(
        state, deadline, material_version, command, now, actor, parties, review, paused_since, links
    )
    if command.kind == SIGN:
        return _matched(
            decision, callback_mismatches(command.payload, material_version, contract_id)
        )
    return decision


def refusal_of(
    command: Command,
    actor: str,
    parties: Parties,
    granted: frozenset[str],
    review: Review = Review(),
) -> Reason | None:
    """Why `actor` may not send `command` at all, or None: checked before anything else."""
    needed = PERMISSION_OF_COMMAND.get(command.kind)
    if needed is not None and needed not in granted:
        return Reason(PERMISSION_MISSING, {"actor": actor, "permission": needed})
    if not _admitted(command.kind, actor, parties, review, granted):
        return Reason(NOT_A_REVIEWER, {"actor": actor})
    if command.kind in HOLDING and not review.admin and review.task.assignee_id != actor:
        return Reason(NOT_THE_ASSIGNEE, {"command": command.kind})
    if command.kind == WITHDRAW and actor != parties.applicant_id:
        return Reason(NOT_THE_APPLICANT)
    if command.kind == REVISE and actor != parties.applicant_id:
        return Reason(NOT_THE_APPLICANT_REVISE)
    if command.kind == RESUBMIT and actor != parties.applicant_id:
        return Reason(RESUBMIT_BY_APPLICANT_ONLY)
    if command.kind == REQUEST_CANCELLATION and actor != parties.applicant_id:
        return Reason(CANCELLATION_BY_APPLICANT_ONLY)
    return None


def _admitted(
    kind: str, actor: str, parties: Parties, review: Review, granted: frozenset[str]
) -> bool:
    """A reviewer's command from a reviewer; a comment from a reviewer or the applicant (on an
    instance from before reviewers, a reviewer is anyone who may decide)."""
    if kind == COMMENT:
        anyone = review.admission == {"rule": BY_ANYONE}
        reviewer = review.admission is not None and (not anyone or APPROVAL_DECIDE in granted)
        return reviewer or actor == parties.applicant_id
    return kind not in REVIEWING or review.admission is not None


def _decide_in_time(
    state: str,
    deadline: datetime,
    material_version: int,
    command: Command,
    now: datetime,
    actor: str,
    parties: Parties,
    review: Review,
    paused_since: datetime | None = None,
    links: Links = Links(),
) -> Decision:
    if state == WAITING_REVIEW and now >= deadline and paused_since is None:
        passed = Reason(DEADLINE_PASSED, {"deadline": deadline.isoformat(), "at": now.isoformat()})
        return Decision(EXPIRED, EXPIRED, command.kind == SWEEP, passed)
    if command.kind == RESUBMIT:
        return _decide_resubmit(state, links)
    if command.kind == REQUEST_CANCELLATION:
        return _decide_cancellation(state, links)
    decided = Reason(ALREADY_DECIDED, {"state": state})
    if state in TERMINAL and command.kind == SWEEP:
        return Decision(NOT_DUE, state, True, decided)
    if state in TERMINAL:
        outcome = LATE_OR_CONFLICT if command.kind == SIGN else CONFLICT
        return Decision(outcome, state, False, decided)
    if state == RETURNED and command.kind not in WHILE_RETURNED:
        code = NOT_WAITING_FOR_REVIEW if command.kind in CLOCK else INSTANCE_RETURNED
        return Decision(CONFLICT, state, False, Reason(code, {"state": state}))
    tally = review.tally
    if command.kind in REVIEWING and actor in tally.voters | tally.holders:
        why = Reason(ALREADY_VOTED_ON_LEVEL, {"actor": actor, "level": tally.level})
        return Decision(ALREADY_VOTED, WAITING_REVIEW, False, why)
    if command.kind in REVIEWING | HOLDING and review.task.state == CLOSED:
        return Decision(
            CONFLICT, WAITING_REVIEW, False, Reason(TASK_CLOSED, {"task_id": review.task.id})
        )
    holder = review.task.held_by_other(actor)
    if command.kind in REVIEWING and holder is not None:
        return Decision(
            TAKEN, WAITING_REVIEW, False, Reason(CLAIMED_BY_OTHER, {"assignee": holder})
        )
    if command.kind == EXTEND:
        return _decide_extension(deadline, command, now)
    if command.kind == REASSIGN:
        return _decide_reassignment(command, parties, review)
    if command.kind in CLOCK:
        return _decide_clock(command, paused_since)
    if command.kind == REVISE:
        return _decide_revise(material_version, command, state)
    return _decide_waiting(material_version, command, parties.interest_of(actor), state, review)


def _decide_resubmit(state: str, links: Links) -> Decision:
    """A withdrawn, expired or rejected instance may be resubmitted once; its state stays."""
    if state not in RESUBMITTABLE:
        return Decision(CONFLICT, state, False, Reason(NOT_RESUBMITTABLE, {"state": state}))
    if links.resubmitted_as is not None:
        found = Reason(ALREADY_RESUBMITTED, {"instance_id": links.resubmitted_as})
        return Decision(CONFLICT, state, False, found)
    return Decision(RESUBMITTED, state, True, Reason(RESUBMITTED_AS, {"instance_id": links.new_id}))


def _decide_cancellation(state: str, links: Links) -> Decision:
    """An approved instance whose definition names a cancellation definition may have its
    cancellation requested, unless one is requested or done (a refused one may be asked
    again); its state stays APPROVED."""
    if state != APPROVED:
        return Decision(CONFLICT, state, False, Reason(NOT_APPROVED, {"state": state}))
    if links.cancellation_definition is None:
        return Decision(CONFLICT, state, False, Reason(NO_CANCELLATION_DEFINITION))
    current = links.cancellation or {}
    if current.get("state") in (REQUESTED, CANCELLED):
        code = CANCELLATION_PENDING if current["state"] == REQUESTED else ALREADY_CANCELLED
        return Decision(
            CONFLICT, state, False, Reason(code, {"instance_id": current["instance_id"]})
        )
    asked = Reason(CANCELLATION_REQUESTED_AS, {"instance_id": links.new_id})
    return Decision(CANCELLATION_REQUESTED, state, True, asked)


def cancellation_settled_as(linked_state: str) -> str | None:
    """What a cancellation becomes when its instance ends in `linked_state`: CANCELLED when
    approved, REFUSED when rejected, withdrawn or expired; None while it waits."""
    if linked_state == APPROVED:
        return CANCELLED
    return REFUSED if linked_state in TERMINAL else None


def _decide_clock(command: Command, paused_since: datetime | None) -> Decision:
    """A pause of a running clock, or a resume of a paused one; the other way round refused."""
    if command.kind == PAUSE and paused_since is not None:
        since = Reason(CLOCK_ALREADY_PAUSED, {"since": paused_since.isoformat()})
        return Decision(CONFLICT, WAITING_REVIEW, False, since)
    if command.kind == RESUME and paused_since is None:
        return Decision(CONFLICT, WAITING_REVIEW, False, Reason(CLOCK_NOT_PAUSED))
    outcome, code = CLOCK_OUTCOMES[command.kind]
    said = Reason(code, {"reason": command.payload["reason"]})
    return Decision(outcome, WAITING_REVIEW, True, said)


def _decide_waiting(
    material_version: int,
    command: Command,
    interest: Reason | None,
    state: str = WAITING_REVIEW,
    review: Review = Review(),
) -> Decision:
    if command.kind in REVIEWING and interest is not None:
        return Decision(SELF_APPROVAL, state, False, interest)
    stale = stale_material(command, material_version)
    if stale is not None:
        return Decision(STALE_MATERIAL, state, False, stale)
    if command.kind in VOTING:
        return _decide_vote(command.kind, review.tally)
    accepted = ACCEPTED_WHILE_WAITING.get(command.kind)
    if accepted is not None:
        outcome, code = accepted
        return Decision(outcome, STATE_AFTER.get(outcome, state), True, Reason(code))
    return Decision(NOT_DUE, state, True, Reason(DEADLINE_NOT_DUE))


def _decide_vote(kind: str, tally: Tally) -> Decision:
    """An approve or reject on a level: it completes the level (the last: APPROVED), counts,
    or refuses the instance (a reject, unless the level counts rejects as votes and enough
    approvals remain possible)."""
    counts = {"level": tally.level, "required": tally.required}
    if kind == APPROVE:
        approvals = tally.approvals + 1
        if approvals < tally.required:
            why = Reason(APPROVAL_COUNTED, {**counts, "approvals": approvals})
            return Decision(VOTED, WAITING_REVIEW, True, why)
        if tally.last:
            return Decision(APPROVED, APPROVED, True, Reason(APPROVED_IN_TIME), True)
        why = Reason(APPROVAL_COUNTED, {**counts, "approvals": approvals})
        return Decision(VOTED, WAITING_REVIEW, True, why, True)
    if tally.any_reject_rejects:
        return Decision(REJECTED, REJECTED, True, Reason(REJECTED_IN_TIME))
    possible = tally.possible - 1
    if possible < tally.required:
        why = Reason(LEVEL_CANNOT_REACH, {**counts, "possible": max(possible, 0)})
        return Decision(REJECTED, REJECTED, True, why)
    why = Reason(REJECTION_COUNTED, {**counts, "possible": possible})
    return Decision(VOTED, WAITING_REVIEW, True, why)


def _decide_revise(material_version: int, command: Command, state: str) -> Decision:
    """A revise names a newer material version, or is refused on `material_version`; it
    brings a returned instance back to review."""
    offered = command.payload["material_version"]
    if offered <= material_version:
        why = Reason(MATERIAL_NOT_NEWER, {"offered": offered, "current": material_version})
        return Decision(RULE_BROKEN, state, False, why)
    revised_to = {"old": material_version, "new": offered, "reason": command.payload["reason"]}
    return Decision(REVISED, WAITING_REVIEW, True, Reason(MATERIAL_REVISED, revised_to))


def _decide_reassignment(command: Command, parties: Parties, review: Review) -> Decision:
    target = command.payload["assignee_id"]
    ineligible = ineligible_target(target, parties, review)
    if ineligible is not None:
        return Decision(RULE_BROKEN, WAITING_REVIEW, False, ineligible)
    return Decision(
        REASSIGNED, WAITING_REVIEW, True, Reason(REASSIGNED_IN_TIME, {"assignee": target})
    )


def ineligible_target(target: str, parties: Parties, review: Review) -> Reason | None:
    """Why a reassignment's target may not take the task (it may not approve the instance)."""
    if not review.target_eligible or parties.interest_of(target) is not None:
        return Reason(REVIEWER_INELIGIBLE, {"account": target})
    return None


def stale_material(command: Command, material_version: int) -> Reason | None:
    """Why an approve, or a withdraw that names a material version, offers stale material."""
    if command.kind not in (APPROVE, REJECT, WITHDRAW):
        return None
    offered = command.payload.get("material_version")
    if offered is None or offered == material_version:
        return None
    return Reason(MATERIAL_STALE, {"offered": offered, "current": material_version})


def _decide_extension(deadline: datetime, command: Command, now: datetime) -> Decision:
    broken = broken_extension_rule(deadline, command.payload["new_deadline_at"], now)
    if broken is not None:
        return Decision(RULE_BROKEN, WAITING_REVIEW, False, broken)
    asked = Reason(DEADLINE_EXTENDED, {"reason": command.payload["reason"]})
    return Decision(EXTENDED, WAITING_REVIEW, True, asked)


def broken_extension_rule(current: datetime, new: datetime, now: datetime) -> Reason | None:
    """Which rule a new deadline breaks, or None: later than the current one, within 30 days."""
    if new <= current:
        return Reason(EXTENSION_NOT_LATER, {"deadline": current.isoformat()})
    if new > now + MAX_EXTENSION:
        return Reason(EXTENSION_TOO_FAR)
    return None


def callback_mismatches(
    payload: Mapping[str, Any], material_version: int, contract_id: str | None
) -> list[Reason]:
    """How a signing callback differs from its instance; an unbound contract always matches."""
    found = []
    if payload["material_version"] != material_version:
        offered = {"offered": payload["material_version"], "current": material_version}
        found.append(Reason(MATERIAL_STALE, offered))
    if contract_id is not None and payload["contract_id"] != contract_id:
        found.append(
            Reason(CONTRACT_MISMATCH, {"offered": payload["contract_id"], "bound": contract_id})
        )
    return found


def _matched(decision: Decision, mismatches: list[Reason]) -> Decision:
    return replace(decision, why=decision.why.with_mismatches(mismatches))


def without_admission(state: dict[str, Any]) -> None:
    """Upcast from before reviewers: no rule was recorded as admitting anyone."""
    state["admission"] = None


def _legacy_task(state: str) -> Task:
    """An instance's task from before tasks: anyone who may decide; closed once decided."""
    task = Task(FIRST_TASK, None)
    return task.closed() if state in TERMINAL else task


def without_reason_code(state: dict[str, Any]) -> None:
    """Upcast from before events kept a reason's code: the words were all they kept."""
    state["reason_code"] = None
    state["reason_params"] = None


def refusal_error(answer: Answer, command: Command) -> DomainError | None:
    """The problem a refused command is answered with, after it was recorded; None otherwise."""
    if answer.outcome == FORBIDDEN:
        return (
            NotAReviewer(answer.reason)
            if answer.reason_code == NOT_A_REVIEWER
            else (Forbidden(answer.reason))
        )
    if answer.outcome == RULE_BROKEN:
        return ValidationFailed.of(FIELD_OF_RULE[command.kind], answer.reason)
    return None


class ApprovalInstance(Aggregate):
    """An instance waiting for review until an absolute deadline."""

    @staticmethod
    def create_id(tenant_id: UUID, applicant_id: str, command_id: str) -> UUID:
        return approval_uuid(tenant_id, applicant_id, command_id)

    class_version = 9

    upcast_v1_v2 = staticmethod(self_approval_was_not_allowed)

    @staticmethod
    def upcast_v2_v3(state: dict[str, Any]) -> None:
        state["origin"] = fire_metadata(state["origin"])

    @staticmethod
    def upcast_v3_v4(state: dict[str, Any]) -> None:
        """A snapshot from before callback matching and extension history: the first callback
        binds the contract, each observation is matched, and the extensions before the
        snapshot are left out (the timeline has them)."""
        observations = state["observations"]
        state["contract_id"] = observations[0]["contract_id"] if observations else None
        for observation in observations:
            observation["material_matches"] = (
                observation["material_version"] == state["material_version"]
            )
            observation["contract_matches"] = observation["contract_id"] == state["contract_id"]

    @staticmethod
    def upcast_v4_v5(state: dict[str, Any]) -> None:
        """A snapshot from before version 5 did not keep the command that decided the instance
        (its timeline has it): unknown."""
        state["winning_command"] = None
        state["extensions"] = []

    @staticmethod
    def upcast_v5_v6(state: dict[str, Any]) -> None:
        """A snapshot from before version 6 kept no given offset of its deadline: UTC."""
        state["review_deadline_offset_minutes"] = None

    @staticmethod
    def upcast_v6_v7(state: dict[str, Any]) -> None:
        """A snapshot from before reminders and escalation: none owed, none recorded."""
        without_notices(state)
        state["reminders_sent"] = []
        state["escalated"] = None

    @staticmethod
    def upcast_v7_v8(state: dict[str, Any]) -> None:
        """A snapshot from before reviewers: anyone who may decide, one task, no comments."""
        state["reviewers"] = None
        state["tasks"] = [_legacy_task(state["state"]).as_dict()]
        state["comments"] = []

    @staticmethod
    def upcast_v8_v9(state: dict[str, Any]) -> None:
        """A snapshot from before issue 35: levels (one, from its reviewers), no votes kept
        (its timeline has them), the deadline kept on a revise; no links to other instances;
        never paused, no limit on a pause, a revise after a return goes back to the first
        level."""
        candidates = state["tasks"][0]["candidates"] if state["tasks"] else None
        level = legacy_level(state["reviewers"], candidates)
        if state["state"] in (APPROVED, REJECTED):
            level.update(state=COMPLETED if state["state"] == APPROVED else FAILED)
            level["completed_at"] = state["decided_at"]
        state["levels"] = [level]
        state["leveled"] = False
        state["current_level"] = 1
        state["votes"] = []
        state["restart_deadline_on_revise"] = False
        state["blocked_levels"] = []
        without_links(state)
        state["resubmitted_as"] = None
        state["cancellation"] = None
        state["paused_since"] = None
        state["pauses"] = []
        state["paused_seconds"] = 0.0
        with_pause_terms(state)

    class Submitted(Aggregate.Created):
        """Version 2 added `allow_self_approval` (false before: self-approval was not allowed);
        version 3 gave a launch's `origin` its fire metadata (see `fire_metadata`); version 4
        added `review_deadline_offset_minutes`, the offset a deadline was given with (None: UTC,
        or a deadline from the definition's review window); version 5 the definition's
        `reminders` and `escalation` (none before); version 6 the definition's `reviewers`
        and the review task's `candidates` (None before: anyone who may decide); version 7
        the definition's `levels`, each with its candidates fixed at submission (None before,
        and for a definition without levels: one level from `reviewers`),
        `restart_deadline_on_revise` (false before), `max_pause_seconds` (None: no limit) and
        `return_to` (`first`), the instance it `resubmits` and the approved one it is the
        `cancellation_of` (None before: none)."""

        class_version = 7
        tenant_id: UUID
        definition_id: str
        applicant_id: str
        title: str
        form_data: FormData
        material_version: int
        review_deadline_at: datetime
        review_deadline_offset_minutes: int | None
        deadline_policy: dict[str, Any]
        origin: dict[str, Any] | None
        allow_self_approval: bool
        command_id: str
        fingerprint: str
        at: datetime
        actor: str
        reminders: list[Reminder]
        escalation: Escalation | None
        reviewers: dict[str, Any] | None
        candidates: list[str] | None
        max_pause_seconds: int | None
        return_to: str
        levels: list[dict[str, Any]] | None
        restart_deadline_on_revise: bool
        resubmits: str | None
        cancellation_of: str | None

        upcast_v1_v2 = staticmethod(self_approval_was_not_allowed)

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            state["origin"] = fire_metadata(state["origin"])

        @staticmethod
        def upcast_v3_v4(state: dict[str, Any]) -> None:
            state["review_deadline_offset_minutes"] = None  # no offset was kept: UTC

        upcast_v4_v5 = staticmethod(without_notices)

        @staticmethod
        def upcast_v5_v6(state: dict[str, Any]) -> None:
            state["reviewers"] = None
            state["candidates"] = None

        @staticmethod
        def upcast_v6_v7(state: dict[str, Any]) -> None:
            with_pause_terms(state)
            state["levels"] = None
            state["restart_deadline_on_revise"] = False
            without_links(state)

    @classmethod
    def submit(
        cls,
        tenant_id: UUID,
        applicant_id: str,
        submission: Submission,
        definition: Definition | DefinitionTerms,
        origin: dict[str, Any] | None,
        at: datetime,
        candidates: Sequence[str] | None = None,
        ruled: Ruled | None = None,
        levels: Sequence[Mapping[str, Any]] | None = None,
        linked: Mapping[str, str | None] | None = None,
    ) -> ApprovalInstance:
        """A new instance, submitted by its applicant or by a run on the applicant's behalf
        (with the terms of the definition's revision the run was frozen at); the definition's
        reminders, escalation and reviewers are fixed on it, as its deadline is, and its task
        goes to `candidates`, the accounts the reviewers named at submission. A definition
        whose deadline is in working time gives it counted on its calendar (`ruled`). A
        definition with levels gives them (`levels`, see domain/levels.py `level_of`), each
        with its candidates; `reviewers` and `candidates` are then level 1's. A
        resubmission or a cancellation names its original in `linked` (`resubmits` or
        `cancellation_of`)."""
        deadline, deadline_policy = submission.deadline(
            definition.review_window_seconds, at, revision_of(definition), ruled
        )
        return cls(
            tenant_id=tenant_id,
            definition_id=submission.definition_id,
            applicant_id=applicant_id,
            title=submission.title,
            form_data=FormData.of(submission.form_data),
            material_version=submission.material_version,
            review_deadline_at=deadline,
            review_deadline_offset_minutes=(
                submission.review_deadline_offset_minutes
                if submission.review_deadline_at is not None
                else None
            ),
            deadline_policy=deadline_policy,
            origin=origin,
            allow_self_approval=definition.allow_self_approval,
            command_id=submission.command_id,
            fingerprint=submission.fingerprint,
            at=at,
            actor=applicant_id,
            reminders=[dict(reminder) for reminder in definition.reminders],
            escalation=None if definition.escalation is None else dict(definition.escalation),
            reviewers=levels[0]["reviewers"] if levels else definition.reviewers,
            candidates=None if candidates is None else sorted(candidates),
            max_pause_seconds=definition.max_pause_seconds,
            return_to=definition.return_to,
            levels=None if not levels else [dict(level) for level in levels],
            restart_deadline_on_revise=definition.restart_deadline_on_revise,
            resubmits=(linked or {}).get("resubmits"),
            cancellation_of=(linked or {}).get("cancellation_of"),
        )

    @event(Submitted)
    def __init__(
        self,
        tenant_id: UUID,
        definition_id: str,
        applicant_id: str,
        title: str,
        form_data: FormData,
        material_version: int,
        review_deadline_at: datetime,
        review_deadline_offset_minutes: int | None,
        deadline_policy: dict[str, Any],
        origin: dict[str, Any] | None,
        allow_self_approval: bool,
        command_id: str,
        fingerprint: str,
        at: datetime,
        actor: str,
        reminders: Sequence[Reminder] = (),
        escalation: Escalation | None = None,
        reviewers: dict[str, Any] | None = None,
        candidates: Sequence[str] | None = None,
        max_pause_seconds: int | None = None,
        return_to: str = RETURN_TO_FIRST,
        levels: Sequence[Mapping[str, Any]] | None = None,
        restart_deadline_on_revise: bool = False,
        resubmits: str | None = None,
        cancellation_of: str | None = None,
    ) -> None:
        self.tenant_id = tenant_id
        self.definition_id = definition_id
        self.applicant_id = applicant_id
        self.title = title
        self.form_data = form_data
        self.material_version = material_version
        self.review_deadline_at = review_deadline_at
        self.review_deadline_offset_minutes = review_deadline_offset_minutes
        self.deadline_policy = deadline_policy
        self.origin = origin
        self.allow_self_approval = allow_self_approval
        self.submitted_at = at
        self.state = WAITING_REVIEW
        self.decided_at: datetime | None = None
        self.winning_command: dict[str, str | None] | None = None  # the command that decided it
        self.observations: list[dict[str, Any]] = []
        self.contract_id: str | None = None  # bound by the first signing callback
        self.extensions: list[dict[str, Any]] = []
        self.answers: dict[str, dict[str, Any]] = {}
        self.submission_fingerprint = fingerprint
        self.reminders = [dict(reminder) for reminder in reminders]
        self.escalation = escalation
        self.reminders_sent: list[dict[str, Any]] = []  # before_seconds, due_at, at
        self.escalated: dict[str, Any] | None = None  # account_id, after_seconds, due_at, at
        self.reviewers = reviewers  # None: anyone who may decide (before reviewers)
        self.leveled = levels is not None  # a definition's own levels (else one, as before)
        self.levels, self.tasks = initial_review(levels, reviewers, candidates, at)
        self.current_level = 1
        self.votes: list[dict[str, Any]] = []  # level, task, approve/reject, material version
        self.restart_deadline_on_revise = restart_deadline_on_revise
        self.blocked_levels: list[dict[str, Any]] = []  # levels that can no longer complete
        self.comments: list[dict[str, Any]] = []  # author, text, at, command
        self.max_pause_seconds = max_pause_seconds  # None: a pause may last any time
        self.return_to = return_to  # where a revise after a return goes: first, returning
        self.paused_since: datetime | None = None  # the review clock stands (pause, return)
        self.pauses: list[dict[str, Any]] = []  # kind, from, to, reason, actor, deadlines
        self.paused_seconds = 0.0  # how long the clock stood, the open pause left out
        self.resubmits = resubmits  # the instance this one resubmits
        self.cancellation_of = cancellation_of  # the approved instance this one would cancel
        self.resubmitted_as: str | None = None  # the instance that resubmitted this one
        # state (REQUESTED, CANCELLED, REFUSED), instance_id, requested_at, reason, actor,
        # and once settled settled_at and the linked instance's outcome
        self.cancellation: dict[str, Any] | None = None

    def answer_to(
        self,
        command: Command,
        actor: str | None = None,
        granted: frozenset[str] = ALL_PERMISSIONS,
        review: Review | None = None,
    ) -> Answer | None:
        """The first answer to a repeated command id, or None for a new one.

        None too when the rule refuses `actor` (with `granted`) the command: a refusal is
        decided and recorded each time, and never replays, nor takes, another caller's answer.
        And None for another command under the id of one that broke a rule (422): the caller
        corrects a command and sends it again with its id, which only a final answer claims.
        """
        if command.command_id is None or command.command_id not in self.answers:
            return None
        if actor is not None and refusal_of(
            command, actor, self.parties, granted, review or self.review()
        ):
            return None
        first = Answer(**self.answers[command.command_id])
        if first.fingerprint == command.fingerprint:
            return first
        if first.outcome == RULE_BROKEN:
            return None
        raise CommandIdReused(command.command_id)

    def answered_for_good(self, command_id: str | None) -> bool:
        """Whether `command_id` has an answer no corrected command changes: any but a broken
        rule's (422; docs/api.md#idempotency)."""
        answer = self.answers.get(command_id) if command_id is not None else None
        return answer is not None and answer["outcome"] != RULE_BROKEN

    def check_rules(
        self, kind: str, payload: Mapping[str, Any], now: datetime, review: Review | None = None
    ) -> None:
        """The rule a command's given fields break whatever else it says (a new deadline not
        later or too far, a material version not newer, a reassignment's target who may not
        approve, by `review`), as a 422 names it; checked without deciding or recording
        anything, for a body some of whose fields broke their shape."""
        broken: Reason | None = None
        if self.state in TERMINAL:
            return  # decided: the command loses (409) whatever its fields say
        target = payload.get("assignee_id")
        if kind == REASSIGN and isinstance(target, str) and review is not None:
            broken = ineligible_target(target, self.parties, review)
        if kind == EXTEND and isinstance(payload.get("new_deadline_at"), datetime):
            broken = broken_extension_rule(self.review_deadline_at, payload["new_deadline_at"], now)
        offered = payload.get("material_version")
        if kind == REVISE and isinstance(offered, int) and offered <= self.material_version:
            broken = Reason(
                MATERIAL_NOT_NEWER, {"offered": offered, "current": self.material_version}
            )
        if broken is not None:
            raise ValidationFailed.of(FIELD_OF_RULE[kind], broken.text)

    @property
    def review_deadline_at_local(self) -> datetime:
        """The review deadline at the offset it was given with; in UTC when none was."""
        return at_offset(self.review_deadline_at, self.review_deadline_offset_minutes)

    def task(self, task_id: str = FIRST_TASK) -> Task:
        """One of the instance's tasks; an unknown id is not found (422 on `task_id`)."""
        for task in self.tasks:
            if task["id"] == task_id:
                return Task.of(task)
        raise ValidationFailed.of(
            "task_id", Message("the instance has no task {task_id}", task_id=task_id)
        )

    @property
    def reviewer_rule(self) -> Reviewers | None:
        """The reviewers of the current level (of the instance, without levels)."""
        if self.leveled:
            return Reviewers.of(self.levels[self.current_level - 1]["reviewers"])
        return Reviewers.of(self.reviewers)

    def task_id_for(self, command: Command, actor: str) -> str:
        """The task a command is about: the one it names, else (a reviewer's command) the
        actor's on the current level, or its first open one."""
        named = command.payload.get("task_id")
        if named:
            return str(named)
        return current_task_id(self.tasks, self.current_level, actor)

    def tally(self, task_id: str, eligible: Sequence[str] | None = None) -> Tally:
        """The current level's tally for a command on `task_id` (see domain/levels.py)."""
        return tally_of(self.levels, self.votes, self.tasks, self.current_level, task_id, eligible)

    def review(self, task_id: str = FIRST_TASK) -> Review:
        """The review as the instance alone knows it: without reviewers (an instance from
        before them) anyone who may decide is admitted; with them, nobody until the service
        says who the rule admits (`Review.admission`)."""
        admission = {"rule": BY_ANYONE} if self.reviewers is None else None
        return Review(self.task(task_id), admission, tally=self.tally(task_id))

    @property
    def parties(self) -> Parties:
        saver = self.origin.get("saved_by") if self.origin else None
        return Parties(self.applicant_id, self.origin is not None, saver, self.allow_self_approval)

    def handle(
        self,
        command: Command,
        at: datetime,
        actor: str,
        granted: frozenset[str] = ALL_PERMISSIONS,
        review: Review | None = None,
        links: Links | None = None,
        clock: Clock = PLAIN_CLOCK,
    ) -> Answer:
        """Decide `command` at server time `at` and record it, winner or loser (refusals too).

        A command that finds the deadline passed is recorded as rejected (EXPIRED), after the
        expiry itself, which is the deadline rule's (`DEADLINE_ACTOR`), not the caller's. A
        pause that outlasted `max_pause_seconds` is first resumed by the deadline rule, at the
        end of the time it was allowed; `clock` counts the time the clock stood.
        """
        self.resume_overdue_pause(at, clock)
        review = review or self.review(self.task_id_for(command, actor))
        decision = decide(
            self.state,
            self.review_deadline_at,
            self.material_version,
            command,
            at,
            actor,
            self.parties,
            granted=granted,
            contract_id=self.contract_id,
            review=review,
            paused_since=self.paused_since,
            links=self.links(links),
        )
        extension = self._extras(decision, command, at, clock)
        payload = command.payload
        if (
            review.task.id != FIRST_TASK
            and "task_id" not in payload
            and command.kind in (REVIEWING | HOLDING)
        ):
            payload = {**payload, "task_id": review.task.id}  # the task it found, kept
        late = decision.outcome == EXPIRED and command.kind != SWEEP
        if late:
            self.handle(Command(SWEEP, None), at, DEADLINE_ACTOR)
        if decision.outcome != NOT_DUE:
            self.trigger_event(
                ApprovalInstance.CommandRejected if late else EVENT_OF_OUTCOME[decision.outcome],
                **extension,
                command=command.kind,
                command_id=command.command_id,
                payload=payload,
                outcome=decision.outcome,
                reason=decision.reason,
                reason_code=decision.why.code,
                reason_params=dict(decision.why.params),
                accepted=decision.accepted,
                fingerprint=command.fingerprint,
                at=at,
                actor=actor,
                admission=(review.admission if command.kind in REVIEWING else None),
            )
        if decision.completes_level and (self.leveled or not review.tally.last):
            self._complete_level(review.tally.level, at, actor)
        return Answer.of(decision, command.fingerprint)

    @property
    def pause_ends_at(self) -> datetime | None:
        """When a pause (not a return) reaches `max_pause_seconds` and the clock resumes by
        itself; None when the clock runs, stands for a return, or a pause has no limit."""
        if self.paused_since is None or self.max_pause_seconds is None:
            return None
        if self.pauses[-1]["kind"] != PAUSE_KIND:
            return None
        return self.paused_since + timedelta(seconds=self.max_pause_seconds)

    def resume_overdue_pause(self, at: datetime, clock: Clock = PLAIN_CLOCK) -> None:
        """Resume a pause that reached `max_pause_seconds` by `at`, as the deadline rule
        (`DEADLINE_ACTOR`) at the instant it did: the deadline moves by the time allowed."""
        ends_at = self.pause_ends_at
        if ends_at is None or at < ends_at:
            return
        why = Reason(CLOCK_RESUMED_AT_MAX_PAUSE, {"max_pause_seconds": self.max_pause_seconds})
        command = Command(RESUME, None, {"automatic": True})
        self.trigger_event(
            ApprovalInstance.DeadlineResumed,
            clock=self.stood_clock(ends_at, clock),
            command=RESUME,
            command_id=None,
            payload=command.payload,
            outcome=RESUMED,
            reason=why.text,
            reason_code=why.code,
            reason_params=dict(why.params),
            accepted=True,
            fingerprint=command.fingerprint,
            at=at,
            actor=DEADLINE_ACTOR,
            admission=None,
        )

    def stood_clock(self, end: datetime, clock: Clock = PLAIN_CLOCK) -> dict[str, Any]:
        """How the clock that stood since `paused_since` runs again at `end`: the deadline, and
        the counted reminders and escalation still to come, move by the time it stood (as
        `clock` counts it, in working time for a deadline counted on a calendar). What a
        resume, a return ending a pause, or a come-back after a return records."""
        since = self.paused_since
        assert since is not None, "only a clock that stands runs again"
        counted = clock.measure(since, end)

        def move(instant: datetime) -> datetime:
            return clock.add(instant, counted)

        owed_escalation = (
            escalation_due_at(self.submitted_at, self.escalation, self._counted_notices)
            if self.escalation is not None and self.escalated is None
            else None
        )
        return {
            "kind": self.pauses[-1]["kind"],
            "from": since,
            "to": end,
            "old_deadline_at": self.review_deadline_at,
            "new_deadline_at": move(self.review_deadline_at),
            "counted_seconds": counted.total_seconds(),
            "working_time_notices": moved_notices(
                self._counted_notices, owed_escalation, since, move
            ),
        }

    @property
    def _counted_notices(self) -> dict[str, Any] | None:
        counted: dict[str, Any] | None = self.deadline_policy.get("working_time_notices")
        return counted

    def come_back(self, stood: Mapping[str, Any]) -> None:
        """Apply step of the revise that answers a return: the instance waits for review
        again, and its clock runs again as `stood` (`stood_clock` at the revise's instant,
        kept on its event) says; the revise reopens the tasks of the level it goes back to."""
        if self.state != RETURNED:
            raise InvalidState(Message("the instance is {state}, not returned", state=self.state))
        self.state = WAITING_REVIEW
        self._run_again(stood)

    def _stop(self, kind: str, handled: CommandHandled) -> None:
        """The clock stands from the command's instant: a pause, or a return."""
        self.paused_since = handled.at
        self.pauses.append(opened_pause(kind, handled, self.review_deadline_at))

    def _run_again(self, stood: Mapping[str, Any]) -> None:
        """The clock runs again: the open pause closed, the deadline and counted notices moved."""
        self.pauses[-1] = closed_pause(self.pauses[-1], stood)
        self.paused_seconds += stood_seconds(stood)
        self.paused_since = None
        self.review_deadline_at = stood["new_deadline_at"]
        self.deadline_policy = policy_after_stood(self.deadline_policy, stood)

    def _ended_stood(self, at: datetime) -> None:
        """A decision while the clock stands: the open pause ends, the deadline unmoved."""
        assert self.paused_since is not None
        self._run_again(unmoved(self.paused_since, at, self.review_deadline_at))

    def _extras(
        self, decision: Decision, command: Command, at: datetime, clock: Clock
    ) -> dict[str, Any]:
        """What an extension's, a link's, the clock's or a revise's event keeps besides the
        command."""
        if decision.outcome in (RESUMED, RETURNED):
            return {"clock": self._stood(at, clock)}
        if decision.outcome == EXTENDED:
            return {
                "rule_version": DEADLINE_RULES_VERSION,
                "deadline_offset_minutes": command.deadline_offset_minutes,
            }
        if decision.outcome in (RESUBMITTED, CANCELLATION_REQUESTED):
            return {"linked_id": decision.why.params["instance_id"]}
        if decision.outcome == REVISED:
            returned = self.state == RETURNED
            back_to = (
                self.current_level if returned and self.return_to == RETURN_TO_RETURNING else 1
            )
            revision = revision_after(self.votes, self.tasks, self.current_level, back_to, returned)
            restarted = command.payload.get("new_deadline_at")
            return {
                "clock": self._stood(at, clock) if returned else None,
                "lapsed_votes": revision.lapsed,
                "back_to_level": revision.back_to_level,
                "reopened_tasks": revision.reopened_tasks,
                "closed_tasks": revision.closed_tasks,
                "old_deadline_at": self.review_deadline_at if restarted else None,
            }
        return {}

    def _stood(self, at: datetime, clock: Clock) -> dict[str, Any] | None:
        """How the clock runs again at `at` (a resume, a return ending a pause, the revise
        that answers a return); None when it runs."""
        return None if self.paused_since is None else self.stood_clock(at, clock)

    def _complete_level(self, number: int, at: datetime, actor: str) -> None:
        following = number + 1 if number < len(self.levels) else None
        self._level_completed(
            level=number,
            next_level=following,
            opened_tasks=opened_tasks(self.levels, self.tasks, number),
            material_version=self.material_version,
            at=at,
            actor=actor,
        )

    def block_level(self, eligible: Sequence[str], at: datetime, actor: str) -> bool:
        """Record that the current level can no longer reach its approvals with the
        candidates who may still approve (`eligible`: the directory now), once per level;
        whether it was recorded."""
        tally = self.tally(FIRST_TASK, eligible)
        known = {blocked["level"] for blocked in self.blocked_levels}
        if self.state != WAITING_REVIEW or tally.level in known or tally.possible >= tally.required:
            return False
        self._level_blocked(
            level=tally.level,
            approvals_required=tally.required,
            possible=tally.possible,
            candidates=sorted(self.level_candidates(tally.level)),
            at=at,
            actor=actor,
        )
        return True

    def level_candidates(self, number: int) -> set[str]:
        """Everyone level `number`'s tasks name (its candidates and any escalation target)."""
        found = set(self.levels[number - 1]["candidates"] or ())
        for task in self.tasks:
            if task.get("level", 1) == number:
                found |= set(task["candidates"] or ())
        return found

    class LevelBlocked(Aggregate.Event):
        """The current level `level` can no longer reach `approvals_required` approvals: only
        `possible` remain (those counted and the eligible candidates who have not voted), its
        other `candidates` deactivated or without the permission; recorded by the sweeper."""

        level: int
        approvals_required: int
        possible: int
        candidates: list[str]
        at: datetime
        actor: str

    @event(LevelBlocked)
    def _level_blocked(
        self,
        level: int,
        approvals_required: int,
        possible: int,
        candidates: list[str],
        at: datetime,
        actor: str,
    ) -> None:
        self.blocked_levels.append(
            {"level": level, "approvals_required": approvals_required, "possible": possible}
            | {"at": at}
        )

    class LevelCompleted(Aggregate.Event):
        """Level `level` reached its approvals on `material_version` at `at` (the approve of
        `actor` completed it); `next_level` opened (None: it was the last) with
        `opened_tasks` (none when its earlier tasks reopened after a revise)."""

        level: int
        next_level: int | None
        opened_tasks: list[dict[str, Any]]
        material_version: int
        at: datetime
        actor: str

    @event(LevelCompleted)
    def _level_completed(
        self,
        level: int,
        next_level: int | None,
        opened_tasks: list[dict[str, Any]],
        material_version: int,
        at: datetime,
        actor: str,
    ) -> None:
        self.levels, self.tasks = completed(self.levels, self.tasks, level, at)
        if next_level is not None:
            self.current_level = next_level

    def links(self, asked: Links | None = None) -> Links:
        """What the instance links to, with what the service knows (`asked`: the instance a
        command would start, the cancellation definition its definition names)."""
        asked = asked or Links()
        return replace(asked, resubmitted_as=self.resubmitted_as, cancellation=self.cancellation)

    def settle_cancellation(self, linked_id: str, linked_state: str, at: datetime) -> bool:
        """Record how the cancellation instance `linked_id` ended, when it is this instance's
        requested one and has ended; whether it recorded anything."""
        settled = cancellation_settled_as(linked_state)
        current = self.cancellation or {}
        if settled is None or current.get("state") != REQUESTED:
            return False
        if current.get("instance_id") != linked_id:
            return False
        self._cancellation_settled(
            linked_id=linked_id, outcome=linked_state, state=settled, at=at, actor=SETTLER
        )
        return True

    class CancellationSettled(Aggregate.Event):
        """The cancellation instance `linked_id` of this approved instance ended in `outcome`
        (its state): the cancellation is `state`, CANCELLED when it was approved, REFUSED when
        rejected, withdrawn or expired; recorded by the system (`actor`) at `at`, saved with
        the linked instance's decisive event. The instance's own state stays APPROVED."""

        linked_id: str
        outcome: str
        state: str
        at: datetime
        actor: str

    @event(CancellationSettled)
    def _cancellation_settled(
        self, linked_id: str, outcome: str, state: str, at: datetime, actor: str
    ) -> None:
        assert self.cancellation is not None
        self.cancellation = {
            **self.cancellation,
            "state": state,
            "settled_at": at,
            "outcome": outcome,
        }

    def owed_notices(self) -> list[Notice]:
        """The reminders and escalation still owed, earliest first (see `owed_notices`)."""
        return owed_notices(
            self.review_deadline_at,
            self.submitted_at,
            self.reminders,
            self.reminders_sent,
            self.escalation,
            self.escalated is not None,
            self.deadline_policy.get("working_time_notices"),
        )

    @property
    def next_notice_at(self) -> datetime | None:
        """When the next reminder or the escalation is due; None when none is owed any more."""
        if self.state != WAITING_REVIEW or self.paused_since is not None:
            return None
        owed = self.owed_notices()
        return owed[0].due_at if owed else None

    def record_due_notices(
        self,
        at: datetime,
        actor: str,
        may_review: Callable[[str], bool] = lambda _: True,
        leaders_up: Callable[[str], Sequence[str]] = lambda _: (),
    ) -> None:
        """Record every reminder and the escalation due by `at`, earliest first, each once;
        nothing once the instance is decided or its deadline has come (the expiry is due).
        The directory as it now is says whether an account may approve the instance
        (`may_review`) and who leads a group and the groups above it (`leaders_up`), for an
        escalation's target."""
        if self.state != WAITING_REVIEW or at >= self.review_deadline_at:
            return
        if self.paused_since is not None:
            return  # a clock that stands owes no notices
        for notice in self.owed_notices():
            if notice.due_at > at:
                break
            if notice.before_seconds is None:
                self.escalate(at, actor, may_review, leaders_up)
            else:
                self.remind(notice.before_seconds, at, actor)

    def remind(self, before_seconds: int, at: datetime, actor: str) -> None:
        """Record that the reminder `before_seconds` before the deadline came due."""
        due_at = self.check_reminder_due(before_seconds, at)
        self._reminder_due(
            before_seconds=before_seconds,
            due_at=due_at,
            review_deadline_at=self.review_deadline_at,
            at=at,
            actor=actor,
        )

    def escalation_targets(self, leaders_up: Callable[[str], Sequence[str]]) -> list[str]:
        """Whom the escalation may go to, in order: its account, or the leaders from its group
        up (`leaders_up`: the directory's, nearest first)."""
        escalation = self.escalation or {}
        if escalation.get("group_leader_of") is not None:
            return list(leaders_up(escalation["group_leader_of"]))
        return [escalation["account_id"]] if escalation.get("account_id") else []

    def escalate(
        self,
        at: datetime,
        actor: str,
        may_review: Callable[[str], bool] = lambda _: True,
        leaders_up: Callable[[str], Sequence[str]] = lambda _: (),
    ) -> None:
        """Record that the instance waited long enough to be escalated: its task's priority
        becomes high and, unless the escalation only notifies, the task goes to the first of
        its targets who may approve it (a candidate from then on): its account, or the leaders
        up from its group, nearest first. When none may, nothing is taken
        (`ESCALATION_TARGET_INELIGIBLE`, naming the first, or nobody when the group has no
        leader). An escalation saved before release 0.13.0 (no `mode`) notifies."""
        escalation, due_at = self.check_escalation_due(at)
        targets = self.escalation_targets(leaders_up)
        mode = escalation.get("mode", NOTIFY)
        target = next((t for t in targets if may_review(t)), None)
        task = self.task(current_task_id(self.tasks, self.current_level, ""))
        self._escalated(
            account_id=target or next(iter(targets), None),
            after_seconds=escalation["after_seconds"],
            due_at=due_at,
            at=at,
            actor=actor,
            task_id=task.id,
            mode=mode,
            from_assignee=task.assignee_id,
            to_assignee=target if mode == REASSIGN_TASK else None,
            reason_code=None if target else ESCALATION_TARGET_INELIGIBLE,
        )

    def check_reminder_due(self, before_seconds: int, at: datetime) -> datetime:
        """When the reminder was due; refused unless the instance has it, it was not recorded
        yet, the instance still waits for review, and it is due at `at`."""
        if before_seconds not in {r["before_seconds"] for r in self.reminders}:
            raise InvalidState(
                Message(
                    "the instance has no reminder {seconds} s before its deadline",
                    seconds=before_seconds,
                )
            )
        if before_seconds in {r["before_seconds"] for r in self.reminders_sent}:
            raise InvalidState(
                Message(
                    "the reminder {seconds} s before the deadline was already recorded",
                    seconds=before_seconds,
                )
            )
        self.check_waiting(at)
        due_at = reminder_due_at(
            self.review_deadline_at,
            self.submitted_at,
            before_seconds,
            self.deadline_policy.get("working_time_notices"),
        )
        _check_due(due_at, at)
        return due_at

    def check_escalation_due(self, at: datetime) -> tuple[Escalation, datetime]:
        """The escalation and when it was due; refused unless the instance has one, it was not
        recorded yet, the instance still waits for review, and it is due at `at`."""
        if self.escalation is None:
            raise InvalidState(Message("the instance has no escalation"))
        if self.escalated is not None:
            raise InvalidState(
                Message("the instance was already escalated at {at}", at=self.escalated["at"])
            )
        self.check_waiting(at)
        due_at = escalation_due_at(
            self.submitted_at, self.escalation, self.deadline_policy.get("working_time_notices")
        )
        _check_due(due_at, at)
        return self.escalation, due_at

    def check_waiting(self, at: datetime) -> None:
        """The instance still waits for review at `at`: undecided, and its deadline to come."""
        if self.state != WAITING_REVIEW:
            raise InvalidState(
                Message("the instance is {state}, no longer waiting for review", state=self.state)
            )
        if at >= self.review_deadline_at:
            raise InvalidState(
                Message(
                    "the review deadline {deadline} has passed",
                    deadline=self.review_deadline_at.isoformat(),
                )
            )
        if self.paused_since is not None:
            raise InvalidState(Message("the review clock is paused"))

    class ReminderDue(Aggregate.Event):
        """A reminder of the definition came due `before_seconds` before the review deadline
        (`review_deadline_at`, as it then stood): at `due_at`, never before the submission;
        recorded at `at` by the sweeper, which may be later (after downtime)."""

        before_seconds: int
        due_at: datetime
        review_deadline_at: datetime
        at: datetime
        actor: str

    @event(ReminderDue)
    def _reminder_due(
        self,
        before_seconds: int,
        due_at: datetime,
        review_deadline_at: datetime,
        at: datetime,
        actor: str,
    ) -> None:
        self.reminders_sent.append({"before_seconds": before_seconds, "due_at": due_at, "at": at})

    class Escalated(Aggregate.Event):
        """The instance waited `after_seconds` since its submission (at `due_at`) without a
        decision: escalated to the account `account_id` (None: the group it names for its
        leader has none up to the top); recorded at `at` by the sweeper.
        Version 2 added what it did to the task `task_id`: its `mode` (`reassign`,
        `notify`), the assignee it took the task from (`from_assignee`) and gave it to
        (`to_assignee`, None when it took nothing), and `reason_code` (None, or
        ESCALATION_TARGET_INELIGIBLE). Version 1 escalations changed no task (mode None)."""

        class_version = 2
        account_id: str | None
        after_seconds: int
        due_at: datetime
        at: datetime
        actor: str
        task_id: str
        mode: str | None
        from_assignee: str | None
        to_assignee: str | None
        reason_code: str | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state.update(task_id=FIRST_TASK, mode=None, from_assignee=None, to_assignee=None)
            state["reason_code"] = None

    @event(Escalated)
    def _escalated(
        self,
        account_id: str | None,
        after_seconds: int,
        due_at: datetime,
        at: datetime,
        actor: str,
        task_id: str = FIRST_TASK,
        mode: str | None = None,
        from_assignee: str | None = None,
        to_assignee: str | None = None,
        reason_code: str | None = None,
    ) -> None:
        self.tasks = escalated_tasks(self.tasks, task_id, mode, to_assignee, at)
        self.escalated = {
            "account_id": account_id,
            "after_seconds": after_seconds,
            "due_at": due_at,
            "at": at,
        }

    def release_task(self, task_id: str, at: datetime, actor: str) -> None:
        """Give a waiting instance's task back to its candidates: its assignee may no longer
        decide (deactivated, or without the permission). Recorded by the system."""
        task = self.task(task_id)
        if self.state != WAITING_REVIEW or task.assignee_id is None:
            raise InvalidState(Message("task {task_id} is held by nobody", task_id=task_id))
        why = Reason(ASSIGNEE_MAY_NOT_DECIDE, {"account": task.assignee_id})
        self._task_released(
            task_id=task_id,
            account_id=task.assignee_id,
            reason=why.text,
            reason_code=why.code,
            reason_params=dict(why.params),
            at=at,
            actor=actor,
        )

    class TaskReleased(Aggregate.Event):
        """The task went back to its candidates: `account_id`, its assignee, may no longer
        decide; recorded by the system (`actor`) at `at`, with why as a reason."""

        task_id: str
        account_id: str
        reason: str
        reason_code: str
        reason_params: dict[str, Any]
        at: datetime
        actor: str

    @event(TaskReleased)
    def _task_released(
        self,
        task_id: str,
        account_id: str,
        reason: str,
        reason_code: str,
        reason_params: dict[str, Any],
        at: datetime,
        actor: str,
    ) -> None:
        self.tasks = [
            Task.of(t).released().as_dict() if t["id"] == task_id else t for t in self.tasks
        ]

    class CommandHandled(Aggregate.Event):
        """A command and what it got; subclasses name the outcome's kind. Version 2 added the
        reason's code and parameters (`reason_code`, `reason_params`; None before: the words
        in `reason` were all it kept); version 3 `admission`, the reviewer rule that admitted
        a reviewer's command (None before, and for other commands)."""

        class_version = 3
        command: str
        command_id: str | None
        payload: dict[str, Any]
        outcome: str
        reason: str
        reason_code: str | None
        reason_params: dict[str, Any] | None
        accepted: bool
        fingerprint: str
        at: datetime
        actor: str
        admission: dict[str, str] | None

        upcast_v1_v2 = staticmethod(without_reason_code)
        upcast_v2_v3 = staticmethod(without_admission)

        def apply(self, aggregate: Aggregate) -> None:
            assert isinstance(aggregate, ApprovalInstance)
            aggregate.record(self)

    class Approved(CommandHandled):
        pass

    class Withdrawn(CommandHandled):
        pass

    class Expired(CommandHandled):
        pass

    class Rejected(CommandHandled):
        pass

    class Claimed(CommandHandled):
        pass

    class Unclaimed(CommandHandled):
        pass

    class Reassigned(CommandHandled):
        pass

    class Commented(CommandHandled):
        pass

    class DeadlineExtended(CommandHandled):
        """Version 2 added `rule_version`, the deadline rules' version that allowed it;
        version 3 `deadline_offset_minutes`, the offset the new deadline was given with;
        version 4 the reason's code and parameters, version 5 `admission` (see
        `CommandHandled`)."""

        class_version = 5
        rule_version: int
        deadline_offset_minutes: int | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["rule_version"] = 1  # 0.1.0 applied the first version of the deadline rules

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            state["deadline_offset_minutes"] = None  # no offset was kept: UTC

        upcast_v3_v4 = staticmethod(without_reason_code)
        upcast_v4_v5 = staticmethod(without_admission)

    class CallbackObserved(CommandHandled):
        pass

    class DeadlinePaused(CommandHandled):
        """The review clock stopped (pause-deadline, with a reason): the instance does not
        expire, nor owe reminders or its escalation, until it runs again. New in version 1
        (release 0.15.0)."""

        class_version = 1

    class DeadlineResumed(CommandHandled):
        """The review clock runs again: `clock` (see `ApprovalInstance.stood_clock`) says
        from when to when it stood and how the deadline (`old_deadline_at`,
        `new_deadline_at`) and the counted notices moved. By a person (resume-deadline), or
        by the deadline rule at `max_pause_seconds` (payload `automatic`). Version 1."""

        class_version = 1
        clock: dict[str, Any]

    class Returned(CommandHandled):
        """A reviewer sent the instance back to its applicant for changes (退回, with a
        comment): RETURNED, its tasks closed, its clock stands until it comes back (see
        `ApprovalInstance.come_back`). `clock` is how a pause open then ended (None: the
        clock ran). Version 1."""

        class_version = 1
        clock: dict[str, Any] | None

    class Voted(CommandHandled):
        """An approve or reject counted on its level; the instance still waits (the level
        may have completed: `LevelCompleted` follows)."""

    class Revised(CommandHandled):
        """The applicant revised the material (`payload`: the new `material_version`, any
        `form_data`, the `reason`; with `new_deadline_at` and `deadline_policy` when the
        definition restarts the deadline on a revise). `lapsed_votes` votes lapsed; the
        review went back to `back_to_level`, `reopened_tasks` reopened and `closed_tasks`
        closed; `old_deadline_at` is the deadline it replaced (None: kept). A revise that
        answers a return (退回) brings the instance back to review: `clock` says how long the
        clock stood and how the deadline moved (None: it was not returned). Version 1."""

        class_version = 1
        clock: dict[str, Any] | None
        lapsed_votes: int
        back_to_level: int
        reopened_tasks: list[str]
        closed_tasks: list[str]
        old_deadline_at: datetime | None

    class Resubmitted(CommandHandled):
        """The applicant resubmitted this decided instance as `linked_id`, a new instance of
        the same definition; this one's state stays as it was. Version 1."""

        class_version = 1
        linked_id: str

    class CancellationRequested(CommandHandled):
        """The applicant asked to cancel this approved instance: `linked_id` is the instance of
        the cancellation definition it started; this one stays APPROVED. Version 1."""

        class_version = 1
        linked_id: str

    class CommandRejected(CommandHandled):
        pass

    def record(self, handled: CommandHandled) -> None:
        """Apply a handled command: its answer, any observation, any change of state."""
        state = STATE_AFTER.get(handled.outcome, self.state)
        if handled.command_id is not None and handled.outcome not in (FORBIDDEN, TAKEN):
            self.answers[handled.command_id] = {
                "outcome": handled.outcome,
                "state": state,
                "accepted": handled.accepted,
                "reason": handled.reason,
                "fingerprint": handled.fingerprint,
                "reason_code": handled.reason_code,
                "reason_params": handled.reason_params,
            }
        if handled.command == SIGN and handled.outcome != FORBIDDEN:
            self.observe(handled)  # a refused caller's callback is no observation
        if isinstance(handled, ApprovalInstance.DeadlineExtended):
            self.extend(handled)
        self._clock_after(handled)
        if isinstance(handled, ApprovalInstance.Resubmitted):
            self.resubmitted_as = handled.linked_id
        if isinstance(handled, ApprovalInstance.CancellationRequested):
            self.cancellation = cancellation_asked(handled)
        comment = comment_of(handled)
        if comment is not None:
            self.comments.append(comment)
        if isinstance(handled, ApprovalInstance.Revised):
            self.revise(handled)
        self.votes = votes_after(self.votes, handled, self.current_level, self.material_version)
        self.levels = levels_after(self.levels, handled, self.current_level)
        self.tasks = tasks_after(self.tasks, handled, state)
        if state != self.state and state in TERMINAL:
            if self.paused_since is not None:
                self._ended_stood(handled.at)
            self.state = state
            self.decided_at = handled.at
            self.winning_command = {
                "command_id": handled.command_id,
                "kind": handled.command,
                "actor": handled.actor,
            }
        elif state != self.state:
            self.state = state  # RETURNED: not decided

    def _clock_after(self, handled: CommandHandled) -> None:
        """A pause stops the clock, a resume runs it again; a return stops it (ending a pause
        first)."""
        if isinstance(handled, ApprovalInstance.DeadlinePaused):
            self._stop(PAUSE_KIND, handled)
        elif isinstance(handled, ApprovalInstance.DeadlineResumed):
            self._run_again(handled.clock)
        elif isinstance(handled, ApprovalInstance.Returned):
            if handled.clock is not None:
                self._run_again(handled.clock)
            self._stop(RETURN_KIND, handled)

    @property
    def decided_by(self) -> str | None:
        """Who decided the instance (the deadline rule's actor for an expiry); None while it
        waits, or when only a snapshot of an earlier release knew."""
        return self.winning_command["actor"] if self.winning_command else None

    def observe(self, handled: CommandHandled) -> None:
        """Keep a signing callback, matched against the instance; the first binds the contract."""
        contract_id = handled.payload["contract_id"]
        if self.contract_id is None:
            self.contract_id = contract_id
        self.observations.append(
            {
                **handled.payload,
                "outcome": handled.outcome,
                "recorded_at": handled.at,
                "command_id": handled.command_id,
                "material_matches": handled.payload["material_version"] == self.material_version,
                "contract_matches": contract_id == self.contract_id,
            }
        )

    def revise(self, handled: Revised) -> None:
        """The new material: earlier votes lapse, the review goes back to level 1 (unless
        nothing was voted), the deadline restarts when the definition says so."""
        payload = handled.payload
        if handled.clock is not None:
            self.come_back(handled.clock)
        revision = Revision(
            handled.lapsed_votes,
            handled.back_to_level,
            handled.reopened_tasks,
            handled.closed_tasks,
        )
        self.levels, self.tasks, self.votes = revised(
            self.levels, self.tasks, self.votes, revision, handled.at
        )
        self.current_level = handled.back_to_level
        self.material_version = payload["material_version"]
        if payload.get("form_data") is not None:
            self.form_data = FormData.of(payload["form_data"])
        if payload.get("new_deadline_at") is not None:
            self.extensions.append(restarted_deadline(handled))
            self.review_deadline_at = payload["new_deadline_at"]
            self.review_deadline_offset_minutes = None
            self.deadline_policy = dict(payload["deadline_policy"])

    def extend(self, handled: DeadlineExtended) -> None:
        """Move the deadline, keeping the old one, who, when, why and under which rules."""
        self.extensions.append(
            {
                "old_deadline_at": self.review_deadline_at,
                "new_deadline_at": handled.payload["new_deadline_at"],
                "reason": handled.reason,
                "actor": handled.actor,
                "at": handled.at,
                "rule_version": handled.rule_version,
            }
        )
        self.review_deadline_at = handled.payload["new_deadline_at"]
        self.review_deadline_offset_minutes = handled.deadline_offset_minutes
        self.deadline_policy = extended_policy(
            self.deadline_policy, handled.reason, handled.rule_version, handled.payload
        )


def opened_pause(
    kind: str, handled: ApprovalInstance.CommandHandled, deadline: datetime
) -> dict[str, Any]:
    """The entry of `pauses` a pause (its reason) or a return (its comment) opens."""
    return {
        "kind": kind,
        "from": handled.at,
        "to": None,
        "reason": handled.payload.get("reason") or handled.payload.get("comment"),
        "actor": handled.actor,
        "old_deadline_at": deadline,
        "new_deadline_at": None,
    }


def closed_pause(opened: Mapping[str, Any], stood: Mapping[str, Any]) -> dict[str, Any]:
    """An entry of `pauses` once the clock ran again, as `stood` says."""
    return {
        **opened,
        "to": stood["to"],
        "old_deadline_at": stood["old_deadline_at"],
        "new_deadline_at": stood["new_deadline_at"],
    }


def stood_seconds(stood: Mapping[str, Any]) -> float:
    """How long the clock stood, as a clock on the wall says."""
    return float((stood["to"] - stood["from"]).total_seconds())


def unmoved(since: datetime, to: datetime, deadline: datetime) -> dict[str, Any]:
    """A clock that stood from `since` to a decision at `to`: nothing moves."""
    return {
        "from": since,
        "to": to,
        "old_deadline_at": deadline,
        "new_deadline_at": deadline,
        "working_time_notices": None,
    }


def policy_after_stood(policy: Mapping[str, Any], stood: Mapping[str, Any]) -> dict[str, Any]:
    """The deadline policy once the clock ran again: its counted notices moved with it."""
    if not stood["working_time_notices"]:
        return dict(policy)
    return {**policy, "working_time_notices": stood["working_time_notices"]}


def extended_policy(
    policy: Mapping[str, Any],
    reason: str | None,
    rule_version: int,
    payload: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The deadline policy after an extension. The reminders counted in working time before
    the old deadline are dropped (they count back in plain seconds from the new one); an
    escalation counted in working time from the submission keeps its instant. A deadline in
    working time keeps its rule and calendar (a later extension may count working days on
    it); one extended in working days says how many, on which calendar revision."""
    extended: dict[str, Any] = {
        "source": "extended",
        "reason": reason,
        "rule_version": rule_version,
    }
    for key in ("rule", "calendar"):
        if key in policy:
            extended[key] = policy[key]
    asked = payload or {}
    if "working_days" in asked:
        extended["working_days"] = asked["working_days"]
        extended["calendar_revision"] = asked["calendar_revision"]
    escalation_due = (policy.get("working_time_notices") or {}).get("escalation_due_at")
    if escalation_due is not None:
        extended["working_time_notices"] = {"escalation_due_at": escalation_due}
    return extended


def restarted_deadline(handled: ApprovalInstance.Revised) -> dict[str, Any]:
    """A deadline a revise restarted, kept beside the extensions with both deadlines."""
    return {
        "old_deadline_at": handled.old_deadline_at,
        "new_deadline_at": handled.payload["new_deadline_at"],
        "reason": handled.payload["reason"],
        "actor": handled.actor,
        "at": handled.at,
        "rule_version": DEADLINE_RULES_VERSION,
        "revise": True,
    }


def votes_after(
    votes: Sequence[Mapping[str, Any]],
    handled: ApprovalInstance.CommandHandled,
    level: int,
    material_version: int,
) -> list[dict[str, Any]]:
    """The votes after a handled command: an accepted approve or reject is one, on the
    current level and material."""
    kept = [dict(vote) for vote in votes]
    if handled.accepted and handled.command in VOTING and handled.outcome != EXPIRED:
        task_id = handled.payload.get("task_id") or FIRST_TASK
        kept.append(
            vote_of(
                level,
                task_id,
                handled.command,
                handled.actor,
                handled.at,
                material_version,
                handled.command_id,
            )
        )
    return kept


def levels_after(
    levels: Sequence[Mapping[str, Any]], handled: ApprovalInstance.CommandHandled, level: int
) -> list[dict[str, Any]]:
    """The levels after a handled command: approved, the current level completed; refused
    by a reject, failed."""
    if handled.accepted and handled.outcome == APPROVED:
        return with_level_state(levels, level, COMPLETED, handled.at)
    if handled.accepted and handled.outcome == REJECTED:
        return with_level_state(levels, level, FAILED, handled.at)
    return [dict(x) for x in levels]


def cancellation_asked(handled: ApprovalInstance.CancellationRequested) -> dict[str, Any]:
    """An approved instance's cancellation as a request leaves it: REQUESTED."""
    return {
        "state": REQUESTED,
        "instance_id": handled.linked_id,
        "requested_at": handled.at,
        "reason": handled.payload["reason"],
        "actor": handled.actor,
        "settled_at": None,
        "outcome": None,
    }


def without_links(state: dict[str, Any]) -> None:
    """Upcast from before resubmission and cancellation: linked to no other instance."""
    state["resubmits"] = None
    state["cancellation_of"] = None


def escalated_tasks(
    tasks: Sequence[Mapping[str, Any]],
    task_id: str,
    mode: str | None,
    to_assignee: str | None,
    at: datetime,
) -> list[dict[str, Any]]:
    """The tasks after an escalation: the task's priority high (unless from before release
    0.13.0, mode None), and the task the target's when the escalation gave it."""
    moved = []
    for stored in tasks:
        task = Task.of(stored)
        if task.id == task_id and mode is not None:
            task = replace(task, priority=HIGH)
            if to_assignee is not None:
                task = task.assigned(to_assignee, at)
        moved.append(task.as_dict())
    return moved


def comment_of(handled: ApprovalInstance.CommandHandled) -> dict[str, Any] | None:
    """The comment an accepted command carried (approve, reject, comment), as kept."""
    text = handled.payload.get("comment")
    if not handled.accepted or not text:
        return None
    return {"author": handled.actor, "text": text, "at": handled.at, "command": handled.command}


def tasks_after(
    tasks: Sequence[Mapping[str, Any]], handled: ApprovalInstance.CommandHandled, state: str
) -> list[dict[str, Any]]:
    """The tasks after a handled command (`state`: the instance's after it): a claim,
    unclaim or reassignment moves its task; a decision closes every task."""
    wanted = handled.payload.get("task_id") or FIRST_TASK
    moved = []
    for stored in tasks:
        task = Task.of(stored)
        if state in TERMINAL or state == RETURNED:
            task = task.closed()
        elif task.id == wanted and handled.outcome == CLAIMED:
            task = task.assigned(handled.actor, handled.at)
        elif task.id == wanted and handled.outcome == REASSIGNED:
            task = task.assigned(handled.payload["assignee_id"], handled.at)
        elif task.id == wanted and handled.outcome == UNCLAIMED:
            task = task.released()
        elif task.id == wanted and handled.outcome == VOTED:
            task = task.closed()
        moved.append(task.as_dict())
    return moved


def _check_due(due_at: datetime, at: datetime) -> None:
    if at < due_at:
        raise InvalidState(Message("not due until {due_at}", due_at=due_at.isoformat()))


STATE_AFTER = {
    APPROVED: APPROVED,
    WITHDRAWN: WITHDRAWN,
    EXPIRED: EXPIRED,
    REJECTED: REJECTED,
    RETURNED: RETURNED,
    REVISED: WAITING_REVIEW,  # a revise that answers a return brings it back to review
}
# What a command that the rule lets through gets while the instance waits: outcome and reason.
ACCEPTED_WHILE_WAITING = {
    APPROVE: (APPROVED, APPROVED_IN_TIME),
    REJECT: (REJECTED, REJECTED_IN_TIME),
    WITHDRAW: (WITHDRAWN, WITHDRAWN_IN_TIME),
    SIGN: (OBSERVED, CALLBACK_OBSERVED),
    CLAIM: (CLAIMED, CLAIMED_IN_TIME),
    UNCLAIM: (UNCLAIMED, UNCLAIMED_IN_TIME),
    COMMENT: (COMMENTED, COMMENTED_IN_TIME),
    RETURN: (RETURNED, RETURNED_FOR_CHANGES),
}
EVENT_OF_OUTCOME: dict[str, type[ApprovalInstance.CommandHandled]] = {
    APPROVED: ApprovalInstance.Approved,
    WITHDRAWN: ApprovalInstance.Withdrawn,
    EXPIRED: ApprovalInstance.Expired,
    REJECTED: ApprovalInstance.Rejected,
    CLAIMED: ApprovalInstance.Claimed,
    UNCLAIMED: ApprovalInstance.Unclaimed,
    REASSIGNED: ApprovalInstance.Reassigned,
    COMMENTED: ApprovalInstance.Commented,
    PAUSED: ApprovalInstance.DeadlinePaused,
    RESUMED: ApprovalInstance.DeadlineResumed,
    RETURNED: ApprovalInstance.Returned,
    TAKEN: ApprovalInstance.CommandRejected,
    EXTENDED: ApprovalInstance.DeadlineExtended,
    OBSERVED: ApprovalInstance.CallbackObserved,
    RESUBMITTED: ApprovalInstance.Resubmitted,
    CANCELLATION_REQUESTED: ApprovalInstance.CancellationRequested,
    STALE_MATERIAL: ApprovalInstance.CommandRejected,
    SELF_APPROVAL: ApprovalInstance.CommandRejected,
    CONFLICT: ApprovalInstance.CommandRejected,
    LATE_OR_CONFLICT: ApprovalInstance.CommandRejected,
    FORBIDDEN: ApprovalInstance.CommandRejected,
    RULE_BROKEN: ApprovalInstance.CommandRejected,
    VOTED: ApprovalInstance.Voted,
    ALREADY_VOTED: ApprovalInstance.CommandRejected,
    REVISED: ApprovalInstance.Revised,
}
