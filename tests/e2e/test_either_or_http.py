"""The document's `x-either-or` rules are the server's, on both stores: an operation that takes
a value in either of two places (a body's key field or `Idempotency-Key`; `?version` or
`If-Match`) answers what the rule says when neither is sent, and when both are sent with
different values (docs/api.md#either-or)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from tests.e2e.helpers import assert_problem
from tests.support import Api
from web.openapi import EITHER_OR

DOCUMENT = "/api/openapi.json"
SCHEDULES = "/api/workflows/schedules"


def rules_of(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Each rule, with the method and path of its operation."""
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for rule in operation.get(EITHER_OR, []):
                yield method.upper(), path, rule


def test_the_document_names_each_rule_the_docs_describe(admin: Api) -> None:
    rules = {
        (method, path, tuple(f"{w['in']}:{w['name']}" for w in rule["one_of"]))
        for method, path, rule in rules_of(admin.get(DOCUMENT).json)
    }
    assert {
        ("POST", "/api/approvals", ("body:command_id", "header:Idempotency-Key")),
        (
            "POST",
            "/api/approvals/{instance_id}/approve",
            ("body:command_id", "header:Idempotency-Key"),
        ),
        (
            "POST",
            f"{SCHEDULES}/{{schedule_id}}/run",
            ("body:request_id", "header:Idempotency-Key"),
        ),
        ("DELETE", f"{SCHEDULES}/{{schedule_id}}", ("query:version", "header:If-Match")),
    } <= rules


def test_the_server_refuses_as_each_rule_says(admin: Api, body: dict[str, Any]) -> None:
    schedule = admin.post(SCHEDULES, body).json
    ids = {"schedule_id": schedule["id"]}  # any other id names nothing: refused before it is read
    rules = list(rules_of(admin.get(DOCUMENT).json))
    assert rules
    for method, template, rule in rules:
        path = template.format_map(_Ids(ids))
        places = {where["in"]: where["name"] for where in rule["one_of"]}
        neither = _send(admin, method, path, places, {})
        _assert_refused(neither, rule["neither"], f"{method} {template} with neither")
        differ = _send(admin, method, path, places, _differing(admin, path, places))
        _assert_refused(differ, rule["differ"], f"{method} {template} with both, unlike")


class _Ids(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return str(uuid.uuid4())


def _send(
    admin: Api, method: str, path: str, places: dict[str, str], given: dict[str, Any]
) -> TestResponse:
    """The request giving `given`'s values, each where the rule takes it, and nothing else."""
    body = {places["body"]: given["body"]} if "body" in given else {}
    query = {places["query"]: given["query"]} if "query" in given else {}
    headers = {places["header"]: given["header"]} if "header" in given else {}
    client: FlaskClient = admin.client
    return client.open(
        path,
        method=method,
        json=body,
        query_string=query,
        headers={"Authorization": f"Bearer {admin.token}", **headers},
    )


def _differing(admin: Api, path: str, places: dict[str, str]) -> dict[str, Any]:
    """Two different values: the header's the one that counts (If-Match the current ETag)."""
    if places["header"] == "If-Match":
        current = admin.get(path)
        version = int(current.headers["ETag"].strip('"'))
        return {"header": current.headers["ETag"], "query": version + 1}
    return {"header": "key-in-the-header", "body": "key-in-the-body"}


def _assert_refused(answer: TestResponse, said: dict[str, Any], case: str) -> None:
    problem = assert_problem(answer, said["status"], said["code"])
    if "field" in said:
        assert said["field"] in problem["errors"], (case, problem)
