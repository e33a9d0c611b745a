"""Errors the domain raises; each builds its own message and names its contract code."""

from __future__ import annotations

from collections.abc import Callable

from domain.messages import Message

# What a NotFound, VersionConflict or PreconditionFailed may name: a noun said in the reader's
# language (`Message(kind)`), as the catalogue has each.
KINDS = (
    Message("schedule"),
    Message("run"),
    Message("approval"),
    Message("account"),
    Message("definition"),
    Message("token"),
    Message("webhook"),
    Message("delivery"),
    Message("group"),
    Message("calendar"),
    Message("calendar revision"),
    Message("callback source"),
    Message("notification"),
    Message("preset"),
    Message("aggregate"),
    Message("aggregate or account"),
    Message("tenant"),
    Message("idempotency key"),
)


class DomainError(Exception):
    """A rule of the domain refused a command; nothing was written."""

    code = "INVALID_STATE"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(DomainError):
    code = "NOT_FOUND"

    def __init__(self, kind: str, key: object) -> None:
        super().__init__(Message("{kind} {key} was not found", kind=Message(kind), key=str(key)))


class VersionConflict(DomainError):
    code = "VERSION_CONFLICT"

    def __init__(self, kind: str, expected: int, actual: int) -> None:
        super().__init__(
            Message(
                "{kind} is at version {actual}, not {expected}: reload it and apply your change "
                "again",
                kind=Message(kind),
                actual=actual,
                expected=expected,
            )
        )


class PreconditionFailed(DomainError):
    """A write's If-Match names no version the resource is at."""

    code = "PRECONDITION_FAILED"

    def __init__(self, kind: str, actual: int) -> None:
        super().__init__(
            Message(
                '{kind} is at version {actual} (ETag "{actual}"), which If-Match does not name: '
                "reload it; nothing was changed",
                kind=Message(kind),
                actual=actual,
            )
        )


class Forbidden(DomainError):
    code = "FORBIDDEN"


class NotAReviewer(Forbidden):
    code = "NOT_A_REVIEWER"


class NoEligibleReviewer(DomainError):
    code = "NO_ELIGIBLE_REVIEWER"


class NotEnoughReviewers(DomainError):
    """A level of a definition has fewer eligible reviewers than approvals it requires."""

    code = "NOT_ENOUGH_REVIEWERS"

    def __init__(self, level: int, found: int, required: int) -> None:
        super().__init__(
            Message(
                "level {level} has {found} eligible reviewer(s); it requires {required} approvals",
                level=level,
                found=found,
                required=required,
            )
        )
        self.params = {"level": str(level), "found": str(found), "required": str(required)}


class InvalidState(DomainError):
    code = "INVALID_STATE"


class InFlight(DomainError):
    code = "IN_FLIGHT"


class ValidationFailed(DomainError):
    """Input broke a rule; `errors` maps each field to its messages."""

    code = "VALIDATION_FAILED"

    def __init__(self, errors: dict[str, list[str]]) -> None:
        fields = ", ".join(sorted(errors))
        super().__init__(Message("invalid value for {fields}", fields=fields))
        self.errors = errors

    @classmethod
    def of(cls, field: str, message: str) -> ValidationFailed:
        return cls({field: [message]})


def every_problem(*checks: Callable[[], object]) -> dict[str, list[str]]:
    """The field errors each check raises (ValidationFailed), all of them: a rule one check
    finds broken hides none of the others' (on one field, the later check's words stand)."""
    errors: dict[str, list[str]] = {}
    for check in checks:
        try:
            check()
        except ValidationFailed as failed:
            errors.update(failed.errors)
    return errors
