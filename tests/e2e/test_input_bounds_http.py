"""Bounded input over HTTP: every field has a range or a length, every body a nesting depth.

Whatever its size or shape, bad input gets a problem document (400, 413 or 422), never a 500.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from flask import Flask
from marshmallow import Schema, fields

from tests.e2e.helpers import account, assert_problem
from tests.support import Api
from web import MAX_BODY_BYTES
from web.api import Either, EndpointSpec, MergePatch
from web.events import StreamQuery
from web.json_depth import MAX_JSON_DEPTH
from web.schemas import validate
from web.schemas.approvals import ApprovalSubmit
from web.schemas.directory import DefinitionCreate
from web.schemas.schedules import PreviewIn, ScheduleListQuery

MIB = 1024 * 1024
PREVIEW = "/api/workflows/schedules/preview"


def nested(levels: int) -> Any:
    """Objects and arrays, alternating, `levels` deep; the outermost is an object."""
    value: Any = {}
    for level in range(levels - 1, 0, -1):
        value = {"next": value} if level % 2 else [value]
    return value


def raw_post(api: Api, path: str, raw: bytes) -> Any:
    return api.post(path, data=raw, content_type="application/json")


# --- JSON nesting --------------------------------------------------------------------------------


def submission(definition_id: str, form_data: Any) -> dict[str, Any]:
    return {
        "command_id": "deep",
        "definition_id": definition_id,
        "title": "Deep",
        "form_data": form_data,
        "material_version": 1,
    }


def test_approval_form_data_may_nest_to_the_limit_and_no_deeper(
    admin: Api,
    definition_id: str,
) -> None:
    deepest = submission(definition_id, nested(MAX_JSON_DEPTH - 1))  # the body is a level too
    too_deep = submission(definition_id, nested(MAX_JSON_DEPTH))
    problem = assert_problem(admin.post("/api/approvals", too_deep), 400, "BAD_REQUEST")
    assert (
        problem["detail"]
        == "the body nests arrays and objects 33 levels deep; at most 32 are allowed"
    )
    assert admin.get("/api/approvals").json["total"] == 0
    assert admin.post("/api/approvals", deepest).status_code == 201


@pytest.mark.parametrize("opener", [b"[", b"{", b'{"a":'])
def test_thousands_of_levels_are_400_on_approvals(
    admin: Api,
    definition_id: str,
    opener: bytes,
) -> None:
    raw = b'{"form_data": ' + opener * 5000 + b"}"
    problem = assert_problem(raw_post(admin, "/api/approvals", raw), 400, "BAD_REQUEST")
    assert "5001 levels deep" in problem["detail"]


def test_schedule_form_data_may_nest_to_the_limit_and_no_deeper(
    admin: Api,
    body: dict[str, Any],
) -> None:
    path = "/api/workflows/schedules"
    too_deep = {**body, "form_data": nested(MAX_JSON_DEPTH)}
    assert_problem(admin.post(path, too_deep), 400, "BAD_REQUEST")
    assert admin.post(path, {**body, "form_data": nested(MAX_JSON_DEPTH - 1)}).status_code == 201


@pytest.mark.parametrize(
    "path", ["/api/workflows/schedules", PREVIEW, "/api/accounts", "/api/definitions"]
)
def test_thousands_of_levels_are_400_everywhere(admin: Api, path: str) -> None:
    for raw in (b"[" * 5000, b'{"trigger": ' + b"[" * 5000 + b"]" * 5000 + b"}"):
        assert_problem(raw_post(admin, path, raw), 400, "BAD_REQUEST")


def test_brackets_inside_strings_do_not_count(admin: Api) -> None:
    name = '[{"' + "[" * 100 + '\\"'
    created = admin.post("/api/accounts", {"id": "brackets", "name": name, "roles": []})
    assert created.status_code == 201
    assert created.json["name"] == name


# --- cron expressions ----------------------------------------------------------------------------


@pytest.mark.parametrize("length", [24_000, MIB - 100])
def test_a_huge_expression_in_a_preview_is_a_quick_422(admin: Api, length: int) -> None:
    auditor = account(admin, "auditor", ["auditor"])
    trigger = {"kind": "cron", "expression": "0 0 * * " + "1" * length}
    problem = assert_problem(auditor.post(PREVIEW, {"trigger": trigger}), 422, "VALIDATION_FAILED")
    assert problem["errors"] == {
        "trigger.expression": [f"is {length + 8} characters long; at most 256 are allowed"]
    }


# --- numbers and strings -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        f"page={10**30}",
        f"page_size={10**30}",
        f"page={'9' * 5000}",
        "page=1e3",
        "page=-0x10",
    ],
)
@pytest.mark.parametrize("path", ["/api/accounts", "/api/approvals", "/api/workflows/schedules"])
def test_huge_or_odd_paging_is_422(admin: Api, path: str, query: str) -> None:
    problem = assert_problem(admin.get(f"{path}?{query}"), 422, "VALIDATION_FAILED")
    assert set(problem["errors"]) == {query.partition("=")[0]}


@pytest.mark.parametrize("query", [f"after={10**30}", "after=-1", f"max_seconds={'9' * 5000}"])
def test_huge_stream_positions_are_422(admin: Api, query: str) -> None:
    problem = assert_problem(admin.get(f"/api/events/stream?{query}"), 422, "VALIDATION_FAILED")
    assert set(problem["errors"]) == {query.partition("=")[0]}


def test_a_huge_version_in_the_query_is_422(admin: Api) -> None:
    response = admin.delete(f"/api/workflows/schedules/some-id?version={10**30}")
    assert set(assert_problem(response, 422, "VALIDATION_FAILED")["errors"]) == {"version"}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"count": 10**30}, "count"),
        ({"count": 1e300}, "count"),
        ({"after": "2026-10-01T00:00:00." + "1" * 100 + "Z"}, "after"),
        ({"timezone": "Europe/" + "x" * (MIB // 2)}, "timezone"),
    ],
)
def test_huge_preview_fields_are_422(admin: Api, change: dict[str, Any], field: str) -> None:
    request = {"trigger": {"kind": "cron", "expression": "0 9 * * *"}, **change}
    problem = assert_problem(admin.post(PREVIEW, request), 422, "VALIDATION_FAILED")
    assert set(problem["errors"]) == {field}


def test_a_number_of_5000_digits_is_400(admin: Api) -> None:
    raw = b'{"trigger": {"kind": "cron", "expression": "0 9 * * *"}, "count": ' + b"9" * 5000 + b"}"
    assert_problem(raw_post(admin, PREVIEW, raw), 400, "BAD_REQUEST")


def input_schemas(app: Flask) -> Iterator[type[Schema]]:
    """Every schema a request body or query string is loaded with."""
    yield StreamQuery
    for view in app.view_functions.values():
        spec = getattr(view, "endpoint_spec", None)
        if isinstance(spec, EndpointSpec):
            for shape in (spec.body, spec.query):
                if isinstance(shape, Either):
                    yield from (shape.with_key, shape.without_key)
                elif isinstance(shape, MergePatch):
                    yield shape.replaces
                elif shape is not None:
                    yield shape


STRING_BOUNDS = {validate.Length, validate.OneOf, validate.Regexp}  # the patterns bound lengths


def unbounded(schema: Schema, path: str) -> Iterator[str]:
    for name, field in schema.fields.items():
        yield from unbounded_field(field, f"{path}.{name}")


def unbounded_field(field: fields.Field[Any], path: str) -> Iterator[str]:
    if isinstance(field, fields.Nested):
        yield from unbounded(field.schema, path)
    if isinstance(field, fields.List):
        yield from unbounded_field(field.inner, f"{path}[]")
    if not is_bounded(field):
        yield path


def is_bounded(field: fields.Field[Any]) -> bool:
    kinds = {type(check) for check in field.validators}
    if isinstance(field, fields.List):
        return validate.Length in kinds
    if isinstance(field, fields.Number):
        return validate.Range in kinds
    if isinstance(field, fields.String):
        return bool(kinds & STRING_BOUNDS)
    return True  # booleans, date-times (length-capped), and the dicts the domain checks


def test_every_number_has_a_range_and_every_string_a_length(app: Flask) -> None:
    schemas = set(input_schemas(app))
    assert {StreamQuery, ScheduleListQuery, PreviewIn, ApprovalSubmit, DefinitionCreate} <= schemas
    holes = [hole for schema in schemas for hole in unbounded(schema(), schema.__name__)]
    assert holes == []


# --- the served process --------------------------------------------------------------------------


def served_post(server: str, token: str, body: bytes, length: int) -> tuple[int, str]:
    """POST `body` announced as `length` bytes; the answer's status and content type."""
    connection = http.client.HTTPConnection(urlsplit(server).netloc, timeout=10)
    try:
        connection.putrequest("POST", "/api/accounts")
        connection.putheader("Authorization", f"Bearer {token}")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(length))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type", "")
    finally:
        connection.close()


def test_the_server_refuses_a_body_over_1_mib_before_it_arrives(
    server: str,
    token: str,
) -> None:
    status, _ = served_post(server, token, b"", MAX_BODY_BYTES + 1)  # the body is never sent
    assert status == 413
    start = b'{"id": "big", "roles": [], "name": "'
    exactly_1_mib = start + b"x" * (MAX_BODY_BYTES - len(start) - 2) + b'"}'
    answer = served_post(server, token, exactly_1_mib, MAX_BODY_BYTES)
    assert answer == (422, "application/problem+json")  # the app read it: the name is too long
