"""The fields and schemas every resource's shapes are made of: instants, choices, strict
bodies, answers, pages, versions, reasons and keys."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from copy import copy
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from marshmallow import (
    EXCLUDE,
    RAISE,
    Schema,
    ValidationError,
    fields,
    missing,
    validates_schema,
)

from domain.messages import Message
from domain.reasons import MAX_REASON
from projections.keyset import ListSpec
from web.problems import STATUS_OF_CODE
from web.schemas import validate

MAX_NAME = 200

EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)

LATEST = datetime(2999, 12, 31, tzinfo=UTC)

MAX_DATETIME_LENGTH = 64  # 2026-10-01T18:00:00.123456+08:00 is 32


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
            raise ValidationError(
                Message("must be at most {count} characters long", count=MAX_DATETIME_LENGTH)
            )
        parsed = super()._deserialize(value, attr, data, **kwargs)
        if parsed.tzinfo is None or parsed.utcoffset() is None:
            raise ValidationError(
                Message("must carry an offset, e.g. 2026-10-01T18:00:00+08:00 or ...Z")
            )
        if not EARLIEST <= parsed <= LATEST:
            raise ValidationError(Message("must lie between the years 1970 and 2999"))
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


def merge_patch_of(schema: type[Schema], name: str, fields_in: type[Schema]) -> type[Schema]:
    """A PATCH body as documented (web.api.patched applies it): any field of the PUT body
    `schema`, null only where null removes it (a field with a default in `fields_in`, or one
    the PUT may leave out); an object is merged into the current one, so it is partial."""
    defaults = defaults_of(fields_in)
    optional = {
        key: _partial(field, key in defaults or not field.required)
        for key, field in _fields_of(schema).items()
    }
    return type(name, (schema,), optional)


def _partial(field: fields.Field[Any], removable: bool) -> fields.Field[Any]:
    """A field of a merge patch: an object merged into the current one takes any of its keys
    (a `Described` one refers to its `...Patch` component); null where it removes the field."""
    changed = _copied(field, allow_none=removable)
    if isinstance(field, Described):
        changed.component = field.component.removesuffix("In") + "Patch"  # type: ignore[attr-defined]
    if isinstance(field, fields.Nested) and not field.many and isinstance(field.nested, type):
        changed.nested = partial_of(field.nested)  # type: ignore[attr-defined]
        changed._schema = None  # type: ignore[attr-defined]  # not the full shape's, if made
    return changed


@functools.cache
def partial_of(schema: type[Schema]) -> type[Schema]:
    """An object merged into the current one: any of `schema`'s fields (`EscalationIn` gives
    `EscalationPatch`), null where null removes a key it may leave out."""
    name = schema.__name__.removesuffix("In") + "Patch"
    return type(
        name,
        (schema,),
        {key: _partial(field, not field.required) for key, field in _fields_of(schema).items()},
    )


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

NOT_A_CURSOR = Message("is not a cursor of this list: use a next_cursor it answered, as it is")


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
            raise ValidationError(Message("give page or cursor, not both"), "cursor")


MAX_SEARCH = 200


def search_field(what: str) -> fields.String:
    """A list's `q`: the items whose `what` holds this text, in any case (Chinese too)."""
    return fields.String(
        validate=validate.Length(1, MAX_SEARCH),
        load_default=None,
        metadata={"description": f"only items whose {what} holds this text, in any case"},
    )


def sort_choices(name: str, spec: ListSpec) -> Choices:
    """The `sort` values of a list, as a component of the document."""
    return Choices(
        name,
        spec.sorts,
        f"a field to sort by, `-field` for descending (default `{spec.default_sort}`); any "
        "other than the default pages by number only (docs/api.md#sorting)",
    )


def sort_field(choices: Choices) -> Choice:
    """A list's `sort`: one of its sortable fields, `-` first for descending."""
    return Choice(
        choices,
        load_default=None,
        metadata={"description": "the order; equal values in a stable order of their own"},
    )


def list_query(name: str, spec: ListSpec, searched: str) -> type[Schema]:
    """The query of a list with no filters of its own: paging, `q` on `searched`, `sort`."""
    choices = sort_choices(name.removesuffix("ListQuery") + "Sort", spec)
    fields_of = {"q": search_field(searched), "sort": sort_field(choices)}
    return type(name, (PageQuery,), fields_of)


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


FORM_DATA = (
    "the caller's own JSON object (at most 64 KiB): any keys, kept and given back exactly as "
    "sent, never interpreted"
)


def form_data_field(**kwargs: Any) -> fields.Dict:
    """Form data: an open JSON object, the caller's."""
    return fields.Dict(keys=fields.String(), metadata={"description": FORM_DATA}, **kwargs)


def reason_code_field() -> fields.String:
    """A reason's stable code (domain/reason_codes.py): what a program acts on."""
    return fields.String(
        allow_none=True,
        metadata={
            "description": "why, as a stable code a later release may add to (docs/api.md"
            "#reason-codes); null where it was recorded before release 0.11.0, with words alone"
        },
    )


def reason_params_field() -> fields.Dict:
    """The values a reason's code names, from which its words are made."""
    return fields.Dict(
        keys=fields.String(),
        allow_none=True,
        metadata={"description": "the values the reason's code names: an open object"},
    )


PROBLEM_CODE = Choices(
    "ProblemCode",
    tuple(STATUS_OF_CODE),
    "what went wrong, for a program to act on (docs/api.md#errors); `detail` says it in words",
)


class ProblemOut(OutSchema):
    type = fields.String()
    title = fields.String()
    status = fields.Integer()
    detail = fields.String()
    code: fields.String = Choice(PROBLEM_CODE)  # a lost command's is one value alone
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


def page_of(item: type[Schema], **more: fields.Field[Any]) -> type[Schema]:
    """A page of items: `{"items", "page", "page_size", "total", "next_cursor"}`, and the
    list's `more` fields."""
    name = item.__name__.removesuffix("Out") + "Page"
    return OutSchema.from_dict(
        {
            "items": fields.List(fields.Nested(item)),
            "page": fields.Integer(
                allow_none=True, metadata={"description": "the page's number; null by cursor"}
            ),
            "page_size": fields.Integer(),
            "total": fields.Integer(
                metadata={
                    "description": "every item the filters match, counted up to 10,000 "
                    "(more: `total_capped`)"
                }
            ),
            "total_capped": fields.Boolean(
                metadata={"description": "true when more than `total` (10,000) items match"}
            ),
            "next_cursor": fields.String(
                allow_none=True,
                metadata={"description": "`?cursor=` for the page after; null on the last page"},
            ),
            **more,
        },
        name=name,
    )


class LocalDateTime(fields.DateTime):
    """ISO 8601 with the local offset, e.g. `2026-03-08T03:00:00-04:00`."""

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> str | None:
        return None if value is None else str(value.isoformat())


class VersionQuery(Schema):
    version = fields.Integer(
        validate=validate.Range(1, 2**31),
        load_default=None,
        metadata={"description": "required unless If-Match is sent; a stale one is 409"},
    )


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
            raise ValidationError(Message("Missing data for required field."), self.key_field)


def id_filter(description: str) -> fields.String:
    """A list filter on an id: an exact match, or left out."""
    return fields.String(
        validate=validate.Length(1, 64), load_default=None, metadata={"description": description}
    )
