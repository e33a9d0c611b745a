"""Approval instances (审批实例): one rule decides every command against a durable deadline."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.directory import NAMESPACE, Definition, self_approval_was_not_allowed
from domain.errors import DomainError, ValidationFailed
from domain.values import FormData, checked_form_data

WAITING_REVIEW = "WAITING_REVIEW"
APPROVED = "APPROVED"
WITHDRAWN = "WITHDRAWN"
EXPIRED = "EXPIRED"
TERMINAL = frozenset({APPROVED, WITHDRAWN, EXPIRED})
MAX_EXTENSION = timedelta(days=30)
MAX_DEADLINE_AHEAD = timedelta(days=366)

# Outcomes of a command (stored on the log), besides the states it can lead to.
SELF_APPROVAL = "SELF_APPROVAL"
STALE_MATERIAL = "STALE_MATERIAL"
EXTENDED = "EXTENDED"
OBSERVED = "OBSERVED"
NOT_DUE = "NOT_DUE"
CONFLICT = "CONFLICT"
LATE_OR_CONFLICT = "LATE_OR_CONFLICT"

SUBMIT = "submit"
APPROVE, WITHDRAW, EXTEND, SIGN, SWEEP = "approve", "withdraw", "extend-deadline", "sign", "sweep"


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

    @property
    def fingerprint(self) -> str:
        """What a repeat is compared with; instances keep it, so it must never change."""
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
        self, review_window_seconds: int, now: datetime
    ) -> tuple[datetime, dict[str, Any]]:
        """The review deadline and how it was set: as asked, or the definition's window."""
        if self.review_deadline_at is not None:
            return self.review_deadline_at, {"source": "explicit"}
        return now + timedelta(seconds=review_window_seconds), {
            "source": "definition",
            "review_window_seconds": review_window_seconds,
        }


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

    def interest_of(self, actor: str) -> str | None:
        """Why `actor` may not approve the instance, or None when they may."""
        if self.allow_self_approval:
            return None
        if actor == self.applicant_id:
            return f"{actor} is the instance's applicant"
        if actor == self.schedule_saver_id:
            return f"{actor} last saved the schedule that launched the instance"
        if self.launched and self.schedule_saver_id is None:
            return "the launch did not record who saved the schedule, so nobody may approve"
        return None


def _plain(value: object) -> object:
    """Form data as the object it stands for; anything else as its text."""
    return dict(value) if isinstance(value, Mapping) else str(value)


@dataclass(frozen=True)
class Decision:
    outcome: str
    state: str
    accepted: bool
    reason: str


@dataclass(frozen=True)
class Answer:
    """What a command got; a repeat of the command gets it again."""

    outcome: str
    state: str
    accepted: bool
    reason: str
    fingerprint: str


def decide(
    state: str,
    deadline: datetime,
    material_version: int,
    command: Command,
    now: datetime,
    actor: str,
    parties: Parties,
) -> Decision:
    """The one transition rule (docs/approvals.md), whatever the entry point."""
    if state == WAITING_REVIEW and now >= deadline:
        reason = f"the review deadline {deadline.isoformat()} had passed at {now.isoformat()}"
        return Decision(EXPIRED, EXPIRED, command.kind == SWEEP, reason)
    if state in TERMINAL and command.kind == SWEEP:
        return Decision(NOT_DUE, state, True, f"the instance is already {state}")
    if state in TERMINAL:
        outcome = LATE_OR_CONFLICT if command.kind == SIGN else CONFLICT
        return Decision(outcome, state, False, f"the instance is already {state}")
    return _decide_waiting(material_version, command, parties.interest_of(actor))


def _decide_waiting(material_version: int, command: Command, interest: str | None) -> Decision:
    if command.kind == APPROVE and interest is not None:
        return Decision(SELF_APPROVAL, WAITING_REVIEW, False, f"no self-approval: {interest}")
    if command.kind == APPROVE:
        offered = command.payload["material_version"]
        if offered != material_version:
            reason = f"material version {offered} is not the current {material_version}"
            return Decision(STALE_MATERIAL, WAITING_REVIEW, False, reason)
        return Decision(APPROVED, APPROVED, True, "approved before the deadline")
    if command.kind == WITHDRAW:
        return Decision(WITHDRAWN, WITHDRAWN, True, "withdrawn before the deadline")
    if command.kind == EXTEND:
        return Decision(EXTENDED, WAITING_REVIEW, True, command.payload["reason"])
    if command.kind == SIGN:
        return Decision(OBSERVED, WAITING_REVIEW, True, "callback recorded as an observation")
    return Decision(NOT_DUE, WAITING_REVIEW, True, "the deadline has not come")


def check_new_deadline(current: datetime, new: datetime, now: datetime) -> None:
    if new <= current:
        raise ValidationFailed.of(
            "new_deadline_at", f"must be later than the current deadline {current.isoformat()}"
        )
    if new > now + MAX_EXTENSION:
        raise ValidationFailed.of("new_deadline_at", "must be within 30 days of now")


class ApprovalInstance(Aggregate):
    """An instance waiting for review until an absolute deadline."""

    @staticmethod
    def create_id(tenant_id: UUID, applicant_id: str, command_id: str) -> UUID:
        return approval_uuid(tenant_id, applicant_id, command_id)

    class_version = 2

    upcast_v1_v2 = staticmethod(self_approval_was_not_allowed)

    class Submitted(Aggregate.Created):
        """Version 2 added `allow_self_approval` (false before: self-approval was not allowed)."""

        class_version = 2
        tenant_id: UUID
        definition_id: str
        applicant_id: str
        title: str
        form_data: FormData
        material_version: int
        review_deadline_at: datetime
        deadline_policy: dict[str, Any]
        origin: dict[str, Any] | None
        allow_self_approval: bool
        command_id: str
        fingerprint: str
        at: datetime
        actor: str

        upcast_v1_v2 = staticmethod(self_approval_was_not_allowed)

    @classmethod
    def submit(
        cls,
        tenant_id: UUID,
        applicant_id: str,
        submission: Submission,
        definition: Definition,
        origin: dict[str, Any] | None,
        at: datetime,
    ) -> ApprovalInstance:
        """A new instance, submitted by its applicant or by a run on the applicant's behalf."""
        deadline, deadline_policy = submission.deadline(definition.review_window_seconds, at)
        return cls(
            tenant_id=tenant_id,
            definition_id=submission.definition_id,
            applicant_id=applicant_id,
            title=submission.title,
            form_data=FormData.of(submission.form_data),
            material_version=submission.material_version,
            review_deadline_at=deadline,
            deadline_policy=deadline_policy,
            origin=origin,
            allow_self_approval=definition.allow_self_approval,
            command_id=submission.command_id,
            fingerprint=submission.fingerprint,
            at=at,
            actor=applicant_id,
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
        deadline_policy: dict[str, Any],
        origin: dict[str, Any] | None,
        allow_self_approval: bool,
        command_id: str,
        fingerprint: str,
        at: datetime,
        actor: str,
    ) -> None:
        self.tenant_id = tenant_id
        self.definition_id = definition_id
        self.applicant_id = applicant_id
        self.title = title
        self.form_data = form_data
        self.material_version = material_version
        self.review_deadline_at = review_deadline_at
        self.deadline_policy = deadline_policy
        self.origin = origin
        self.allow_self_approval = allow_self_approval
        self.submitted_at = at
        self.state = WAITING_REVIEW
        self.decided_at: datetime | None = None
        self.observations: list[dict[str, Any]] = []
        self.answers: dict[str, dict[str, Any]] = {}
        self.submission_fingerprint = fingerprint

    def answer_to(self, command: Command) -> Answer | None:
        """The first answer to a repeated command id, or None for a new one."""
        if command.command_id is None or command.command_id not in self.answers:
            return None
        first = Answer(**self.answers[command.command_id])
        if first.fingerprint != command.fingerprint:
            raise CommandIdReused(command.command_id)
        return first

    @property
    def parties(self) -> Parties:
        saver = self.origin.get("saved_by") if self.origin else None
        return Parties(self.applicant_id, self.origin is not None, saver, self.allow_self_approval)

    def handle(self, command: Command, at: datetime, actor: str) -> Answer:
        """Decide `command` at server time `at` and record it, winner or loser."""
        decision = decide(
            self.state,
            self.review_deadline_at,
            self.material_version,
            command,
            at,
            actor,
            self.parties,
        )
        if decision.outcome == EXTENDED:
            check_new_deadline(self.review_deadline_at, command.payload["new_deadline_at"], at)
        if decision.outcome != NOT_DUE:
            self.trigger_event(
                EVENT_OF_OUTCOME[decision.outcome],
                command=command.kind,
                command_id=command.command_id,
                payload=command.payload,
                outcome=decision.outcome,
                reason=decision.reason,
                accepted=decision.accepted,
                fingerprint=command.fingerprint,
                at=at,
                actor=actor,
            )
        return Answer(**asdict(decision), fingerprint=command.fingerprint)

    class CommandHandled(Aggregate.Event):
        """A command and what it got; subclasses name the outcome's kind."""

        command: str
        command_id: str | None
        payload: dict[str, Any]
        outcome: str
        reason: str
        accepted: bool
        fingerprint: str
        at: datetime
        actor: str

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
        pass

    class CallbackObserved(CommandHandled):
        pass

    class CommandRejected(CommandHandled):
        pass

    def record(self, handled: CommandHandled) -> None:
        """Apply a handled command: its answer, any observation, any change of state."""
        state = STATE_AFTER.get(handled.outcome, self.state)
        if handled.command_id is not None:
            self.answers[handled.command_id] = {
                "outcome": handled.outcome,
                "state": state,
                "accepted": handled.accepted,
                "reason": handled.reason,
                "fingerprint": handled.fingerprint,
            }
        if handled.command == SIGN:
            self.observations.append(
                {
                    **handled.payload,
                    "outcome": handled.outcome,
                    "recorded_at": handled.at,
                    "command_id": handled.command_id,
                }
            )
        if handled.outcome == EXTENDED:
            self.review_deadline_at = handled.payload["new_deadline_at"]
            self.deadline_policy = {"source": "extended", "reason": handled.reason}
        if state != self.state:
            self.state = state
            self.decided_at = handled.at


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
}
