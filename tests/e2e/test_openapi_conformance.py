"""The server answers what its OpenAPI document says, checked by schemathesis on both stores.

Every operation of `/api/openapi.json` gets a few requests of each kind: the document's own
examples, valid requests on the seeded tenant's resources and on unknown ids, and invalid
requests. Each answer must have a declared status, content type and headers, a body valid
against its declared schema, and no header or field that the document does not declare.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import schemathesis
from flask import Flask
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.e2e.helpers import account
from tests.support import Api, FakeClock, Opener
from web import MAX_BODY_BYTES, create_app, openapi

DOCUMENT = "/api/openapi.json"
VALID_EACH = 2  # valid requests on real resources per operation (few: a store takes seconds)
INVALID_EACH = 2  # and invalid ones
EXAMPLES_EACH = 3  # of the document's examples per operation
STREAM = "/api/events/stream"
ENDINGS = ("/unpublish", "/deactivate", "/withdraw", "/cancel")
REFERENCES = ("definition_id", "initiator_id", "preset_id")  # body fields naming a resource
STREAM_SECONDS = 1  # each stream opened ends by itself after this
SECRET_KEY = "conformance-secret-key-of-32-characters"
# Headers of HTTP itself, which no answer declares.
FRAMING = {"content-type", "content-length", "transfer-encoding", "date", "server", "connection"}
Check = Callable[[Any, schemathesis.Response, schemathesis.Case], None]
CHECKS: list[Check] = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    """The app's services, with a refusal budget the generated refusals never spend."""
    settings = Settings(
        database_url=store_url,
        refusals_per_minute=10**6,
        secret_key=SECRET_KEY,
        webhook_allow_private=True,  # a webhook on loopback, where nothing listens
        webhook_allow_http=True,
    )
    opened = open_services(settings, clock)
    yield opened
    opened.close()


@pytest.fixture
def world(admin: Api, definition: dict[str, Any], body: dict[str, Any]) -> dict[str, str]:
    """Path parameters naming real resources of the admin's tenant: one of each kind."""
    schedule = admin.post("/api/workflows/schedules", body).json
    run = admin.post(f"/api/workflows/schedules/{schedule['id']}/run", {"request_id": "r-1"}).json
    instance = admin.post(
        "/api/approvals",
        {
            "command_id": "submit-1",
            "definition_id": definition["id"],
            "title": "Open account",
            "material_version": 1,
        },
    ).json
    clerk = account(admin, "clerk", ["auditor"])
    token_id = admin.post("/api/accounts/clerk/tokens").json["token_id"]
    source = admin.post("/api/callback-sources", {"name": "esign"}).json
    hook = {"url": "http://127.0.0.1:9/hook", "event_types": ["ping"]}
    webhook = admin.post("/api/webhooks", hook).json
    delivery = admin.post(f"/api/webhooks/{webhook['id']}/ping").json
    assert clerk.get("/api/workflows/schedules").status_code == 200
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
        "webhook_id": webhook["id"],
        "delivery_id": delivery["id"],
    }


def test_every_answer_is_as_documented(app: Flask, admin: Api, world: dict[str, str]) -> None:
    document = Document(admin.get(DOCUMENT).json)
    schema = schemathesis.openapi.from_wsgi(DOCUMENT, app)
    checks = [*CHECKS, no_undeclared_headers(document), no_undeclared_fields(document)]
    operations = [result.ok() for result in schema.get_all_operations()]
    # every operation but the document's own, which schemathesis leaves out
    assert {operation.label for operation in operations} == document.labels() - {f"GET {DOCUMENT}"}
    token = {"Authorization": f"Bearer {admin.token}"}
    failures: list[str] = []
    for operation in sorted(operations, key=ends_something):
        for case in cases(operation, world, token):
            try:
                case.call_and_validate(headers=token, checks=checks)
            except (AssertionError, BaseExceptionGroup) as failure:
                failures.append(f"{operation.label}\n{failure}")
    assert not failures, f"{len(failures)} answers differ from the document:\n\n" + "\n\n".join(
        failures[:8]
    )


def test_limits_are_answered_as_documented(open_with: Opener, clock: FakeClock) -> None:
    """Answers the generated requests never meet: a body too large, a spent refusal budget,
    and no stream to spare."""
    services = open_with(clock, refusals_per_minute=1, streams_per_process=0)
    app = create_app({"SERVICES": services, "TESTING": True})
    token = {"Authorization": f"Bearer {services.directory.bootstrap('acme', 'root').token}"}
    document = Document(app.test_client().get(DOCUMENT).json)
    schema = schemathesis.openapi.from_wsgi(DOCUMENT, app)
    checks = [*CHECKS, no_undeclared_headers(document), no_undeclared_fields(document)]
    too_large = {"body": "x" * MAX_BODY_BYTES, "media_type": "application/json"}
    answers = [
        schema[path][method].Case(headers=token, **given).call_and_validate(checks=checks)
        for path, method, given in (
            (STREAM, "GET", {}),  # no stream allowed: 429 TOO_MANY_STREAMS
            ("/api/workflows/schedules", "POST", too_large),  # 413, which spends the budget
            ("/api/workflows/schedules", "GET", {}),  # 429 TOO_MANY_REQUESTS
        )
    ]
    assert [answer.status_code for answer in answers] == [429, 413, 429]


def test_operations_have_unique_ids_and_the_status_tables_name_them(admin: Api) -> None:
    document = admin.get(DOCUMENT).json
    ids = [op["operationId"] for ops in document["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))
    assert set(openapi.CONFLICTS) | set(openapi.REFERENCES) <= set(ids)
    answers = [op["responses"] for ops in document["paths"].values() for op in ops.values()]
    assert all("503" in responses for responses in answers)  # the probes' included


def ends_something(operation: Any) -> bool:
    """Whether the operation deletes or ends a resource: those go last, after every other
    operation has had the resources as they were seeded."""
    return operation.method.upper() == "DELETE" or operation.path.endswith(ENDINGS)


def cases(operation: Any, world: dict[str, str], token: dict[str, str]) -> list[schemathesis.Case]:
    """The requests an operation gets: its examples and valid requests, on the seeded
    resources; a valid one on unknown ids; invalid ones (which may leave the token out)."""
    real = {"path_parameters": {p.name: world[p.name] for p in operation.path_parameters}}
    if operation.path == STREAM:
        real["query"] = {"max_seconds": STREAM_SECONDS}
    examples = operation.schema.get_strategies_from_examples(operation, **real)
    valid = [
        *((strategy, 1) for strategy in examples[:EXAMPLES_EACH]),
        (operation.as_strategy(**real), VALID_EACH),
    ]
    if operation.path_parameters:
        valid.append((operation.as_strategy(query=real.get("query")), 1))
    invalid = operation.as_strategy(schemathesis.GenerationMode.NEGATIVE, **real)
    return [
        *(
            on_world(case, world, token)
            for strategy, count in valid
            for case in drawn(strategy, count)
        ),
        *drawn(invalid, INVALID_EACH),
    ]


def on_world(case: schemathesis.Case, world: dict[str, str], token: dict[str, str]) -> Any:
    """A valid case with the admin's token, its body naming the seeded resources."""
    case.headers = {**(case.headers or {}), **token}
    if isinstance(case.body, dict):
        case.body.update({k: world[k] for k in REFERENCES if k in case.body})
    return case


def drawn(strategy: st.SearchStrategy[schemathesis.Case], count: int) -> list[schemathesis.Case]:
    """`count` cases of `strategy`, the same ones every run."""
    found: list[schemathesis.Case] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(case: schemathesis.Case) -> None:
        found.append(case)

    with contextlib.suppress(Unsatisfiable):  # nothing to make invalid, e.g. no parameters
        collect()
    return found


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

    def answer(self, case: schemathesis.Case, status: int) -> dict[str, Any]:
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
        media_type = response.headers.get("content-type", [""])[0].partition(";")[0]
        schema = content.get(media_type, {}).get("schema")
        if schema is None or not media_type.endswith("json"):
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
