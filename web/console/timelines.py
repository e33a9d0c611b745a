"""The console's timelines: the events of a schedule, run, instance, account or definition as
sentences, 100 to a page, and the aggregate as it was at an instant the auditor picks (for
settling disputes).

`/console/timelines/<kind>/<key>` (kind: schedule, run, approval, account or definition; key:
its id, an account's public id) is the page other pages link to; `?page=N` opens a page,
`?jump=INSTANT` the page holding the last event by then, `?at=INSTANT` the state then beside
that page. Only the page's events are read from the log (as the API's timelines show them);
a past state comes from `services().audit.state`, which replays the aggregate's events up to
that instant (as `cronledger audit state` does).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from flask import Blueprint, abort, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext
from werkzeug.wrappers import Response

from cronledger.application.audit import Read, TimelinePage
from cronledger.persistence.ledger import TimelineEntry, jsonable
from domain.directory import Principal, account_uuid
from domain.errors import DomainError
from domain.permissions import AUDIT_READ
from web.api import services
from web.console.access import signed_in
from web.console.approvals import COMMAND_LABELS
from web.console.clock import in_viewer_zone, typed_instant, viewer_zone, zone_name
from web.console.code_words import OUTCOME_LABELS as DECISIONS
from web.console.event_words import (
    changes_of,
    event_name,
    field_name,
    sentence,
    value_shown,
)
from web.console.runs import OUTCOME_LABELS as ATTEMPT_OUTCOMES
from web.schemas.base import EARLIEST, LATEST

bp = Blueprint("timelines", __name__, url_prefix="/timelines")

PAGE_SIZE = 100
PAGES_AROUND = 2  # page links on each side of the current one (besides the first and last)
# The fields a dispute usually turns on, shown first in a past state.
LEADING_FIELDS = ("state", "status", "enabled", "active", "deleted", "published")


@dataclass(frozen=True)
class Kind:
    """What can have a timeline: its name, how its id on the log is found in a tenant (else
    NotFound), and how its events are read when not as stored."""

    label: Any
    log_id: Callable[[UUID, str], UUID]
    read: Read | None = None


def _account_id(tenant_id: UUID, key: str) -> UUID:
    services().directory.current_account(tenant_id, key)  # NotFound unless the tenant has it
    return account_uuid(tenant_id, key)


KINDS = {
    "schedule": Kind(
        lazy_gettext("Schedule"),
        lambda tenant, key: services().schedules.find(tenant, key).id,
        lambda log_id, after, upto: services().schedules.timeline_range(log_id, after, upto),
    ),
    "run": Kind(
        lazy_gettext("Run"),
        lambda tenant, key: UUID(services().runs.view_by_id(tenant, key).id),
    ),
    "approval": Kind(
        lazy_gettext("Approval instance"),
        lambda tenant, key: services().approvals.instance(tenant, key).id,
    ),
    "account": Kind(lazy_gettext("Account"), _account_id),
    "definition": Kind(
        lazy_gettext("Process definition"),
        lambda tenant, key: services().directory.definition_aggregate(tenant, key).id,
    ),
}


@dataclass(frozen=True)
class PastState:
    """The aggregate as it was at an instant: its last event by then, and its fields."""

    at: datetime
    log_version: int
    last_position: int
    last_type: str
    fields: list[tuple[str, str]]


@bp.get("/")
@signed_in(AUDIT_READ)
def index(principal: Principal) -> Response | tuple[str, int]:
    """Pick an aggregate by kind and id."""
    kind = request.args.get("kind", "").strip()
    key = request.args.get("key", "").strip()
    errors: dict[str, str] = {}
    if "kind" in request.args or "key" in request.args:
        if kind not in KINDS:
            errors["kind"] = _("Choose what to read the timeline of.")
        if not key:
            errors["key"] = _("Give its id.")
        if not errors:
            return redirect(url_for(".aggregate", kind=kind, key=key))
    page = render_template(
        "console/timelines/index.html", kinds=KINDS, kind=kind, key=key, errors=errors
    )
    return page, 422 if errors else 200


@bp.get("/<kind>/<key>")
@signed_in(AUDIT_READ)
def aggregate(principal: Principal, kind: str, key: str) -> tuple[str, int]:
    """A page of its events, and (with `?at=`) the state at that instant beside them."""
    return _page(principal, kind, key, "console/timelines/aggregate.html")


@bp.get("/<kind>/<key>/print")
@signed_in(AUDIT_READ)
def printable(principal: Principal, kind: str, key: str) -> tuple[str, int]:
    """The same, laid out for paper."""
    return _page(principal, kind, key, "console/timelines/print.html")


def _page(principal: Principal, kind: str, key: str, template: str) -> tuple[str, int]:
    found = KINDS.get(kind)
    if found is None:
        abort(404, description=_("There are no timelines of %(kind)s.", kind=kind))
    log_id = found.log_id(principal.tenant_id, key)  # NotFound: the console's 404 page
    at, at_error = _instant(request.args.get("at", ""))
    jump, jump_error = _instant(request.args.get("jump", ""))
    wanted = at or jump
    here = services().audit.version_at(log_id, wanted) if wanted else None
    number = _page_of(here) if here is not None else _number(request.args.get("page", ""))
    page = services().audit.timeline_page(log_id, number, PAGE_SIZE, found.read)
    past = None
    if at is not None:
        past, at_error = _past_state(log_id, at)
    shown = render_template(
        template,
        kind=kind,
        kind_label=found.label,
        key=key,
        log_id=log_id,
        page=page,
        entries=[_shown(kind, entry) for entry in page.entries],
        page_numbers=page_numbers(page),
        here=here if jump is not None else None,
        at=at,
        at_value=_local_value(at),
        at_error=at_error,
        jump_value=_local_value(jump),
        jump_error=jump_error,
        past=past,
        zone=viewer_zone().key,
        zone_name=zone_name(viewer_zone()),
        operations_link=operations_link(log_id),
        resource_link=_resource_link(kind, key),
        printed_at=services().ledger.clock(),
    )
    refused = (at_error and at is None) or (jump_error and jump is None)
    return shown, 422 if refused else 200


def _page_of(log_version: int) -> int:
    """The page holding the event of that log version (the first, for none)."""
    return max(1, math.ceil(log_version / PAGE_SIZE))


def _number(text: str) -> int:
    """`?page=`: a page number (the first for anything else; past the last, the last)."""
    return int(text) if text.isascii() and text.isdigit() and len(text) < 10 else 1


def page_numbers(page: TimelinePage) -> list[int | None]:
    """The pages to link: the first, the last, and those around this one (None: a gap)."""
    wanted = {1, page.pages, *range(page.number - PAGES_AROUND, page.number + PAGES_AROUND + 1)}
    shown: list[int | None] = []
    for number in sorted(n for n in wanted if 1 <= n <= page.pages):
        if shown and shown[-1] is not None and number > shown[-1] + 1:
            shown.append(None)
        shown.append(number)
    return shown


def _past_state(log_id: UUID, at: datetime) -> tuple[PastState | None, str | None]:
    """The state at `at`, from the audit service's replay; or why there is none."""
    try:
        found = services().audit.state(str(log_id), at, zone=viewer_zone())
    except DomainError as error:  # not recorded yet at that instant, or an undecodable event
        return None, error.message
    state = found["state"]
    first = [name for name in LEADING_FIELDS if name in state]
    names = [*first, *(name for name in state if name not in first)]
    fields = [(name, _text(state[name])) for name in names]
    last = found["last_event"]
    return PastState(at, found["log_version"], last["position"], last["type"], fields), None


def _instant(text: str) -> tuple[datetime | None, str | None]:
    """`?at=` or `?jump=`: an instant with its offset, or a local time in the viewer's zone."""
    if not text.strip():
        return None, None
    try:
        moment = typed_instant(text)
    except ValueError:
        return None, _("Not an instant: give a date and time, e.g. 2026-10-01T18:00:00.")
    if not EARLIEST.year <= moment.year <= LATEST.year:  # as the API's instants
        return None, _("Give an instant between the years 1970 and 2999.")
    return moment, None


def _local_value(at: datetime | None) -> str:
    """`at` as a datetime-local field shows it: the viewer's wall time, to the millisecond."""
    if at is None:
        return ""
    return in_viewer_zone(at).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


def _shown(kind: str, entry: TimelineEntry) -> dict[str, Any]:
    """A timeline entry as the page shows it: in words, with its changes, and its JSON."""
    outcomes = DECISIONS if kind == "approval" else ATTEMPT_OUTCOMES
    outcome = outcomes.get(entry.outcome or "")
    fields = dict(vars(entry))  # its fields as they are (`asdict` would copy every value)
    return {
        **fields,
        "name": event_name(entry.type),
        "sentence": sentence(entry, COMMAND_LABELS),
        "outcome_words": str(outcome) if outcome is not None else entry.outcome,
        "changes": changes_of(entry),
        "json": json.dumps(jsonable(fields), ensure_ascii=False, indent=1),
    }


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=1)


@bp.context_processor
def _words() -> dict[str, Any]:
    return {"event_name": event_name, "field_name": field_name, "value_shown": value_shown}


def operations_link(log_id: UUID) -> str:
    """The console's operations audit, filtered to the same aggregate."""
    return url_for("console.operations.audit", aggregate=str(log_id))


def _resource_link(kind: str, key: str) -> str | None:
    """The aggregate's own console page, where the console has one."""
    if kind == "approval":
        return url_for("console.approvals.detail", instance_id=key)
    return None
