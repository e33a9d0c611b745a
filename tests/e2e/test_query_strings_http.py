"""A query parameter an endpoint does not take is 422 naming it, like an unknown body field."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.e2e.helpers import assert_problem
from tests.support import Api

SCHEDULES = "/api/workflows/schedules"


@pytest.fixture
def schedule_path(admin: Api, body: dict[str, Any]) -> str:
    return f"{SCHEDULES}/{admin.post(SCHEDULES, body).json['id']}"


@pytest.mark.parametrize(
    ("path", "typo"),
    [
        ("/api/workflows/runs?stauts=SUCCEEDED", "stauts"),
        ("/api/approvals?sate=APPROVED", "sate"),
        (f"{SCHEDULES}?pagesize=5", "pagesize"),
        ("/api/accounts?page=1&order=name", "order"),
        ("/api/definitions?published=true", "published"),
        ("/api/audit/operations?knd=schedule.updated", "knd"),
        ("/api/events/stream?max_second=1", "max_second"),
        ("/api/accounts/root?fields=name", "fields"),
        ("/api/backlog?tenant=acme", "tenant"),
    ],
)
def test_an_unknown_query_parameter_is_refused_by_name(admin: Api, path: str, typo: str) -> None:
    refused = assert_problem(admin.get(path), 422, "VALIDATION_FAILED")
    assert refused["errors"] == {typo: ["Unknown field."]}


@pytest.mark.parametrize(
    ("suffix", "typo"),
    [("/runs?stauts=FAILED", "stauts"), ("/preview?cuont=3", "cuont"), ("/timeline?x=1", "x")],
)
def test_a_schedules_own_lists_refuse_unknown_parameters(
    admin: Api, schedule_path: str, suffix: str, typo: str
) -> None:
    refused = assert_problem(admin.get(schedule_path + suffix), 422, "VALIDATION_FAILED")
    assert list(refused["errors"]) == [typo]


def test_a_delete_with_a_stray_parameter_deletes_nothing(admin: Api, schedule_path: str) -> None:
    refused = admin.delete(f"{schedule_path}?version=1&force=true")
    assert list(assert_problem(refused, 422, "VALIDATION_FAILED")["errors"]) == ["force"]
    assert admin.get(schedule_path).status_code == 200


def test_the_openapi_document_says_so(client: FlaskClient) -> None:
    runs = client.get("/api/openapi.json").json["paths"]["/api/workflows/runs"]["get"]
    assert "query parameters it does not take" in runs["responses"]["422"]["description"]
