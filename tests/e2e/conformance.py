"""What the schemathesis conformance runs share, in-process (tests/e2e/test_openapi_conformance.py)
and against a served process (tests/faults/test_served_conformance.py): the seeded tenant, the
requests each operation gets, and the checks each answer must pass."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from requests.structures import CaseInsensitiveDict
from schemathesis.checks import CheckFunction, not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.e2e.helpers import DEFINITION, SCHEDULE, request
from tests.support import REVIEWER

DOCUMENT = "/api/openapi.json"
VALID_EACH = 2  # valid requests on real resources per operation (few: a store takes seconds)
INVALID_EACH = 2  # and invalid ones
EXAMPLES_EACH = 3  # of the document's examples per operation
STREAM = "/api/events/stream"
ENDINGS = ("/unpublish", "/deactivate", "/withdraw", "/cancel")
REFERENCES = ("definition_id", "initiator_id", "preset_id")  # body fields naming a resource
STREAM_SECONDS = 1  # each stream opened ends by itself after this
PROBLEM = "application/problem+json"
SECRET_KEY = "conformance-secret-key-of-32-characters"  # callback sources sign with it
# Headers of HTTP itself, which no answer declares.
FRAMING = {"content-type", "content-length", "transfer-encoding", "date", "server", "connection"}
SHOWN_FAILURES = 8
Check = CheckFunction
Case = schemathesis.Case[Any]


class Answer(Protocol):
    """An answer as the seeding reads it."""

    @property
    def status_code(self) -> int: ...

    @property
    def json(self) -> Any: ...


class Client(Protocol):
    """The tenant admin `root`, in-process (`tests.support.Api`) or over HTTP (`Served`)."""

    def post(self, path: str, json: Any = None) -> Answer: ...

    def get(self, path: str) -> Answer: ...


@dataclass(frozen=True)
class Reply:
    status_code: int
    json: Any


@dataclass(frozen=True)
class Served:
    """A bearer token's client of a served process at `base`."""

    base: str
    token: str

    def post(self, path: str, json: Any = None) -> Reply:
        return Reply(*request(f"{self.base}{path}", self.token, {} if json is None else json))

    def get(self, path: str) -> Reply:
        return Reply(*request(f"{self.base}{path}", self.token))


def created(client: Client, path: str, json: Any = None) -> Any:
    """What a POST that must succeed answers."""
    answer = client.post(path, json)
    assert answer.status_code in (200, 201, 202), (path, answer.status_code, answer.json)
    return answer.json


def seed(admin: Client) -> dict[str, str]:
    """One resource of each kind in the admin's tenant, as path parameters naming them."""
    reviewer = {"id": REVIEWER, "name": "Vera", "roles": ["operator"]}
    created(admin, "/api/accounts", reviewer)  # who may approve the admin's instances
    definition = created(admin, "/api/definitions", DEFINITION)
    definition = created(admin, f"/api/definitions/{definition['id']}/publish")
    schedule = created(
        admin, "/api/workflows/schedules", {**SCHEDULE, "definition_id": definition["id"]}
    )
    run = created(admin, f"/api/workflows/schedules/{schedule['id']}/run", {"request_id": "r-1"})
    submission = {
        "command_id": "submit-1",
        "definition_id": definition["id"],
        "title": "Open account",
        "material_version": 1,
    }
    instance = created(admin, "/api/approvals", submission)
    created(admin, "/api/accounts", {"id": "clerk", "name": "clerk", "roles": ["auditor"]})
    token_id = created(admin, "/api/accounts/clerk/tokens")["token_id"]
    source = created(admin, "/api/callback-sources", {"name": "esign"})
    group = created(admin, "/api/groups", {"key": definition["key"], "name": "财务部"})
    hook = {"url": "http://127.0.0.1:9/hook", "event_types": ["ping"]}
    webhook = created(admin, "/api/webhooks", hook)
    delivery = created(admin, f"/api/webhooks/{webhook['id']}/ping")
    notice = late_callback_notice(admin, definition["id"])
    office = {"key": "cn", "name": "中国大陆", "timezone": "Asia/Shanghai", "years": [2026]}
    calendar = created(admin, "/api/calendars", office)
    return {
        "schedule_id": schedule["id"],
        "run_id": run["id"],
        "instance_id": instance["id"],
        "definition_id": definition["id"],
        "key": definition["key"],
        "account_id": "clerk",
        "token_id": token_id,
        "aggregate_id": schedule["id"],
        "initiator_id": "root",
        "preset_id": definition["schedule_presets"][0]["id"],
        "source_id": source["id"],
        "group_id": group["id"],
        "webhook_id": webhook["id"],
        "delivery_id": delivery["id"],
        "notification_id": notice["id"],
        "calendar_id": calendar["id"],
        "revision": "1",
    }


def late_callback_notice(admin: Client, definition_id: str) -> Any:
    """The admin's notice of a signing callback on their withdrawn instance."""
    submission = {"command_id": "submit-2", "definition_id": definition_id, "title": "Late"}
    instance = created(admin, "/api/approvals", {**submission, "material_version": 1})
    created(admin, f"/api/approvals/{instance['id']}/withdraw", {"command_id": "w"})
    callback = {
        "command_id": "cb",
        "contract_id": "C-1",
        "material_version": 1,
        "source": "s",
        "occurred_at": "2026-10-01T09:00:00Z",
    }
    late = admin.post(f"/api/approvals/{instance['id']}/callbacks/sign", callback)
    assert late.status_code == 409, late.json
    return admin.get("/api/notifications").json["items"][0]


def checks_of(document: Document, *more: Check) -> list[Check]:
    """schemathesis's conformance checks, this suite's own, and `more`."""
    return [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
        errors_are_problems,
        no_undeclared_headers(document),
        no_undeclared_fields(document),
        *more,
    ]


def failures_of(
    operations: Iterable[Any], world: dict[str, str], token: dict[str, str], checks: list[Check]
) -> list[str]:
    """Each operation's cases sent (those that end a resource last) and checked: what failed."""
    failures: list[str] = []
    for operation in sorted(operations, key=ends_something):
        for case in cases(operation, world, token):
            try:
                case.call_and_validate(headers=token, checks=checks)
            except (AssertionError, BaseExceptionGroup) as failure:
                failures.append(f"{operation.label}\n{failure}")
    return failures


def report(failures: list[str]) -> str:
    shown = "\n\n".join(failures[:SHOWN_FAILURES])
    return f"{len(failures)} answers differ from the document:\n\n{shown}"


def ends_something(operation: Any) -> bool:
    """Whether the operation deletes or ends a resource: those go last, after every other
    operation has had the resources as they were seeded."""
    return bool(operation.method.upper() == "DELETE" or operation.path.endswith(ENDINGS))


def cases(operation: Any, world: dict[str, str], token: dict[str, str]) -> list[Case]:
    """The requests an operation gets: its examples and valid requests, on the seeded
    resources; a valid one on unknown ids; invalid ones, as generated (most break or leave out
    the token) and with the admin's token (so that their fields are what is refused)."""
    parameters = {p.name: world[p.name] for p in operation.path_parameters}
    real: dict[str, Any] = {"path_parameters": parameters}
    if operation.path == STREAM:
        real["query"] = {"max_seconds": STREAM_SECONDS}
    examples = operation.schema.get_strategies_from_examples(operation, **real)
    valid = [
        *((strategy, 1) for strategy in examples[:EXAMPLES_EACH]),
        (operation.as_strategy(**real), VALID_EACH),
    ]
    if operation.path_parameters:
        valid.append((operation.as_strategy(query=real.get("query")), 1))
    invalid = drawn(
        operation.as_strategy(schemathesis.GenerationMode.NEGATIVE, **real), 2 * INVALID_EACH
    )
    return [
        *(
            on_world(case, world, token)
            for strategy, count in valid
            for case in drawn(strategy, count)
        ),
        *invalid[:INVALID_EACH],
        *(signed(case, token) for case in invalid[INVALID_EACH:]),
    ]


def on_world(case: Case, world: dict[str, str], token: dict[str, str]) -> Any:
    """A valid case with the admin's token, its body naming the seeded resources."""
    signed(case, token)
    if isinstance(case.body, dict):
        case.body.update({k: world[k] for k in REFERENCES if k in case.body})
    return case


def signed(case: Case, token: dict[str, str]) -> Case:
    """`case` with the admin's token, whatever it was generated with."""
    case.headers = CaseInsensitiveDict({**dict(case.headers or {}), **token})
    return case


def drawn(strategy: st.SearchStrategy[Case], count: int) -> list[Case]:
    """`count` cases of `strategy`, the same ones every run."""
    found: list[Case] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(case: Case) -> None:
        found.append(case)

    with contextlib.suppress(Unsatisfiable):  # nothing to make invalid, e.g. no parameters
        collect()
    return found


def media_type(response: schemathesis.Response) -> str:
    return str(response.headers.get("content-type", [""])[0].partition(";")[0])


def errors_are_problems(ctx: Any, response: schemathesis.Response, case: Any) -> None:
    """Every 4xx and 5xx is a problem document with the members docs/api.md promises."""
    if response.status_code < 400:
        return
    assert media_type(response) == PROBLEM, f"{response.status_code} is {media_type(response)}"
    body = response.json()
    assert body["status"] == response.status_code, body
    assert all(body.get(member) for member in ("type", "title", "detail", "code", "instance"))
    assert body["request_id"] == response.headers["x-request-id"][0], body


@dataclass(frozen=True)
class Document:
    """The document as served, to look declarations up in."""

    raw: dict[str, Any]

    def labels(self) -> set[str]:
        """Its operations as `METHOD /path`."""
        return {
            f"{method.upper()} {path}"
            for path, operations in self.raw["paths"].items()
            for method in operations
        }

    def resolved(self, node: Any) -> Any:
        """`node`, or what its `$ref` points at."""
        while isinstance(node, dict) and "$ref" in node:
            target: Any = self.raw
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            node = target
        return node

    def answer(self, case: Case, status: int) -> dict[str, Any]:
        """The declared answer of `case`'s operation with `status`."""
        responses = self.raw["paths"][case.operation.path][case.method.lower()]["responses"]
        return dict(self.resolved(responses.get(str(status), {})))


def no_undeclared_headers(document: Document) -> Check:
    def undeclared_headers(ctx: Any, response: schemathesis.Response, case: Any) -> None:
        declared = {
            name.lower() for name in document.answer(case, response.status_code).get("headers", {})
        }
        extra = sorted(set(response.headers) - declared - FRAMING)
        assert not extra, f"undeclared headers {extra} on {response.status_code}"

    return undeclared_headers


def no_undeclared_fields(document: Document) -> Check:
    def undeclared_fields(ctx: Any, response: schemathesis.Response, case: Any) -> None:
        content = document.answer(case, response.status_code).get("content", {})
        kind = media_type(response)
        schema = content.get(kind, {}).get("schema")
        if schema is None or not kind.endswith("json"):
            return
        extra = sorted(fields_beyond(document, schema, response.json(), "$"))
        assert not extra, f"undeclared fields {extra} on {response.status_code}"

    return undeclared_fields


def fields_beyond(document: Document, schema: Any, value: Any, where: str) -> Iterator[str]:
    """Where `value` has an object member that `schema` does not declare.

    Of `oneOf`/`anyOf` alternatives, those that admit the value's type are tried, and one
    without such members suffices; an object schema without `properties` is free-form, and
    one with `additionalProperties` a map."""
    schema = document.resolved(schema)
    alternatives = [document.resolved(a) for a in schema.get("oneOf") or schema.get("anyOf", [])]
    if alternatives:
        found = [
            sorted(fields_beyond(document, a, value, where))
            for a in alternatives
            if admits(a, value)
        ]
        yield from min(found, key=len, default=[])
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from fields_beyond(document, schema.get("items", {}), item, f"{where}[{index}]")
        return
    if not isinstance(value, dict):
        return
    properties = dict(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        properties.update(document.resolved(part).get("properties", {}))
    more = schema.get("additionalProperties")
    for name, member in value.items():
        if name in properties:
            yield from fields_beyond(document, properties[name], member, f"{where}.{name}")
        elif isinstance(more, dict):
            yield from fields_beyond(document, more, member, f"{where}.{name}")
        elif properties and more is not True:
            yield f"{where}.{name}"


JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean"}  # else a number


def admits(schema: dict[str, Any], value: Any) -> bool:
    """Whether `schema`'s `enum` and `type` let `value` through (its other keywords aside)."""
    if "enum" in schema and value not in schema["enum"]:
        return False
    if value is None:
        return bool(schema.get("nullable", "type" not in schema))
    kind = JSON_TYPES.get(type(value), "number")
    declared = schema.get("type", kind)
    return bool(declared == kind or (kind == "number" and declared == "integer"))
