"""Finding things by what you have: a run by its id, every kind's timeline, a definition by its
key, a saved schedule's preview, and list filters (issue 14, item 6)."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from cronledger.application.launches import Worker
from cronledger.application.services import Services
from tests.e2e.helpers import account, assert_problem, other_tenant, submit
from tests.support import Api, FakeClock
from web.examples.schedules import marked

RUNS = "/api/workflows/runs"
SCHEDULES = "/api/workflows/schedules"


@pytest.fixture
def run(admin: Api, body: dict[str, Any]) -> dict[str, Any]:
    """A manual run of a new schedule, as the API answered it."""
    schedule = admin.post(SCHEDULES, body).json
    answer = admin.post(f"{SCHEDULES}/{schedule['id']}/run", {"request_id": "r1"})
    assert answer.status_code == 202, answer.json
    return answer.json  # type: ignore[no-any-return]


def test_a_run_is_found_by_its_id_alone_in_its_tenant_only(
    admin: Api, run: dict[str, Any], services: Services, client: FlaskClient
) -> None:
    found = admin.get(f"{RUNS}/{run['id']}")
    assert (found.status_code, found.json) == (200, run)
    globex = other_tenant(services, client)
    assert_problem(globex.get(f"{RUNS}/{run['id']}"), 404, "NOT_FOUND")
    assert_problem(admin.get(f"{RUNS}/not-a-run"), 404, "NOT_FOUND")
    assert_problem(admin.get(f"{RUNS}/{run['schedule_id']}"), 404, "NOT_FOUND")


def test_runs_accounts_and_definitions_have_timelines_for_auditors(
    admin: Api,
    run: dict[str, Any],
    definition: dict[str, Any],
    services: Services,
    client: FlaskClient,
) -> None:
    auditor = account(admin, "aud", ["auditor"])
    timelines = {
        f"{RUNS}/{run['id']}/timeline": ["Run.Registered"],
        "/api/accounts/aud/timeline": ["Account.Registered", "Account.TokenIssued"],
        f"/api/definitions/{definition['id']}/timeline": [
            "Definition.Registered",
            "Definition.Published",
        ],
    }
    globex = other_tenant(services, client)
    for path, types in timelines.items():
        answer = auditor.get(path)
        assert answer.status_code == 200, (path, answer.json)
        assert [entry["type"] for entry in answer.json["items"]] == types
        assert_problem(globex.get(path), 404, "NOT_FOUND")
    operator = account(admin, "ops", ["operator"])
    assert_problem(operator.get(f"{RUNS}/{run['id']}/timeline"), 403, "FORBIDDEN")
    assert_problem(auditor.get("/api/accounts/nobody/timeline"), 404, "NOT_FOUND")


def test_a_definition_is_found_by_its_key_in_its_tenant_only(
    admin: Api, definition: dict[str, Any], services: Services, client: FlaskClient
) -> None:
    found = admin.get("/api/definitions/by-key/daily")
    assert (found.status_code, found.json) == (200, definition)
    assert_problem(admin.get("/api/definitions/by-key/weekly"), 404, "NOT_FOUND")
    assert_problem(
        other_tenant(services, client).get("/api/definitions/by-key/daily"), 404, "NOT_FOUND"
    )


def test_a_saved_schedule_previews_its_fires_while_disabled(
    admin: Api, body: dict[str, Any]
) -> None:
    schedule = admin.post(SCHEDULES, body).json
    assert schedule["enabled"] is False
    path = f"{SCHEDULES}/{schedule['id']}/preview"
    answer = admin.get(f"{path}?count=2&after=2026-10-05T02:00:00%2B08:00")
    assert answer.status_code == 200, answer.json
    assert answer.json == marked(
        ["2026-10-05T01:00:00Z", "2026-10-06T01:00:00Z"],
        ["2026-10-05T09:00:00+08:00", "2026-10-06T09:00:00+08:00"],
    )
    posted = admin.post(f"{SCHEDULES}/preview", {**_trigger_of(body), "count": 5}).json
    assert admin.get(path).json == posted
    assert_problem(admin.get(f"{path}?count=0"), 422, "VALIDATION_FAILED")
    assert_problem(admin.get(f"{path}?after=2026-10-05T02:00:00"), 422, "VALIDATION_FAILED")
    admin.delete(f"{SCHEDULES}/{schedule['id']}?version=1")
    assert_problem(admin.get(path), 404, "NOT_FOUND")


def _trigger_of(body: dict[str, Any]) -> dict[str, Any]:
    return {"trigger": body["trigger"], "timezone": body["timezone"]}


def test_schedules_are_listed_by_name_enabled_definition_and_initiator(
    admin: Api, body: dict[str, Any], definition_id: str
) -> None:
    account(admin, "ann", ["requester"])
    first = admin.post(SCHEDULES, {**body, "enabled": True}).json["id"]
    second = admin.post(SCHEDULES, {**body, "name": "weekly", "initiator_id": "ann"}).json["id"]
    both = sorted([first, second])  # created at the same instant, so in id order
    assert _ids(admin, SCHEDULES) == both
    assert _ids(admin, f"{SCHEDULES}?name=weekly") == [second]
    assert _ids(admin, f"{SCHEDULES}?enabled=true") == [first]
    assert _ids(admin, f"{SCHEDULES}?enabled=false&initiator_id=ann") == [second]
    assert _ids(admin, f"{SCHEDULES}?initiator_id=root") == [first]
    assert _ids(admin, f"{SCHEDULES}?definition_id={body['definition_id']}") == both
    assert _ids(admin, f"{SCHEDULES}?definition_id={definition_id}") == []
    assert_problem(admin.get(f"{SCHEDULES}?enabled=yes"), 422, "VALIDATION_FAILED")


def test_approvals_are_listed_by_applicant_definition_schedule_state_and_deadline(
    admin: Api, body: dict[str, Any], definition_id: str, services: Services, clock: FakeClock
) -> None:
    schedule = admin.post(SCHEDULES, body).json["id"]
    admin.post(f"{SCHEDULES}/{schedule}/run", {"request_id": "r1"})
    Worker.of(services).poll()
    clock.advance(3600)
    ann = account(admin, "ann", ["requester"])
    assert submit(ann, definition_id).status_code == 201
    launched, submitted = _ids(admin, "/api/approvals")[::-1]
    path = "/api/approvals?"
    assert _ids(admin, f"{path}schedule_id={schedule}") == [launched]
    assert _ids(admin, f"{path}applicant_id=ann") == [submitted]
    assert _ids(admin, f"{path}applicant_id=root&definition_id={definition_id}") == []
    assert _ids(admin, f"{path}definition_id={definition_id}&state=WAITING_REVIEW") == [submitted]
    assert _ids(admin, f"{path}deadline_from=2026-10-01T10:30:00Z") == [submitted]
    assert _ids(admin, f"{path}deadline_to=2026-10-01T18:30:00%2B08:00") == [launched]
    assert _ids(admin, f"{path}state=EXPIRED") == []
    assert_problem(admin.get(f"{path}schedule_id=daily"), 422, "VALIDATION_FAILED")
    window = "deadline_from=2026-10-02T00:00:00Z&deadline_to=2026-10-01T00:00:00Z"
    assert_problem(admin.get(f"{path}{window}"), 422, "VALIDATION_FAILED")


def _ids(api: Api, path: str) -> list[str]:
    answer = api.get(path)
    assert answer.status_code == 200, answer.json
    return [item["id"] for item in answer.json["items"]]


def test_the_openapi_document_shows_the_lookups_and_filters(client: FlaskClient) -> None:
    paths = client.get("/api/openapi.json").json["paths"]
    for path in (
        "/api/workflows/runs/{run_id}",
        "/api/workflows/runs/{run_id}/timeline",
        "/api/accounts/{account_id}/timeline",
        "/api/definitions/{definition_id}/timeline",
        "/api/definitions/by-key/{key}",
        "/api/workflows/schedules/{schedule_id}/preview",
    ):
        assert "get" in paths[path], path
    wanted = {
        "/api/workflows/schedules": {"name", "enabled", "definition_id", "initiator_id"},
        "/api/approvals": {
            "applicant_id",
            "definition_id",
            "schedule_id",
            "state",
            "deadline_from",
            "deadline_to",
        },
        "/api/workflows/schedules/{schedule_id}/preview": {"count", "after"},
    }
    for path, names in wanted.items():
        assert names <= {p.get("name") for p in paths[path]["get"]["parameters"]}, path
