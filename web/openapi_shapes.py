"""What the document says about body shapes beyond marshmallow's own mapping.

- A `Choice` field refers to its named enum component (`RunStatus`, ...), defined once. In a
  request the enum is closed (the server refuses another value); in an answer it is open:
  `anyOf: [{$ref}, {type: string}]`, since a later release may add values (a `REJECTED`
  state, a `CALENDAR` skip). openapi-python-client reads a value it does not know as a `str`
  and openapi-typescript types it `Enum | string` (tests/e2e/test_generated_client.py).
- A `Described` field refers to a component written here: the trigger's shapes, which the
  domain checks (`domain/triggers.py`), and the deadline rule's (`domain/calendars.py`),
  closed in requests (unknown keys are refused) and open in answers.
- A `Tagged` field refers to a `oneOf` of its shapes' components, with a discriminator; the
  field's description is the component's.
- A property that is one of several shapes (a `Described` trigger, deadline rule or target, a
  `Tagged` field) is a bare reference to its `oneOf` component, whatever the field says beside
  it: openapi-typescript reads `allOf: [{$ref}]` around a discriminated union as the union with
  its discriminator left out (`Omit<TriggerIn, "kind">`), which takes any object.
- A nullable reference is `oneOf: [{$ref}, {type, nullable: true, enum: [null]}]`: the second
  branch admits null and nothing else (apispec writes an `anyOf` whose untyped object branch
  swallows the typed one; `allOf: [{$ref}]` beside `nullable: true` admits no null in OpenAPI
  3.0.3, where `nullable` counts only beside a `type`, and Redocly's lint refuses it). A
  reference with a description or a default is `allOf: [{$ref}]` beside them, since OpenAPI 3.0
  ignores the siblings of a bare `$ref`. Generated clients read both as the referred type
  (`X | None` for the nullable one).
- A query parameter is never null: its schema drops the null branch and a null default, so an
  enum filter is a bare reference to its component.
- A request body's field says its default in its description, not as `default`, which
  openapi-typescript (its `defaultNonNullable`, on by default) reads as "always present" in a
  component, so that a body leaving the field out would not compile; an answer's and a query
  parameter's keep `default` (`with_request_defaults_said`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from apispec.ext.marshmallow.openapi import OpenAPIConverter
from marshmallow import fields

from domain.calendars import CALENDAR_KEY, MAX_RULE_DAYS, MAX_RULE_HOURS, MAX_RULE_SECONDS
from domain.jobs import (
    APPROVAL,
    AUDIT_CHECKPOINT,
    AUDIT_VERIFY,
    JOBS,
    LONG_TIMEOUT,
    MAX_PARAM_TEXT,
    SHORT_TIMEOUT,
    SYSTEM_HEALTH_CHECK,
    WEBHOOK_PING,
)
from domain.triggers import MAX_EXPRESSION_LENGTH, MAX_WEEKDAYS, MAX_WINDOWS
from web.schemas.base import OMITTED_WHEN, Choice, Choices, Described, OutSchema, Tagged
from web.schemas.enums import DEADLINE_RULE_KIND, TARGET_KIND, TRIGGER_KIND

SCHEMAS = "#/components/schemas/"
HH_MM = "^([01][0-9]|2[0-3]):[0-5][0-9]$"  # domain/triggers.py `_HH_MM`
MAX_INTERVAL_MINUTES = 1440  # domain/triggers.py `WindowIntervalTrigger`
# What a wrapped reference keeps of the field's own description.
KEPT = ("description", "default", "readOnly", "writeOnly", "deprecated", "example", "examples")
REQUEST, ANSWER, PATCH = "In", "Out", "Patch"
Shaped = Callable[[str], dict[str, dict[str, Any]]]  # a side's components, by name
# The open branch of an enum in an answer.
LATER_VALUE = {"type": "string", "description": "a value a later release may add"}


def register_shapes(spec: APISpec, plugin: MarshmallowPlugin) -> None:
    """Teach the plugin's converter the fields above; their components are registered when
    first referred to, so the document holds no component nothing uses."""
    converter = plugin.converter
    assert converter is not None, "the plugin is initialised with the spec"
    shapes = Shapes(spec, converter)

    def cronledger_shape(
        self: OpenAPIConverter, field: fields.Field[Any], ret: dict[str, Any], **kwargs: Any
    ) -> dict[str, Any]:
        return shapes.property_of(field, ret)

    def cronledger_parameter(
        self: OpenAPIConverter, field: fields.Field[Any], ret: dict[str, Any], **kwargs: Any
    ) -> dict[str, Any]:
        return {"schema": query_schema(ret["schema"])} if "schema" in ret else {}

    converter.add_attribute_function(cronledger_shape)  # type: ignore[no-untyped-call]
    converter.add_parameter_attribute_function(cronledger_parameter)


def reference(name: str) -> dict[str, str]:
    return {"$ref": SCHEMAS + name}


def only_null(text: bool) -> dict[str, Any]:
    """A schema that admits null and nothing else (beside a reference to a string enum, or to
    an object)."""
    return {"type": "string" if text else "object", "nullable": True, "enum": [None]}


def is_only_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("enum") == [None]


class Shapes:
    """The components the fields refer to, registered on first use."""

    def __init__(self, spec: APISpec, converter: OpenAPIConverter) -> None:
        self.spec = spec
        self.converter = converter
        self.enums: dict[str, Choices] = {}

    def property_of(self, field: fields.Field[Any], ret: dict[str, Any]) -> dict[str, Any]:
        """The field's property: a reference where it names a component, else as it is."""
        target = self.target_of(field, ret)
        if target is None:
            return {}
        kept = {key: value for key, value in ret.items() if key in KEPT or key.startswith("x-")}
        if "default" in kept and kept["default"] is None:
            del kept["default"]
        ret.clear()
        if field.allow_none:
            return {"oneOf": [target, only_null(isinstance(field, Choice))], **kept}
        if "$ref" not in target:
            return {**target, **kept}
        if self.is_union(target):
            return target
        return {"allOf": [target], **kept} if kept else target

    def is_union(self, target: Mapping[str, str]) -> bool:
        """Whether `target` refers to a `oneOf` component: one of several shapes."""
        name = target["$ref"].removeprefix(SCHEMAS)
        return "oneOf" in self.spec.components.schemas.get(name, {})

    def target_of(self, field: fields.Field[Any], ret: Mapping[str, Any]) -> dict[str, Any] | None:
        if isinstance(field, Choice):
            closed = self.enum(field.choices)
            return {"anyOf": [closed, LATER_VALUE]} if answered(field) else closed
        if isinstance(field, Described):
            return self.described(field.component)
        if isinstance(field, Tagged):
            return self.tagged(field)
        if isinstance(field, fields.Nested) and "anyOf" in ret:  # apispec's nullable Nested
            branch: dict[str, str] = next(b for b in ret["anyOf"] if "$ref" in b)
            return branch
        return None

    def enum(self, choices: Choices) -> dict[str, str]:
        known = self.enums.setdefault(choices.name, choices)
        if known != choices:
            raise ValueError(f"two enums are named {choices.name}: {known} and {choices}")
        self.define(choices.name, enum_component(choices))
        return reference(choices.name)

    def described(self, name: str) -> dict[str, str]:
        shapes, side = DESCRIBED[name]
        for component, shape in shapes(side).items():
            self.define(component, shape)
        return reference(name)

    def tagged(self, field: Tagged) -> dict[str, str]:
        targets = {
            value: self.converter.resolve_nested_schema(shape)  # type: ignore[no-untyped-call]
            for value, shape in field.shapes.items()
        }
        described = field.metadata.get("description")
        self.define(
            field.component,
            {
                **({"description": described} if described else {}),
                "oneOf": list(targets.values()),
                "discriminator": {
                    "propertyName": field.key,
                    "mapping": {value: target["$ref"] for value, target in targets.items()},
                },
            },
        )
        return reference(field.component)

    def define(self, name: str, component: dict[str, Any]) -> None:
        if name not in self.spec.components.schemas:
            self.spec.components.schema(name, component)


def enum_component(choices: Choices) -> dict[str, Any]:
    return {"type": "string", "enum": list(choices.values), "description": choices.description}


def answered(field: fields.Field[Any]) -> bool:
    """Whether the field is part of an answer (an `OutSchema`'s), not of a request."""
    root = field
    while isinstance(getattr(root, "parent", None), fields.Field):
        root = root.parent  # type: ignore[assignment]
    return isinstance(getattr(root, "parent", None), OutSchema)


def query_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A query parameter's schema: never null, and a lone reference bare."""
    simpler = {
        key: value
        for key, value in schema.items()
        if key != "nullable" and not (key == "default" and value is None)
    }
    for key in ("allOf", "oneOf"):
        branches = [branch for branch in simpler.get(key, []) if not is_only_null(branch)]
        if list(simpler) == [key] and len(branches) == 1:
            return dict(branches[0])
    return simpler


def trigger_shapes(side: str) -> dict[str, dict[str, Any]]:
    """The trigger's components of a request (`In`: unknown keys refused) or an answer (`Out`:
    open to keys added later); docs/time.md describes them."""
    closed = {"additionalProperties": False} if side == REQUEST else {}
    cron, window_interval, window = (
        f"CronTrigger{side}",
        f"WindowIntervalTrigger{side}",
        f"TriggerWindow{side}",
    )
    hh_mm = {"type": "string", "pattern": HH_MM, "description": "a local wall time, HH:MM"}
    return {
        window: {
            "type": "object",
            "description": "local wall times, both ends included; start not after end",
            "properties": {"start": hh_mm, "end": hh_mm},
            "required": ["start", "end"],
            **closed,
        },
        cron: {
            "type": "object",
            "description": "a cron expression in the schedule's time zone (docs/time.md)",
            "properties": {
                "kind": {"type": "string", "enum": ["cron"]},
                "expression": {
                    "type": "string",
                    "maxLength": MAX_EXPRESSION_LENGTH,
                    "description": "`minute hour day-of-month month day-of-week`, or six fields "
                    "with the seconds first; blanks between fields are kept as single spaces",
                },
            },
            "required": ["kind", "expression"],
            **closed,
        },
        window_interval: {
            "type": "object",
            "description": "every `interval_minutes` from each window's start to its end, on "
            "the weekdays, in the schedule's time zone (docs/time.md)",
            "properties": {
                "kind": {"type": "string", "enum": ["window-interval"]},
                "weekdays": {
                    "type": "array",
                    "items": {"type": "integer", "minimum": 1, "maximum": 7},
                    "minItems": 1,
                    "maxItems": MAX_WEEKDAYS,
                    "description": "ISO days, 1 = Monday ... 7 = Sunday; a repeat counts once "
                    "(answers list each day once, ascending)",
                },
                "windows": {
                    "type": "array",
                    "items": reference(window),
                    "minItems": 1,
                    "maxItems": MAX_WINDOWS,
                },
                "interval_minutes": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_INTERVAL_MINUTES,
                },
            },
            "required": ["kind", "weekdays", "windows", "interval_minutes"],
            **closed,
        },
        f"Trigger{side}": {
            "description": "when a schedule fires: a cron expression, or intervals within "
            "daily windows (docs/time.md)",
            "oneOf": [reference(cron), reference(window_interval)],
            "discriminator": {
                "propertyName": "kind",
                "mapping": {"cron": SCHEMAS + cron, "window-interval": SCHEMAS + window_interval},
            },
        },
    }


def deadline_rule_shapes(side: str) -> dict[str, dict[str, Any]]:
    """The deadline rule's components of a request (`In`) or an answer (`Out`);
    docs/calendars.md#deadlines-in-working-time describes them."""
    closed = {"additionalProperties": False} if side == REQUEST else {}
    seconds, days, hours = (
        f"SecondsRule{side}",
        f"WorkingDaysRule{side}",
        f"WorkingHoursRule{side}",
    )
    calendar = {
        "type": "string",
        "pattern": f"^{CALENDAR_KEY.pattern}$",
        "description": "the key of one of the tenant's calendars",
    }

    def count(most: int, description: str) -> dict[str, Any]:
        return {"type": "integer", "minimum": 1, "maximum": most, "description": description}

    return {
        seconds: {
            "type": "object",
            "description": "the deadline in plain seconds after submission (the review window)",
            "properties": {
                "kind": {"type": "string", "enum": ["seconds"]},
                "seconds": count(MAX_RULE_SECONDS, "seconds after submission"),
            },
            "required": ["kind", "seconds"],
            **closed,
        },
        days: {
            "type": "object",
            "description": "the cut-off time on the Nth working day after the submission's "
            "business day, on the calendar",
            "properties": {
                "kind": {"type": "string", "enum": ["working_days"]},
                "days": count(MAX_RULE_DAYS, "working days after the business day"),
                "calendar": calendar,
                "cutoff": {
                    "type": "string",
                    "pattern": HH_MM,
                    "description": "HH:MM, the calendar's local time: a submission at or after "
                    "it belongs to the next working day; the deadline is this time",
                },
            },
            "required": ["kind", "days", "calendar", "cutoff"],
            **closed,
        },
        hours: {
            "type": "object",
            "description": "this many of the calendar's working hours after submission",
            "properties": {
                "kind": {"type": "string", "enum": ["working_hours"]},
                "hours": count(MAX_RULE_HOURS, "working hours after submission"),
                "calendar": calendar,
            },
            "required": ["kind", "hours", "calendar"],
            **closed,
        },
        f"DeadlineRule{side}": {
            "description": "how an instance's deadline is counted: plain seconds, working days "
            "or working hours (docs/calendars.md)",
            "oneOf": [reference(seconds), reference(days), reference(hours)],
            "discriminator": {
                "propertyName": "kind",
                "mapping": {
                    "seconds": SCHEMAS + seconds,
                    "working_days": SCHEMAS + days,
                    "working_hours": SCHEMAS + hours,
                },
            },
        },
    }


# Each target kind's component name and what it says (docs/jobs.md).
TARGET_COMPONENTS = {
    APPROVAL: ("ApprovalTarget", "launch an approval instance from the schedule's definition"),
    SYSTEM_HEALTH_CHECK: (
        "HealthCheckTarget",
        "check that the store answers and that the worker's process's loops beat",
    ),
    AUDIT_VERIFY: (
        "AuditVerifyTarget",
        "verify the events appended since the last verified position (its last successful "
        "run's `to`), or with `full` the whole log, its Merkle tree and signed checkpoints",
    ),
    AUDIT_CHECKPOINT: ("AuditCheckpointTarget", "sign a checkpoint of the log's Merkle tree now"),
    WEBHOOK_PING: ("WebhookPingTarget", "send a `ping` message to one webhook subscription"),
}
JOB_PARAMS = {
    AUDIT_VERIFY: {
        "full": {
            "type": "boolean",
            "default": False,
            "description": f"a whole pass (timeout up to {LONG_TIMEOUT} s, default "
            f"{LONG_TIMEOUT}); false: the events appended since the last verified position",
        }
    },
    WEBHOOK_PING: {
        "webhook_id": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_PARAM_TEXT,
            "description": "one of the tenant's webhook subscriptions",
        }
    },
}


def target_shapes(side: str) -> dict[str, dict[str, Any]]:
    """A schedule's target's components, of a request (`In`) or an answer (`Out`): an
    approval, or one of the built-in jobs with its params and timeout (docs/jobs.md)."""
    closed = {"additionalProperties": False} if side == REQUEST else {}
    shapes: dict[str, dict[str, Any]] = {}
    for kind, (name, description) in TARGET_COMPONENTS.items():
        properties: dict[str, Any] = {"kind": {"type": "string", "enum": [kind]}}
        required = ["kind"]
        if kind in JOBS:
            properties.update(_job_properties(kind, side))
            required += ["params", "timeout_seconds"] if side == ANSWER else []
        shapes[f"{name}{side}"] = {
            "type": "object",
            "description": description,
            "properties": properties,
            "required": required,
            **closed,
        }
    shapes[f"Target{side}"] = {
        "description": "what a schedule's cycle does: launch an approval (the default) or run "
        "one of the built-in jobs (docs/jobs.md"
        + ("; saving one needs `directory:manage`)" if side == REQUEST else ")"),
        "oneOf": [reference(f"{name}{side}") for name, _ in TARGET_COMPONENTS.values()],
        "discriminator": {
            "propertyName": "kind",
            "mapping": {
                kind: SCHEMAS + f"{name}{side}" for kind, (name, _) in TARGET_COMPONENTS.items()
            },
        },
    }
    return shapes


def _job_properties(kind: str, side: str) -> dict[str, Any]:
    params = JOB_PARAMS.get(kind, {})
    job = JOBS[kind]
    most = LONG_TIMEOUT if job.long_when else SHORT_TIMEOUT
    wanted = [name for name, spec in job.params.items() if spec.default is None]
    described = (
        "the job's params; in an answer, with their defaults"
        if params
        else "an open object: this kind takes no params yet, `{}`"
    )
    return {
        "params": {
            "type": "object",
            "properties": params,
            **({"required": wanted} if wanted else {}),
            **({"additionalProperties": False} if side == REQUEST else {}),
            "description": described,
        },
        "timeout_seconds": {
            "type": "integer",
            "minimum": 1,
            "maximum": most,
            "description": f"the job fails with `JOB_TIMEOUT` past it; default "
            f"{job.default_timeout}"
            + (
                f" ({LONG_TIMEOUT} with `full`, the only way past {SHORT_TIMEOUT})"
                if most > SHORT_TIMEOUT
                else ""
            ),
        },
    }


def job_result_shapes(side: str) -> dict[str, dict[str, Any]]:
    """A built-in job's result summary, in an answer: each kind says some of these
    (docs/jobs.md#results); never its params or what a receiver answered."""

    def said(kind: str, description: str) -> dict[str, Any]:
        """A key some kinds' results carry (`ok` alone is in every one)."""
        return {"type": kind, "description": description, OMITTED_WHEN: "another kind's result"}

    return {
        "JobResultOut": {
            "type": "object",
            "description": "a built-in job's summary once it succeeded (docs/jobs.md#results)",
            "properties": {
                "ok": {
                    "type": "boolean",
                    "description": "always true: a job that finds a fault fails instead",
                },
                "full": said("boolean", "`audit.verify`: a whole pass, or since the last"),
                "events_verified": said("integer", "`audit.verify`: the events it checked"),
                "from_position": {
                    **said("integer", "`audit.verify`: the first position checked"),
                    "nullable": True,
                },
                "to_position": said("integer", "`audit.verify`: the last position vouched for"),
                "checkpoints_proven": said("integer", "`audit.verify`, full: checkpoints proven"),
                "signed": said("boolean", "`audit.checkpoint`: whether it signed a new one"),
                "tree_size": said("integer", "`audit.checkpoint`: the tree size signed last"),
                "loops": said("integer", "`system.health_check`: the loops found beating"),
                "status": said("integer", "`webhook.ping`: the receiver's HTTP status (2xx)"),
                "delivery_id": {
                    **said("string", "`webhook.ping`: the message, on the subscription"),
                    "format": "uuid",
                },
            },
            "required": ["ok"],
        }
    }


def patch_shapes(shapes: Shaped, name: str, kind: Choices, side: str) -> dict[str, dict[str, Any]]:
    """The merge patch of an object of several shapes (`TriggerPatch`): it is merged into the
    current object (RFC 7396), so it takes any key of any of its request shapes and requires
    none, its `kind` one of `kind`'s; null removes a key, as changing the kind needs for the
    other kind's keys."""
    requested = shapes(REQUEST)
    alternatives = requested[f"{name}{REQUEST}"]["oneOf"]
    merged: dict[str, Any] = {}
    for alternative in alternatives:
        shape = requested[alternative["$ref"].removeprefix(SCHEMAS)]
        merged = _wider(merged, {**shape, "required": []})
    properties = {
        key: reference(kind.name) if key == "kind" else {**property_, "nullable": True}
        for key, property_ in merged["properties"].items()
    }
    patch = {
        "type": "object",
        "description": f"a merge patch of a {name} (RFC 7396): any of its keys, merged into the "
        "current one; null removes a key",
        "properties": properties,
        "additionalProperties": False,
    }
    return {**requested, kind.name: enum_component(kind), f"{name}{side}": patch}


def _wider(one: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """A schema taking what either takes, of two alike (the same key in two shapes): enums
    and properties joined, bounds widened, nothing required."""
    wider = {**one, **other}
    if "enum" in one and "enum" in other:
        wider["enum"] = list(dict.fromkeys([*one["enum"], *other["enum"]]))
    if "maximum" in one and "maximum" in other:
        wider["maximum"] = max(one["maximum"], other["maximum"])
    if "properties" in one and "properties" in other:
        wider["properties"] = {
            key: _wider(one["properties"].get(key, {}), other["properties"].get(key, {}))
            for key in {**one["properties"], **other["properties"]}
        }
        wider.pop("description", None)
    wider.pop("required", None)
    return wider


# The components a `Described` field may name, each of a request or an answer: the trigger,
# the deadline rule and a schedule's target; a merge patch of each; and, in answers, a job's
# result.
DESCRIBED: dict[str, tuple[Shaped, str]] = {
    **{
        f"{name}{side}": (shapes, side)
        for name, shapes in (
            ("Trigger", trigger_shapes),
            ("DeadlineRule", deadline_rule_shapes),
            ("Target", target_shapes),
        )
        for side in (REQUEST, ANSWER)
    },
    **{
        f"{name}{PATCH}": (functools.partial(patch_shapes, shapes, name, kind), PATCH)
        for name, shapes, kind in (
            ("Trigger", trigger_shapes, TRIGGER_KIND),
            ("DeadlineRule", deadline_rule_shapes, DEADLINE_RULE_KIND),
            ("Target", target_shapes, TARGET_KIND),
        )
    },
    "JobResultOut": (job_result_shapes, ANSWER),
}


def with_request_defaults_said(document: dict[str, Any]) -> dict[str, Any]:
    """The document with each default of a request body's fields said in the field's
    description instead of as `default`: openapi-typescript, by default (`defaultNonNullable`),
    types a component's property that has a `default` as always present, so a body leaving it
    out would not compile. An answer's defaults, and a query parameter's, stay as they are."""
    schemas = document["components"]["schemas"]
    bodies = [
        operation["requestBody"]
        for operations in document["paths"].values()
        for operation in operations.values()
        if "requestBody" in operation
    ]
    answers = [document["paths"], document["components"].get("responses", {})]
    requested = reachable(schemas, bodies) - reachable(schemas, answers, bodies)
    said = {name: defaults_said(schemas[name]) for name in requested}
    return {**document, "components": {**document["components"], "schemas": schemas | said}}


def reachable(
    schemas: Mapping[str, Any], roots: list[Any], left_out: list[Any] | None = None
) -> set[str]:
    """The component schemas `roots` refer to, directly or through others; not through the
    request bodies `left_out`."""
    pending = [name for root in roots for name in references(root, left_out or [])]
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name not in seen:
            seen.add(name)
            pending += references(schemas[name], [])
    return seen


def references(value: Any, left_out: list[Any]) -> list[str]:
    """The component schemas `value` refers to directly, except within `left_out`."""
    if any(value is body for body in left_out):
        return []
    if isinstance(value, dict):
        found = [value["$ref"].removeprefix(SCHEMAS)] if SCHEMAS in value.get("$ref", "") else []
        return found + [name for item in value.values() for name in references(item, left_out)]
    if isinstance(value, list):
        return [name for item in value for name in references(item, left_out)]
    return []


def defaults_said(schema: Any) -> Any:
    """`schema` with every property's `default` moved into its description."""
    if isinstance(schema, list):
        return [defaults_said(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    said = {key: defaults_said(value) for key, value in schema.items() if key != "properties"}
    if "properties" in schema:
        said["properties"] = {
            name: default_in_description(defaults_said(value))
            for name, value in schema["properties"].items()
        }
    return said


def default_in_description(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` without `default`, its description saying it unless it does already; a null
    default goes unsaid, as leaving a nullable field out is sending null."""
    if "default" not in schema:
        return schema
    value = schema["default"]
    rest = {key: item for key, item in schema.items() if key != "default"}
    shown = value if isinstance(value, str) and value else json.dumps(value)
    said = f"default `{shown}`"
    if value is None or said in schema.get("description", ""):
        return rest
    return {**rest, "description": "; ".join(filter(None, [schema.get("description"), said]))}
