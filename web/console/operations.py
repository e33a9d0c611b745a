"""The console's operations pages: the dashboard (backlogs, dead letters, overdue approvals,
projection lag, the last day's charts) and the operations audit (docs/console/operations.md)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from flask import Blueprint, render_template, request
from flask_babel import gettext as _
from flask_babel import ngettext
from marshmallow import ValidationError

from cronledger.application.operations import Hour
from domain.directory import PUBLIC_ID, Principal, account_uuid
from domain.permissions import AUDIT_READ, SCHEDULE_LIST
from projections.keyset import Window
from projections.operations import KINDS, OperationFilter
from web.api import flatten, services
from web.console.access import signed_in
from web.console.charts import Chart, bar_chart, number
from web.console.clock import viewer_zone
from web.schemas.audit import OperationsQuery

bp = Blueprint("operations", __name__, url_prefix="/operations")
AUDIT_PAGE_SIZE = 50
# The audit's filters, as the API names them (`aggregate` is the console's own).
AUDIT_FILTERS = ("actor", "kind", "from", "to", "aggregate")


@bp.get("/")
@signed_in(SCHEDULE_LIST)
def index(principal: Principal) -> str:
    hours = services().operations.last_day(principal.tenant_id)
    labels = tuple(hour_label(hour.start) for hour in hours)
    return render_template(
        "console/operations/index.html",
        backlog=services().backlog(principal.tenant_id),
        hours=list(zip(labels, hours, strict=True)),
        lag_chart=bar_chart(lag_chart(labels, hours)),
        outcome_chart=bar_chart(outcome_chart(labels, hours)),
        duration=duration,
        number=number,
        zone=viewer_zone().key,
    )


def hour_label(start: datetime) -> str:
    """An hour's start in the viewer's zone: `14:00` (`05:30` where the zone says so)."""
    return start.astimezone(viewer_zone()).strftime("%H:%M")


def lag_chart(labels: tuple[str, ...], hours: Sequence[Hour]) -> Chart:
    runs = sum(hour.lag.runs for hour in hours)
    if runs:
        mean = sum(hour.lag.runs * hour.lag.mean_seconds for hour in hours) / runs
        worst = max(
            (n for n, hour in enumerate(hours) if hour.lag.runs),
            key=lambda n: hours[n].lag.max_seconds,
        )
        summary = ngettext(
            "%(num)s run planned in the last 24 hours was registered %(mean)s s late on "
            "average; the highest lag, %(max)s s, was in the hour from %(hour)s.",
            "%(num)s runs planned in the last 24 hours were registered %(mean)s s late on "
            "average; the highest lag, %(max)s s, was in the hour from %(hour)s.",
            runs,
            mean=number(round(mean, 3)),
            max=number(hours[worst].lag.max_seconds),
            hour=labels[worst],
        )
    else:
        summary = _("No runs were planned in the last 24 hours.")
    return Chart(
        key="registration-lag",
        title=_("Registration lag: the highest per hour, last 24 hours"),
        summary=summary,
        series=(_("Highest registration lag"),),
        labels=labels,
        values=tuple((hour.lag.max_seconds,) for hour in hours),
        unit=" s",
    )


def outcome_chart(labels: tuple[str, ...], hours: Sequence[Hour]) -> Chart:
    succeeded = sum(hour.outcomes.succeeded for hour in hours)
    failed = sum(hour.outcomes.failed for hour in hours)
    dead = sum(hour.outcomes.dead_lettered for hour in hours)
    return Chart(
        key="launch-outcomes",
        title=_("Launch outcomes per hour, last 24 hours"),
        summary=_(
            "Attempts launched in the last 24 hours: %(succeeded)s succeeded, %(failed)s "
            "failed, %(dead)s dead-lettered.",
            succeeded=succeeded,
            failed=failed,
            dead=dead,
        ),
        series=(_("Succeeded"), _("Failed"), _("Dead-lettered")),
        labels=labels,
        values=tuple(tuple(float(n) for n in hour.outcomes) for hour in hours),
    )


def duration(seconds: float) -> str:
    """A lag in words: `42 s`, `3 min 5 s`, `2 h 10 min`."""
    whole = int(seconds)
    if whole < 60:
        return str(_("%(s)s s", s=number(round(seconds, 1))))
    if whole < 3600:
        return str(_("%(m)s min %(s)s s", m=whole // 60, s=whole % 60))
    return str(_("%(h)s h %(m)s min", h=whole // 3600, m=whole % 3600 // 60))


@bp.get("/audit")
@signed_in(AUDIT_READ)
def audit(principal: Principal) -> tuple[str, int]:
    given = {name: request.args.get(name, "").strip() for name in AUDIT_FILTERS}
    errors: dict[str, list[str]] = {}
    page = None
    try:
        wanted, number_of_page = audit_filter(principal, given)
    except ValidationError as error:
        errors = flatten(error.messages)
    else:
        window = Window(AUDIT_PAGE_SIZE, number_of_page)
        page = services().operations.list_page(wanted, window)
    page_links = {name: value for name, value in given.items() if value and not errors.get(name)}
    return render_template(
        "console/operations/audit.html",
        given=given,
        errors=errors,
        page=page,
        kinds=KINDS,
        page_links=page_links,
    ), 422 if errors else 200


def audit_filter(principal: Principal, given: dict[str, str]) -> tuple[OperationFilter, int]:
    """The filter the form asks for, checked as the API checks its query (and `aggregate`);
    ValidationError names every field that is wrong."""
    query: dict[str, Any] = {
        name: value for name, value in given.items() if value and name != "aggregate"
    }
    for name in ("from", "to"):
        if name in query:
            query[name] = with_offset(query[name])
    query["page"] = request.args.get("page", "1")
    errors: dict[str, list[str]] = {}
    loaded: dict[str, Any] = {}
    aggregate = None
    try:
        loaded = OperationsQuery().load(query)
    except ValidationError as error:
        errors.update(flatten(error.messages))
    try:
        aggregate = aggregate_key(principal, given["aggregate"])
    except ValidationError as error:
        errors.update(flatten(error.messages))
    if errors:
        raise ValidationError(errors)
    wanted = OperationFilter(
        principal.tenant_id,
        loaded["actor"],
        loaded["kind"],
        loaded["since"],
        loaded["until"],
        aggregate,
    )
    return wanted, loaded["page"] or 1


def with_offset(text: str) -> str:
    """A time the browser's `datetime-local` field sends (no offset) in the viewer's zone;
    a time with an offset, or text that is no time at all, as given (the schema says why)."""
    try:
        instant = datetime.fromisoformat(text)
    except ValueError:
        return text
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=viewer_zone())
    return instant.isoformat()


def aggregate_key(principal: Principal, given: str) -> str | None:
    """The aggregate a filter names: its id (a UUID), or an account by its public id."""
    if not given:
        return None
    try:
        return str(UUID(given))
    except ValueError:
        pass
    if PUBLIC_ID.fullmatch(given):
        return str(account_uuid(principal.tenant_id, given))
    why = _("Give the id of a schedule, run, instance, definition or account.")
    raise ValidationError({"aggregate": [why]})
