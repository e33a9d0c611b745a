"""Approval instances (审批实例): one rule decides every command against a durable deadline."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.directory import (
    NAMESPACE,
    Definition,
    DefinitionTerms,
    Escalation,
    Reminder,
    self_approval_was_not_allowed,
    without_notices,
)
from domain.errors import DomainError, Forbidden, InvalidState, ValidationFailed
from domain.permissions import (
    ALL_PERMISSIONS,
    APPROVAL_CALLBACK,
    APPROVAL_DECIDE,
    APPROVAL_SUBMIT,
)
from domain.reason_codes import (
    ALREADY_DECIDED,
    APPROVED_IN_TIME,
    CALLBACK_OBSERVED,
    CONTRACT_MISMATCH,
    DEADLINE_EXTENDED,
    DEADLINE_NOT_DUE,
    DEADLINE_PASSED,
    EXTENSION_NOT_LATER,
    EXTENSION_TOO_FAR,
    MATERIAL_STALE,
    NOT_THE_APPLICANT,
    PERMISSION_MISSING,
    SELF_APPROVAL_APPLICANT,
    SELF_APPROVAL_SAVER_UNKNOWN,
    SELF_APPROVAL_SCHEDULE_SAVER,
    WITHDRAWN_IN_TIME,
    Reason,
)
from domain.values import FormData, checked_form_data

WAITING_REVIEW = "WAITING_REVIEW"
APPROVED = "APPROVED"
WITHDRAWN = "WITHDRAWN"
EXPIRED = "EXPIRED"
TERMINAL = frozenset({APPROVED, WITHDRAWN, EXPIRED})
MAX_EXTENSION = timedelta(days=30)
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

SUBMIT = "submit"
APPROVE, WITHDRAW, EXTEND, SIGN, SWEEP = "approve", "withdraw", "extend-deadline", "sign", "sweep"
DEADLINE_ACTOR = "system:sweeper"  # who expires an instance: the deadline rule, run by the service
PERMISSION_OF_COMMAND = {
    APPROVE: APPROVAL_DECIDE,
    WITHDRAW: APPROVAL_SUBMIT,
    EXTEND: APPROVAL_DECIDE,
    SIGN: APPROVAL_CALLBACK,
}
FIELD_OF_RULE = {EXTEND: "new_deadline_at"}  # the field a RULE_BROKEN answer is about


def approval_uuid(tenant_id: UUID, applicant_id: str, command_id: str) -> UUID:
    """One submission per applicant and command id: a repeated submission finds the first."""
    return uuid5(NAMESPACE, f"tenant/{tenant_id}/approval/{applicant_id}/{command_id}")


class CommandIdReused(DomainError):
    code = "COMMAND_ID_REUSED"

    def __init__(self, command_id: str) -> None:
        super().__init__(
            f"command_id {command_id} was already used with a different body; use a new one"
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
        canonical = json.dumps([self.kind, self.payload], sort_keys=True, default=_plain)
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
        """A caller's own deadline lies within 366 days of now, and the form data is small."""
        deadline = self.review_deadline_at
        if deadline is not None and not now < deadline <= now + MAX_DEADLINE_AHEAD:
            raise ValidationFailed.of(
                "review_deadline_at", "must be after now and within 366 days of it"
            )
        checked_form_data(self.form_data)

    def deadline(
        self, review_window_seconds: int, now: datetime, revision: dict[str, int]
    ) -> tuple[datetime, dict[str, Any]]:
        """The review deadline and how it was set (the deadline policy): as asked, or the
        window of the definition (at `revision`, when known), under the deadline rules' version."""
        if self.review_deadline_at is not None:
            return self.review_deadline_at, {
                "source": "explicit",
                "rule_version": DEADLINE_RULES_VERSION,
            }
        return now + timedelta(seconds=review_window_seconds), {
            "source": "definition",
            "review_window_seconds": review_window_seconds,
            **revision,
            "rule_version": DEADLINE_RULES_VERSION,
        }


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


def reminder_due_at(deadline: datetime, submitted_at: datetime, before_seconds: int) -> datetime:
    """A reminder is due `before_seconds` before the deadline, or at submission when the
    deadline was already closer than that."""
    return max(deadline - timedelta(seconds=before_seconds), submitted_at)


def escalation_due_at(submitted_at: datetime, escalation: Mapping[str, Any]) -> datetime:
    """An escalation is due `after_seconds` after the submission."""
    return submitted_at + timedelta(seconds=escalation["after_seconds"])


def owed_notices(
    deadline: datetime,
    submitted_at: datetime,
    reminders: Sequence[Mapping[str, int]],
    sent: Sequence[Mapping[str, Any]],
    escalation: Mapping[str, Any] | None,
    escalated: bool,
) -> list[Notice]:
    """The reminders not yet recorded, and the escalation unless recorded, that fall due before
    the deadline (the current one: an extension moves the reminders), earliest first."""
    done = {reminder["before_seconds"] for reminder in sent}
    owed = [
        Notice(reminder_due_at(deadline, submitted_at, r["before_seconds"]), r["before_seconds"])
        for r in reminders
        if r["before_seconds"] not in done
    ]
    if escalation is not None and not escalated:
        owed.append(Notice(escalation_due_at(submitted_at, escalation), None))
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
) -> Decision:
    """The one transition rule (docs/approvals.md), whatever the entry point.

    `granted` are the actor's permissions (the service's own actors hold them all);
    `contract_id` is the contract the instance's callbacks are bound to, if any yet.
    """
    refusal = refusal_of(command, actor, parties, granted)
    if refusal is not None:
        return Decision(FORBIDDEN, state, False, refusal)
    decision = _decide_in_time(state, deadline, material_version, command, now, actor, parties)
    if command.kind == SIGN:
        return _matched(
            decision, callback_mismatches(command.payload, material_version, contract_id)
        )
    return decision


def refusal_of(
    command: Command, actor: str, parties: Parties, granted: frozenset[str]
) -> Reason | None:
    """Why `actor` may not send `command` at all, or None: checked before anything else."""
    needed = PERMISSION_OF_COMMAND.get(command.kind)
    if needed is not None and needed not in granted:
        return Reason(PERMISSION_MISSING, {"actor": actor, "permission": needed})
    if command.kind == WITHDRAW and actor != parties.applicant_id:
        return Reason(NOT_THE_APPLICANT)
    return None


def _decide_in_time(
    state: str,
    deadline: datetime,
    material_version: int,
    command: Command,
    now: datetime,
    actor: str,
    parties: Parties,
) -> Decision:
    if state == WAITING_REVIEW and now >= deadline:
        passed = Reason(DEADLINE_PASSED, {"deadline": deadline.isoformat(), "at": now.isoformat()})
        return Decision(EXPIRED, EXPIRED, command.kind == SWEEP, passed)
    decided = Reason(ALREADY_DECIDED, {"state": state})
    if state in TERMINAL and command.kind == SWEEP:
        return Decision(NOT_DUE, state, True, decided)
    if state in TERMINAL:
        outcome = LATE_OR_CONFLICT if command.kind == SIGN else CONFLICT
        return Decision(outcome, state, False, decided)
    if command.kind == EXTEND:
        return _decide_extension(deadline, command, now)
    return _decide_waiting(material_version, command, parties.interest_of(actor))


def _decide_waiting(material_version: int, command: Command, interest: Reason | None) -> Decision:
    if command.kind == APPROVE and interest is not None:
        return Decision(SELF_APPROVAL, WAITING_REVIEW, False, interest)
    stale = stale_material(command, material_version)
    if stale is not None:
        return Decision(STALE_MATERIAL, WAITING_REVIEW, False, stale)
    if command.kind == APPROVE:
        return Decision(APPROVED, APPROVED, True, Reason(APPROVED_IN_TIME))
    if command.kind == WITHDRAW:
        return Decision(WITHDRAWN, WITHDRAWN, True, Reason(WITHDRAWN_IN_TIME))
    if command.kind == SIGN:
        return Decision(OBSERVED, WAITING_REVIEW, True, Reason(CALLBACK_OBSERVED))
    return Decision(NOT_DUE, WAITING_REVIEW, True, Reason(DEADLINE_NOT_DUE))


def stale_material(command: Command, material_version: int) -> Reason | None:
    """Why an approve, or a withdraw that names a material version, offers stale material."""
    if command.kind not in (APPROVE, WITHDRAW):
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


def without_reason_code(state: dict[str, Any]) -> None:
    """Upcast from before events kept a reason's code: the words were all they kept."""
    state["reason_code"] = None
    state["reason_params"] = None


def refusal_error(answer: Answer, command: Command) -> DomainError | None:
    """The problem a refused command is answered with, after it was recorded; None otherwise."""
    if answer.outcome == FORBIDDEN:
        return Forbidden(answer.reason)
    if answer.outcome == RULE_BROKEN:
        return ValidationFailed.of(FIELD_OF_RULE[command.kind], answer.reason)
    return None


class ApprovalInstance(Aggregate):
    """An instance waiting for review until an absolute deadline."""

    @staticmethod
    def create_id(tenant_id: UUID, applicant_id: str, command_id: str) -> UUID:
        return approval_uuid(tenant_id, applicant_id, command_id)

    class_version = 7

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

    class Submitted(Aggregate.Created):
        """Version 2 added `allow_self_approval` (false before: self-approval was not allowed);
        version 3 gave a launch's `origin` its fire metadata (see `fire_metadata`); version 4
        added `review_deadline_offset_minutes`, the offset a deadline was given with (None: UTC,
        or a deadline from the definition's review window); version 5 the definition's
        `reminders` and `escalation` (none before)."""

        class_version = 5
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

        upcast_v1_v2 = staticmethod(self_approval_was_not_allowed)

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            state["origin"] = fire_metadata(state["origin"])

        @staticmethod
        def upcast_v3_v4(state: dict[str, Any]) -> None:
            state["review_deadline_offset_minutes"] = None  # no offset was kept: UTC

        upcast_v4_v5 = staticmethod(without_notices)

    @classmethod
    def submit(
        cls,
        tenant_id: UUID,
        applicant_id: str,
        submission: Submission,
        definition: Definition | DefinitionTerms,
        origin: dict[str, Any] | None,
        at: datetime,
    ) -> ApprovalInstance:
        """A new instance, submitted by its applicant or by a run on the applicant's behalf
        (with the terms of the definition's revision the run was frozen at); the definition's
        reminders and escalation are fixed on it, as its deadline is."""
        deadline, deadline_policy = submission.deadline(
            definition.review_window_seconds, at, revision_of(definition)
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

    def answer_to(
        self, command: Command, actor: str | None = None, granted: frozenset[str] = ALL_PERMISSIONS
    ) -> Answer | None:
        """The first answer to a repeated command id, or None for a new one.

        None too when the rule refuses `actor` (with `granted`) the command: a refusal is
        decided and recorded each time, and never replays, nor takes, another caller's answer.
        """
        if command.command_id is None or command.command_id not in self.answers:
            return None
        if actor is not None and refusal_of(command, actor, self.parties, granted):
            return None
        first = Answer(**self.answers[command.command_id])
        if first.fingerprint != command.fingerprint:
            raise CommandIdReused(command.command_id)
        return first

    @property
    def review_deadline_at_local(self) -> datetime:
        """The review deadline at the offset it was given with; in UTC when none was."""
        return at_offset(self.review_deadline_at, self.review_deadline_offset_minutes)

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
    ) -> Answer:
        """Decide `command` at server time `at` and record it, winner or loser (refusals too).

        A command that finds the deadline passed is recorded as rejected (EXPIRED), after the
        expiry itself, which is the deadline rule's (`DEADLINE_ACTOR`), not the caller's.
        """
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
        )
        extension = (
            {
                "rule_version": DEADLINE_RULES_VERSION,
                "deadline_offset_minutes": command.deadline_offset_minutes,
            }
            if decision.outcome == EXTENDED
            else {}
        )
        late = decision.outcome == EXPIRED and command.kind != SWEEP
        if late:
            self.handle(Command(SWEEP, None), at, DEADLINE_ACTOR)
        if decision.outcome != NOT_DUE:
            self.trigger_event(
                ApprovalInstance.CommandRejected if late else EVENT_OF_OUTCOME[decision.outcome],
                **extension,
                command=command.kind,
                command_id=command.command_id,
                payload=command.payload,
                outcome=decision.outcome,
                reason=decision.reason,
                reason_code=decision.why.code,
                reason_params=dict(decision.why.params),
                accepted=decision.accepted,
                fingerprint=command.fingerprint,
                at=at,
                actor=actor,
            )
        return Answer.of(decision, command.fingerprint)

    def owed_notices(self) -> list[Notice]:
        """The reminders and escalation still owed, earliest first (see `owed_notices`)."""
        return owed_notices(
            self.review_deadline_at,
            self.submitted_at,
            self.reminders,
            self.reminders_sent,
            self.escalation,
            self.escalated is not None,
        )

    @property
    def next_notice_at(self) -> datetime | None:
        """When the next reminder or the escalation is due; None when none is owed any more."""
        if self.state != WAITING_REVIEW:
            return None
        owed = self.owed_notices()
        return owed[0].due_at if owed else None

    def record_due_notices(self, at: datetime, actor: str) -> None:
        """Record every reminder and the escalation due by `at`, earliest first, each once;
        nothing once the instance is decided or its deadline has come (the expiry is due)."""
        if self.state != WAITING_REVIEW or at >= self.review_deadline_at:
            return
        for notice in self.owed_notices():
            if notice.due_at > at:
                break
            if notice.before_seconds is None:
                self.escalate(at, actor)
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

    def escalate(self, at: datetime, actor: str) -> None:
        """Record that the instance waited long enough to be escalated."""
        escalation, due_at = self.check_escalation_due(at)
        self._escalated(
            account_id=escalation["account_id"],
            after_seconds=escalation["after_seconds"],
            due_at=due_at,
            at=at,
            actor=actor,
        )

    def check_reminder_due(self, before_seconds: int, at: datetime) -> datetime:
        """When the reminder was due; refused unless the instance has it, it was not recorded
        yet, the instance still waits for review, and it is due at `at`."""
        if before_seconds not in {r["before_seconds"] for r in self.reminders}:
            raise InvalidState(
                f"the instance has no reminder {before_seconds} s before its deadline"
            )
        if before_seconds in {r["before_seconds"] for r in self.reminders_sent}:
            raise InvalidState(
                f"the reminder {before_seconds} s before the deadline was already recorded"
            )
        self.check_waiting(at)
        due_at = reminder_due_at(self.review_deadline_at, self.submitted_at, before_seconds)
        _check_due(due_at, at)
        return due_at

    def check_escalation_due(self, at: datetime) -> tuple[Escalation, datetime]:
        """The escalation and when it was due; refused unless the instance has one, it was not
        recorded yet, the instance still waits for review, and it is due at `at`."""
        if self.escalation is None:
            raise InvalidState("the instance has no escalation")
        if self.escalated is not None:
            raise InvalidState(
                f"the instance was already escalated to {self.escalated['account_id']}"
            )
        self.check_waiting(at)
        due_at = escalation_due_at(self.submitted_at, self.escalation)
        _check_due(due_at, at)
        return self.escalation, due_at

    def check_waiting(self, at: datetime) -> None:
        """The instance still waits for review at `at`: undecided, and its deadline to come."""
        if self.state != WAITING_REVIEW:
            raise InvalidState(f"the instance is {self.state}, no longer waiting for review")
        if at >= self.review_deadline_at:
            raise InvalidState(
                f"the review deadline {self.review_deadline_at.isoformat()} has passed"
            )

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
        decision: escalated to the account `account_id`; recorded at `at` by the sweeper."""

        account_id: str
        after_seconds: int
        due_at: datetime
        at: datetime
        actor: str

    @event(Escalated)
    def _escalated(
        self, account_id: str, after_seconds: int, due_at: datetime, at: datetime, actor: str
    ) -> None:
        self.escalated = {
            "account_id": account_id,
            "after_seconds": after_seconds,
            "due_at": due_at,
            "at": at,
        }

    class CommandHandled(Aggregate.Event):
        """A command and what it got; subclasses name the outcome's kind. Version 2 added the
        reason's code and parameters (`reason_code`, `reason_params`; None before: the words
        in `reason` were all it kept)."""

        class_version = 2
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

        upcast_v1_v2 = staticmethod(without_reason_code)

        def apply(self, aggregate: Aggregate) -> None:
            assert isinstance(aggregate, ApprovalInstance)
            aggregate.record(self)

    class Approved(CommandHandled):
        pass

    class Withdrawn(CommandHandled):
        pass

    class Expired(CommandHandled):
        pass

    class DeadlineExtended(CommandHandled):
        """Version 2 added `rule_version`, the deadline rules' version that allowed it;
        version 3 `deadline_offset_minutes`, the offset the new deadline was given with;
        version 4 the reason's code and parameters (see `CommandHandled`)."""

        class_version = 4
        rule_version: int
        deadline_offset_minutes: int | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["rule_version"] = 1  # 0.1.0 applied the first version of the deadline rules

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            state["deadline_offset_minutes"] = None  # no offset was kept: UTC

        upcast_v3_v4 = staticmethod(without_reason_code)

    class CallbackObserved(CommandHandled):
        pass

    class CommandRejected(CommandHandled):
        pass

    def record(self, handled: CommandHandled) -> None:
        """Apply a handled command: its answer, any observation, any change of state."""
        state = STATE_AFTER.get(handled.outcome, self.state)
        if handled.command_id is not None and handled.outcome != FORBIDDEN:
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
        if state != self.state:
            self.state = state
            self.decided_at = handled.at
            self.winning_command = {
                "command_id": handled.command_id,
                "kind": handled.command,
                "actor": handled.actor,
            }

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
        self.deadline_policy = {
            "source": "extended",
            "reason": handled.reason,
            "rule_version": handled.rule_version,
        }


def _check_due(due_at: datetime, at: datetime) -> None:
    if at < due_at:
        raise InvalidState(f"not due until {due_at.isoformat()}")


STATE_AFTER = {APPROVED: APPROVED, WITHDRAWN: WITHDRAWN, EXPIRED: EXPIRED}
EVENT_OF_OUTCOME: dict[str, type[ApprovalInstance.CommandHandled]] = {
    APPROVED: ApprovalInstance.Approved,
    WITHDRAWN: ApprovalInstance.Withdrawn,
    EXPIRED: ApprovalInstance.Expired,
    EXTENDED: ApprovalInstance.DeadlineExtended,
    OBSERVED: ApprovalInstance.CallbackObserved,
    STALE_MATERIAL: ApprovalInstance.CommandRejected,
    SELF_APPROVAL: ApprovalInstance.CommandRejected,
    CONFLICT: ApprovalInstance.CommandRejected,
    LATE_OR_CONFLICT: ApprovalInstance.CommandRejected,
    FORBIDDEN: ApprovalInstance.CommandRejected,
    RULE_BROKEN: ApprovalInstance.CommandRejected,
}
