"""Shapes of runs and their attempts (docs/api.md#runs)."""

from __future__ import annotations

from typing import Any

from marshmallow import (
    ValidationError,
    fields,
    validates_schema,
)

from domain.messages import Message
from domain.schedules import MAX_GROUP
from projections.runs import RUN_LISTING
from web.schemas import validate
from web.schemas.base import (
    MAX_SEARCH,
    Choice,
    Described,
    KeyedBody,
    LocalDateTime,
    OutSchema,
    PageQuery,
    UtcDateTime,
    body_key,
    form_data_field,
    instant_text,
    reason_params_field,
    search_field,
    server_uuid,
    sort_choices,
    sort_field,
    strict_int,
)
from web.schemas.enums import ATTEMPT_OUTCOME, RUN_STATUS, RUN_TRIGGER, TARGET_KIND
from web.schemas.exports import export_query
from web.schemas.schedules import SkipReasonOut, calendar_finding


class RunNowIn(KeyedBody):
    key_field = "request_id"
    reuse_code = "REQUEST_ID_REUSED"
    request_id = body_key("with the caller's account and the schedule, the repeat key")
    version = strict_int(
        1, 2**31, metadata={"description": "the schedule's; optional, a stale one is 409"}
    )


RUN_SORT = sort_choices("RunSort", RUN_LISTING)


class RunListQuery(PageQuery):
    q = search_field("title, or its schedule's name when it was registered,")
    sort = sort_field(RUN_SORT)
    status = Choice(RUN_STATUS, load_default=None, metadata={"description": "its status"})


class RunLogQuery(RunListQuery):
    schedule_id = fields.UUID(load_default=None, metadata={"description": "its schedule's id"})
    schedule_name = fields.String(
        validate=validate.Length(1, MAX_SEARCH),
        load_default=None,
        metadata={
            "description": "only runs whose schedule's name (as it is now, a deleted "
            "schedule's too) holds this text, in any case"
        },
    )
    trigger = Choice(RUN_TRIGGER, load_default=None, metadata={"description": "what started it"})
    planned_from = UtcDateTime(load_default=None, metadata={"description": "inclusive"})
    planned_to = UtcDateTime(load_default=None, metadata={"description": "exclusive"})
    group = fields.String(
        validate=validate.Length(1, MAX_GROUP),
        load_default=None,
        metadata={"description": "its schedule's job group (任务组名), as the schedule is now"},
    )

    @validates_schema
    def _check_window(self, data: dict[str, Any], **kwargs: Any) -> None:
        start, end = data.get("planned_from"), data.get("planned_to")
        if start is not None and end is not None and end < start:
            raise ValidationError(
                Message("must not be before {field}", field="planned_from"), "planned_to"
            )


RunExportQuery = export_query(RunLogQuery, "RunExportQuery")

JOB_RESULT = (
    "a built-in job's small summary once it succeeded (docs/jobs.md#results), e.g. "
    '`{"ok": true, "full": false, "events_verified": 120, "from_position": 1001, '
    '"to_position": 1120}`; never '
    "its params or what a receiver answered; null for an approval's launch"
)


def job_result_field(description: str = JOB_RESULT) -> Described:
    return Described("JobResultOut", allow_none=True, metadata={"description": description})


class ErrorOut(OutSchema):
    """Why a launch failed."""

    code = fields.String(metadata={"description": "stable, e.g. DEFINITION_UNPUBLISHED"})
    message = fields.String()
    params = reason_params_field()


class AttemptOut(OutSchema):
    number = fields.Integer()
    started_at = instant_text()
    finished_at = instant_text(allow_none=True, metadata={"description": "null while running"})
    outcome = Choice(
        ATTEMPT_OUTCOME, allow_none=True, metadata={"description": "null while running"}
    )
    error = fields.Nested(ErrorOut, allow_none=True)
    instance_id = server_uuid(allow_none=True, metadata={"description": "the instance it launched"})
    result = job_result_field("a built-in job's summary, when the attempt succeeded")
    worker = fields.String()


class RunOut(OutSchema):
    id = server_uuid()
    schedule_id = server_uuid()
    schedule_version = fields.Integer(metadata={"description": "the schedule's, at registration"})
    definition_revision = fields.Integer(
        attribute="shown_definition_revision",
        allow_none=True,
        metadata={
            "description": "the definition's revision it launches, frozen at registration; null "
            "for a built-in job's run"
        },
    )
    target_kind = Choice(
        TARGET_KIND,
        metadata={"description": "what it does, frozen at registration (docs/jobs.md)"},
    )
    planned_at = UtcDateTime()
    planned_at_local = LocalDateTime(
        allow_none=True,
        metadata={"description": "`planned_at` in the schedule's time zone (frozen with the run)"},
    )
    trigger = Choice(RUN_TRIGGER)
    triggered_by = fields.String(
        allow_none=True,
        metadata={"description": "the account (manual) or system:tick (schedule)"},
    )
    request_id = fields.String(allow_none=True, metadata={"description": "a manual run's"})
    status = Choice(RUN_STATUS)
    title = fields.String()
    form_data = form_data_field()
    initiator_id = fields.String(
        attribute="shown_initiator_id",
        allow_none=True,
        metadata={"description": "null for a built-in job's run"},
    )
    attempt_count = fields.Integer()
    max_attempts = fields.Integer()
    next_attempt_at = UtcDateTime(allow_none=True)
    last_error = fields.Nested(
        ErrorOut, allow_none=True, metadata={"description": "the last failed attempt's error"}
    )
    instance_id = server_uuid(allow_none=True, metadata={"description": "the instance it launched"})
    result = job_result_field()
    registered_at = UtcDateTime()
    started_at = UtcDateTime(allow_none=True, metadata={"description": "the first attempt's"})
    finished_at = UtcDateTime(allow_none=True)
    duration_seconds = fields.Float(
        allow_none=True, metadata={"description": "from started_at to finished_at"}
    )
    error_code = fields.String(
        allow_none=True, metadata={"description": "the last error's code, unless it succeeded"}
    )
    trace_id = fields.String(
        metadata={
            "description": "a W3C trace id: that of the request that started the run, if it "
            "was in one (its `traceparent`), else the run's own id's; on every log line of "
            "its launch"
        }
    )
    skipped_count = fields.Integer()
    missed_until = UtcDateTime(allow_none=True)
    skip_reason = fields.Nested(
        SkipReasonOut, allow_none=True, metadata={"description": "set on skipped runs only"}
    )
    moved_to = UtcDateTime(
        allow_none=True,
        metadata={
            "description": "the instant the schedule's calendar (`next_working_day`) moved the "
            "cycle to, when it did: it launches then; `planned_at` stays its key"
        },
    )
    moved_to_local = LocalDateTime(
        allow_none=True, metadata={"description": "`moved_to` in the schedule's time zone"}
    )
    calendar = calendar_finding(
        "what the schedule's calendar found, when it moved or skipped the cycle"
    )
    version = fields.Integer()


class RunDetailOut(RunOut):
    attempts = fields.List(fields.Nested(AttemptOut))
