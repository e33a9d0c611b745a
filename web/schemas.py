"""Request and response shapes; the OpenAPI document is generated from these."""

from __future__ import annotations

import re
from collections.abc import Mapping
from copy import copy
from dataclasses import Field, dataclass
from dataclasses import fields as dataclass_fields
from datetime import UTC, datetime
from typing import Any, get_origin, get_type_hints

from marshmallow import (
    EXCLUDE,
    RAISE,
    Schema,
    ValidationError,
    fields,
    missing,
    validate,
    validates_schema,
)

from cronledger.application.approvals import ERROR as SWEEP_ERROR
from cronledger.application.approvals import EXPIRY_LAG_BOUNDS
from cronledger.application.approvals import UNREADABLE as SWEEP_UNREADABLE
from cronledger.application.approvals import VERSION_CONFLICT as SWEEP_VERSION_CONFLICT
from cronledger.application.backlog import GAUGE, Backlog
from cronledger.application.schedules import MOVE_OUTCOMES
from domain.approvals import (
    APPROVE,
    APPROVED,
    CONFLICT,
    EXPIRED,
    EXTENDED,
    LATE_OR_CONFLICT,
    OBSERVED,
    SELF_APPROVAL,
    STALE_MATERIAL,
    SWEEP,
    WAITING_REVIEW,
    WITHDRAW,
    WITHDRAWN,
)
from domain.callback_sources import MAX_DESCRIPTION, SOURCE_NAME, SOURCE_NAME_RULE
from domain.directory import MAX_REMINDERS, PUBLIC_ID
from domain.overlap import DEFAULT_OVERLAP_POLICY, LEGACY_SKIP, OVERLAP_POLICIES, policy_named
from domain.permissions import ROLES
from domain.reasons import MAX_REASON
from domain.runs import (
    ATTEMPT_FAILED,
    ATTEMPT_SUCCEEDED,
    INTERRUPTED,
    RUN_STATUSES,
    SKIP_MISSED,
    SKIP_OVERLAP,
)
from domain.schedules import MISFIRE_POLICIES
from projections.operations import APPROVAL, DEFINITION, KINDS, RUN, SCHEDULE, TENANT

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


QUERY_INTEGER = re.compile(r"-?[0-9]{1,20}")


class QueryInteger(fields.Integer):
    """A whole number in a query string, in ASCII digits: `int` alone also takes "١٢" and
    "1_000", which no client means."""

    def _validated(self, value: Any) -> int:
        if isinstance(value, str) and not QUERY_INTEGER.fullmatch(value.strip()):
            raise self.make_error("invalid", input=value)
        return super()._validated(value)


def name_field(**kwargs: Any) -> fields.String:
    return fields.String(validate=validate.Length(1, MAX_NAME), **kwargs)


class StrictSchema(Schema):
    """Unknown fields are refused, so a typo never goes unnoticed."""

    class Meta:
        unknown = RAISE


# Metadata of a field the server leaves out of some answers: says when (the document shows it,
# and leaves the field out of the object's `required`).
OMITTED_WHEN = "x-omitted-when"


class OutSchema(Schema):
    """A shape the server sends (only ever dumped).

    Every field is sent in every answer, null where it may be, so the document lists each one
    as required, unless its metadata says when it is omitted (`OMITTED_WHEN`). Answers stay
    open to fields added later: the document never says `additionalProperties: false` of them.
    """

    class Meta:
        unknown = EXCLUDE

    def on_bind_field(self, field_name: str, field_obj: fields.Field[Any]) -> None:
        field_obj.required = OMITTED_WHEN not in field_obj.metadata


@dataclass(frozen=True)
class Choices:
    """A named set of strings: one component of the document, referred to from every use."""

    name: str
    values: tuple[str, ...]
    description: str


class Choice(fields.String):
    """One of `choices`: checked when loaded, documented as a reference to their component."""

    def __init__(self, choices: Choices, **kwargs: Any) -> None:
        super().__init__(validate=validate.OneOf(choices.values), **kwargs)
        self.choices = choices


class OverlapPolicyIn(Choice):
    """An overlap policy in a request: the deprecated `skip` loads as `skip_while_open`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(OVERLAP_POLICY_IN, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        return policy_named(super()._deserialize(value, attr, data, **kwargs))


class Described(fields.Dict):
    """A JSON object that the domain checks (in a request) or builds (in an answer), passed
    through as it is; the document spells it out as the component named `component`
    (web/openapi_shapes.py)."""

    def __init__(self, component: str, **kwargs: Any) -> None:
        super().__init__(keys=fields.String(), **kwargs)
        self.component = component


class Tagged(fields.Field[Any]):
    """An object of one of several shapes, told apart by the value of its `key`: dumped with
    that shape's schema, documented as the component named `component` (a `oneOf` with a
    discriminator)."""

    def __init__(
        self, component: str, key: str, shapes: Mapping[str, type[Schema]], **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.component = component
        self.key = key
        self.shapes = dict(shapes)

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> Any:
        if value is None:
            return None
        return self.shapes[value[self.key]]().dump(value)


def instant_text(**kwargs: Any) -> fields.String:
    """An instant the domain already wrote as ISO 8601 text, in UTC with `Z`."""
    return _with_format("date-time", **kwargs)


def server_uuid(**kwargs: Any) -> fields.String:
    """An id the server made: a UUID, as text."""
    return _with_format("uuid", **kwargs)


def _with_format(
    text_format: str, metadata: Mapping[str, Any] | None = None, **kwargs: Any
) -> fields.String:
    return fields.String(metadata={"format": text_format, **(metadata or {})}, **kwargs)


RUN_STATUS = Choices("RunStatus", RUN_STATUSES, "a run's status (docs/api.md#runs)")
RUN_TRIGGER = Choices(
    "RunTrigger",
    ("schedule", "manual"),
    "what registered a run: the tick (`schedule`) or a caller's run now (`manual`)",
)
APPROVAL_STATE = Choices(
    "ApprovalState", (WAITING_REVIEW, APPROVED, WITHDRAWN, EXPIRED), "an instance's state"
)
DECISION_OUTCOME = Choices(
    "DecisionOutcome",
    (
        APPROVED,
        WITHDRAWN,
        EXPIRED,
        EXTENDED,
        OBSERVED,
        STALE_MATERIAL,
        SELF_APPROVAL,
        CONFLICT,
        LATE_OR_CONFLICT,
    ),
    "what a command got (docs/approvals.md): the first five are accepted (200) but `EXPIRED`, "
    "which a late command gets (409) as the rest do",
)
DECIDING_COMMAND = Choices(
    "DecidingCommand",
    (APPROVE, WITHDRAW, SWEEP),
    "the kind of command that decided an instance (`sweep`: the deadline's expiry)",
)
SKIP_REASON_CODE = Choices(
    "SkipReasonCode",
    (SKIP_OVERLAP, SKIP_MISSED),
    "why a cycle was skipped: an earlier run was unfinished (`OVERLAP`), or cycles were missed "
    "(`MISSED`, one run standing for them)",
)
OVERLAP_POLICY = Choices(
    "OverlapPolicy",
    OVERLAP_POLICIES,
    "a cycle due while an earlier cycle of the schedule is unfinished: started anyway "
    "(`allow`), skipped while that cycle is still being launched (`skip_while_launching`, the "
    "default), or also while its approval waits for review before its deadline "
    "(`skip_while_open`) (docs/time.md)",
)
OVERLAP_POLICY_IN = Choices(
    "OverlapPolicyIn",
    (*OVERLAP_POLICIES, LEGACY_SKIP),
    "an `OverlapPolicy`; `skip`, the name of `skip_while_open` before release 0.11.0, is "
    "deprecated: accepted and saved as `skip_while_open`",
)
OVERLAP_MOVE_OUTCOME = Choices(
    "OverlapMoveOutcome",
    MOVE_OUTCOMES,
    "what a bulk move of overlap policies did to a schedule: saved with the policy (`MOVED`), on "
    "it already (`UNCHANGED`), or no live schedule of the tenant has the id (`NOT_FOUND`)",
)
MAX_MOVED = 200  # schedules one bulk move of overlap policies takes
MISFIRE_POLICY = Choices(
    "MisfirePolicy",
    MISFIRE_POLICIES,
    "cycles missed while the service was down: each registered, all skipped, or one for all "
    "(docs/time.md)",
)
TRIGGER_KIND = Choices("TriggerKind", ("cron", "window-interval"), "a trigger's kind")
ROLE = Choices("Role", tuple(sorted(ROLES)), "a role, granting permissions (docs/api.md)")
OPERATION_KIND = Choices("OperationKind", KINDS, "the kind of an operation in the audit")
AGGREGATE_TYPE = Choices(
    "AggregateType",
    ("account", DEFINITION, SCHEDULE, RUN, APPROVAL, TENANT),
    "the kind of resource an event belongs to",
)
STORE = Choices("Store", ("sqlite", "postgresql"), "the kind of store the service runs on")
ATTEMPT_OUTCOME = Choices(
    "AttemptOutcome",
    (ATTEMPT_SUCCEEDED, ATTEMPT_FAILED, INTERRUPTED),
    "how an attempt ended (`INTERRUPTED`: its worker's lease ran out)",
)


VERSION_EXPECTED = (
    "the resource's `version` as last read (not a timeline entry's `log_version`); "
    "a stale one is 409"
)


def replacing(schema: type[Schema], name: str, kept: tuple[str, ...] = ()) -> type[Schema]:
    """A PUT body: every field of `schema` required, and the `version` it replaces; but the
    fields `kept`, added after the PUT was published, which a PUT leaving out keeps as they
    are (so that an older client's PUT does not clear them)."""
    required = {
        key: _copied(field, required=key not in kept) for key, field in _fields_of(schema).items()
    }
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


CURSOR_TEXT = r"^[A-Za-z0-9_-]{1,512}$"  # base64url; the server's are about 150 characters
NOT_A_CURSOR = "is not a cursor of this list: use a next_cursor it answered, as it is"


class PageQuery(Schema):
    """A list's paging: the page after a cursor (a page's `next_cursor`), or a numbered page."""

    page = QueryInteger(
        validate=validate.Range(1, 1_000_000),
        load_default=None,
        metadata={
            "description": "a page by number, for consoles; not with `cursor`; without either, "
            "the first page"
        },
    )
    page_size = QueryInteger(
        validate=validate.Range(1, 200),
        load_default=20,
        metadata={"description": "items per page"},
    )
    cursor = fields.String(
        validate=validate.Regexp(CURSOR_TEXT, error=NOT_A_CURSOR),
        load_default=None,
        metadata={
            "description": "the `next_cursor` of the page before: the page after it, unmoved "
            "by inserts (opaque; not with `page`)"
        },
    )

    @validates_schema(pass_original=True)
    def _one_way_of_paging(self, data: dict[str, Any], original: Any, **kwargs: Any) -> None:
        if "page" in original and "cursor" in original:
            raise ValidationError("give page or cursor, not both", "cursor")


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


class PauseBody(StrictSchema):
    """Pausing or resuming the tick for a tenant: always with why."""

    reason = fields.String(
        required=True,
        validate=validate.Length(1, MAX_REASON),
        metadata={"description": "why, recorded on the event (timelines and the audit show it)"},
    )


class PauseOut(OutSchema):
    at = UtcDateTime(metadata={"description": "when the pause was recorded"})
    actor = fields.String(metadata={"description": "who paused"})
    reason = fields.String()


class TenantOut(OutSchema):
    id = server_uuid()
    name = fields.String()
    schedules_paused = fields.Nested(
        PauseOut,
        allow_none=True,
        metadata={"description": "null: the tick registers the tenant's cycles"},
    )


class AccountCreate(StrictSchema):
    id = fields.String(
        validate=validate.Regexp(PUBLIC_ID, error="use 1-64 letters, digits, . _ @ -")
    )
    name = name_field(required=True)
    roles = fields.List(Choice(ROLE), required=True, validate=validate.Length(max=len(ROLES)))


class AccountFieldsIn(StrictSchema):
    name = name_field(required=True)
    roles = AccountCreate._declared_fields["roles"]


AccountUpdate = with_reason(replacing(AccountFieldsIn, "AccountUpdate"))
AccountPatch = merge_patch_of(AccountUpdate, "AccountPatch")


class AccountOut(OutSchema):
    id = fields.String()
    name = fields.String()
    roles = fields.List(Choice(ROLE))
    active = fields.Boolean()
    version = fields.Integer()
    created_at = UtcDateTime()


class TokenOut(OutSchema):
    token = fields.String(
        allow_none=True,
        metadata={
            "description": "shown once; only its hash is kept (null on a replay: the secret "
            "is shown once)"
        },
    )
    token_id = server_uuid()


FORM_DATA = (
    "the caller's own JSON object (at most 64 KiB): any keys, kept and given back exactly as "
    "sent, never interpreted"
)


def form_data_field(**kwargs: Any) -> fields.Dict:
    """Form data: an open JSON object, the caller's."""
    return fields.Dict(keys=fields.String(), metadata={"description": FORM_DATA}, **kwargs)


class PresetIn(StrictSchema):
    id = fields.String(required=True, validate=validate.Regexp(PRESET_ID))
    title = name_field(required=True)
    description = fields.String(validate=validate.Length(max=2000), load_default="")
    timezone = fields.String(validate=validate.Length(max=64), load_default=None)
    trigger = Described("TriggerIn", required=True)
    form_data = form_data_field(load_default=dict)


class PresetOut(OutSchema):
    """A ready-made schedule of a definition (`POST /api/workflows/schedules` with its id)."""

    id = fields.String()
    title = fields.String()
    description = fields.String()
    timezone = fields.String(
        allow_none=True, metadata={"description": "IANA name; null: the business time zone"}
    )
    trigger = Described("TriggerOut")
    form_data = form_data_field()


class ReminderIn(StrictSchema):
    before_seconds = strict_int(
        1,
        MAX_REVIEW_WINDOW_SECONDS,
        required=True,
        metadata={"description": "how long before the review deadline; less than the window"},
    )


class EscalationIn(StrictSchema):
    after_seconds = strict_int(
        1,
        MAX_REVIEW_WINDOW_SECONDS,
        required=True,
        metadata={"description": "how long an instance waits for review, from its submission"},
    )
    account_id = fields.String(
        required=True,
        validate=validate.Regexp(PUBLIC_ID),
        metadata={"description": "the account it is escalated to, one of the tenant's"},
    )


class ReminderOut(OutSchema):
    before_seconds = fields.Integer(metadata={"description": "how long before the deadline"})


class EscalationOut(OutSchema):
    after_seconds = fields.Integer(metadata={"description": "how long waiting, from submission"})
    account_id = fields.String(metadata={"description": "the account it is escalated to"})


class ReminderSentOut(OutSchema):
    """A reminder recorded on an instance (its `ApprovalInstance.ReminderDue` event)."""

    before_seconds = fields.Integer(metadata={"description": "which reminder"})
    due_at = instant_text(metadata={"description": "when it was due"})
    at = instant_text(
        metadata={"description": "when the sweeper recorded it (after downtime: later)"}
    )


NOTICES_FIXED = "fixed on each instance when it starts, as its deadline is"
NOTICES_KEPT = ("reminders", "escalation")  # a PUT leaving them out keeps them (0.7.0 added them)


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
    reminders = fields.List(
        fields.Nested(ReminderIn),
        load_default=list,
        validate=validate.Length(max=MAX_REMINDERS),
        metadata={
            "description": f"at most {MAX_REMINDERS}, each at another offset before the review "
            f"deadline (docs/approvals.md); {NOTICES_FIXED}; a PUT leaving it out keeps it"
        },
    )
    escalation = fields.Nested(
        EscalationIn,
        allow_none=True,
        load_default=None,
        metadata={"description": f"null: none; {NOTICES_FIXED}; a PUT leaving it out keeps it"},
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


DefinitionUpdate = replacing(DefinitionFieldsIn, "DefinitionUpdate", NOTICES_KEPT)
DefinitionPatch = merge_patch_of(DefinitionUpdate, "DefinitionPatch")


class DefinitionOut(OutSchema):
    id = server_uuid()
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
    schedule_presets = fields.List(fields.Nested(PresetOut))
    allow_self_approval = fields.Boolean()
    reminders = fields.List(fields.Nested(ReminderOut))
    escalation = fields.Nested(EscalationOut, allow_none=True)
    version = fields.Integer()
    created_at = UtcDateTime()


class TimelineEntryOut(OutSchema):
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
    data = fields.Dict(
        keys=fields.String(),
        metadata={
            "description": "the event's own fields, which depend on its `type` and may grow in "
            "later releases: an open object (docs/api.md#timelines)"
        },
    )


class TimelineOut(OutSchema):
    items = fields.List(fields.Nested(TimelineEntryOut))


class HealthOut(OutSchema):
    status = fields.String(metadata={"description": "`ok` (an unreachable store is 503)"})
    store = Choice(STORE)
    version = fields.String(metadata={"description": "the release running (CHANGELOG.md)"})


class LivenessOut(OutSchema):
    status = fields.String(metadata={"description": "`ok` (a stopped or stalled loop is 503)"})
    loops = fields.List(
        fields.String(),
        metadata={"description": "the loops this process runs, each beating (none in `web`)"},
    )


class ProblemOut(OutSchema):
    type = fields.String()
    title = fields.String()
    status = fields.Integer()
    detail = fields.String()
    code = fields.String()
    instance = fields.String(
        metadata={"format": "uri-reference", "description": "the request's path"}
    )
    request_id = fields.String(
        metadata={"description": "the request's id: the answer's X-Request-ID header"}
    )
    errors = fields.Dict(
        keys=fields.String(),
        values=fields.List(fields.String()),
        metadata={
            "description": "the messages by field (`trigger.expression`, `roles.0`)",
            OMITTED_WHEN: "the code is not VALIDATION_FAILED",
        },
    )


def page_of(item: type[Schema]) -> type[Schema]:
    """A page of items: `{"items", "page", "page_size", "total", "next_cursor"}`."""
    name = item.__name__.removesuffix("Out") + "Page"
    return OutSchema.from_dict(
        {
            "items": fields.List(fields.Nested(item)),
            "page": fields.Integer(
                allow_none=True, metadata={"description": "the page's number; null by cursor"}
            ),
            "page_size": fields.Integer(),
            "total": fields.Integer(metadata={"description": "every item the filters match"}),
            "next_cursor": fields.String(
                allow_none=True,
                metadata={"description": "`?cursor=` for the page after; null on the last page"},
            ),
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
    initiator_id = fields.String(required=True, validate=validate.Length(1, 64))
    title_template = fields.String(validate=validate.Length(max=MAX_NAME), load_default="")
    form_data = form_data_field(load_default=dict)
    enabled = strict_bool(load_default=False)
    misfire_policy = Choice(MISFIRE_POLICY, load_default="catch_up")
    overlap_policy = OverlapPolicyIn(
        load_default=DEFAULT_OVERLAP_POLICY,
        metadata={"description": "skip_while_launching (default) (docs/time.md)"},
    )


class ScheduleFromPresetIn(StrictSchema):
    definition_id = fields.String(required=True, validate=validate.Length(1, 64))
    preset_id = fields.String(required=True, validate=validate.Regexp(PRESET_ID))
    initiator_id = fields.String(required=True, validate=validate.Length(1, 64))
    name = name_field(load_default=None)


ScheduleUpdate = replacing(ScheduleFieldsIn, "ScheduleUpdate")
SchedulePatch = merge_patch_of(ScheduleUpdate, "SchedulePatch")


class VersionQuery(Schema):
    version = fields.Integer(
        validate=validate.Range(1, 2**31),
        load_default=None,
        metadata={"description": "required unless If-Match is sent; a stale one is 409"},
    )


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
        allow_none=True, metadata={"description": "MISSED: how many missed cycles it stands for"}
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


class ScheduleOut(OutSchema):
    id = server_uuid()
    name = fields.String()
    definition_id = server_uuid()
    trigger = Described("TriggerOut")
    timezone = fields.String(metadata={"description": "IANA name"})
    initiator_id = fields.String()
    title_template = fields.String()
    form_data = form_data_field()
    enabled = fields.Boolean()
    misfire_policy = Choice(MISFIRE_POLICY)
    overlap_policy = Choice(OVERLAP_POLICY)
    preset_id = fields.String(allow_none=True)
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
        metadata={"description": "the definition's revision it was last saved against"}
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


class SavedPreviewQuery(Schema):
    count = fields.Integer(
        validate=validate.Range(1, MAX_PREVIEW),
        load_default=5,
        metadata={"description": "how many fire times"},
    )
    after = UtcDateTime(load_default=None, metadata={"description": "with an offset; default now"})


class PreviewOut(OutSchema):
    fire_times = fields.List(UtcDateTime())
    local_times = fields.List(LocalDateTime())


def body_key(what: str) -> fields.String:
    """A body's idempotency key, which the Idempotency-Key header may give instead."""
    return fields.String(
        validate=validate.Length(1, 128),
        metadata={
            "description": f"{what}; required unless the Idempotency-Key header gives it "
            "(when both are sent they must be equal)"
        },
    )


def command_id_field() -> fields.String:
    return body_key("the command's idempotency key")


class KeyedBody(StrictSchema):
    """A body with an idempotency key field (`key_field`), given in it or by the
    Idempotency-Key header (web.idempotency): one of the two is required. `reuse_code` is
    the problem code of a key sent again with another body."""

    key_field = "command_id"
    reuse_code = "COMMAND_ID_REUSED"

    @validates_schema(pass_original=True, skip_on_field_errors=False)
    def _key_given(self, data: dict[str, Any], original: Any, **kwargs: Any) -> None:
        if self.key_field not in original:
            raise ValidationError("Missing data for required field.", self.key_field)


class ApprovalSubmit(KeyedBody):
    command_id = command_id_field()
    definition_id = fields.String(required=True, validate=validate.Length(1, 64))
    title = name_field(required=True)
    form_data = form_data_field(load_default=dict)
    material_version = strict_int(0, 2**31, required=True)
    review_deadline_at = OffsetDateTime(
        load_default=None,
        metadata={
            "description": "default: now + the review window; its offset is kept beside the "
            "UTC value (`review_deadline_at_local`)"
        },
    )


class ApproveIn(KeyedBody):
    command_id = command_id_field()
    material_version = strict_int(0, 2**31, required=True)


class WithdrawIn(KeyedBody):
    command_id = command_id_field()
    material_version = strict_int(
        0,
        2**31,
        metadata={"description": "optional: a version other than the current is STALE_MATERIAL"},
    )


class ExtendDeadlineIn(KeyedBody):
    command_id = command_id_field()
    new_deadline_at = OffsetDateTime(
        required=True,
        metadata={"description": "its offset is kept beside the UTC value"},
    )
    reason = fields.String(required=True, validate=validate.Length(1, 500))


class SignCallbackIn(KeyedBody):
    command_id = command_id_field()
    contract_id = fields.String(required=True, validate=validate.Length(1, 128))
    material_version = strict_int(0, 2**31, required=True)
    occurred_at = UtcDateTime(required=True, metadata={"description": "the caller's claim"})
    source = fields.String(required=True, validate=validate.Length(1, 128))


class OriginOut(OutSchema):
    """The fire that launched an instance (requirement 001: workflow schedules)."""

    source = Choice(RUN_TRIGGER, metadata={"description": "what registered the run"})
    schedule_id = server_uuid()
    schedule_name = fields.String()
    fire_id = server_uuid(metadata={"description": "the run's id"})
    run_id = server_uuid(metadata={"description": "the same as fire_id (earlier releases)"})
    scheduled_for = instant_text(metadata={"description": "the run's planned instant"})
    trigger_kind = Choice(TRIGGER_KIND)
    trigger = Described("TriggerOut", metadata={"description": "the schedule's trigger, frozen"})
    definition_revision = fields.Integer(
        allow_none=True,
        dump_default=None,
        metadata={"description": "the definition's revision launched; null before 0.2.0"},
    )
    definition_name = fields.String(
        allow_none=True,
        dump_default=None,
        metadata={"description": "that revision's name; null before 0.2.0"},
    )
    saved_by = fields.String(
        allow_none=True,
        dump_default=None,
        metadata={
            "description": "who last saved the schedule; null if the launch did not record it"
        },
    )


def id_filter(description: str) -> fields.String:
    """A list filter on an id: an exact match, or left out."""
    return fields.String(
        validate=validate.Length(1, 64), load_default=None, metadata={"description": description}
    )


class ApprovalListQuery(PageQuery):
    state = Choice(APPROVAL_STATE, load_default=None, metadata={"description": "its state"})
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
    overlap_policy = OverlapPolicyIn(
        load_default=None,
        metadata={"description": "schedules on this overlap policy (`skip`: `skip_while_open`)"},
    )


class ObservationOut(OutSchema):
    """A signing callback as kept, matched against the instance when it was recorded."""

    command_id = fields.String()
    contract_id = fields.String()
    material_version = fields.Integer()
    occurred_at = instant_text(metadata={"description": "the claim"})
    source = fields.String()
    outcome = Choice(
        DECISION_OUTCOME, metadata={"description": "OBSERVED, or what a late callback got"}
    )
    recorded_at = instant_text()
    material_matches = fields.Boolean(
        metadata={"description": "its material_version was the instance's current one"}
    )
    contract_matches = fields.Boolean(
        metadata={"description": "its contract_id was the instance's (the first one binds it)"}
    )


class ExtensionOut(OutSchema):
    old_deadline_at = instant_text()
    new_deadline_at = instant_text()
    reason = fields.String()
    actor = fields.String()
    at = instant_text()
    rule_version = fields.Integer(metadata={"description": "the deadline rules' version"})


class WinningCommandOut(OutSchema):
    """The command that decided an instance."""

    command_id = fields.String(allow_none=True, metadata={"description": "null for a sweep"})
    kind = Choice(DECIDING_COMMAND)
    actor = fields.String()


def rule_version_field() -> fields.Integer:
    return fields.Integer(
        allow_none=True,
        dump_default=None,
        metadata={"description": "the deadline rules' version; null before 0.2.0 (version 1)"},
    )


def deadline_source(source: str) -> fields.String:
    return fields.String(metadata={"enum": [source]})


class ExplicitDeadlineOut(OutSchema):
    """The deadline the submission asked for."""

    source = deadline_source("explicit")
    rule_version = rule_version_field()


class WindowDeadlineOut(OutSchema):
    """The deadline the definition's review window set, from the submission's time."""

    source = deadline_source("definition")
    review_window_seconds = fields.Integer()
    definition_revision = fields.Integer(
        allow_none=True,
        dump_default=None,
        metadata={
            "description": "the definition's revision whose window it was; null when a "
            "schedule launched it (the run's `definition_revision`) or before 0.2.0"
        },
    )
    rule_version = rule_version_field()


class ExtendedDeadlineOut(OutSchema):
    """The deadline the last extend-deadline command set."""

    source = deadline_source("extended")
    reason = fields.String()
    rule_version = rule_version_field()


class ApprovalOut(OutSchema):
    id = server_uuid()
    definition_id = server_uuid()
    title = fields.String()
    form_data = form_data_field()
    applicant_id = fields.String()
    state = Choice(APPROVAL_STATE)
    material_version = fields.Integer()
    review_deadline_at = UtcDateTime()
    review_deadline_at_local = LocalDateTime(
        metadata={
            "description": "`review_deadline_at` at the offset it was given with; UTC "
            "(+00:00) when none was given, e.g. a deadline from the review window"
        }
    )
    deadline_policy = Tagged(
        "DeadlinePolicyOut",
        "source",
        {
            "explicit": ExplicitDeadlineOut,
            "definition": WindowDeadlineOut,
            "extended": ExtendedDeadlineOut,
        },
        metadata={"description": "how the review deadline was set"},
    )
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
    reminders = fields.List(
        fields.Nested(ReminderOut), metadata={"description": "from the definition at submission"}
    )
    escalation = fields.Nested(
        EscalationOut,
        allow_none=True,
        metadata={"description": "from the definition at submission; null: none"},
    )
    reminders_sent = fields.List(
        fields.Nested(ReminderSentOut),
        metadata={"description": "the reminders recorded so far, each once, oldest first"},
    )
    escalated_account_id = fields.String(
        allow_none=True, metadata={"description": "who it was escalated to; null until then"}
    )
    escalated_at = UtcDateTime(
        allow_none=True, metadata={"description": "when the escalation was recorded"}
    )
    next_notice_at = UtcDateTime(
        allow_none=True,
        metadata={
            "description": "when the next reminder or the escalation is due; null when none "
            "is left before the deadline, or once decided"
        },
    )


class CommandOut(OutSchema):
    outcome = Choice(DECISION_OUTCOME)
    state = Choice(APPROVAL_STATE)
    instance = fields.Nested(ApprovalOut)
    replayed = fields.Boolean()
    reason = fields.String(metadata={"description": "why the command won or lost"})
    winning_command = fields.Nested(
        WinningCommandOut,
        allow_none=True,
        metadata={"description": "the command that decided the instance; null while it waits"},
    )


class CommandRejection(Schema):
    """What a decision command that lost got: the members its problem document adds."""

    outcome = Choice(DECISION_OUTCOME, metadata={"description": "what it got"})
    state = Choice(APPROVAL_STATE, metadata={"description": "the instance's state now"})
    replayed = fields.Boolean(metadata={"description": "a repeat of the command, answered again"})
    reason = fields.String(metadata={"description": "why it lost; the same as `detail`"})
    winning_command = fields.Nested(
        WinningCommandOut,
        allow_none=True,
        metadata={"description": "the command that decided the instance; null while it waits"},
    )
    approval = fields.Nested(
        ApprovalOut,
        metadata={"description": "the instance as the command left it"},
    )


class CommandRejectedOut(ProblemOut, CommandRejection):
    """A decision command that lost (code COMMAND_REJECTED), recorded: a problem document with
    what the command got. Other 409s of the same operations are plain problem documents."""

    class Meta(OutSchema.Meta):
        exclude = ("errors",)


# The labels of the backlog figures that are numbers by label: every one is always there.
BACKLOG_LABELS = {
    "expiry_lag_buckets": (*map(str, EXPIRY_LAG_BOUNDS), "+Inf"),
    "sweep_failures": (SWEEP_VERSION_CONFLICT, SWEEP_UNREADABLE, SWEEP_ERROR),
}
BACKLOG_HELP = {
    "projection_lag_events": "events on the log the read models have not applied yet",
    "expiry_lag_buckets": "expiries recorded at most this many seconds after their deadline, "
    "by bound (`+Inf`: all)",
    "expiry_lag_sum_seconds": "the sum of those delays",
    "sweep_failures": "this process's failed sweeps, by reason",
}


def _backlog_field(figure: Field[Any], kind: Any) -> fields.Field[Any]:
    """A backlog figure's field: a number, or numbers by label (e.g. by reason)."""
    text = figure.metadata.get(GAUGE) or BACKLOG_HELP[figure.name]
    if get_origin(kind) is not dict:
        number = fields.Float if kind is float else fields.Integer
        return number(metadata={"description": text})
    labels = BACKLOG_LABELS[figure.name]
    return fields.Dict(
        keys=fields.String(),
        values=fields.Integer(),
        metadata={
            "description": text,
            "properties": {label: {"type": "integer"} for label in labels},
            "required": list(labels),
        },
    )


BacklogOut = OutSchema.from_dict(
    {
        figure.name: _backlog_field(figure, get_type_hints(Backlog)[figure.name])
        for figure in dataclass_fields(Backlog)
    },
    name="BacklogOut",
)


class RunNowIn(KeyedBody):
    key_field = "request_id"
    reuse_code = "REQUEST_ID_REUSED"
    request_id = body_key("with the caller's account and the schedule, the repeat key")
    version = strict_int(
        1, 2**31, metadata={"description": "the schedule's; optional, a stale one is 409"}
    )


class RunListQuery(PageQuery):
    status = Choice(RUN_STATUS, load_default=None, metadata={"description": "its status"})


class RunLogQuery(RunListQuery):
    schedule_id = fields.UUID(load_default=None, metadata={"description": "its schedule's id"})
    trigger = Choice(RUN_TRIGGER, load_default=None, metadata={"description": "what started it"})
    planned_from = UtcDateTime(load_default=None, metadata={"description": "inclusive"})
    planned_to = UtcDateTime(load_default=None, metadata={"description": "exclusive"})

    @validates_schema
    def _check_window(self, data: dict[str, Any], **kwargs: Any) -> None:
        start, end = data.get("planned_from"), data.get("planned_to")
        if start is not None and end is not None and end < start:
            raise ValidationError("must not be before planned_from", "planned_to")


class ErrorOut(OutSchema):
    """Why a launch failed."""

    code = fields.String(metadata={"description": "stable, e.g. DEFINITION_UNPUBLISHED"})
    message = fields.String()


class AttemptOut(OutSchema):
    number = fields.Integer()
    started_at = instant_text()
    finished_at = instant_text(allow_none=True, metadata={"description": "null while running"})
    outcome = Choice(
        ATTEMPT_OUTCOME, allow_none=True, metadata={"description": "null while running"}
    )
    error = fields.Nested(ErrorOut, allow_none=True)
    instance_id = server_uuid(allow_none=True, metadata={"description": "the instance it launched"})
    worker = fields.String()


class RunOut(OutSchema):
    id = server_uuid()
    schedule_id = server_uuid()
    schedule_version = fields.Integer(metadata={"description": "the schedule's, at registration"})
    definition_revision = fields.Integer(
        metadata={"description": "the definition's revision it launches, frozen at registration"}
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
    initiator_id = fields.String()
    attempt_count = fields.Integer()
    max_attempts = fields.Integer()
    next_attempt_at = UtcDateTime(allow_none=True)
    last_error = fields.Nested(
        ErrorOut, allow_none=True, metadata={"description": "the last failed attempt's error"}
    )
    instance_id = server_uuid(allow_none=True, metadata={"description": "the instance it launched"})
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


# -- callback sources (docs/webhooks.md#verified-callbacks) --------------------------------


class CallbackSourceCreate(StrictSchema):
    name = fields.String(
        required=True,
        validate=validate.Regexp(f"^{SOURCE_NAME.pattern}$", error=SOURCE_NAME_RULE),
        metadata={
            "description": "unique among the tenant's sources; a signed delivery names it in "
            "its body's `source`"
        },
    )
    description = fields.String(load_default="", validate=validate.Length(max=MAX_DESCRIPTION))


class CallbackSourceOut(OutSchema):
    id = server_uuid(metadata={"description": "signed deliveries act as `source:<id>`"})
    name = fields.String()
    description = fields.String()
    generation = fields.Integer(
        metadata={"description": "which secret is current: 1, then one more at each rotation"}
    )
    created_at = UtcDateTime()
    secret_created_at = UtcDateTime(metadata={"description": "when the current secret was made"})
    version = fields.Integer()


class CallbackSourceSecretOut(CallbackSourceOut):
    secret = fields.String(
        allow_none=True,
        metadata={
            "description": "the signing secret (Standard Webhooks, `whsec_` and base64), shown "
            "in this answer only; null on a replay of the request"
        },
    )
