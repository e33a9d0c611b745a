"""Request and response shapes; the OpenAPI document is generated from these."""

from __future__ import annotations

from copy import copy
from datetime import UTC, datetime
from typing import Any, get_args, get_origin, get_type_hints

from marshmallow import RAISE, Schema, ValidationError, fields, missing, validate, validates_schema

from cronledger.application.backlog import Backlog
from domain.directory import PUBLIC_ID
from domain.permissions import ROLES
from domain.reasons import MAX_REASON
from domain.runs import SKIP_MISSED, SKIP_OVERLAP
from domain.schedules import OVERLAP_POLICIES, OVERLAP_SKIP

MAX_NAME = 200
PRESET_ID = r"^[a-z][a-z0-9_-]{0,63}$"
DEFINITION_KEY = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"
MAX_REVIEW_WINDOW_SECONDS = 366 * 24 * 3600
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2999, 12, 31, tzinfo=UTC)
MAX_DATETIME_LENGTH = 64  # 2026-10-01T18:00:00.123456+08:00 is 32
MAX_PREVIEW = 50  # fire times in one preview


class UtcDateTime(fields.DateTime):
    """ISO 8601; answers in UTC with `Z`, and refuses a request time without an offset."""

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> str | None:
        if value is None:
            return None
        return str(value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S") + _fraction(value) + "Z")

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> datetime:
        return self._given(value, attr, data, **kwargs).astimezone(UTC)

    def _given(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> datetime:
        """The request time at the offset it was given with."""
        if isinstance(value, str) and len(value) > MAX_DATETIME_LENGTH:
            raise ValidationError(f"must be at most {MAX_DATETIME_LENGTH} characters long")
        parsed = super()._deserialize(value, attr, data, **kwargs)
        if parsed.tzinfo is None or parsed.utcoffset() is None:
            raise ValidationError("must carry an offset, e.g. 2026-10-01T18:00:00+08:00 or ...Z")
        if not EARLIEST <= parsed <= LATEST:
            raise ValidationError("must lie between the years 1970 and 2999")
        return parsed


class OffsetDateTime(UtcDateTime):
    """A UtcDateTime whose request time keeps the offset it was given with."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> datetime:
        return self._given(value, attr, data, **kwargs)


def _fraction(value: datetime) -> str:
    return f".{value.microsecond:06d}".rstrip("0") if value.microsecond else ""


def strict_bool(**kwargs: Any) -> fields.Boolean:
    return fields.Boolean(truthy={True}, falsy={False}, **kwargs)


def strict_int(low: int, high: int, **kwargs: Any) -> fields.Integer:
    return fields.Integer(strict=True, validate=validate.Range(low, high), **kwargs)


def name_field(**kwargs: Any) -> fields.String:
    return fields.String(validate=validate.Length(1, MAX_NAME), **kwargs)


class StrictSchema(Schema):
    """Unknown fields are refused, so a typo never goes unnoticed."""

    class Meta:
        unknown = RAISE


VERSION_EXPECTED = (
    "the resource's `version` as last read (not a timeline entry's `log_version`); "
    "a stale one is 409"
)


def replacing(schema: type[Schema], name: str) -> type[Schema]:
    """A PUT body: every field of `schema` required, and the `version` it replaces."""
    required = {key: _copied(field, required=True) for key, field in _fields_of(schema).items()}
    version = strict_int(1, 2**31, required=True, metadata={"description": VERSION_EXPECTED})
    return type(name, (schema,), {**required, "version": version})


def merge_patch_of(schema: type[Schema], name: str) -> type[Schema]:
    """A PATCH body as documented: any field of the PUT body `schema`, null meaning default."""
    optional = {key: _copied(field, allow_none=True) for key, field in _fields_of(schema).items()}
    return type(name, (schema,), optional)


def defaults_of(schema: type[Schema]) -> dict[str, Any]:
    """What a field left out of `schema` becomes, for the fields that have a default."""
    return {
        key: field.load_default() if callable(field.load_default) else field.load_default
        for key, field in _fields_of(schema).items()
        if field.load_default is not missing
    }


def _fields_of(schema: type[Schema]) -> dict[str, fields.Field[Any]]:
    return dict(schema._declared_fields)


def _copied(field: fields.Field[Any], **changes: Any) -> fields.Field[Any]:
    """The field with no default and `changes` (`required`, `allow_none`)."""
    changed = copy(field)
    changed.load_default = missing
    changed.required = False
    for attribute, value in changes.items():
        setattr(changed, attribute, value)
    return changed


class PageQuery(Schema):
    page = fields.Integer(validate=validate.Range(1, 1_000_000), load_default=1)
    page_size = fields.Integer(validate=validate.Range(1, 200), load_default=20)


class VersionBody(StrictSchema):
    version = strict_int(1, 2**31, metadata={"description": "optional; a stale one is 409"})


def reason_field() -> fields.String:
    """Why the operator does it: optional, recorded on the event and shown in timelines."""
    return fields.String(
        validate=validate.Length(1, MAX_REASON),
        load_default=None,
        metadata={"description": "optional: why, recorded on the event (timelines show it)"},
    )


def with_reason(schema: type[Schema]) -> type[Schema]:
    """`schema` with an optional `reason`, under the same name."""
    return type(schema.__name__, (schema,), {"reason": reason_field()})


class ReasonBody(StrictSchema):
    reason = reason_field()


class VersionReasonBody(VersionBody):
    reason = reason_field()


class AccountCreate(StrictSchema):
    id = fields.String(
        validate=validate.Regexp(PUBLIC_ID, error="use 1-64 letters, digits, . _ @ -")
    )
    name = name_field(required=True)
    roles = fields.List(
        fields.String(validate=validate.OneOf(sorted(ROLES))),
        required=True,
        validate=validate.Length(max=len(ROLES)),
    )


class AccountFieldsIn(StrictSchema):
    name = name_field(required=True)
    roles = AccountCreate._declared_fields["roles"]


AccountUpdate = with_reason(replacing(AccountFieldsIn, "AccountUpdate"))
AccountPatch = merge_patch_of(AccountUpdate, "AccountPatch")


class AccountOut(Schema):
    id = fields.String()
    name = fields.String()
    roles = fields.List(fields.String())
    active = fields.Boolean()
    version = fields.Integer()
    created_at = UtcDateTime()


class TokenOut(Schema):
    token = fields.String(metadata={"description": "shown once; only its hash is kept"})
    token_id = fields.String()


class PresetIn(StrictSchema):
    id = fields.String(required=True, validate=validate.Regexp(PRESET_ID))
    title = name_field(required=True)
    description = fields.String(validate=validate.Length(max=2000), load_default="")
    timezone = fields.String(validate=validate.Length(max=64), load_default=None)
    trigger = fields.Dict(required=True)
    form_data = fields.Dict(load_default=dict)


class DefinitionFieldsIn(StrictSchema):
    name = name_field(required=True)
    external = strict_bool(required=True)
    review_window_seconds = strict_int(1, MAX_REVIEW_WINDOW_SECONDS, required=True)
    schedule_presets = fields.List(
        fields.Nested(PresetIn), load_default=list, validate=validate.Length(max=100)
    )
    allow_self_approval = strict_bool(
        load_default=False,
        metadata={
            "description": "whether an instance's applicant, or the account that last saved the "
            "schedule that launched it, may approve it; fixed on each instance when it starts"
        },
    )

    @validates_schema
    def unique_presets(self, data: dict[str, Any], **kwargs: Any) -> None:
        ids = [preset["id"] for preset in data.get("schedule_presets", [])]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValidationError(
                f"duplicate preset id(s): {', '.join(duplicates)}", "schedule_presets"
            )


class DefinitionCreate(DefinitionFieldsIn):
    key = fields.String(required=True, validate=validate.Regexp(DEFINITION_KEY))


DefinitionUpdate = replacing(DefinitionFieldsIn, "DefinitionUpdate")
DefinitionPatch = merge_patch_of(DefinitionUpdate, "DefinitionPatch")


class DefinitionOut(Schema):
    id = fields.String()
    key = fields.String()
    name = fields.String()
    external = fields.Boolean()
    published = fields.Boolean()
    revision = fields.Integer(
        metadata={
            "description": "the published revision: publishing, and each update while "
            "published, makes the next one; 0 until first published"
        }
    )
    review_window_seconds = fields.Integer()
    schedule_presets = fields.List(fields.Dict())
    allow_self_approval = fields.Boolean()
    version = fields.Integer()
    created_at = UtcDateTime()


class TimelineEntryOut(Schema):
    position = fields.Integer(metadata={"description": "the event's place in the whole log"})
    log_version = fields.Integer(
        metadata={
            "description": "the event's place in its resource's log (1, 2, ...); not the "
            "`version` a PUT, PATCH or command takes (0.1.0 named this `version`)"
        }
    )
    type = fields.String()
    at = UtcDateTime()
    actor = fields.String(allow_none=True)
    command_id = fields.String(allow_none=True)
    outcome = fields.String(allow_none=True)
    reason = fields.String(allow_none=True)
    data = fields.Dict()


class TimelineOut(Schema):
    items = fields.List(fields.Nested(TimelineEntryOut))


class HealthOut(Schema):
    status = fields.String()
    store = fields.String(metadata={"enum": ["sqlite", "postgresql"]})
    version = fields.String(metadata={"description": "the release running (CHANGELOG.md)"})


class ProblemOut(Schema):
    type = fields.String()
    title = fields.String()
    status = fields.Integer()
    detail = fields.String()
    code = fields.String()
    errors = fields.Dict(keys=fields.String(), values=fields.List(fields.String()))


def page_of(item: type[Schema]) -> type[Schema]:
    """A page of items: `{"items", "page", "page_size", "total"}`."""
    name = item.__name__.removesuffix("Out") + "Page"
    return Schema.from_dict(
        {
            "items": fields.List(fields.Nested(item)),
            "page": fields.Integer(),
            "page_size": fields.Integer(),
            "total": fields.Integer(),
        },
        name=name,
    )


class LocalDateTime(fields.DateTime):
    """ISO 8601 with the local offset, e.g. `2026-03-08T03:00:00-04:00`."""

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> str | None:
        return None if value is None else str(value.isoformat())


class ScheduleFieldsIn(StrictSchema):
    name = name_field(required=True)
    definition_id = fields.String(required=True, validate=validate.Length(1, 64))
    trigger = fields.Dict(required=True, metadata={"description": "cron or window-interval"})
    timezone = fields.String(
        validate=validate.Length(1, 64),
        allow_none=True,
        load_default=None,
        metadata={"description": "IANA name; omitted means CRONLEDGER_TIMEZONE"},
    )
    initiator_id = fields.String(required=True, validate=validate.Length(1, 64))
    title_template = fields.String(validate=validate.Length(max=MAX_NAME), load_default="")
    form_data = fields.Dict(load_default=dict)
    enabled = strict_bool(load_default=False)
    misfire_policy = fields.String(
        validate=validate.OneOf(["catch_up", "skip", "once"]), load_default="catch_up"
    )
    overlap_policy = fields.String(
        validate=validate.OneOf(OVERLAP_POLICIES),
        load_default=OVERLAP_SKIP,
        metadata={"description": "skip (default): a cycle while an earlier one is unfinished"},
    )


class ScheduleFromPresetIn(StrictSchema):
    definition_id = fields.String(required=True, validate=validate.Length(1, 64))
    preset_id = fields.String(required=True, validate=validate.Regexp(PRESET_ID))
    initiator_id = fields.String(required=True, validate=validate.Length(1, 64))
    name = name_field(load_default=None)


ScheduleUpdate = replacing(ScheduleFieldsIn, "ScheduleUpdate")
SchedulePatch = merge_patch_of(ScheduleUpdate, "SchedulePatch")


class VersionQuery(Schema):
    version = fields.Integer(required=True, validate=validate.Range(1, 2**31))


class SkipReasonOut(Schema):
    code = fields.String(metadata={"enum": [SKIP_OVERLAP, SKIP_MISSED]})
    blocking_run_id = fields.String(
        allow_none=True, metadata={"description": "OVERLAP: the unfinished run that blocked it"}
    )
    count = fields.Integer(
        allow_none=True, metadata={"description": "MISSED: how many missed cycles it stands for"}
    )


class LastSkipOut(Schema):
    run_id = fields.String()
    planned_at = UtcDateTime()
    skipped_at = UtcDateTime()
    skip_reason = fields.Nested(SkipReasonOut)


class NextFireOut(Schema):
    at = UtcDateTime()
    local = LocalDateTime(metadata={"description": "in the schedule's time zone"})


class ScheduleOut(Schema):
    id = fields.String()
    name = fields.String()
    definition_id = fields.String()
    trigger = fields.Dict()
    timezone = fields.String()
    initiator_id = fields.String()
    title_template = fields.String()
    form_data = fields.Dict()
    enabled = fields.Boolean()
    misfire_policy = fields.String()
    overlap_policy = fields.String()
    preset_id = fields.String(allow_none=True)
    version = fields.Integer()
    created_at = UtcDateTime()
    updated_at = UtcDateTime()
    updated_by = fields.String()
    next_fire_at = UtcDateTime(allow_none=True)
    next_fire_at_local = LocalDateTime(
        allow_none=True, metadata={"description": "`next_fire_at` in the schedule's time zone"}
    )
    last_run = fields.Dict(allow_none=True)
    last_skip = fields.Nested(
        LastSkipOut, allow_none=True, metadata={"description": "the run skipped most recently"}
    )
    definition_revision = fields.Integer(
        metadata={"description": "the definition's revision it was last saved against"}
    )
    next_fires = fields.List(
        fields.Nested(NextFireOut),
        metadata={"description": "the next 5 fire times after now, computed as if enabled"},
    )


class PreviewIn(StrictSchema):
    trigger = fields.Dict(required=True)
    timezone = fields.String(validate=validate.Length(1, 64), allow_none=True, load_default=None)
    count = strict_int(1, MAX_PREVIEW, load_default=5)
    after = UtcDateTime(load_default=None, metadata={"description": "with an offset; default now"})


class SavedPreviewQuery(Schema):
    count = fields.Integer(validate=validate.Range(1, MAX_PREVIEW), load_default=5)
    after = UtcDateTime(load_default=None, metadata={"description": "with an offset; default now"})


class PreviewOut(Schema):
    fire_times = fields.List(UtcDateTime())
    local_times = fields.List(LocalDateTime())


def command_id_field() -> fields.String:
    return fields.String(required=True, validate=validate.Length(1, 128))


class ApprovalSubmit(StrictSchema):
    command_id = command_id_field()
    definition_id = fields.String(required=True, validate=validate.Length(1, 64))
    title = name_field(required=True)
    form_data = fields.Dict(load_default=dict)
    material_version = strict_int(0, 2**31, required=True)
    review_deadline_at = OffsetDateTime(
        load_default=None,
        metadata={
            "description": "default: now + the review window; its offset is kept beside the "
            "UTC value (`review_deadline_at_local`)"
        },
    )


class ApproveIn(StrictSchema):
    command_id = command_id_field()
    material_version = strict_int(0, 2**31, required=True)


class WithdrawIn(StrictSchema):
    command_id = command_id_field()
    material_version = strict_int(
        0,
        2**31,
        metadata={"description": "optional: a version other than the current is STALE_MATERIAL"},
    )


class ExtendDeadlineIn(StrictSchema):
    command_id = command_id_field()
    new_deadline_at = OffsetDateTime(
        required=True,
        metadata={"description": "its offset is kept beside the UTC value"},
    )
    reason = fields.String(required=True, validate=validate.Length(1, 500))


class SignCallbackIn(StrictSchema):
    command_id = command_id_field()
    contract_id = fields.String(required=True, validate=validate.Length(1, 128))
    material_version = strict_int(0, 2**31, required=True)
    occurred_at = UtcDateTime(required=True, metadata={"description": "the caller's claim"})
    source = fields.String(required=True, validate=validate.Length(1, 128))


class OriginOut(Schema):
    """The fire that launched an instance (requirement 001: workflow schedules)."""

    source = fields.String(metadata={"enum": ["schedule", "manual"]})
    schedule_id = fields.String()
    schedule_name = fields.String()
    fire_id = fields.String(metadata={"description": "the run's id"})
    run_id = fields.String(metadata={"description": "the same as fire_id (earlier releases)"})
    scheduled_for = fields.String(metadata={"format": "date-time", "description": "planned"})
    trigger_kind = fields.String(metadata={"enum": ["cron", "window-interval"]})
    trigger = fields.Dict(metadata={"description": "the schedule's trigger, frozen"})
    definition_revision = fields.Integer(
        metadata={"description": "the definition's revision launched (absent before 0.2.0)"}
    )
    definition_name = fields.String(metadata={"description": "that revision's name"})
    saved_by = fields.String(metadata={"description": "who last saved the schedule"})


APPROVAL_STATES = ["WAITING_REVIEW", "APPROVED", "WITHDRAWN", "EXPIRED"]


def id_filter(description: str) -> fields.String:
    """A list filter on an id: an exact match, or left out."""
    return fields.String(
        validate=validate.Length(1, 64), load_default=None, metadata={"description": description}
    )


class ApprovalListQuery(PageQuery):
    state = fields.String(validate=validate.OneOf(APPROVAL_STATES), load_default=None)
    applicant_id = id_filter("the applicant's account id")
    definition_id = id_filter("the definition's id")
    schedule_id = fields.UUID(
        load_default=None, metadata={"description": "the schedule that launched it"}
    )
    deadline_from = UtcDateTime(
        load_default=None, metadata={"description": "review deadline, inclusive"}
    )
    deadline_to = UtcDateTime(
        load_default=None, metadata={"description": "review deadline, exclusive"}
    )

    @validates_schema
    def _check_window(self, data: dict[str, Any], **kwargs: Any) -> None:
        start, end = data.get("deadline_from"), data.get("deadline_to")
        if start is not None and end is not None and end < start:
            raise ValidationError("must not be before deadline_from", "deadline_to")


class ScheduleListQuery(PageQuery):
    name = name_field(load_default=None, metadata={"description": "the exact name"})
    enabled = fields.Boolean(
        truthy={"true"}, falsy={"false"}, load_default=None, metadata={"description": "true, false"}
    )
    definition_id = id_filter("the definition's id")
    initiator_id = id_filter("the initiator's account id")


class ObservationOut(Schema):
    """A signing callback as kept, matched against the instance when it was recorded."""

    command_id = fields.String()
    contract_id = fields.String()
    material_version = fields.Integer()
    occurred_at = fields.String(metadata={"format": "date-time", "description": "the claim"})
    source = fields.String()
    outcome = fields.String()
    recorded_at = fields.String(metadata={"format": "date-time"})
    material_matches = fields.Boolean(
        metadata={"description": "its material_version was the instance's current one"}
    )
    contract_matches = fields.Boolean(
        metadata={"description": "its contract_id was the instance's (the first one binds it)"}
    )


class ExtensionOut(Schema):
    old_deadline_at = fields.String(metadata={"format": "date-time"})
    new_deadline_at = fields.String(metadata={"format": "date-time"})
    reason = fields.String()
    actor = fields.String()
    at = fields.String(metadata={"format": "date-time"})
    rule_version = fields.Integer(metadata={"description": "the deadline rules' version"})


class WinningCommandOut(Schema):
    """The command that decided an instance."""

    command_id = fields.String(allow_none=True)
    kind = fields.String(metadata={"description": "approve, withdraw or sweep"})
    actor = fields.String()


class ApprovalOut(Schema):
    id = fields.String()
    definition_id = fields.String()
    title = fields.String()
    form_data = fields.Dict()
    applicant_id = fields.String()
    state = fields.String(metadata={"enum": APPROVAL_STATES})
    material_version = fields.Integer()
    review_deadline_at = UtcDateTime()
    review_deadline_at_local = LocalDateTime(
        metadata={
            "description": "`review_deadline_at` at the offset it was given with; UTC "
            "(+00:00) when none was given, e.g. a deadline from the review window"
        }
    )
    deadline_policy = fields.Dict()
    origin = fields.Nested(
        OriginOut, allow_none=True, metadata={"description": "null unless a schedule launched it"}
    )
    allow_self_approval = fields.Boolean()
    submitted_at = UtcDateTime()
    decided_at = UtcDateTime(allow_none=True)
    decided_by = fields.String(
        allow_none=True,
        metadata={"description": "who decided it (`system:sweeper`: an expiry); null if waiting"},
    )
    winning_command = fields.Nested(
        WinningCommandOut, allow_none=True, metadata={"description": "null while waiting"}
    )
    version = fields.Integer()
    observations = fields.List(fields.Nested(ObservationOut))
    contract_id = fields.String(
        allow_none=True,
        metadata={"description": "bound by the first signing callback; null before it"},
    )
    extensions = fields.List(fields.Nested(ExtensionOut))


class CommandOut(Schema):
    outcome = fields.String()
    state = fields.String()
    instance = fields.Nested(ApprovalOut)
    replayed = fields.Boolean()
    reason = fields.String(metadata={"description": "why the command won or lost"})
    winning_command = fields.Nested(
        WinningCommandOut,
        allow_none=True,
        metadata={"description": "the command that decided the instance; null while it waits"},
    )


def _backlog_field(kind: Any) -> fields.Field[Any]:
    """A backlog figure's field: a number, or numbers by label (e.g. by reason)."""
    if get_origin(kind) is dict:
        return fields.Dict(keys=fields.String(), values=_backlog_field(get_args(kind)[1]))
    return fields.Float() if kind is float else fields.Integer()


BacklogOut = Schema.from_dict(
    {name: _backlog_field(kind) for name, kind in get_type_hints(Backlog).items()},
    name="BacklogOut",
)


RUN_STATUSES = [
    "PENDING",
    "RUNNING",
    "RETRY_WAIT",
    "SUCCEEDED",
    "FAILED",
    "DEAD_LETTER",
    "CANCELLED",
    "SKIPPED_OVERLAP",
    "SKIPPED_MISSED",
]


RUN_TRIGGERS = ["schedule", "manual"]


class RunNowIn(StrictSchema):
    request_id = fields.String(
        required=True,
        validate=validate.Length(1, 128),
        metadata={"description": "with the caller's account and the schedule, the repeat key"},
    )
    version = strict_int(
        1, 2**31, metadata={"description": "the schedule's; optional, a stale one is 409"}
    )


class RunListQuery(PageQuery):
    status = fields.String(validate=validate.OneOf(RUN_STATUSES), load_default=None)


class RunLogQuery(RunListQuery):
    schedule_id = fields.UUID(load_default=None)
    trigger = fields.String(validate=validate.OneOf(RUN_TRIGGERS), load_default=None)
    planned_from = UtcDateTime(load_default=None, metadata={"description": "inclusive"})
    planned_to = UtcDateTime(load_default=None, metadata={"description": "exclusive"})

    @validates_schema
    def _check_window(self, data: dict[str, Any], **kwargs: Any) -> None:
        start, end = data.get("planned_from"), data.get("planned_to")
        if start is not None and end is not None and end < start:
            raise ValidationError("must not be before planned_from", "planned_to")


class ErrorOut(Schema):
    code = fields.String()
    message = fields.String()


class AttemptOut(Schema):
    number = fields.Integer()
    started_at = fields.String()
    finished_at = fields.String(allow_none=True)
    outcome = fields.String(allow_none=True)
    error = fields.Nested(ErrorOut, allow_none=True)
    instance_id = fields.String(allow_none=True)
    worker = fields.String()


class RunOut(Schema):
    id = fields.String()
    schedule_id = fields.String()
    schedule_version = fields.Integer(metadata={"description": "the schedule's, at registration"})
    definition_revision = fields.Integer(
        metadata={"description": "the definition's revision it launches, frozen at registration"}
    )
    planned_at = UtcDateTime()
    planned_at_local = LocalDateTime(
        allow_none=True,
        metadata={"description": "`planned_at` in the schedule's time zone (frozen with the run)"},
    )
    trigger = fields.String(metadata={"enum": RUN_TRIGGERS})
    triggered_by = fields.String(
        allow_none=True,
        metadata={"description": "the account (manual) or system:tick (schedule)"},
    )
    request_id = fields.String(allow_none=True, metadata={"description": "a manual run's"})
    status = fields.String(metadata={"enum": RUN_STATUSES})
    title = fields.String()
    form_data = fields.Dict()
    initiator_id = fields.String()
    attempt_count = fields.Integer()
    max_attempts = fields.Integer()
    next_attempt_at = UtcDateTime(allow_none=True)
    last_error = fields.Nested(ErrorOut, allow_none=True)
    instance_id = fields.String(allow_none=True)
    registered_at = UtcDateTime()
    started_at = UtcDateTime(allow_none=True, metadata={"description": "the first attempt's"})
    finished_at = UtcDateTime(allow_none=True)
    duration_seconds = fields.Float(
        allow_none=True, metadata={"description": "from started_at to finished_at"}
    )
    error_code = fields.String(
        allow_none=True, metadata={"description": "the last error's code, unless it succeeded"}
    )
    trace_id = fields.String(metadata={"description": "on every log line of its launch"})
    skipped_count = fields.Integer()
    missed_until = UtcDateTime(allow_none=True)
    skip_reason = fields.Nested(
        SkipReasonOut, allow_none=True, metadata={"description": "set on skipped runs only"}
    )
    version = fields.Integer()


class RunDetailOut(RunOut):
    attempts = fields.List(fields.Nested(AttemptOut))
