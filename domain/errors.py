"""Errors the domain raises; each builds its own message and names its contract code."""

from __future__ import annotations


class DomainError(Exception):
    """A rule of the domain refused a command; nothing was written."""

    code = "INVALID_STATE"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(DomainError):
    code = "NOT_FOUND"

    def __init__(self, kind: str, key: object) -> None:
        super().__init__(f"{kind} {key!s} was not found")


class VersionConflict(DomainError):
    code = "VERSION_CONFLICT"

    def __init__(self, kind: str, expected: int, actual: int) -> None:
        super().__init__(
            f"{kind} is at version {actual}, not {expected}: reload it and apply your change again"
        )


class PreconditionFailed(DomainError):
    """A write's If-Match names no version the resource is at."""

    code = "PRECONDITION_FAILED"

    def __init__(self, kind: str, actual: int) -> None:
        super().__init__(
            f'{kind} is at version {actual} (ETag "{actual}"), which If-Match does not name: '
            "reload it; nothing was changed"
        )


class Forbidden(DomainError):
    code = "FORBIDDEN"


class InvalidState(DomainError):
    code = "INVALID_STATE"


class InFlight(DomainError):
    code = "IN_FLIGHT"


class ValidationFailed(DomainError):
    """Input broke a rule; `errors` maps each field to its messages."""

    code = "VALIDATION_FAILED"

    def __init__(self, errors: dict[str, list[str]]) -> None:
        fields = ", ".join(sorted(errors))
        super().__init__(f"invalid value for {fields}")
        self.errors = errors

    @classmethod
    def of(cls, field: str, message: str) -> ValidationFailed:
        return cls({field: [message]})
