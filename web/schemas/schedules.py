"""Shapes of schedules, their previews and the bulk move of overlap policies
(docs/api.md#schedules)."""

from __future__ import annotations

from typing import Any

from marshmallow import (
    Schema,
    fields,
)

from domain.overlap import DEFAULT_OVERLAP_POLICY, policy_named
from domain.schedules import (
    APPROVAL_TARGET,
    DEFAULT_AUTO_PAUSE,
    DEFAULT_GROUP,
    MAX_AUTO_PAUSE,
    MAX_GROUP,
)
from projections.schedules import SCHEDULE_LISTING
from web.schemas import validate
from web.schemas.base import (
    MAX_NAME,
    MAX_SEARCH,
    OMITTED_WHEN,
    Choice,
    Described,
    LocalDateTime,
    OutSchema,
    PageQuery,
    StrictSchema,
    UtcDateTime,
    form_data_field,
    id_filter,
    instant_text,
    merge_patch_of,
    name_field,
    replacing,
    search_field,
    server_uuid,
    sort_choices,
    sort_field,
    strict_bool,
    strict_int,
)
from web.schemas.directory import PRESET_ID
from web.schemas.enums import (
    CALENDAR_RULE,
    FIRE_OUTCOME,
    MISFIRE_POLICY,
    OVERLAP_MOVE_OUTCOME,
    OVERLAP_POLICY,
    OVERLAP_POLICY_IN,
    RUN_STATUS,
    SKIP_REASON_CODE,
)
from web.schemas.exports import export_query

MAX_PREVIEW = 50  # fire times in one preview


class OverlapPolicyIn(Choice):
    """An overlap policy in a request: the deprecated `skip` loads as `skip_while_open`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(OVERLAP_POLICY_IN, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        return policy_named(super()._deserialize(value, attr, data, **kwargs))


MAX_MOVED = 200  # schedules one bulk move of overlap policies takes


def group_field(**kwargs: Any) -> fields.String:
    """A job group (任务组名): 1-64 characters."""
    return fields.String(
        validate=validate.Length(1, MAX_GROUP),
        metadata={"description": "its job group (任务组名), 1-64 characters; default `DEFAULT`"},
        **kwargs,
    )


APPROVAL_ONLY = "an approval target's (required there); a built-in job takes none: null or omitted"


class ScheduleFieldsIn(StrictSchema):
    name = name_field(required=True)
    definition_id = fields.String(
        validate=validate.Length(1, 64),
        allow_none=True,
        load_default=None,
        metadata={"description": f"the definition it launches: {APPROVAL_ONLY}"},
    )
    trigger = Described(
        "TriggerIn",
        required=True,
        metadata={
            "description": "cron or window-interval (docs/time.md); a PATCH merges its trigger "
            "into the current one (RFC 7396), so changing the kind there needs null for the "
            "other kind's fields"
        },
    )
    timezone = fields.String(
        validate=validate.Length(1, 64),
        allow_none=True,
        load_default=None,
        metadata={"description": "IANA name; omitted means CRONLEDGER_TIMEZONE"},
    )
    initiator_id = fields.String(
        validate=validate.Length(1, 64),
        allow_none=True,
        load_default=None,
        metadata={"description": f"on whose behalf it launches: {APPROVAL_ONLY}"},
    )
    title_template = fields.String(
        validate=validate.Length(max=MAX_NAME),
        load_default="",
        metadata={"description": "an approval's title; a built-in job's is empty"},
    )
    form_data = form_data_field(load_default=dict)
    enabled = strict_bool(load_default=False)
    misfire_policy = Choice(MISFIRE_POLICY, load_default="catch_up")
    overlap_policy = OverlapPolicyIn(
        load_default=DEFAULT_OVERLAP_POLICY,
        metadata={"description": "default `skip_while_launching` (docs/time.md)"},
    )
    calendar = fields.String(
        validate=validate.Length(1, 64),
        allow_none=True,
        load_default=None,
        metadata={
            "description": "a calendar's key: cycles on a day it does not work are skipped or "
            "moved by `calendar_rule` (docs/calendars.md#schedules-on-a-calendar)"
        },
    )
    calendar_rule = Choice(CALENDAR_RULE, allow_none=True, load_default=None)
    group = group_field(load_default=DEFAULT_GROUP)
    target = Described(
        "TargetIn",
        load_default=lambda: {"kind": APPROVAL_TARGET},
        metadata={
            "description": "what a cycle does: launch an approval instance (the default), or "
            "run a built-in job with its params and timeout (docs/jobs.md; saving one needs "
            "`directory:manage`); a PATCH merges it into the current one (RFC 7396)"
        },
    )
    auto_pause_after_failures = strict_int(
        1,
        MAX_AUTO_PAUSE,
        allow_none=True,
        load_default=DEFAULT_AUTO_PAUSE,
        metadata={
            "description": "after this many cycles in a row end without launching, the schedule "
            "is disabled by the system (`Schedule.AutoPaused`); null: never"
        },
    )


class ScheduleFromPresetIn(StrictSchema):
    definition_id = fields.String(required=True, validate=validate.Length(1, 64))
    preset_id = fields.String(required=True, validate=validate.Regexp(PRESET_ID))
    initiator_id = fields.String(required=True, validate=validate.Length(1, 64))
    name = name_field(load_default=None)


# Added after the PUT was published: a PUT leaving them out keeps them as they are.
LATER_FIELDS = ("calendar", "calendar_rule", "group", "target", "auto_pause_after_failures")
ScheduleUpdate = replacing(ScheduleFieldsIn, "ScheduleUpdate", LATER_FIELDS)

SchedulePatch = merge_patch_of(ScheduleUpdate, "SchedulePatch", ScheduleFieldsIn)


class OverlapMoveIn(StrictSchema):
    """Schedules to save with another overlap policy, each as an ordinary edit."""

    schedule_ids = fields.List(
        fields.String(validate=validate.Length(1, 64)),
        required=True,
        validate=validate.Length(1, MAX_MOVED),
        metadata={"description": f"1 to {MAX_MOVED} schedule ids; a repeated id counts once"},
    )
    overlap_policy = OverlapPolicyIn(
        load_default=DEFAULT_OVERLAP_POLICY,
        metadata={"description": "the policy to save them with; default `skip_while_launching`"},
    )


class OverlapMoveOut(OutSchema):
    """What the move did to one schedule."""

    schedule_id = fields.String()
    outcome = Choice(OVERLAP_MOVE_OUTCOME)
    version = fields.Integer(
        allow_none=True, metadata={"description": "the schedule's version after; null if not found"}
    )
    overlap_policy = Choice(OVERLAP_POLICY, allow_none=True)


class OverlapMovesOut(OutSchema):
    items = fields.List(
        fields.Nested(OverlapMoveOut), metadata={"description": "in the order asked"}
    )


class CalendarFindingOut(OutSchema):
    """What a schedule's calendar found of a cycle it skipped or moved
    (docs/calendars.md#schedules-on-a-calendar)."""

    calendar = fields.String(metadata={"description": "the calendar's key"})
    calendar_revision = fields.Integer(metadata={"description": "the revision it was placed on"})
    rule = Choice(CALENDAR_RULE)
    day = fields.String(metadata={"description": "the local date (YYYY-MM-DD) not worked"})
    day_reason = fields.String(
        metadata={"description": "`HOLIDAY` or `WEEKEND` (an open set: more may come)"}
    )
    holiday = fields.String(allow_none=True, metadata={"description": "the holiday's name"})
    assumed = fields.Boolean(
        metadata={"description": "the calendar does not cover the year: weekdays only"}
    )
    launched_run_id = server_uuid(
        allow_none=True,
        dump_default=None,
        metadata={
            "description": "`next_working_day`, a skipped cycle: the run launched instead, the "
            "latest planned of those landing on the same instant (null in a preview)"
        },
    )
    launched_planned_at = instant_text(
        allow_none=True, dump_default=None, metadata={"description": "that run's planned instant"}
    )


def calendar_finding(description: str) -> fields.Nested:
    return fields.Nested(
        CalendarFindingOut,
        allow_none=True,
        dump_default=None,
        metadata={"description": description},
    )


NOT_CALENDAR = "the code is not CALENDAR"


def calendar_only(description: str) -> dict[str, str]:
    """A skip reason's field that only a CALENDAR skip carries."""
    return {OMITTED_WHEN: NOT_CALENDAR, "description": f"CALENDAR only: {description}"}


class SkipReasonOut(OutSchema):
    code = Choice(SKIP_REASON_CODE)
    blocking_run_id = server_uuid(
        allow_none=True, metadata={"description": "OVERLAP: the unfinished run that blocked it"}
    )
    blocking_status = Choice(
        RUN_STATUS,
        allow_none=True,
        metadata={
            "description": "OVERLAP: that run's status then: `PENDING`, `RUNNING` or "
            "`RETRY_WAIT` (still being launched), or `SUCCEEDED` (its approval waited for "
            "review); null for a skip recorded before release 0.11.0"
        },
    )
    blocking_instance_id = server_uuid(
        allow_none=True,
        metadata={"description": "OVERLAP, `SUCCEEDED`: the approval that waited for review"},
    )
    count = fields.Integer(
        allow_none=True,
        metadata={"description": "MISSED: how many missed cycles it stands for; CALENDAR: 1"},
    )
    calendar = fields.String(metadata=calendar_only("the calendar's key"))
    calendar_revision = fields.Integer(
        metadata=calendar_only("the revision the cycle was registered on")
    )
    rule = Choice(CALENDAR_RULE, metadata=calendar_only("the schedule's rule"))
    day = fields.String(metadata=calendar_only("the local date (YYYY-MM-DD) not worked"))
    day_reason = fields.String(
        metadata=calendar_only("`HOLIDAY` or `WEEKEND` (an open set: more may come)")
    )
    holiday = fields.String(allow_none=True, metadata=calendar_only("the holiday's name"))
    assumed = fields.Boolean(
        metadata=calendar_only("the calendar does not cover the year (weekdays only)")
    )
    launched_run_id = server_uuid(
        allow_none=True,
        metadata=calendar_only(
            "`next_working_day`: the run launched on the instant this cycle moved to (the "
            "latest planned of those landing there); null otherwise"
        ),
    )
    launched_planned_at = instant_text(
        allow_none=True, metadata=calendar_only("that run's planned instant")
    )


class LastSkipOut(OutSchema):
    run_id = server_uuid()
    planned_at = UtcDateTime()
    skipped_at = UtcDateTime()
    skip_reason = fields.Nested(SkipReasonOut)


class LastRunOut(OutSchema):
    """The schedule's newest planned run."""

    run_id = server_uuid()
    planned_at = instant_text()
    status = Choice(RUN_STATUS)


class NextFireOut(OutSchema):
    at = UtcDateTime()
    local = LocalDateTime(metadata={"description": "in the schedule's time zone"})


class FailedCycleOut(OutSchema):
    """A cycle that ended without launching: its run, and the code of its last error."""

    run_id = server_uuid()
    error_code = fields.String(
        metadata={"description": "e.g. `INITIATOR_INACTIVE`, `DEFINITION_UNPUBLISHED`"}
    )


class AutoPausedOut(OutSchema):
    """How the service paused the schedule (docs/api.md#auto-pause)."""

    at = UtcDateTime()
    reason = fields.String(metadata={"description": "in English, naming the runs and codes"})
    runs = fields.List(
        fields.Nested(FailedCycleOut),
        metadata={"description": "the cycles that ended without launching, in a row, oldest first"},
    )


class ScheduleOut(OutSchema):
    id = server_uuid()
    name = fields.String()
    definition_id = server_uuid(
        allow_none=True, metadata={"description": "null for a built-in job's schedule"}
    )
    trigger = Described("TriggerOut")
    timezone = fields.String(metadata={"description": "IANA name"})
    initiator_id = fields.String(
        allow_none=True, metadata={"description": "null for a built-in job's schedule"}
    )
    title_template = fields.String()
    form_data = form_data_field()
    enabled = fields.Boolean()
    misfire_policy = Choice(MISFIRE_POLICY)
    overlap_policy = Choice(OVERLAP_POLICY)
    preset_id = fields.String(allow_none=True)
    calendar = fields.String(allow_none=True, metadata={"description": "a calendar's key"})
    calendar_rule = Choice(CALENDAR_RULE, allow_none=True)
    group = fields.String(metadata={"description": "its job group (任务组名)"})
    target = Described(
        "TargetOut",
        metadata={
            "description": "what a cycle does: an approval, or a built-in job (docs/jobs.md)"
        },
    )
    auto_pause_after_failures = fields.Integer(
        allow_none=True,
        metadata={"description": "failed cycles in a row that pause it; null: never"},
    )
    auto_paused = fields.Nested(
        AutoPausedOut,
        allow_none=True,
        metadata={
            "description": "while the service keeps it paused after failed cycles in a row: "
            "when and why; null otherwise (enabling it again clears it)"
        },
    )
    version = fields.Integer()
    created_at = UtcDateTime()
    updated_at = UtcDateTime()
    updated_by = fields.String()
    next_fire_at = UtcDateTime(allow_none=True)
    next_fire_at_local = LocalDateTime(
        allow_none=True, metadata={"description": "`next_fire_at` in the schedule's time zone"}
    )
    last_run = fields.Nested(
        LastRunOut, allow_none=True, metadata={"description": "null before its first run"}
    )
    last_skip = fields.Nested(
        LastSkipOut, allow_none=True, metadata={"description": "the run skipped most recently"}
    )
    definition_revision = fields.Integer(
        allow_none=True,
        metadata={
            "description": "the definition's revision it was last saved against; null for a "
            "built-in job's schedule"
        },
    )
    next_fires = fields.List(
        fields.Nested(NextFireOut),
        metadata={"description": "the next 5 fire times after now, computed as if enabled"},
    )


class PreviewIn(StrictSchema):
    trigger = Described("TriggerIn", required=True)
    timezone = fields.String(validate=validate.Length(1, 64), allow_none=True, load_default=None)
    count = strict_int(1, MAX_PREVIEW, load_default=5)
    after = UtcDateTime(load_default=None, metadata={"description": "with an offset; default now"})
    calendar = fields.String(
        validate=validate.Length(1, 64),
        allow_none=True,
        load_default=None,
        metadata={"description": "a calendar's key: each fire in `fires` is marked by it"},
    )
    calendar_rule = Choice(CALENDAR_RULE, allow_none=True, load_default=None)


class SavedPreviewQuery(Schema):
    count = fields.Integer(
        validate=validate.Range(1, MAX_PREVIEW),
        load_default=5,
        metadata={"description": "how many fire times"},
    )
    after = UtcDateTime(load_default=None, metadata={"description": "with an offset; default now"})


class MarkedFireOut(OutSchema):
    """One fire time, and what the schedule's calendar does to it."""

    at = UtcDateTime()
    local = LocalDateTime(metadata={"description": "in the schedule's time zone"})
    outcome = Choice(FIRE_OUTCOME)
    moved_to = UtcDateTime(allow_none=True, metadata={"description": "`MOVED`: launched then"})
    moved_to_local = LocalDateTime(
        allow_none=True, metadata={"description": "`moved_to` in the schedule's time zone"}
    )
    calendar = calendar_finding("`MOVED`, `SKIPPED`: what the calendar found")


class PreviewOut(OutSchema):
    fire_times = fields.List(UtcDateTime(), metadata={"description": "the trigger's fires"})
    local_times = fields.List(LocalDateTime())
    fires = fields.List(
        fields.Nested(MarkedFireOut),
        metadata={
            "description": "the same fires, each marked with what the calendar does to it "
            "(all `FIRES` without a calendar)"
        },
    )


SCHEDULE_SORT = sort_choices("ScheduleSort", SCHEDULE_LISTING)


class ScheduleListQuery(PageQuery):
    q = search_field("name")
    sort = sort_field(SCHEDULE_SORT)
    name = name_field(load_default=None, metadata={"description": "the exact name"})
    enabled = fields.Boolean(
        truthy={"true"}, falsy={"false"}, load_default=None, metadata={"description": "true, false"}
    )
    definition_id = id_filter("the definition's id")
    initiator_id = id_filter("the initiator's account id")
    overlap_policy = OverlapPolicyIn(
        load_default=None,
        metadata={"description": "schedules on this overlap policy (`skip`: `skip_while_open`)"},
    )
    group = group_field(load_default=None)
    name_contains = fields.String(
        validate=validate.Length(1, MAX_SEARCH),
        load_default=None,
        metadata={"description": "only schedules whose name holds this text, in any case"},
    )


ScheduleExportQuery = export_query(ScheduleListQuery, "ScheduleExportQuery")
