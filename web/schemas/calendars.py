"""Shapes of calendars (工作日历) and deadline rules (docs/api.md#calendars)."""

from __future__ import annotations

from typing import Any

from marshmallow import fields

from domain.calendars import (
    CALENDAR_KEY,
    CALENDAR_KEY_RULE,
    FIRST_YEAR,
    LAST_YEAR,
    MAX_CALENDAR_NAME,
    MAX_DATES,
    MAX_PERIODS,
)
from projections.calendars import CALENDAR_LISTING
from web.schemas import validate
from web.schemas.base import (
    OMITTED_WHEN,
    Described,
    OffsetDateTime,
    OutSchema,
    PageQuery,
    StrictSchema,
    UtcDateTime,
    VersionBody,
    merge_patch_of,
    reason_field,
    replacing,
    search_field,
    server_uuid,
    sort_choices,
    sort_field,
    strict_int,
    with_reason,
)

DATE = r"^\d{4}-\d{2}-\d{2}$"
HH_MM = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
MAX_TEXT = 200


def key_field(**kwargs: Any) -> fields.String:
    return fields.String(
        validate=validate.Regexp(f"^{CALENDAR_KEY.pattern}$", error=CALENDAR_KEY_RULE), **kwargs
    )


class DatedDay(StrictSchema):
    date = fields.String(
        required=True, validate=validate.Length(max=10), metadata={"description": "YYYY-MM-DD"}
    )
    name = fields.String(load_default="", validate=validate.Length(max=MAX_TEXT))


class WorkingPeriod(StrictSchema):
    start = fields.String(
        required=True, validate=validate.Length(max=5), metadata={"description": "HH:MM, local"}
    )
    end = fields.String(
        required=True,
        validate=validate.Length(max=5),
        metadata={"description": "HH:MM, after the start"},
    )


class CalendarFieldsIn(StrictSchema):
    name = fields.String(required=True, validate=validate.Length(1, MAX_CALENDAR_NAME))
    region = fields.String(
        allow_none=True,
        load_default=None,
        validate=validate.Length(1, 10),
        metadata={"description": "e.g. CN; set by an import"},
    )
    timezone = fields.String(
        required=True, validate=validate.Length(1, 64), metadata={"description": "IANA zone name"}
    )
    weekend = fields.List(
        strict_int(1, 7),
        load_default=lambda: [6, 7],
        validate=validate.Length(max=7),
        metadata={"description": "ISO weekdays off (1 Monday ... 7 Sunday)"},
    )
    holidays = fields.List(
        fields.Nested(DatedDay), load_default=list, validate=validate.Length(max=MAX_DATES)
    )
    workdays = fields.List(
        fields.Nested(DatedDay),
        load_default=list,
        validate=validate.Length(max=MAX_DATES),
        metadata={"description": "make-up working days (调休) that fall on the weekend"},
    )
    working_hours = fields.List(
        fields.Nested(WorkingPeriod),
        load_default=list,
        validate=validate.Length(max=MAX_PERIODS),
        metadata={"description": "empty: a working day is worked whole"},
    )
    years = fields.List(
        strict_int(FIRST_YEAR, LAST_YEAR),
        load_default=list,
        validate=validate.Length(max=LAST_YEAR - FIRST_YEAR + 1),
        metadata={
            "description": "years whose holidays the calendar holds in full (a listed holiday "
            "or make-up day covers its year too); elsewhere only the weekend is known"
        },
    )


class CalendarCreate(CalendarFieldsIn):
    key = key_field(required=True, metadata={"description": "unique in the tenant; never changes"})


CalendarUpdate = with_reason(replacing(CalendarFieldsIn, "CalendarUpdate"))
CalendarPatch = merge_patch_of(CalendarUpdate, "CalendarPatch", CalendarFieldsIn)


class CalendarImport(VersionBody):
    region = fields.String(
        required=True, validate=validate.Length(1, 10), metadata={"description": "e.g. CN"}
    )
    years = fields.List(
        strict_int(FIRST_YEAR, LAST_YEAR), required=True, validate=validate.Length(1, 10)
    )
    reason = reason_field()


CALENDAR_SORT = sort_choices("CalendarSort", CALENDAR_LISTING)


class CalendarQuery(PageQuery):
    q = search_field("key or name")
    sort = sort_field(CALENDAR_SORT)


class DatedDayOut(OutSchema):
    date = fields.String()
    name = fields.String()


class WorkingPeriodOut(OutSchema):
    start = fields.String()
    end = fields.String()


def libraries_field(**metadata: str) -> fields.Dict:
    """Each holiday library a revision came from, and its version."""
    return fields.Dict(keys=fields.String(), values=fields.String(), metadata=metadata)


class CalendarSourceOut(OutSchema):
    kind = fields.String(metadata={"description": "`manual` or `import`"})
    region = fields.String(metadata={OMITTED_WHEN: "kind is manual"})
    years = fields.List(fields.Integer(), metadata={OMITTED_WHEN: "kind is manual"})
    libraries = libraries_field(
        description="each library the import read, and its version",
        **{OMITTED_WHEN: "kind is manual"},
    )


class CalendarOut(OutSchema):
    id = server_uuid()
    key = fields.String()
    name = fields.String()
    region = fields.String(allow_none=True)
    timezone = fields.String()
    weekend = fields.List(fields.Integer())
    holidays = fields.List(fields.Nested(DatedDayOut))
    workdays = fields.List(fields.Nested(DatedDayOut))
    working_hours = fields.List(fields.Nested(WorkingPeriodOut))
    years = fields.List(fields.Integer())
    revision = fields.Integer(metadata={"description": "every change makes the next one"})
    source = fields.Nested(
        CalendarSourceOut,
        metadata={"description": "how the revision was made: by hand, or by an import"},
    )
    created_at = UtcDateTime()
    updated_at = UtcDateTime(metadata={"description": "when this revision was made"})
    version = fields.Integer()


class DaysQuery(StrictSchema):
    from_ = fields.Date(
        data_key="from",
        load_default=None,
        metadata={"description": "YYYY-MM-DD; by default the first day of this month"},
    )
    to = fields.Date(
        load_default=None,
        metadata={"description": "YYYY-MM-DD, at most 366 days on; by default this month's end"},
    )


class DayOut(OutSchema):
    date = fields.String()
    working = fields.Boolean()
    reason = fields.String(metadata={"description": "WEEKDAY, WEEKEND, HOLIDAY, MAKEUP_WORKDAY"})
    name = fields.String(allow_none=True, metadata={"description": "the holiday's name"})
    assumed = fields.Boolean(
        metadata={"description": "the calendar does not cover the year: weekdays only"}
    )


class DaysOut(OutSchema):
    calendar = fields.String()
    revision = fields.Integer()
    items = fields.List(fields.Nested(DayOut))


def deadline_rule_field(**kwargs: Any) -> Described:
    """A deadline rule in a request: the domain checks it (domain/calendars.py)."""
    return Described("DeadlineRuleIn", **kwargs)


class DeadlinePreviewIn(StrictSchema):
    submitted_at = OffsetDateTime(required=True)
    rule = deadline_rule_field(
        required=True, metadata={"description": "a working_days or working_hours rule"}
    )


class DeadlinePreviewOut(OutSchema):
    deadline_at = UtcDateTime()
    calendar = fields.String()
    calendar_revision = fields.Integer()
    business_day = fields.String(allow_none=True)
    counted_days = fields.List(fields.String())
    skipped_days = fields.List(fields.Nested(DayOut))
    assumed = fields.Boolean()
