"""The console's timelines: every event of a schedule, run, instance, account or definition,
and the aggregate as it was at an instant the auditor picks (for settling disputes).

`/console/timelines/<kind>/<key>` (kind: schedule, run, approval, account or definition; key:
its id, an account's public id) is the page other pages link to. Events come from the same
services as the API's timelines; a past state from `services().audit.state`, which replays the
aggregate's events up to that instant (as `cronledger audit state` does).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from flask import Blueprint, abort, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext
from werkzeug.wrappers import Response

from cronledger.persistence.ledger import TimelineEntry
from domain.directory import Principal, account_uuid
from domain.errors import DomainError
from domain.permissions import AUDIT_READ
from web.api import services
from web.console.access import signed_in
from web.console.clock import viewer_zone
from web.schemas.base import EARLIEST, LATEST

bp = Blueprint("timelines", __name__, url_prefix="/timelines")

# The fields a dispute usually turns on, shown first in a past state.
LEADING_FIELDS = ("state", "status", "enabled", "active", "deleted", "published")


@dataclass(frozen=True)
class Kind:
    """What can have a timeline: its name, its events, and its id on the log."""

    label: Any
    timeline: Callable[[UUID, str], list[TimelineEntry]]
    log_id: Callable[[UUID, str], UUID]  # after `timeline` found it in the tenant


KINDS = {
    "schedule": Kind(
        lazy_gettext("Schedule"),
        lambda tenant, key: services().schedules.timeline(tenant, key),
        lambda tenant, key: services().schedules.find(tenant, key).id,
    ),
    "run": Kind(
        lazy_gettext("Run"),
        lambda tenant, key: services().runs.timeline(tenant, key),
        lambda tenant, key: UUID(services().runs.view_by_id(tenant, key).id),
    ),
    "approval": Kind(
        lazy_gettext("Approval instance"),
        lambda tenant, key: services().approvals.timeline(tenant, key),
        lambda tenant, key: services().approvals.instance(tenant, key).id,
    ),
    "account": Kind(
        lazy_gettext("Account"),
        lambda tenant, key: services().directory.account_timeline(tenant, key),
        account_uuid,
    ),
    "definition": Kind(
        lazy_gettext("Process definition"),
        lambda tenant, key: services().directory.definition_timeline(tenant, key),
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
    """Every event, and (with `?at=`) the state at that instant beside the events before it."""
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
    entries = found.timeline(principal.tenant_id, key)  # NotFound: the console's 404 page
    log_id = found.log_id(principal.tenant_id, key)
    at, at_error = _instant(request.args.get("at", ""))
    past = None
    if at is not None:
        past, at_error = _past_state(log_id, at)
    page = render_template(
        template,
        kind=kind,
        kind_label=found.label,
        key=key,
        log_id=log_id,
        entries=[_shown(entry) for entry in entries],
        at=at,
        at_value=_local_value(at),
        at_error=at_error,
        past=past,
        zone=viewer_zone().key,
        operations_link=operations_link(log_id),
        resource_link=_resource_link(kind, key),
        printed_at=services().ledger.clock(),
    )
    return page, 422 if at_error and at is None else 200


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
    """`?at=`: an instant with its offset, or a local time in the viewer's zone."""
    text = text.strip()
    if not text:
        return None, None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None, _("Not an instant: give a date and time, e.g. 2026-10-01T18:00:00.")
    if not EARLIEST.year <= moment.year <= LATEST.year:  # as the API's instants
        return None, _("Give an instant between the years 1970 and 2999.")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=viewer_zone())
    return moment, None


def _local_value(at: datetime | None) -> str:
    """`at` as a datetime-local field shows it: the viewer's wall time, to the millisecond."""
    if at is None:
        return ""
    return at.astimezone(viewer_zone()).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


def _shown(entry: TimelineEntry) -> dict[str, Any]:
    """A timeline entry as the page shows it, its data as readable JSON."""
    data = json.dumps(entry.data, ensure_ascii=False, indent=1) if entry.data else ""
    return {**asdict(entry), "data": data}


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=1)


def operations_link(log_id: UUID) -> str:
    """The console's operations audit, filtered to the same aggregate."""
    return url_for("console.operations.audit", aggregate=str(log_id))


def _resource_link(kind: str, key: str) -> str | None:
    """The aggregate's own console page, where the console has one."""
    if kind == "approval":
        return url_for("console.approvals.detail", instance_id=key)
    return None
