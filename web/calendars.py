"""Calendars (工作日历) over HTTP (docs/api.md#calendars)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from cronledger.application.idempotency import once
from cronledger.persistence.ledger import TimelineEntry
from domain.calendars import CalendarFields
from domain.directory import Principal
from domain.idempotency import CREATE_CALENDAR
from domain.permissions import APPROVAL_LIST, AUDIT_READ, DIRECTORY_MANAGE, SCHEDULE_LIST
from projections.calendars import CALENDAR_LISTING, CALENDAR_ORDER, CalendarRow
from web.api import Answered, MergePatch, endpoint, services
from web.command_keys import Replays
from web.idempotency import keyed_request, replay_headers
from web.paging import listed, window
from web.schemas.audit import TimelineOut
from web.schemas.base import defaults_of, page_of
from web.schemas.calendars import (
    CalendarCreate,
    CalendarFieldsIn,
    CalendarImport,
    CalendarOut,
    CalendarPatch,
    CalendarQuery,
    CalendarUpdate,
    DaysOut,
    DaysQuery,
    DeadlinePreviewIn,
    DeadlinePreviewOut,
)

bp = Blueprint("calendars", __name__, url_prefix="/api/calendars")
TAG = "calendars"
READ = APPROVAL_LIST  # or SCHEDULE_LIST: whoever may list schedules or approvals reads them


def _calendar(principal: Principal, calendar_id: str) -> CalendarRow:
    """The calendar as a write reads it: from its log."""
    return services().calendars.current(principal.tenant_id, calendar_id)


def calendar_fields(body: dict[str, Any]) -> CalendarFields:
    """A body as the service takes it."""
    return CalendarFields(
        name=body["name"],
        region=body["region"],
        timezone=body["timezone"],
        weekend=list(body["weekend"]),
        holidays=[{"date": d["date"], "name": d["name"]} for d in body["holidays"]],
        workdays=[{"date": d["date"], "name": d["name"]} for d in body["workdays"]],
        working_hours=[{"start": p["start"], "end": p["end"]} for p in body["working_hours"]],
        years=list(body["years"]),
    )


# What a calendar's fields stand in for when their own are not there to check the others by.
STAND_INS: dict[str, Any] = {**defaults_of(CalendarFieldsIn), "name": "-", "timezone": "UTC"}


def _meaning(fields: dict[str, Any], principal: Principal, calendar_id: str | None = None) -> None:
    """The rules a calendar's fields break besides their shapes, at once."""
    key = fields.get("key", "") if calendar_id is None else _calendar(principal, calendar_id).key
    given = calendar_fields({**STAND_INS, **fields})
    services().calendars.check(principal.tenant_id, key, given, new=calendar_id is None)


@bp.post("")
@endpoint(
    "Create a calendar (revision 1)",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=CalendarCreate,
    idempotent=True,
    versioned=True,
    response=CalendarOut,
    status=201,
    location="/api/calendars/{id}",
    meaning=_meaning,
)
def create_calendar(principal: Principal, body: dict[str, Any]) -> Answered:
    keyed = keyed_request(principal, CREATE_CALENDAR)
    created = once(
        lambda: services().calendars.create(principal, body["key"], calendar_fields(body), keyed),
        lambda calendar_id: _calendar(principal, calendar_id),
    )
    return Answered(created.value, 201, replay_headers(created.replayed))


@bp.get("")
@endpoint(
    "List the tenant's calendars",
    tag=TAG,
    permission=READ,
    also=SCHEDULE_LIST,
    query=CalendarQuery,
    response=page_of(CalendarOut),
)
def list_calendars(principal: Principal, query: dict[str, Any]) -> Answered:
    page = services().calendars.calendars(principal.tenant_id, window(query, CALENDAR_LISTING))
    return listed(page, CALENDAR_ORDER, CalendarOut)


@bp.get("/<calendar_id>")
@endpoint(
    "Read a calendar at its current revision",
    tag=TAG,
    permission=READ,
    also=SCHEDULE_LIST,
    versioned=True,
    response=CalendarOut,
)
def get_calendar(principal: Principal, calendar_id: str) -> CalendarRow:
    return services().calendars.calendar(principal.tenant_id, calendar_id)


@bp.get("/<calendar_id>/revisions/<int:revision>")
@endpoint(
    "Read one revision of a calendar, as it was made",
    tag=TAG,
    permission=READ,
    also=SCHEDULE_LIST,
    response=CalendarOut,
)
def get_calendar_revision(principal: Principal, calendar_id: str, revision: int) -> CalendarRow:
    return services().calendars.revision(principal.tenant_id, calendar_id, revision)


@bp.get("/<calendar_id>/timeline")
@endpoint("Every event of the calendar", tag=TAG, permission=AUDIT_READ, response=TimelineOut)
def calendar_timeline(principal: Principal, calendar_id: str) -> dict[str, list[TimelineEntry]]:
    return {"items": services().calendars.timeline(principal.tenant_id, calendar_id)}


@bp.put("/<calendar_id>")
@endpoint(
    "Replace a calendar's fields: its next revision (its key stays)",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=CalendarUpdate,
    versioned=_calendar,
    response=CalendarOut,
    meaning=_meaning,
)
def update_calendar(principal: Principal, calendar_id: str, body: dict[str, Any]) -> CalendarRow:
    return _replace(principal, calendar_id, body)


def _replace(principal: Principal, calendar_id: str, body: dict[str, Any]) -> CalendarRow:
    return services().calendars.replace(
        principal, calendar_id, calendar_fields(body), body["version"], body.get("reason")
    )


@bp.patch("/<calendar_id>")
@endpoint(
    "Change some of a calendar's fields (JSON Merge Patch), saved as a PUT",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=MergePatch(
        CalendarOut, CalendarUpdate, CalendarPatch, defaults_of(CalendarFieldsIn), _calendar
    ),
    versioned=_calendar,
    response=CalendarOut,
    meaning=_meaning,
)
def patch_calendar(principal: Principal, calendar_id: str, body: dict[str, Any]) -> CalendarRow:
    return _replace(principal, calendar_id, body)


@bp.post("/<calendar_id>/import")
@endpoint(
    "Fill years from the holiday libraries for a region, as the next revision",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=CalendarImport,
    versioned=_calendar,
    response=CalendarOut,
    idempotent=Replays(_calendar),
)
def import_calendar(principal: Principal, calendar_id: str, body: dict[str, Any]) -> CalendarRow:
    return services().calendars.import_years(
        principal,
        calendar_id,
        body["region"],
        body["years"],
        body.get("version"),
        body.get("reason"),
    )


@bp.get("/<calendar_id>/days")
@endpoint(
    "Each date of a range: worked or not, and why",
    tag=TAG,
    permission=READ,
    also=SCHEDULE_LIST,
    query=DaysQuery,
    response=DaysOut,
)
def calendar_days(principal: Principal, calendar_id: str, query: dict[str, Any]) -> dict[str, Any]:
    calendars = services().calendars
    days = calendars.days(principal.tenant_id, calendar_id, query["from_"], query["to"])
    calendar = calendars.aggregate(principal.tenant_id, calendar_id)
    return {
        "calendar": calendar.key,
        "revision": calendar.revision,
        "items": [day.as_dict() for day in days],
    }


@bp.post("/<calendar_id>/deadline-preview")
@endpoint(
    "The deadline a rule would set on this calendar for a submission at any instant",
    tag=TAG,
    permission=READ,
    also=SCHEDULE_LIST,
    body=DeadlinePreviewIn,
    response=DeadlinePreviewOut,
    keyless=True,
)
def deadline_preview(principal: Principal, calendar_id: str, body: dict[str, Any]) -> Any:
    return services().calendars.preview(
        principal.tenant_id, calendar_id, body["submitted_at"], body["rule"]
    )
