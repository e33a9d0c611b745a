"""The console's working calendars (工作日历): the list, a calendar's month by month with its
holidays and make-up workdays (调休上班), its revisions, forms to create, edit and import a
region's years from the holiday libraries, and a deadline preview (docs/console/calendars.md).
Whoever may list schedules or approvals reads them, as over the API; accounts holding
`directory:manage` change them. Every command is the API's (`/api/calendars`): the same
schemas, the same service, the same refusals."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext
from marshmallow import ValidationError
from werkzeug.wrappers import Response

from domain.directory import Principal
from domain.errors import ValidationFailed
from domain.messages import Message
from domain.permissions import APPROVAL_LIST, DIRECTORY_MANAGE, SCHEDULE_LIST
from domain.working_time import HOLIDAY, MAKEUP_WORKDAY, WEEKDAY, WEEKEND, Day
from projections.calendars import CALENDAR_LISTING, CalendarRow
from web.api import services
from web.calendars import calendar_fields
from web.console import forms
from web.console.access import signed_in
from web.console.clock import now
from web.console.lists import list_view
from web.schemas.calendars import CalendarCreate, CalendarImport, CalendarUpdate

bp = Blueprint("calendars", __name__, url_prefix="/calendars")
MONTH = re.compile(r"^(\d{4})-(\d{2})$")
SEPARATORS = re.compile(r"[,，\s]+")
WEEKDAYS = (
    (1, lazy_gettext("Mon")),
    (2, lazy_gettext("Tue")),
    (3, lazy_gettext("Wed")),
    (4, lazy_gettext("Thu")),
    (5, lazy_gettext("Fri")),
    (6, lazy_gettext("Sat")),
    (7, lazy_gettext("Sun")),
)
REASON_WORDS = {
    WEEKDAY: lazy_gettext("Working day"),
    WEEKEND: lazy_gettext("Weekend"),
    HOLIDAY: lazy_gettext("Holiday"),
    MAKEUP_WORKDAY: lazy_gettext("Make-up workday"),
}
NEW_CALENDAR = {
    "timezone": "Asia/Shanghai",
    "region": "CN",
    "weekend": ["6", "7"],
    "working_hours": "09:00-18:00",
}
PREVIEW_DEFAULTS = {"kind": "working_days", "days": "3", "cutoff": "18:00", "hours": "8"}


# -- reading ------------------------------------------------------------------------------


@bp.get("/")
@signed_in(APPROVAL_LIST, also=SCHEDULE_LIST)
def index(principal: Principal) -> str:
    view = list_view(CALENDAR_LISTING, size=forms.PAGE_SIZE)
    page = services().calendars.calendars(principal.tenant_id, view.window)
    return render_template(
        "console/calendars/index.html",
        page=page,
        view=view.found(page),
        default_calendar=_default_key(principal),
    )


@bp.get("/<calendar_id>")
@signed_in(APPROVAL_LIST, also=SCHEDULE_LIST)
def detail(principal: Principal, calendar_id: str) -> str:
    calendar = _calendar(principal, calendar_id)
    form = {"region": calendar.region or "CN", "years": str(_month(calendar).year)}
    return _detail_page(principal, calendar, form, {})[0]


@bp.get("/<calendar_id>/revisions/<int:revision>")
@signed_in(APPROVAL_LIST, also=SCHEDULE_LIST)
def revision(principal: Principal, calendar_id: str, revision: int) -> str:
    calendar = _calendar(principal, calendar_id)
    shown = forms.or_404(
        lambda: services().calendars.revision(principal.tenant_id, calendar.id, revision)
    )
    return render_template(
        "console/calendars/revision.html", calendar=calendar, shown=shown, weekdays=WEEKDAYS
    )


@bp.get("/<calendar_id>/deadline-preview")
@signed_in(APPROVAL_LIST, also=SCHEDULE_LIST)
def preview(principal: Principal, calendar_id: str) -> tuple[str, int]:
    """The deadline a rule would set for a submission at a time typed in the calendar's zone
    (or with an offset), each day counted and passed with why."""
    calendar = _calendar(principal, calendar_id)
    form = {
        name: request.args.get(name, default).strip() for name, default in PREVIEW_DEFAULTS.items()
    }
    form["submitted_at"] = request.args.get("submitted_at", "").strip()
    answer, errors = None, {}
    if form["submitted_at"]:
        try:
            answer = services().calendars.preview(
                principal.tenant_id, calendar.id, _submitted(form, calendar), _rule(form, calendar)
            )
        except ValidationFailed as failed:
            errors = {
                name.removeprefix("rule."): messages for name, messages in failed.errors.items()
            }
    html = render_template(
        "console/calendars/preview.html",
        calendar=calendar,
        form=form,
        answer=answer,
        errors=forms.by_field(errors),
        reason_words=REASON_WORDS,
        weekdays=WEEKDAYS,
        as_date=date.fromisoformat,
    )
    return html, 422 if errors else 200


# -- changing -----------------------------------------------------------------------------


@bp.get("/new")
@signed_in(DIRECTORY_MANAGE)
def new(principal: Principal) -> str:
    return _form_page(None, dict(NEW_CALENDAR), {})[0]


@bp.post("/")
@signed_in(DIRECTORY_MANAGE)
def create(principal: Principal) -> Response | tuple[str, int]:
    form = _form()
    try:
        body = CalendarCreate().load(_body(form))
        created = services().calendars.create(principal, body["key"], calendar_fields(body))
    except (ValidationError, ValidationFailed) as error:
        return _form_page(None, form, _by_line(forms.field_errors(error)), 422)
    flash(_("Calendar %(key)s created (revision 1).", key=created.key), "good")
    return redirect(url_for(".detail", calendar_id=created.id))


@bp.get("/<calendar_id>/edit")
@signed_in(DIRECTORY_MANAGE)
def edit(principal: Principal, calendar_id: str) -> str:
    calendar = _calendar(principal, calendar_id)
    return _form_page(calendar, _as_form(calendar), {})[0]


@bp.post("/<calendar_id>")
@signed_in(DIRECTORY_MANAGE)
def update(principal: Principal, calendar_id: str) -> Response | tuple[str, int]:
    calendar = _calendar(principal, calendar_id)
    form = {**_form(), "key": ""}  # the key never changes
    try:
        body = CalendarUpdate().load({**_body(form), "version": forms.form_version()})
        saved = services().calendars.replace(
            principal, calendar.id, calendar_fields(body), body["version"], body.get("reason")
        )
    except (ValidationError, ValidationFailed) as error:
        return _form_page(calendar, form, _by_line(forms.field_errors(error)), 422)
    flash(
        _(
            "Calendar %(key)s saved as revision %(revision)s.",
            key=saved.key,
            revision=saved.revision,
        ),
        "good",
    )
    return redirect(url_for(".detail", calendar_id=saved.id))


@bp.post("/<calendar_id>/import")
@signed_in(DIRECTORY_MANAGE)
def import_years(principal: Principal, calendar_id: str) -> Response | tuple[str, int]:
    calendar = _calendar(principal, calendar_id)
    form = {name: request.form.get(name, "").strip() for name in ("region", "years", "reason")}
    given = {
        "region": form["region"],
        "years": _numbers(form["years"]),
        "version": forms.form_version(),
        **({"reason": form["reason"]} if form["reason"] else {}),
    }
    try:
        body = CalendarImport().load(given)
        saved = services().calendars.import_years(
            principal,
            calendar.id,
            body["region"],
            body["years"],
            body["version"],
            body.get("reason"),
        )
    except (ValidationError, ValidationFailed) as error:
        errors = forms.by_field(forms.field_errors(error))
        return _detail_page(principal, calendar, form, errors, 422)
    libraries = ", ".join(
        f"{name} {version}" for name, version in saved.source["libraries"].items()
    )
    flash(
        _(
            "Imported %(region)s %(years)s from %(libraries)s: revision %(revision)s.",
            region=body["region"],
            years=", ".join(str(year) for year in saved.source["years"]),
            libraries=libraries,
            revision=saved.revision,
        ),
        "good",
    )
    first = min(saved.source["years"])
    return redirect(url_for(".detail", calendar_id=saved.id, month=f"{first}-01"))


@bp.post("/<calendar_id>/default")
@signed_in(DIRECTORY_MANAGE)
def choose_default(principal: Principal, calendar_id: str) -> Response:
    """Make the calendar the tenant's default (`make=1`), or the tenant's default none."""
    calendar = _calendar(principal, calendar_id)
    making = request.form.get("make") == "1"
    services().calendars.choose_default(principal, calendar.key if making else None)
    if making:
        flash(_("%(name)s is now the tenant's default calendar.", name=calendar.name), "good")
    else:
        flash(_("The tenant has no default calendar now."), "good")
    return redirect(url_for(".detail", calendar_id=calendar.id))


def _detail_page(
    principal: Principal,
    calendar: CalendarRow,
    import_form: dict[str, str],
    errors: forms.Errors,
    status: int = 200,
) -> tuple[str, int]:
    """A calendar's page: its current revision, a month of its days, its revisions, and for
    those who may change it the import form (showing what was refused)."""
    month = _month(calendar)
    last = _next(month) - timedelta(days=1)
    days = services().calendars.days(principal.tenant_id, calendar.id, month, last)
    aggregate = services().calendars.aggregate(principal.tenant_id, calendar.id)
    html = render_template(
        "console/calendars/detail.html",
        calendar=calendar,
        shown=calendar,
        month=month,
        previous=_previous(month),
        following=_next(month),
        weeks=_weeks(days),
        assumed=any(day.assumed for day in days),
        revisions=[aggregate.revision_of(n) for n in range(aggregate.revision, 0, -1)],
        import_form=import_form,
        errors=errors,
        reason_words=REASON_WORDS,
        weekdays=WEEKDAYS,
        is_default=_default_key(principal) == calendar.key,
    )
    return html, status


# -- helpers ------------------------------------------------------------------------------


def _default_key(principal: Principal) -> str | None:
    return services().pauses.tenant(principal.tenant_id).default_calendar


def _calendar(principal: Principal, calendar_id: str) -> CalendarRow:
    return forms.or_404(lambda: services().calendars.calendar(principal.tenant_id, calendar_id))


def _month(calendar: CalendarRow) -> date:
    """The first day of the month the address asks for (`?month=2026-10`), else this month
    in the calendar's zone."""
    found = MONTH.match(request.args.get("month", "").strip())
    if found and 1 <= int(found.group(2)) <= 12 and 1 <= int(found.group(1)) <= 9998:
        return date(int(found.group(1)), int(found.group(2)), 1)
    return now().astimezone(ZoneInfo(calendar.timezone)).date().replace(day=1)


def _next(month: date) -> date:
    return (month.replace(day=28) + timedelta(days=4)).replace(day=1)


def _previous(month: date) -> date:
    return (month - timedelta(days=1)).replace(day=1)


def _weeks(days: list[Day]) -> list[list[Day | None]]:
    """A month's days as calendar rows, Monday first; None before the first and after the last."""
    cells: list[Day | None] = [None] * (days[0].date.isoweekday() - 1) + list(days)
    cells += [None] * (-len(cells) % 7)
    return [cells[start : start + 7] for start in range(0, len(cells), 7)]


def _numbers(text: str) -> list[int | str]:
    """Numbers typed as "2026, 2027" (what is no number is passed on for the schema to name)."""
    return [int(part) if part.isdigit() else part for part in SEPARATORS.split(text) if part]


def _dated(text: str) -> list[dict[str, str]]:
    """Days typed one a line, as "2026-10-01 国庆节" (the name optional)."""
    days = []
    for line in text.splitlines():
        when, _space, name = line.strip().partition(" ")
        if when:
            days.append({"date": when, "name": name.strip()})
    return days


def _periods(text: str) -> list[dict[str, str]]:
    """Working hours typed as "09:00-12:00, 13:00-18:00"."""
    periods = []
    for part in re.split(r"[,，;\s]+", text):
        if part:
            start, _dash, end = part.partition("-")
            periods.append({"start": start, "end": end})
    return periods


def _form() -> dict[str, Any]:
    form: dict[str, Any] = {
        name: request.form.get(name, "").strip()
        for name in (
            "key",
            "name",
            "region",
            "timezone",
            "holidays",
            "workdays",
            "working_hours",
            "years",
            "reason",
        )
    }
    form["weekend"] = request.form.getlist("weekend")
    return form


def _body(form: dict[str, Any]) -> dict[str, Any]:
    """The form as the API's body."""
    body: dict[str, Any] = {
        "name": form["name"],
        "region": form["region"] or None,
        "timezone": form["timezone"],
        "weekend": _numbers(" ".join(form["weekend"])),
        "holidays": _dated(form["holidays"]),
        "workdays": _dated(form["workdays"]),
        "working_hours": _periods(form["working_hours"]),
        "years": _numbers(form["years"]),
    }
    for name in ("key", "reason"):
        if form.get(name):
            body[name] = form[name]
    return body


def _as_form(calendar: CalendarRow) -> dict[str, Any]:
    """A calendar's current revision as its form shows it."""

    def lines(days: list[dict[str, str]]) -> str:
        return "\n".join(f"{d['date']} {d['name']}".strip() for d in days)

    return {
        "name": calendar.name,
        "region": calendar.region or "",
        "timezone": calendar.timezone,
        "weekend": [str(day) for day in calendar.weekend],
        "holidays": lines(calendar.holidays),
        "workdays": lines(calendar.workdays),
        "working_hours": ", ".join(f"{p['start']}-{p['end']}" for p in calendar.working_hours),
        "years": ", ".join(str(year) for year in calendar.years),
    }


def _by_line(errors: forms.Errors) -> forms.Errors:
    """Messages about one day or period (`holidays.3.date`) under its field, naming its line."""
    together: forms.Errors = {}
    for name, messages in errors.items():
        parts = name.split(".")
        if len(parts) > 1 and parts[1].isdigit():
            together.setdefault(parts[0], []).extend(
                Message("Line {number}: {message}", number=int(parts[1]) + 1, message=m)
                for m in messages
            )
        else:
            together.setdefault(parts[0], []).extend(messages)
    return together


def _form_page(
    calendar: CalendarRow | None, form: dict[str, Any], errors: forms.Errors, status: int = 200
) -> tuple[str, int]:
    html = render_template(
        "console/calendars/form.html",
        calendar=calendar,
        form=form,
        errors=errors,
        weekdays=[(str(number), label) for number, label in WEEKDAYS],
    )
    return html, status


def _submitted(form: dict[str, str], calendar: CalendarRow) -> datetime:
    """The submission time typed: in the calendar's zone, or at the offset written."""
    try:
        typed = datetime.fromisoformat(form["submitted_at"].replace(" ", "T", 1))
    except ValueError:
        raise ValidationFailed.of(
            "submitted_at", Message("use a date and time, such as 2026-09-30 19:00")
        ) from None
    return typed if typed.tzinfo else typed.replace(tzinfo=ZoneInfo(calendar.timezone))


def _rule(form: dict[str, str], calendar: CalendarRow) -> dict[str, Any]:
    """The rule chosen, as the API's `rule` (numbers that are not are passed on to be named)."""
    if form["kind"] == "working_hours":
        return {"kind": "working_hours", "hours": _number(form["hours"]), "calendar": calendar.key}
    return {
        "kind": "working_days",
        "days": _number(form["days"]),
        "calendar": calendar.key,
        "cutoff": form["cutoff"],
    }


def _number(text: str) -> int | str:
    return int(text) if text.isdigit() else text
