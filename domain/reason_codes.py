"""Codes before prose: why a command got its outcome, as a stable code and its parameters.

Events keep the code and the parameters beside the English words made from them (`reason`),
so a program acts on the code and a person reads the words in their language: the console
makes Chinese ones from the same code (web/console/reason_words.py). Events recorded before
release 0.11.0 kept only the words; they read with the code None.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from domain.messages import N_, Joined, Message

# The approval rule's reasons (docs/approvals.md): what each code's parameters are, in words.
APPROVED_IN_TIME = "APPROVED_IN_TIME"
WITHDRAWN_IN_TIME = "WITHDRAWN_IN_TIME"
CALLBACK_OBSERVED = "CALLBACK_OBSERVED"
DEADLINE_NOT_DUE = "DEADLINE_NOT_DUE"
DEADLINE_PASSED = "DEADLINE_PASSED"
DEADLINE_EXTENDED = "DEADLINE_EXTENDED"
ALREADY_DECIDED = "ALREADY_DECIDED"
PERMISSION_MISSING = "PERMISSION_MISSING"
NOT_THE_APPLICANT = "NOT_THE_APPLICANT"
SELF_APPROVAL_APPLICANT = "SELF_APPROVAL_APPLICANT"
SELF_APPROVAL_SCHEDULE_SAVER = "SELF_APPROVAL_SCHEDULE_SAVER"
SELF_APPROVAL_SAVER_UNKNOWN = "SELF_APPROVAL_SAVER_UNKNOWN"
MATERIAL_STALE = "MATERIAL_STALE"
CONTRACT_MISMATCH = "CONTRACT_MISMATCH"
EXTENSION_NOT_LATER = "EXTENSION_NOT_LATER"
EXTENSION_TOO_FAR = "EXTENSION_TOO_FAR"
NOT_A_REVIEWER = "NOT_A_REVIEWER"
NOT_THE_ASSIGNEE = "NOT_THE_ASSIGNEE"
CLAIMED_BY_OTHER = "CLAIMED_BY_OTHER"
REVIEWER_INELIGIBLE = "REVIEWER_INELIGIBLE"
CLAIMED_IN_TIME = "CLAIMED_IN_TIME"
UNCLAIMED_IN_TIME = "UNCLAIMED_IN_TIME"
REASSIGNED_IN_TIME = "REASSIGNED_IN_TIME"
REJECTED_IN_TIME = "REJECTED_IN_TIME"
COMMENTED_IN_TIME = "COMMENTED_IN_TIME"
ASSIGNEE_MAY_NOT_DECIDE = "ASSIGNEE_MAY_NOT_DECIDE"
# An escalation whose target may not approve the instance: recorded, the task left as it was.
ESCALATION_TARGET_INELIGIBLE = "ESCALATION_TARGET_INELIGIBLE"
# The review clock (pause-deadline, resume-deadline) and a return (退回).
DEADLINE_PAUSED = "DEADLINE_PAUSED"
DEADLINE_RESUMED = "DEADLINE_RESUMED"
CLOCK_ALREADY_PAUSED = "CLOCK_ALREADY_PAUSED"
CLOCK_NOT_PAUSED = "CLOCK_NOT_PAUSED"
CLOCK_RESUMED_AT_MAX_PAUSE = "CLOCK_RESUMED_AT_MAX_PAUSE"
RETURNED_FOR_CHANGES = "RETURNED_FOR_CHANGES"
INSTANCE_RETURNED = "INSTANCE_RETURNED"
NOT_WAITING_FOR_REVIEW = "NOT_WAITING_FOR_REVIEW"
# Levels and countersign, and revised material (docs/approvals.md#levels-and-countersign).
APPROVAL_COUNTED = "APPROVAL_COUNTED"
REJECTION_COUNTED = "REJECTION_COUNTED"
ALREADY_VOTED_ON_LEVEL = "ALREADY_VOTED_ON_LEVEL"
TASK_CLOSED = "TASK_CLOSED"
LEVEL_CANNOT_REACH = "LEVEL_CANNOT_REACH"
MATERIAL_REVISED = "MATERIAL_REVISED"
MATERIAL_NOT_NEWER = "MATERIAL_NOT_NEWER"
NOT_THE_APPLICANT_REVISE = "NOT_THE_APPLICANT_REVISE"
# Resubmission and cancellation (docs/approvals.md#resubmit-and-cancel): commands that link a
# decided instance to a new one.
RESUBMITTED_AS = "RESUBMITTED_AS"
NOT_RESUBMITTABLE = "NOT_RESUBMITTABLE"
ALREADY_RESUBMITTED = "ALREADY_RESUBMITTED"
RESUBMIT_BY_APPLICANT_ONLY = "RESUBMIT_BY_APPLICANT_ONLY"
CANCELLATION_REQUESTED_AS = "CANCELLATION_REQUESTED_AS"
NOT_APPROVED = "NOT_APPROVED"
NO_CANCELLATION_DEFINITION = "NO_CANCELLATION_DEFINITION"
CANCELLATION_PENDING = "CANCELLATION_PENDING"
ALREADY_CANCELLED = "ALREADY_CANCELLED"
CANCELLATION_BY_APPLICANT_ONLY = "CANCELLATION_BY_APPLICANT_ONLY"

ENGLISH = {
    APPROVED_IN_TIME: N_("approved before the deadline"),
    WITHDRAWN_IN_TIME: N_("withdrawn before the deadline"),
    CALLBACK_OBSERVED: N_("callback recorded as an observation"),
    DEADLINE_NOT_DUE: N_("the deadline has not come"),
    DEADLINE_PASSED: N_("the review deadline {deadline} had passed at {at}"),
    DEADLINE_EXTENDED: "{reason}",  # the reviewer's own words
    ALREADY_DECIDED: N_("the instance is already {state}"),
    PERMISSION_MISSING: N_("{actor} lacks the permission {permission}"),
    NOT_THE_APPLICANT: N_("only the applicant may withdraw an instance"),
    SELF_APPROVAL_APPLICANT: N_("no self-approval: {actor} is the instance's applicant"),
    SELF_APPROVAL_SCHEDULE_SAVER: N_(
        "no self-approval: {actor} last saved the schedule that launched the instance"
    ),
    SELF_APPROVAL_SAVER_UNKNOWN: N_(
        "no self-approval: the launch did not record who saved the schedule, so nobody may approve"
    ),
    MATERIAL_STALE: N_("material version {offered} is not the current {current}"),
    CONTRACT_MISMATCH: N_("contract {offered} is not the instance's {bound}"),
    EXTENSION_NOT_LATER: N_("new_deadline_at must be later than the current deadline {deadline}"),
    EXTENSION_TOO_FAR: N_("new_deadline_at must be within 30 days of now"),
    NOT_A_REVIEWER: N_("{actor} is not a reviewer of this instance"),
    NOT_THE_ASSIGNEE: N_("only the task's assignee or an admin may {command} it"),
    CLAIMED_BY_OTHER: N_("the task is claimed by {assignee}"),
    REVIEWER_INELIGIBLE: N_("{account} may not review this instance"),
    CLAIMED_IN_TIME: N_("the task was claimed"),
    UNCLAIMED_IN_TIME: N_("the task may be claimed again"),
    REASSIGNED_IN_TIME: N_("the task was reassigned to {assignee}"),
    REJECTED_IN_TIME: N_("rejected before the deadline"),
    COMMENTED_IN_TIME: N_("comment added"),
    ASSIGNEE_MAY_NOT_DECIDE: N_(
        "{account} may no longer decide (deactivated, or without the permission): "
        "the task may be claimed again"
    ),
    DEADLINE_PAUSED: "{reason}",  # the words of whoever paused the clock
    DEADLINE_RESUMED: "{reason}",
    CLOCK_ALREADY_PAUSED: N_("the review clock is already paused since {since}"),
    CLOCK_NOT_PAUSED: N_("the review clock is not paused"),
    CLOCK_RESUMED_AT_MAX_PAUSE: N_(
        "the review clock resumed by itself after the longest pause, {max_pause_seconds} s"
    ),
    RETURNED_FOR_CHANGES: N_("returned to the applicant for changes"),
    INSTANCE_RETURNED: N_("the instance was returned to its applicant for changes"),
    NOT_WAITING_FOR_REVIEW: N_("the instance is {state}, not waiting for review"),
    APPROVAL_COUNTED: N_("approval {approvals} of {required} counted on level {level}"),
    REJECTION_COUNTED: N_(
        "a reject counted on level {level}: {possible} approvals are still possible of {required}"
    ),
    ALREADY_VOTED_ON_LEVEL: N_(
        "{actor} already decided or holds a task on level {level}: each needs a distinct reviewer"
    ),
    TASK_CLOSED: N_("task {task_id} is already closed"),
    LEVEL_CANNOT_REACH: N_(
        "level {level} can no longer reach {required} approvals ({possible} still possible)"
    ),
    MATERIAL_REVISED: N_("material revised from version {old} to {new}: {reason}"),
    MATERIAL_NOT_NEWER: N_("material version {offered} must be greater than the current {current}"),
    NOT_THE_APPLICANT_REVISE: N_("only the applicant may revise the material"),
    RESUBMITTED_AS: N_("resubmitted as {instance_id}"),
    NOT_RESUBMITTABLE: N_(
        "only a withdrawn, expired or rejected instance may be resubmitted; this one is {state}"
    ),
    ALREADY_RESUBMITTED: N_("the instance was already resubmitted as {instance_id}"),
    RESUBMIT_BY_APPLICANT_ONLY: N_("only the applicant may resubmit an instance"),
    CANCELLATION_REQUESTED_AS: N_("cancellation requested as {instance_id}"),
    NOT_APPROVED: N_("only an approved instance may be cancelled; this one is {state}"),
    NO_CANCELLATION_DEFINITION: N_(
        "the instance's definition names no cancellation definition, so it cannot be cancelled"
    ),
    CANCELLATION_PENDING: N_("a cancellation is already requested: {instance_id}"),
    ALREADY_CANCELLED: N_("the instance was already cancelled by {instance_id}"),
    CANCELLATION_BY_APPLICANT_ONLY: N_("only the applicant may request an instance's cancellation"),
}
MISMATCHES = "mismatches"  # a callback's differences from its instance, each a reason
# Values that are words rather than names (NOT_THE_ASSIGNEE's command), and the words they are.
SAID_VALUES = frozenset({"command"})
COMMANDS = (Message("unclaim"), Message("reassign"))


@dataclass(frozen=True)
class Reason:
    """A stable `code` (one of ENGLISH's) and the values its words name."""

    code: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> Message:
        return english(self.code, self.params)

    def with_mismatches(self, mismatches: list[Reason]) -> Reason:
        """This reason, and how a callback differs from its instance (if it does)."""
        if not mismatches:
            return self
        listed = [{"code": m.code, "params": dict(m.params)} for m in mismatches]
        return Reason(self.code, {**self.params, MISMATCHES: listed})


def recorded_words(code: str | None, params: Mapping[str, Any] | None, recorded: str) -> str:
    """A recorded reason's words: made again from its code and values (a `Message`) when both
    were kept, else the words as they were recorded."""
    if code in ENGLISH and params is not None:
        return english(code, params)
    return recorded


def english(code: str, params: Mapping[str, Any]) -> Message:
    """The words of a reason in English, as the events and the API give them (a `Message`, so
    that the API may say them in the reader's language)."""
    values = {
        name: Message(value) if name in SAID_VALUES else value
        for name, value in params.items()
        if name != MISMATCHES
    }
    text = Message(ENGLISH[code], **values)
    mismatches = params.get(MISMATCHES) or []
    if mismatches:
        listed = Joined("; ", (english(m["code"], m["params"]) for m in mismatches))
        text = Message("{reason}; mismatch: {mismatches}", reason=text, mismatches=listed)
    return text
