"""The console's operations pages: the dashboard (backlogs, dead letters, overdue approvals,
projection lag, the last day's charts) and the operations audit (docs/console/operations.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from flask import Blueprint, abort, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext, ngettext
from marshmallow import ValidationError
from werkzeug.wrappers import Response

from cronledger.application.operations import Hour
from domain.approvals import WAITING_REVIEW
from domain.directory import PUBLIC_ID, Principal, account_uuid
from domain.exports import FORMATS, TooManyRows
from domain.permissions import AUDIT_READ, SCHEDULE_LIST
from domain.runs import PENDING, RETRY_WAIT
from projections.operations import (
    APPROVAL,
    DEFINITION,
    KINDS,
    OPERATION_LISTING,
    RUN,
    SCHEDULE,
    TENANT,
    OperationFilter,
)
from web.api import flatten, services
from web.console.access import signed_in
from web.console.charts import Chart, bar_chart, number
from web.console.clock import in_viewer_zone, now, typed_instant, viewer_zone, zone_name
from web.console.lists import account_names, list_view, lists_ready, schedule_names
from web.exports import asked, exported
from web.schemas.audit import OperationsQuery

bp = Blueprint("operations", __name__, url_prefix="/operations")
AUDIT_PAGE_SIZE = 50
# The audit's filters, as the API names them (`aggregate` is the console's own).
AUDIT_FILTERS = ("actor", "kind", "from", "to", "aggregate")
# What each kind of operation is called (the kind itself is shown beside it).
OPERATION_LABELS = {
    "account.registered": lazy_gettext("Account registered"),
    "account.renamed": lazy_gettext("Account renamed"),
    "account.roles_changed": lazy_gettext("Account's roles changed"),
    "account.deactivated": lazy_gettext("Account deactivated"),
    "account.activated": lazy_gettext("Account activated"),
    "account.token_issued": lazy_gettext("API token issued"),
    "account.token_revoked": lazy_gettext("API token revoked"),
    "definition.registered": lazy_gettext("Definition registered"),
    "definition.updated": lazy_gettext("Definition updated"),
    "definition.published": lazy_gettext("Definition published"),
    "definition.unpublished": lazy_gettext("Definition unpublished"),
    "schedule.created": lazy_gettext("Schedule created"),
    "schedule.updated": lazy_gettext("Schedule updated"),
    "schedule.enabled": lazy_gettext("Schedule enabled"),
    "schedule.disabled": lazy_gettext("Schedule disabled"),
    "schedule.auto_paused": lazy_gettext("Schedule auto-paused"),
    "schedule.deleted": lazy_gettext("Schedule deleted"),
    "run.manual": lazy_gettext("Run started by hand"),
    "run.retried": lazy_gettext("Run retried"),
    "run.cancelled": lazy_gettext("Run cancelled"),
    "approval.deadline_extended": lazy_gettext("Review deadline extended"),
    "approval.revised": lazy_gettext("Material revised"),
    "approval.resubmitted": lazy_gettext("Application resubmitted"),
    "approval.cancellation_requested": lazy_gettext("Cancellation requested"),
    "tenant.schedules_paused": lazy_gettext("Every schedule paused"),
    "tenant.schedules_resumed": lazy_gettext("Every schedule resumed"),
    "tenant.exported": lazy_gettext("List exported"),
}
AGGREGATE_LABELS = {
    SCHEDULE: lazy_gettext("schedule"),
    RUN: lazy_gettext("run"),
    APPROVAL: lazy_gettext("approval instance"),
    "account": lazy_gettext("account"),
    DEFINITION: lazy_gettext("definition"),
    TENANT: lazy_gettext("tenant"),
}


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
        outcome_series=OUTCOME_SERIES,
        lists=figure_lists(),
        duration=duration,
        number=number,
        zone=zone_name(viewer_zone()),
    )


def figure_lists() -> dict[str, str]:
    """Each figure's list, filtered to what it counts (the page links those the viewer may
    open); overdue approvals are those still waiting whose deadline is before now."""
    deadline = in_viewer_zone(now()).strftime("%Y-%m-%dT%H:%M:%S")
    return {
        "due": url_for("console.schedules.index", enabled="true"),
        "pending": url_for("console.runs.index", status=PENDING),
        "retry": url_for("console.runs.index", status=RETRY_WAIT),
        "dead-letters": url_for("console.runs.dead_letters"),
        "overdue": url_for("console.approvals.index", state=WAITING_REVIEW, deadline_to=deadline),
    }


def hour_label(start: datetime) -> str:
    """An hour's start in the viewer's zone: `14:00` (`05:30` where the zone says so)."""
    return in_viewer_zone(start).strftime("%H:%M")


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


@dataclass(frozen=True)
class Series:
    """One layer of the outcomes chart: its name, its total in words, its figure in an hour."""

    name: Callable[[], str]
    total: Callable[[int], str]
    figure: Callable[[Hour], int]


# The outcomes chart's layers, bottom to top (and its table's columns): a series is one line.
OUTCOME_SERIES = (
    Series(
        lambda: _("Succeeded"), lambda n: _("%(n)s succeeded", n=n), lambda h: h.outcomes.succeeded
    ),
    Series(lambda: _("Failed"), lambda n: _("%(n)s failed", n=n), lambda h: h.outcomes.failed),
    Series(
        lambda: _("Dead-lettered"),
        lambda n: _("%(n)s dead-lettered", n=n),
        lambda h: h.outcomes.dead_lettered,
    ),
    Series(lambda: _("Skipped"), lambda n: _("%(n)s skipped", n=n), lambda h: h.skipped),
)


def outcome_chart(labels: tuple[str, ...], hours: Sequence[Hour]) -> Chart:
    totals = [series.total(sum(series.figure(hour) for hour in hours)) for series in OUTCOME_SERIES]
    return Chart(
        key="launch-outcomes",
        title=_("Launch outcomes per hour, last 24 hours"),
        summary=_("In the last 24 hours: %(totals)s.", totals=_(", ").join(totals)),
        series=tuple(series.name() for series in OUTCOME_SERIES),
        labels=labels,
        values=tuple(
            tuple(float(series.figure(hour)) for series in OUTCOME_SERIES) for hour in hours
        ),
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
    return _audit_page(principal)


@bp.get("/audit/export")
@signed_in(AUDIT_READ)
def audit_export(principal: Principal) -> Response | tuple[str, int]:
    """The operations the audit's filters and search match, as a file (the API's export); the
    audit again, saying why, when the filters are wrong or match too many."""
    file_format = request.args.get("format", "")
    if file_format not in FORMATS:
        abort(404)
    lists_ready()
    given = {name: request.args.get(name, "").strip() for name in AUDIT_FILTERS}
    try:
        wanted = audit_filter(principal, given)
    except ValidationError:
        return _audit_page(principal)
    search = request.args.get("q", "").strip()
    query = {"format": file_format, "q": search}
    try:
        found = services().exports.operations(
            principal, wanted, asked(query, {**given, "q": search})
        )
    except TooManyRows as refused:
        return _audit_page(principal, export_problem=refused.message)[0], 422
    return exported(found)


def _audit_page(principal: Principal, **more: Any) -> tuple[str, int]:
    """The audit as the address's filters ask for it; `more`: more for the page."""
    given = {name: request.args.get(name, "").strip() for name in AUDIT_FILTERS}
    shown = {name: value for name, value in request.args.items() if name != "format"}
    view = list_view(OPERATION_LISTING, "console.operations.audit", AUDIT_PAGE_SIZE, shown)
    errors: dict[str, list[str]] = {}
    page = None
    try:
        wanted = audit_filter(principal, given)
    except ValidationError as error:
        errors = flatten(error.messages)
    else:
        page = services().operations.list_page(wanted, view.window)
        view = view.found(page)
    items = page.items if page else []
    return render_template(
        "console/operations/audit.html",
        given=given,
        errors=errors,
        page=page,
        view=view,
        kinds=KINDS,
        actors=account_names(principal, {operation.actor for operation in items}),
        schedules=schedule_names(principal, {o.schedule_id for o in items if o.schedule_id}),
        operation_labels=OPERATION_LABELS,
        aggregate_labels=AGGREGATE_LABELS,
        **more,
    ), 422 if errors else 200


def audit_filter(principal: Principal, given: dict[str, str]) -> OperationFilter:
    """The filter the form asks for, checked as the API checks its query (and `aggregate`);
    ValidationError names every field that is wrong."""
    query: dict[str, Any] = {
        name: value for name, value in given.items() if value and name != "aggregate"
    }
    for name in ("from", "to"):
        if name in query:
            query[name] = with_offset(query[name])
    for name in ("q", "sort", "page", "page_size"):
        if request.args.get(name, "").strip():
            query[name] = request.args[name].strip()
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
    return OperationFilter(
        principal.tenant_id,
        loaded["actor"],
        loaded["kind"],
        loaded["since"],
        loaded["until"],
        aggregate,
    )


def with_offset(text: str) -> str:
    """A time the browser's `datetime-local` field sends (no offset) in the viewer's zone;
    a time with an offset, or text that is no time at all, as given (the schema says why)."""
    try:
        return typed_instant(text).isoformat()
    except ValueError:
        return text


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
