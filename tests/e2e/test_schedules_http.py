"""Schedules over HTTP: lifecycle, validation, preview, presets, tenants."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from cronledger.application.services import Services
from tests.e2e.helpers import CRON_9AM, account, assert_problem, log_end
from tests.support import DECIDERS, Api, FakeClock
from web.examples.schedules import marked


def test_create_read_update_delete(admin: Api, body: dict[str, Any], clock: FakeClock) -> None:
    created = admin.post("/api/workflows/schedules", body)
    assert created.status_code == 201
    schedule = created.json
    assert (schedule["enabled"], schedule["next_fire_at"], schedule["version"]) == (False, None, 1)
    policies = (schedule["misfire_policy"], schedule["overlap_policy"])
    assert policies == ("catch_up", "skip_while_open")
    assert (schedule["updated_by"], schedule["last_run"], schedule["last_skip"]) == (
        "root",
        None,
        None,
    )
    path = f"/api/workflows/schedules/{schedule['id']}"
    assert admin.get(path).json == schedule

    clock.advance(60)
    enabled = admin.put(path, {**body, "enabled": True, "version": 1})
    assert enabled.status_code == 200
    assert (enabled.json["next_fire_at"], enabled.json["version"]) == ("2026-10-02T01:00:00Z", 2)
    assert enabled.json["updated_at"] == "2026-10-01T09:01:00Z"

    stale = admin.put(path, {**body, "name": "late edit", "version": 1})
    assert_problem(stale, 409, "VERSION_CONFLICT")
    assert admin.get(path).json["name"] == "每日检查"

    assert_problem(admin.delete(f"{path}?version=1"), 409, "VERSION_CONFLICT")
    assert_problem(admin.delete(path), 422, "VALIDATION_FAILED")
    assert admin.delete(f"{path}?version=2").status_code == 204
    assert_problem(admin.get(path), 404, "NOT_FOUND")
    assert admin.get("/api/workflows/schedules").json["total"] == 0
    types = [e["type"] for e in admin.get(f"{path}/timeline").json["items"]]
    assert types == ["Schedule.Created", "Schedule.Updated", "Schedule.Deleted"]


def test_enable_and_disable_endpoints(admin: Api, body: dict[str, Any]) -> None:
    schedule = admin.post("/api/workflows/schedules", body).json
    path = f"/api/workflows/schedules/{schedule['id']}"
    assert admin.post(f"{path}/enable").json["next_fire_at"] == "2026-10-02T01:00:00Z"
    disabled = admin.post(f"{path}/disable", {"version": 2}).json
    assert (disabled["enabled"], disabled["next_fire_at"]) == (False, None)


def test_renaming_keeps_next_fire_and_retiming_moves_it(
    admin: Api, body: dict[str, Any], clock: FakeClock
) -> None:
    schedule = admin.post("/api/workflows/schedules", {**body, "enabled": True}).json
    path = f"/api/workflows/schedules/{schedule['id']}"
    clock.advance(3600)
    renamed = admin.put(path, {**body, "enabled": True, "name": "renamed", "version": 1}).json
    assert renamed["next_fire_at"] == schedule["next_fire_at"]
    retimed = admin.put(path, {**body, "enabled": True, "timezone": "UTC", "version": 2}).json
    assert retimed["next_fire_at"] == "2026-10-02T09:00:00Z"


def test_omitted_timezone_is_the_business_timezone(admin: Api, body: dict[str, Any]) -> None:
    del body["timezone"]
    assert admin.post("/api/workflows/schedules", body).json["timezone"] == "UTC"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"trigger": {"kind": "cron", "expression": "0 0 30 2 *"}}, "trigger.expression"),
        ({"trigger": {"kind": "cron", "expression": "@daily"}}, "trigger.expression"),
        ({"trigger": {"kind": "cron", "expression": "0 9 * * 1#2"}}, "trigger.expression"),
        (
            {
                "trigger": {
                    "kind": "window-interval",
                    "weekdays": [8],
                    "windows": [{"start": "09:30", "end": "11:30"}],
                    "interval_minutes": 5,
                }
            },
            "trigger.weekdays",
        ),
        (
            {
                "trigger": {
                    "kind": "window-interval",
                    "weekdays": [1],
                    "windows": [{"start": "9:30", "end": "11:30"}],
                    "interval_minutes": 5,
                }
            },
            "trigger.windows",
        ),
        ({"timezone": "Asia/Beijing"}, "timezone"),
        ({"title_template": "{{week}}"}, "title_template"),
        ({"form_data": "text"}, "form_data"),
        ({"form_data": {"big": "x" * 70_000}}, "form_data"),
        ({"misfire_policy": "never"}, "misfire_policy"),
        ({"overlap_policy": "queue"}, "overlap_policy"),
        ({"enabled": "yes"}, "enabled"),
        ({"initiator_id": "ghost"}, "initiator_id"),
        ({"definition_id": "not-a-definition"}, "definition_id"),
        ({"name": ""}, "name"),
    ],
)
def test_every_rule_is_422_naming_its_field_and_writes_nothing(
    admin: Api, services: Services, body: dict[str, Any], change: dict[str, Any], field: str
) -> None:
    before = log_end(services)
    problem = assert_problem(
        admin.post("/api/workflows/schedules", {**body, **change}), 422, "VALIDATION_FAILED"
    )
    assert field in problem["errors"], problem["errors"]
    assert log_end(services) == before


def test_unpublished_external_and_inactive_references_are_refused(
    admin: Api, body: dict[str, Any], definition: dict[str, Any]
) -> None:
    admin.post("/api/accounts", {"id": "gone", "name": "Gone", "roles": ["requester"]})
    admin.post("/api/accounts/gone/deactivate")
    external = admin.post(
        "/api/definitions",
        {
            "key": "ext",
            "name": "Ext",
            "external": True,
            "review_window_seconds": 60,
            "reviewers": DECIDERS,
        },
    ).json
    admin.post(f"/api/definitions/{external['id']}/publish")
    for change, field, words in [
        ({"initiator_id": "gone"}, "initiator_id", "deactivated"),
        ({"definition_id": external["id"]}, "definition_id", "external"),
    ]:
        problem = assert_problem(
            admin.post("/api/workflows/schedules", {**body, **change}), 422, "VALIDATION_FAILED"
        )
        assert words in problem["errors"][field][0]
    schedule = admin.post("/api/workflows/schedules", body).json
    admin.post(f"/api/definitions/{definition['id']}/unpublish")
    refused = admin.post(f"/api/workflows/schedules/{schedule['id']}/enable")
    assert (
        "not published"
        in assert_problem(refused, 422, "VALIDATION_FAILED")["errors"]["definition_id"][0]
    )


def test_preview_shows_the_daylight_saving_effect(admin: Api) -> None:
    response = admin.post(
        "/api/workflows/schedules/preview",
        {
            "trigger": {"kind": "cron", "expression": "30 2 * * *"},
            "timezone": "America/New_York",
            "after": "2026-03-06T19:00:00-05:00",
            "count": 3,
        },
    )
    assert response.status_code == 200
    assert response.json == marked(  # no calendar: every fire `FIRES`
        ["2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"],
        ["2026-03-07T02:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"],
    )


def test_preview_defaults_to_five_after_now(admin: Api) -> None:
    times = admin.post("/api/workflows/schedules/preview", {"trigger": CRON_9AM}).json
    assert times["fire_times"][0] == "2026-10-02T09:00:00Z"
    assert len(times["fire_times"]) == 5


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"after": "2026-03-06T19:00:00"}, "after"),
        ({"after": "0001-01-01T00:00:00+05:00"}, "after"),
        ({"after": "yesterday"}, "after"),
        ({"count": 51}, "count"),
        ({"count": 0}, "count"),
        ({"timezone": "Nope/Nope"}, "timezone"),
        ({"trigger": {"kind": "cron", "expression": "61 * * * *"}}, "trigger.expression"),
    ],
)
def test_preview_refuses_bad_input(admin: Api, change: dict[str, Any], field: str) -> None:
    problem = assert_problem(
        admin.post("/api/workflows/schedules/preview", {"trigger": CRON_9AM, **change}),
        422,
        "VALIDATION_FAILED",
    )
    assert field in problem["errors"]


def test_create_from_a_preset_starts_disabled(admin: Api, definition: dict[str, Any]) -> None:
    created = admin.post(
        "/api/workflows/schedules",
        {
            "definition_id": definition["id"],
            "preset_id": "weekday-morning",
            "initiator_id": "root",
        },
    )
    assert created.status_code == 201
    schedule = created.json
    assert (schedule["enabled"], schedule["next_fire_at"], schedule["preset_id"]) == (
        False,
        None,
        "weekday-morning",
    )
    assert (schedule["name"], schedule["title_template"]) == (
        "Morning check",
        "Morning check {{date}}",
    )
    assert (schedule["timezone"], schedule["form_data"]) == ("Europe/London", {"shift": "early"})
    assert schedule["trigger"]["expression"] == "0 8 * * MON-FRI"
    missing = admin.post(
        "/api/workflows/schedules",
        {
            "definition_id": definition["id"],
            "preset_id": "nightly",
            "initiator_id": "root",
        },
    )
    assert "preset_id" in assert_problem(missing, 422, "VALIDATION_FAILED")["errors"]


def test_invalid_presets_are_refused_on_the_definition(admin: Api) -> None:
    response = admin.post(
        "/api/definitions",
        {
            "key": "k",
            "name": "K",
            "external": False,
            "review_window_seconds": 60,
            "reviewers": DECIDERS,
            "schedule_presets": [
                {"id": "p", "title": "P", "trigger": {"kind": "cron", "expression": "0 0 30 2 *"}}
            ],
        },
    )
    errors = assert_problem(response, 422, "VALIDATION_FAILED")["errors"]
    assert "schedule_presets.0.trigger.expression" in errors


def test_permissions_and_tenants(
    admin: Api, body: dict[str, Any], services: Services, client: FlaskClient
) -> None:
    schedule = admin.post("/api/workflows/schedules", body).json
    path = f"/api/workflows/schedules/{schedule['id']}"
    auditor = account(admin, "aud", ["auditor"])
    assert auditor.get(path).status_code == 200
    assert auditor.get(f"{path}/timeline").status_code == 200
    assert_problem(auditor.put(path, {**body, "version": 1}), 403, "FORBIDDEN")
    operator = account(admin, "op", ["operator"])
    assert_problem(operator.get(f"{path}/timeline"), 403, "FORBIDDEN")
    assert_problem(operator.delete(f"{path}?version=1"), 403, "FORBIDDEN")
    globex = Api(client, services.directory.bootstrap("globex", "boss").token)
    assert_problem(globex.get(path), 404, "NOT_FOUND")
    assert_problem(globex.put(path, {**body, "version": 1}), 404, "NOT_FOUND")
    assert_problem(globex.get(f"{path}/timeline"), 404, "NOT_FOUND")
    assert globex.get("/api/workflows/schedules").json["total"] == 0
    foreign = globex.post("/api/workflows/schedules", {**body, "initiator_id": "boss"})
    assert "definition_id" in assert_problem(foreign, 422, "VALIDATION_FAILED")["errors"]
