"""The document's body shapes, as a generated client reads them: answers list every field they
always carry as required and stay open to new ones, instants say so, enums are named once,
and every polymorphic object is spelled out."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from web.schemas.base import OMITTED_WHEN

SCHEMAS = "#/components/schemas/"
JSON_TYPES = ("application/json", "application/problem+json", "application/merge-patch+json")
# The objects an answer may carry whose keys are not the document's: the caller's form data
# and an event's own fields.
OPEN_OBJECTS = {
    ("form_data", "the caller's own JSON object"),
    ("data", "an open object"),
    ("reason_params", "an open object"),
    ("params", "an open object"),
}
NAMED_ENUMS = {
    "RunStatus",
    "RunTrigger",
    "ApprovalState",
    "DecisionOutcome",
    "SkipReasonCode",
    "OverlapPolicy",
    "MisfirePolicy",
    "TriggerKind",
    "Role",
    "OperationKind",
    "AggregateType",
    "Store",
}


def media_types(document: dict[str, Any], side: str) -> Iterator[dict[str, Any]]:
    """The JSON media type objects of every request body (`request`) or answer (`response`)."""
    for operations in document["paths"].values():
        for operation in operations.values():
            if side == "request":
                content = operation.get("requestBody", {}).get("content", {})
                yield from (m for kind, m in content.items() if kind in JSON_TYPES)
                continue
            for answer in operation["responses"].values():
                answer = resolved(document, answer)
                yield from (
                    m for kind, m in answer.get("content", {}).items() if kind in JSON_TYPES
                )


def resolved(document: dict[str, Any], value: Any) -> Any:
    while isinstance(value, dict) and "$ref" in value:
        found: Any = document
        for part in value["$ref"].removeprefix("#/").split("/"):
            found = found[part]
        value = found
    return value


def references(value: Any) -> Iterator[str]:
    """The component schemas `value` refers to directly."""
    yield from (
        name for name in re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', dump(value))
    )


def dump(value: Any) -> str:
    return json.dumps(value)


def reachable(document: dict[str, Any], side: str) -> set[str]:
    """The component schemas a request body (or an answer) may contain."""
    schemas = document["components"]["schemas"]
    pending = [name for media in media_types(document, side) for name in references(media)]
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name not in seen:
            seen.add(name)
            pending += references(schemas[name])
    return seen


def subschemas(schema: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object within `schema` (itself included), with where it is."""
    if not isinstance(schema, dict):
        return
    yield where, schema
    for name, value in schema.get("properties", {}).items():
        yield from subschemas(value, f"{where}.{name}")
    for key in ("items", "additionalProperties"):
        yield from subschemas(schema.get(key), f"{where}[{key}]")
    for key in ("allOf", "oneOf", "anyOf"):
        for number, branch in enumerate(schema.get(key, [])):
            yield from subschemas(branch, f"{where}[{key}.{number}]")


def every_schema(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each schema of the components and of the operations (parameters and bodies)."""
    for name, schema in document["components"]["schemas"].items():
        yield from subschemas(schema, name)
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if "schema" in parameter:
                    yield from subschemas(
                        parameter["schema"], f"{method} {path} {parameter['name']}"
                    )
            for side in ("request", "response"):
                for media in media_types({**document, "paths": {path: {method: operation}}}, side):
                    yield from subschemas(media.get("schema"), f"{method} {path} {side}")


# Answer fields of several shapes that are sometimes left out: a bare reference to a `oneOf`
# says nothing beside it, `x-omitted-when` included (test_a_union_is_referred_to_bare).
UNION_SOMETIMES_OMITTED = {("ExtendedDeadlineOut", "rule")}


def test_every_answer_lists_what_it_always_carries_as_required(
    openapi_document: dict[str, Any],
) -> None:
    schemas = openapi_document["components"]["schemas"]
    wrong = {}
    for name in sorted(reachable(openapi_document, "response")):
        properties = schemas[name].get("properties", {})
        always = {
            key
            for key, value in properties.items()
            if OMITTED_WHEN not in value and (name, key) not in UNION_SOMETIMES_OMITTED
        }
        if set(schemas[name].get("required", [])) != always:
            wrong[name] = (sorted(always), schemas[name].get("required"))
    assert wrong == {}
    assert schemas["ScheduleOut"]["required"]
    assert "errors" not in schemas["Problem"]["required"]


def test_answers_stay_open_to_new_fields(openapi_document: dict[str, Any]) -> None:
    schemas = openapi_document["components"]["schemas"]
    closed = [
        where
        for name in reachable(openapi_document, "response")
        for where, schema in subschemas(schemas[name], name)
        if schema.get("additionalProperties") is False
    ]
    assert closed == []
    assert schemas["ScheduleFieldsIn"]["additionalProperties"] is False  # requests refuse them
    assert schemas["CronTriggerIn"]["additionalProperties"] is False


# Named like instants, but words: where a revise after a return (退回) goes.
NOT_INSTANTS = {"return_to"}


def is_instant(name: str) -> bool:
    return name not in NOT_INSTANTS and (
        name in ("at", "from", "to", "local")
        or name.endswith(("_at", "_at_local", "_from", "_to", "_until", "_for", "_times"))
    )


# Named like instants, but dates: a calendar's range of days (docs/api.md#calendars).
DATES = {"get /api/calendars/{calendar_id}/days from", "get /api/calendars/{calendar_id}/days to"}


def test_every_instant_says_date_time(openapi_document: dict[str, Any]) -> None:
    unsaid = [
        where
        for where, schema in every_schema(openapi_document)
        if is_instant(re.split(r"[. ]", where)[-1])
        and (schema.get("items", schema).get("format") != "date-time")
    ]
    assert sorted(unsaid) == sorted(DATES)
    dated = {where: schema for where, schema in every_schema(openapi_document) if where in DATES}
    assert {schema["format"] for schema in dated.values()} == {"date"}
    attempt = openapi_document["components"]["schemas"]["AttemptOut"]["properties"]
    assert attempt["started_at"]["format"] == attempt["finished_at"]["format"] == "date-time"


def test_ids_the_server_makes_say_uuid(openapi_document: dict[str, Any]) -> None:
    schemas = openapi_document["components"]["schemas"]
    for name in ("ScheduleOut", "RunOut", "ApprovalOut", "DefinitionOut"):
        assert schemas[name]["properties"]["id"]["format"] == "uuid", name
    assert schemas["TokenOut"]["properties"]["token_id"]["format"] == "uuid"
    assert schemas["AccountOut"]["properties"]["id"].get("format") is None  # chosen by callers


def test_each_enum_is_one_named_component_referred_to_from_every_use(
    openapi_document: dict[str, Any],
) -> None:
    schemas = openapi_document["components"]["schemas"]
    named = {name: schema for name, schema in schemas.items() if "enum" in schema}
    assert set(named) >= NAMED_ENUMS
    values = [tuple(schema["enum"]) for schema in named.values()]
    assert len(values) == len(set(values))  # each set of values is defined once
    inline = [
        where
        for where, schema in every_schema(openapi_document)
        if "enum" in schema and where not in named and len(schema["enum"]) != 1
    ]
    assert inline == []  # besides the components, a discriminator's own value, or null alone
    text = dump(openapi_document)
    unused = [name for name in named if f'"{SCHEMAS}{name}"' not in text]
    assert unused == []
    run_status = {"$ref": SCHEMAS + "RunStatus"}
    assert schemas["RunOut"]["properties"]["status"] == {"anyOf": [run_status, LATER_VALUE]}
    assert schemas["LastRunOut"]["properties"]["status"] == {"anyOf": [run_status, LATER_VALUE]}
    for path in ("/api/workflows/runs", "/api/workflows/schedules/{schedule_id}/runs"):
        parameters = openapi_document["paths"][path]["get"]["parameters"]
        status = next(p for p in parameters if p.get("name") == "status")
        assert status["schema"] == run_status, path  # a filter: a bare reference, never null


def test_enums_are_closed_in_requests_and_open_in_answers(
    openapi_document: dict[str, Any],
) -> None:
    """A request may send only the values listed; an answer may hold a value a later release
    adds, which a client generated today reads as a string (test_generated_client.py)."""
    schemas = openapi_document["components"]["schemas"]
    enums = {name for name, schema in schemas.items() if "enum" in schema}

    def enum_uses(names: set[str]) -> Iterator[str]:
        for name in names:
            for where, schema in subschemas(schemas[name], name):
                if schema.get("$ref", "").removeprefix(SCHEMAS) in enums:
                    yield where

    answers = reachable(openapi_document, "response")
    requests = reachable(openapi_document, "request")
    assert [w for w in enum_uses(answers - requests) if not w.endswith("[anyOf.0]")] == []
    assert [w for w in enum_uses(requests - answers) if w.endswith("[anyOf.0]")] == []
    assert schemas["Problem"]["properties"]["code"] == {
        "anyOf": [{"$ref": SCHEMAS + "ProblemCode"}, LATER_VALUE]
    }
    assert set(schemas["ProblemCode"]["enum"]) >= {"VALIDATION_FAILED", "COMMAND_REJECTED"}


ONLY_NULL = {"nullable": True, "enum": [None]}
LATER_VALUE = {"type": "string", "description": "a value a later release may add"}


def open_enum(schema: dict[str, Any]) -> bool:
    """An enum of an answer: its component, or a value a later release adds."""
    branches = schema.get("anyOf", [])
    return len(branches) == 2 and "$ref" in branches[0] and branches[1] == LATER_VALUE


def only_null(schema: dict[str, Any]) -> bool:
    return all(schema.get(key) == value for key, value in ONLY_NULL.items()) and "type" in schema


def test_a_reference_is_nullable_the_way_openapi_3_0_3_reads_it(
    openapi_document: dict[str, Any],
) -> None:
    """OpenAPI 3.0 ignores a `$ref`'s siblings, and `nullable` counts only beside a `type`: a
    described reference is `allOf: [{$ref}]` beside its description, a nullable one a `oneOf`
    of the reference and a branch that admits null alone. No branch is a free-form object that
    would swallow the typed one. An `anyOf` is a union of named shapes (a lost decision's 409
    or another problem document), never a way of saying null."""
    found = [
        where
        for where, schema in every_schema(openapi_document)
        if ("$ref" in schema and len(schema) > 1)
        or any("$ref" not in branch and branch != LATER_VALUE for branch in schema.get("anyOf", []))
        or (schema.get("nullable") and "type" not in schema)
        or any(
            "$ref" not in branch and not only_null(branch) and not open_enum(branch)
            for branch in schema.get("oneOf", [])
        )
    ]
    assert found == []
    last_error = openapi_document["components"]["schemas"]["RunOut"]["properties"]["last_error"]
    assert last_error["oneOf"] == [
        {"$ref": SCHEMAS + "ErrorOut"},
        {"type": "object", **ONLY_NULL},
    ]


def test_triggers_are_a_discriminated_one_of_in_requests_and_answers(
    openapi_document: dict[str, Any],
) -> None:
    schemas = openapi_document["components"]["schemas"]
    for side in ("In", "Out"):
        trigger = schemas[f"Trigger{side}"]
        mapping = trigger["discriminator"]["mapping"]
        assert trigger["discriminator"]["propertyName"] == "kind"
        assert set(mapping) == {"cron", "window-interval"}
        assert sorted(branch["$ref"] for branch in trigger["oneOf"]) == sorted(mapping.values())
        for kind, target in mapping.items():
            shape = resolved(openapi_document, {"$ref": target})
            assert shape["properties"]["kind"]["enum"] == [kind]
            assert "kind" in shape["required"]
    uses = {
        "In": ["ScheduleFieldsIn", "ScheduleUpdate", "PreviewIn", "PresetIn"],
        "Out": ["ScheduleOut", "PresetOut", "OriginOut"],
    }
    for side, names in uses.items():
        for name in names:
            assert f"{SCHEMAS}Trigger{side}" in dump(schemas[name]["properties"]["trigger"]), name


def test_every_object_an_answer_carries_is_spelled_out(openapi_document: dict[str, Any]) -> None:
    """No free-form object but the caller's form data and an event's fields, which say so."""
    schemas = openapi_document["components"]["schemas"]
    free = []
    for name in reachable(openapi_document, "response"):
        for where, schema in subschemas(schemas[name], name):
            spelled_out = schema.get("properties") or only_null(schema)
            if schema.get("type") == "object" and not spelled_out:
                typed = schema.get("additionalProperties") not in (None, True, {})
                field = where.rpartition(".")[2]
                said = any(
                    field == key and text in schema.get("description", "")
                    for key, text in OPEN_OBJECTS
                )
                if not typed and not said:
                    free.append(where)
    assert free == []
    policy = schemas["DeadlinePolicyOut"]
    assert policy["discriminator"]["propertyName"] == "source"
    assert set(policy["discriminator"]["mapping"]) == {
        "explicit",
        "definition",
        "working_time",
        "extended",
    }
    backlog = schemas["BacklogOut"]["properties"]
    assert "+Inf" in backlog["expiry_lag_buckets"]["required"]
    assert set(backlog["sweep_failures"]["required"]) == {"version_conflict", "unreadable", "error"}
    presets = schemas["DefinitionOut"]["properties"]["schedule_presets"]["items"]
    assert presets == {"$ref": SCHEMAS + "PresetOut"}


def test_a_union_is_referred_to_bare(openapi_document: dict[str, Any]) -> None:
    """A property of several shapes is a bare `$ref` to its `oneOf` component (or that and null):
    openapi-typescript reads `allOf: [{$ref}]` around a union as the union less its
    discriminator, which takes any object (test_typescript_client.py)."""
    schemas = openapi_document["components"]["schemas"]
    unions = {SCHEMAS + name for name, schema in schemas.items() if "oneOf" in schema}
    wrapped = [
        where
        for where, schema in every_schema(openapi_document)
        if any(branch.get("$ref") in unions for branch in schema.get("allOf", []))
    ]
    assert wrapped == []
    for name, key, union in [
        ("ScheduleFieldsIn", "trigger", "TriggerIn"),
        ("ScheduleUpdate", "trigger", "TriggerIn"),
        ("ScheduleFieldsIn", "target", "TargetIn"),
        ("OriginOut", "trigger", "TriggerOut"),
        ("ApprovalOut", "deadline_policy", "DeadlinePolicyOut"),
        *((name, key, "DeadlineRuleOut") for name, key in UNION_SOMETIMES_OMITTED),
    ]:
        assert schemas[name]["properties"][key] == {"$ref": SCHEMAS + union}, (name, key)
    for name, key in UNION_SOMETIMES_OMITTED:
        assert key not in schemas[name]["required"]
    assert schemas["DeadlinePolicyOut"]["description"] == "how the review deadline was set"


def test_a_request_s_defaults_are_said_in_words(openapi_document: dict[str, Any]) -> None:
    """openapi-typescript (`defaultNonNullable`, on by default) types a component's property
    with a `default` as always present, so a request's defaults are in its descriptions: a
    body that leaves them out still compiles. An answer's and a query parameter's keep
    `default`."""
    schemas = openapi_document["components"]["schemas"]
    defaulted = [
        where
        for name in reachable(openapi_document, "request") - reachable(openapi_document, "response")
        for where, schema in subschemas(schemas[name], name)
        if "default" in schema
    ]
    assert defaulted == []
    fields = schemas["ScheduleFieldsIn"]["properties"]
    assert fields["enabled"]["description"] == "default `false`"
    assert fields["misfire_policy"]["description"] == "default `catch_up`"
    assert fields["title_template"]["description"].endswith('; default `""`')
    assert "default" not in fields["timezone"]["description"]  # null: the same as left out
    verify = schemas["AuditVerifyTargetOut"]["properties"]["params"]["properties"]["full"]
    assert verify["default"] is False
    tasks = openapi_document["paths"]["/api/tasks"]["get"]["parameters"]
    assert next(p for p in tasks if p.get("name") == "scope")["schema"]["default"] == "assigned"
