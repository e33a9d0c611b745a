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

ENGLISH = {
    APPROVED_IN_TIME: "approved before the deadline",
    WITHDRAWN_IN_TIME: "withdrawn before the deadline",
    CALLBACK_OBSERVED: "callback recorded as an observation",
    DEADLINE_NOT_DUE: "the deadline has not come",
    DEADLINE_PASSED: "the review deadline {deadline} had passed at {at}",
    DEADLINE_EXTENDED: "{reason}",  # the reviewer's own words
    ALREADY_DECIDED: "the instance is already {state}",
    PERMISSION_MISSING: "{actor} lacks the permission {permission}",
    NOT_THE_APPLICANT: "only the applicant may withdraw an instance",
    SELF_APPROVAL_APPLICANT: "no self-approval: {actor} is the instance's applicant",
    SELF_APPROVAL_SCHEDULE_SAVER: (
        "no self-approval: {actor} last saved the schedule that launched the instance"
    ),
    SELF_APPROVAL_SAVER_UNKNOWN: (
        "no self-approval: the launch did not record who saved the schedule, so nobody may approve"
    ),
    MATERIAL_STALE: "material version {offered} is not the current {current}",
    CONTRACT_MISMATCH: "contract {offered} is not the instance's {bound}",
    EXTENSION_NOT_LATER: "new_deadline_at must be later than the current deadline {deadline}",
    EXTENSION_TOO_FAR: "new_deadline_at must be within 30 days of now",
}
MISMATCHES = "mismatches"  # a callback's differences from its instance, each a reason


@dataclass(frozen=True)
class Reason:
    """A stable `code` (one of ENGLISH's) and the values its words name."""

    code: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return english(self.code, self.params)

    def with_mismatches(self, mismatches: list[Reason]) -> Reason:
        """This reason, and how a callback differs from its instance (if it does)."""
        if not mismatches:
            return self
        listed = [{"code": m.code, "params": dict(m.params)} for m in mismatches]
        return Reason(self.code, {**self.params, MISMATCHES: listed})


def english(code: str, params: Mapping[str, Any]) -> str:
    """The words of a reason in English, as the events and the API give them."""
    text = ENGLISH[code].format(**params)
    mismatches = params.get(MISMATCHES) or []
    if mismatches:
        said = "; ".join(english(m["code"], m["params"]) for m in mismatches)
        text = f"{text}; mismatch: {said}"
    return text
