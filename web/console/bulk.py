"""What the console's lists share to act on picked rows (docs/console/README.md): the picked
ids and the versions shown with them, and the report of what each row's command got, in the
viewer's language, with the stable code beside its label. The commands themselves are the
bulk service's (cronledger/application/bulk.py), which the API's bulk endpoints call too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from flask import request
from flask_babel import gettext as _
from flask_babel import lazy_gettext
from marshmallow import ValidationError

from cronledger.application.bulk import (
    CANCEL,
    DELETE,
    DISABLE,
    DONE,
    ENABLE,
    MAX_BULK,
    REFUSED,
    RETRY,
    RUN,
    UNCHANGED,
    BulkItem,
)
from web.api import flatten
from web.schemas.base import ReasonBody

VERSION_FIELD = "version:"  # a row's hidden version input: `version:<id>`
CODE_LABELS = {
    "NOT_FOUND": lazy_gettext("No longer exists (deleted?)"),
    "VERSION_CONFLICT": lazy_gettext("Changed by someone else since the page was read"),
    "INVALID_STATE": lazy_gettext("Its state does not allow it"),
    "IN_FLIGHT": lazy_gettext("Runs of it are still unfinished"),
    "VALIDATION_FAILED": lazy_gettext("Fails a check"),
    "FORBIDDEN": lazy_gettext("Not allowed"),
    "NOT_A_REVIEWER": lazy_gettext("Not a reviewer of it"),
    "NO_ELIGIBLE_REVIEWER": lazy_gettext("Nobody may review it"),
    "NOT_ENOUGH_REVIEWERS": lazy_gettext("A level has too few reviewers"),
    "REQUEST_ID_REUSED": lazy_gettext("The request id was used for another request"),
    "COMMAND_ID_REUSED": lazy_gettext("The command id was used for another command"),
    "PRECONDITION_FAILED": lazy_gettext("Changed by someone else since the page was read"),
}
DONE_WORDS = {
    ENABLE: lazy_gettext("Enabled"),
    DISABLE: lazy_gettext("Disabled"),
    RUN: lazy_gettext("Queued to run once"),
    DELETE: lazy_gettext("Deleted"),
    RETRY: lazy_gettext("Retried: a new round of attempts"),
    CANCEL: lazy_gettext("Cancelled"),
}
UNCHANGED_WORDS = {
    ENABLE: lazy_gettext("Already enabled"),
    DISABLE: lazy_gettext("Already disabled"),
    RUN: lazy_gettext("Already queued by this form"),
}
OUTCOME_WORDS = {
    DONE: lazy_gettext("Done"),
    UNCHANGED: lazy_gettext("Unchanged"),
    REFUSED: lazy_gettext("Refused"),
}


@dataclass(frozen=True)
class Picked:
    """The rows a bulk form sent: their ids in order (each once), the versions the page showed
    with them, and what went wrong with the form itself (by field)."""

    ids: list[str]
    versions: dict[str, int]
    errors: dict[str, list[str]]


def picked(field: str, nothing: str, too_many: str) -> Picked:
    """The rows picked in the posted form's `field` boxes, with their versions."""
    ids = list(dict.fromkeys(request.form.getlist(field)))
    errors: dict[str, list[str]] = {}
    if not ids:
        errors[field] = [nothing]
    elif len(ids) > MAX_BULK:
        errors[field] = [too_many]
    versions = {
        key: int(text)
        for key in ids
        if (text := request.form.get(VERSION_FIELD + key, "")).isascii() and text.isdigit()
    }
    return Picked(ids, versions, errors)


def posted_reason(errors: dict[str, list[str]]) -> str | None:
    """The optional reason typed, checked as the API checks it (its problem joins `errors`)."""
    typed = request.form.get("reason", "").strip()
    try:
        loaded: dict[str, Any] = ReasonBody().load({"reason": typed} if typed else {})
    except ValidationError as error:
        errors["reason"] = [_(m) for m in flatten(error.messages).get("reason", [])]
        return None
    return loaded.get("reason")


@dataclass(frozen=True)
class ReportRow:
    """One row of a bulk action's report: the item (its name, and its page if it has one),
    its outcome (`DONE`, `UNCHANGED`, `REFUSED`) and what became of it in words; for a
    refusal, its stable code (`said` is the code's label) and the detail as the rule gave it
    (not translated here); the run a run now registered."""

    id: str
    name: str
    href: str | None
    outcome: str
    said: str
    code: str | None = None
    detail: str | None = None
    run_id: str | None = None

    @property
    def outcome_words(self) -> str:
        return str(OUTCOME_WORDS[self.outcome])


def report(
    action: str, items: Iterable[BulkItem], href: Callable[[str], str] | None
) -> list[ReportRow]:
    """What each item's command got, as the report table shows it; `href` gives an item's
    page (None: no item of the action has one)."""
    return [
        _row(action, item, href(item.id) if href and _has_page(item) else None) for item in items
    ]


def _has_page(item: BulkItem) -> bool:
    """Whether the item still has a page to link to (not one unknown, nor deleted)."""
    return item.name is not None and item.code != "NOT_FOUND"


def _row(action: str, item: BulkItem, href: str | None) -> ReportRow:
    name = item.name if item.name is not None else item.id
    if item.outcome == REFUSED:
        detail = refusal_detail(item.detail, item.errors)
        return ReportRow(item.id, name, href, REFUSED, code_label(item.code), item.code, detail)
    words = DONE_WORDS if item.outcome == DONE else UNCHANGED_WORDS
    run_id = item.run_id if action == RUN else None
    return ReportRow(item.id, name, href, item.outcome, str(words[action]), run_id=run_id)


def code_label(code: str | None) -> str:
    """A refusal code's label in the viewer's language (the code itself for one unknown)."""
    return str(CODE_LABELS.get(code or "", code or ""))


def refusal_detail(detail: str | None, errors: Mapping[str, list[str]]) -> str:
    """A refusal in one line: each field's problems, or the message."""
    if errors:
        return "; ".join(f"{name}: {' '.join(said)}" for name, said in sorted(errors.items()))
    return detail or ""


@dataclass(frozen=True)
class ConfirmRow:
    """A picked item a confirmation page names: its id, its name, the version the list showed."""

    id: str
    name: str
    version: int | None


@dataclass(frozen=True)
class Confirm:
    """A page that asks before a destructive bulk action (console/bulk_confirm.html): what it
    says, where its form goes with the picked items (`field`), `hidden` fields and the reason
    typed so far, and the way back."""

    title: str
    lead: str
    button: str
    url: str
    back: str
    back_words: str
    action: str
    field: str
    rows: list[ConfirmRow]
    hidden: dict[str, str]
    reason: str = ""
