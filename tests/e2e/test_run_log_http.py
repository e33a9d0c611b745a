"""Run now with versions, the execution log across schedules, and the run record over HTTP
(requirement 002: scheduled tasks)."""

from __future__ import annotations

from typing import Any

import pytest

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services
from tests.e2e.helpers import account, assert_problem
from tests.support import Api, FakeClock

LOG = "/api/workflows/runs"
EVERY_SECOND = {"kind": "cron", "expression": "* * * * * *"}


@pytest.fixture
def every_second(admin: Api, body: dict[str, Any]) -> str:
    created = admin.post(
        "/api/workflows/schedules", {**body, "trigger": EVERY_SECOND, "enabled": True}
    )
    assert created.status_code == 201
    return f"/api/workflows/schedules/{created.json['id']}"


def test_run_now_checks_the_version_and_a_reused_request_id(admin: Api, every_second: str) -> None:
    assert_problem(
        admin.post(f"{every_second}/run", {"request_id": "a", "version": 7}),
        409,
        "VERSION_CONFLICT",
    )
    first = admin.post(f"{every_second}/run", {"request_id": "a", "version": 1})
    assert first.status_code == 202
    assert (first.json["request_id"], first.json["schedule_version"]) == ("a", 1)
    assert (first.json["triggered_by"], first.json["trace_id"]) == (
        "root",
        first.json["id"].replace("-", ""),
    )
    again = admin.post(f"{every_second}/run", {"request_id": "a", "version": 1})
    assert (again.status_code, again.json["id"]) == (202, first.json["id"])
    operator = account(admin, "ops", ["operator"])
    theirs = operator.post(f"{every_second}/run", {"request_id": "a"}).json
    assert theirs["id"] != first.json["id"]
    assert theirs["triggered_by"] == "ops"
    admin.post(f"{every_second}/disable", {})
    reused = assert_problem(
        admin.post(f"{every_second}/run", {"request_id": "a"}), 409, "REQUEST_ID_REUSED"
    )
    assert first.json["id"] in reused["detail"]
    assert admin.post(f"{every_second}/run", {"request_id": "b", "version": 2}).status_code == 202


def test_the_execution_log_lists_every_schedules_runs_with_filters(
    admin: Api, body: dict[str, Any], every_second: str, services: Services, clock: FakeClock
) -> None:
    other = admin.post("/api/workflows/schedules", {**body, "name": "other"}).json["id"]
    schedule_id = every_second.rsplit("/", 1)[1]
    for _ in range(3):
        clock.advance(1)
        Ticker.of(services).scan()
    manual = admin.post(f"/api/workflows/schedules/{other}/run", {"request_id": "m1"}).json
    log = admin.get(LOG).json
    assert log["total"] == 4
    assert [r["planned_at"] for r in log["items"]] == [
        "2026-10-01T09:00:03Z",
        "2026-10-01T09:00:03Z",
        "2026-10-01T09:00:02Z",
        "2026-10-01T09:00:01Z",
    ]
    (only,) = admin.get(f"{LOG}?schedule_id={other}").json["items"]
    assert only == {key: value for key, value in manual.items() if key != "attempts"}
    assert admin.get(f"{LOG}?trigger=manual").json["total"] == 1
    assert admin.get(f"{LOG}?trigger=schedule&schedule_id={schedule_id}").json["total"] == 3
    window = admin.get(
        f"{LOG}?planned_from=2026-10-01T09:00:02Z&planned_to=2026-10-01T09:00:03Z"
    ).json
    assert [r["planned_at"] for r in window["items"]] == ["2026-10-01T09:00:02Z"]
    paged = admin.get(f"{LOG}?page=2&page_size=3").json
    assert (paged["total"], [r["id"] for r in paged["items"]]) == (4, [log["items"][3]["id"]])
    Worker.of(services).poll()
    services.projector.catch_up()  # as the projections loop does after the worker's writes
    statuses = [r["status"] for r in admin.get(LOG).json["items"]]
    assert "PENDING" not in statuses
    for status in set(statuses):
        assert admin.get(f"{LOG}?status={status}").json["total"] == statuses.count(status)


def test_the_execution_log_refuses_bad_filters_by_name(admin: Api) -> None:
    for query, field in (
        ("status=DONE", "status"),
        ("trigger=cron", "trigger"),
        ("schedule_id=nope", "schedule_id"),
        ("planned_from=yesterday", "planned_from"),
        ("planned_from=2026-10-02T00:00:00Z&planned_to=2026-10-01T00:00:00Z", "planned_to"),
    ):
        refused = assert_problem(admin.get(f"{LOG}?{query}"), 422, "VALIDATION_FAILED")
        assert list(refused["errors"]) == [field], query


def test_a_deleted_schedules_runs_stay_listed(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    created = admin.post("/api/workflows/schedules", body).json
    path = f"/api/workflows/schedules/{created['id']}"
    run = admin.post(f"{path}/run", {"request_id": "once"}).json
    Worker.of(services).poll()
    assert admin.delete(f"{path}?version={created['version']}").status_code == 204
    assert_problem(admin.get(path), 404, "NOT_FOUND")
    assert [r["id"] for r in admin.get(f"{path}/runs").json["items"]] == [run["id"]]
    assert [r["id"] for r in admin.get(f"{LOG}?schedule_id={created['id']}").json["items"]] == [
        run["id"]
    ]


def test_a_run_shows_its_record_and_the_log_is_in_the_tenant_only(
    admin: Api, every_second: str, services: Services, clock: FakeClock
) -> None:
    run = admin.post(f"{every_second}/run", {"request_id": "r"}).json
    assert (run["started_at"], run["duration_seconds"], run["error_code"]) == (None, None, None)
    clock.advance(0.5)
    Worker.of(services).poll()
    services.projector.catch_up()  # as the projections loop does after the worker's writes
    done = admin.get(f"{every_second}/runs/{run['id']}").json
    assert (done["status"], done["started_at"]) == ("SUCCEEDED", "2026-10-01T09:00:00.5Z")
    assert done["duration_seconds"] == 0.0
    auditor = account(admin, "aud", ["auditor"])
    assert auditor.get(LOG).json["total"] == 1


def test_the_openapi_document_shows_the_log_and_the_record(client: Any) -> None:
    document = client.get("/api/openapi.json").json
    log = document["paths"]["/api/workflows/runs"]["get"]
    names = {p.get("name") for p in log["parameters"]}
    assert {"schedule_id", "status", "trigger", "planned_from", "planned_to", "page"} <= names
    run = document["components"]["schemas"]["RunOut"]["properties"]
    assert {
        "schedule_version",
        "triggered_by",
        "request_id",
        "started_at",
        "duration_seconds",
        "error_code",
        "trace_id",
    } <= set(run)
    run_now = document["components"]["schemas"]["RunNowIn"]["properties"]
    assert {"request_id", "version"} <= set(run_now)
