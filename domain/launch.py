"""Launch checks (发起校验): one set, asked when a schedule is saved and at every attempt."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from domain.directory import Account, Definition
from domain.messages import N_, Message
from domain.permissions import APPROVAL_SUBMIT, SCHEDULE_EDIT

INITIATOR_NOT_FOUND = "INITIATOR_NOT_FOUND"
INITIATOR_INACTIVE = "INITIATOR_INACTIVE"
INITIATOR_NOT_PERMITTED = "INITIATOR_NOT_PERMITTED"
DEFINITION_NOT_FOUND = "DEFINITION_NOT_FOUND"
DEFINITION_UNPUBLISHED = "DEFINITION_UNPUBLISHED"
DEFINITION_EXTERNAL = "DEFINITION_EXTERNAL"
SAVER_INACTIVE = "SAVER_INACTIVE"
SAVER_NOT_PERMITTED = "SAVER_NOT_PERMITTED"
NO_ELIGIBLE_REVIEWER = "NO_ELIGIBLE_REVIEWER"  # the definition's reviewers name nobody eligible
NOT_ENOUGH_REVIEWERS = "NOT_ENOUGH_REVIEWERS"  # a level has fewer eligible than it requires
PERMANENT = frozenset({INITIATOR_NOT_FOUND, DEFINITION_NOT_FOUND})

# What a run's failed attempt records (stored on the log: keep the wording).
ATTEMPT_MESSAGES = {
    INITIATOR_NOT_FOUND: N_("the initiator is not in the tenant"),
    INITIATOR_INACTIVE: N_("initiator {subject} is inactive"),
    INITIATOR_NOT_PERMITTED: N_("initiator {subject} lacks {permission}"),
    DEFINITION_NOT_FOUND: N_("the definition is not in the tenant"),
    DEFINITION_UNPUBLISHED: N_("definition {subject} is unpublished"),
    DEFINITION_EXTERNAL: N_("definition {subject} is external"),
    SAVER_INACTIVE: N_("the account that saved the schedule is inactive"),
    SAVER_NOT_PERMITTED: N_("account {subject}, which saved the schedule, lost {permission}"),
}
# What a request that saves a schedule, or submits an instance, is told.
VALIDATION_MESSAGES = {
    INITIATOR_NOT_FOUND: N_("no such account in this tenant"),
    INITIATOR_INACTIVE: N_("account {subject} is deactivated"),
    INITIATOR_NOT_PERMITTED: N_(
        "account {subject} lacks {permission}: "
        "a schedule's initiator must be allowed to submit approval instances"
    ),
    DEFINITION_NOT_FOUND: N_("no such definition in this tenant"),
    DEFINITION_UNPUBLISHED: N_("definition {subject} is not published"),
    DEFINITION_EXTERNAL: N_("definition {subject} is external: its business system starts it"),
}
# The permission a code's words name, if any.
PERMISSION_OF = {INITIATOR_NOT_PERMITTED: APPROVAL_SUBMIT, SAVER_NOT_PERMITTED: SCHEDULE_EDIT}


class LaunchFailed(Exception):
    """Why a launch created no instance: its stable code, its words and the values they name
    (`params`); a `permanent` failure is not retried by itself."""

    def __init__(
        self,
        code: str,
        message: str,
        permanent: bool = False,
        params: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.permanent = permanent
        self.params = dict(params or {})


@dataclass(frozen=True)
class LaunchProblem:
    """A launch check that failed: its stable code, and the account or definition it names."""

    code: str
    subject: str = ""

    @property
    def reason(self) -> Message:
        """The problem as a validation error."""
        return Message(VALIDATION_MESSAGES[self.code], **self._values())

    def failure(self) -> LaunchFailed:
        """The problem as the failure of a run's attempt."""
        message = Message(ATTEMPT_MESSAGES[self.code], **self._values())
        params = {"subject": self.subject} if self.subject else {}
        return LaunchFailed(self.code, message, self.code in PERMANENT, params)

    def _values(self) -> dict[str, str]:
        return {"subject": self.subject, "permission": PERMISSION_OF.get(self.code, "")}


def initiator_problem(account: Account | None) -> LaunchProblem | None:
    """Why this account may not initiate instances, if it may not."""
    if account is None:
        return LaunchProblem(INITIATOR_NOT_FOUND)
    if not account.active:
        return LaunchProblem(INITIATOR_INACTIVE, account.account_id)
    if APPROVAL_SUBMIT not in account.permissions:
        return LaunchProblem(INITIATOR_NOT_PERMITTED, account.account_id)
    return None


def definition_problem(
    definition: Definition | None, allow_external: bool = False
) -> LaunchProblem | None:
    """Why instances may not be started from this definition, if they may not.

    Schedules never start external definitions: their business system does (`allow_external`).
    """
    if definition is None:
        return LaunchProblem(DEFINITION_NOT_FOUND)
    if not definition.published:
        return LaunchProblem(DEFINITION_UNPUBLISHED, definition.key)
    if definition.external and not allow_external:
        return LaunchProblem(DEFINITION_EXTERNAL, definition.key)
    return None


def saver_problem(saver: Account | None) -> LaunchProblem | None:
    """Why the account that last saved the schedule no longer vouches for its launches."""
    if saver is None or not saver.active:
        return LaunchProblem(SAVER_INACTIVE)
    if SCHEDULE_EDIT not in saver.permissions:
        return LaunchProblem(SAVER_NOT_PERMITTED, saver.account_id)
    return None


def checked_launch(
    initiator: Account | None, definition: Definition | None, saver: Account | None
) -> tuple[Account, Definition]:
    """The initiator and definition to launch with, checked at every attempt (seeds 000-002)."""
    problem = initiator_problem(initiator) or definition_problem(definition) or saver_problem(saver)
    if problem is not None:
        raise problem.failure()
    return cast(Account, initiator), cast(Definition, definition)  # the checks refuse None
