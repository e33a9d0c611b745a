"""What the console's forms share: the page size of the directory's lists, the version a form
was shown at, a refusal's messages by field, and a confirmation page before a command."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from flask import request
from marshmallow import ValidationError
from werkzeug.exceptions import NotFound as PageNotFound

from domain.errors import DomainError, NotFound, ValidationFailed
from web.api import flatten
from web.schemas.base import ReasonBody

PAGE_SIZE = 50
Errors = dict[str, list[str]]
T = TypeVar("T")


def form_version() -> int | None:
    """The version the form was shown at: a change made since is refused, not overwritten."""
    given = request.form.get("version", "")
    return int(given) if given.isdigit() else None


def or_404(read: Callable[[], T]) -> T:
    """What `read` reads; the domain's NotFound as the console's 404 page."""
    try:
        return read()
    except NotFound as error:
        raise PageNotFound(error.message) from None


def field_errors(error: ValidationError | DomainError) -> Errors:
    """The messages by field (`_schema` for the form as a whole)."""
    if isinstance(error, ValidationError):
        return flatten(error.messages)
    if isinstance(error, ValidationFailed):
        return error.errors
    return {"_schema": [error.message]}


def by_field(errors: Errors) -> Errors:
    """Messages about a list's items (`roles.0`) under the list's own field (`roles`)."""
    merged: Errors = {}
    for name, messages in errors.items():
        merged.setdefault(name.split(".")[0], []).extend(messages)
    return merged


def confirmed(
    page: Callable[[Errors], str], command: Callable[[str | None], T]
) -> T | tuple[str, int]:
    """A confirmation page (GET), then the command with the optional reason given (POST); a
    refusal is shown on the page again (422), an unknown subject is 404."""
    errors: Errors = {}
    if request.method == "POST":
        reason = request.form.get("reason", "").strip()
        try:
            ReasonBody().load({"reason": reason} if reason else {})
            return command(reason or None)
        except NotFound as error:
            raise PageNotFound(error.message) from None
        except (ValidationError, DomainError) as error:
            errors = field_errors(error)
    return page(errors), 422 if errors else 200
