"""A PUT carries the whole representation; a PATCH (RFC 7396) changes only what it names."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from cronledger.application.services import Services
from tests.e2e.helpers import assert_problem
from tests.support import DECIDERS, Api

SCHEDULES = "/api/workflows/schedules"
MERGE_PATCH = "application/merge-patch+json"


@pytest.fixture
def live(admin: Api, body: dict[str, Any]) -> str:
    """The path of an enabled schedule in Asia/Shanghai with form data."""
    created = admin.post(SCHEDULES, {**body, "enabled": True}).json
    return f"{SCHEDULES}/{created['id']}"


@pytest.mark.parametrize("left_out", ["timezone", "form_data", "enabled", "overlap_policy"])
def test_a_put_that_leaves_a_field_out_is_refused(
    admin: Api, body: dict[str, Any], live: str, left_out: str
) -> None:
    partial = {key: value for key, value in {**body, "version": 1}.items() if key != left_out}
    refused = assert_problem(admin.put(live, partial), 422, "VALIDATION_FAILED")
    assert list(refused["errors"]) == [left_out]
    kept = admin.get(live).json
    assert (kept["timezone"], kept["form_data"], kept["enabled"], kept["version"]) == (
        "Asia/Shanghai",
        {"region": "east"},
        True,
        1,
    )


def test_a_patch_changes_only_what_it_names(admin: Api, live: str) -> None:
    patched = admin.patch(live, {"name": "renamed", "trigger": {"expression": "0 10 * * *"}})
    assert patched.status_code == 200, patched.json
    after = patched.json
    assert (after["name"], after["timezone"], after["enabled"]) == (
        "renamed",
        "Asia/Shanghai",
        True,
    )
    assert after["trigger"] == {"kind": "cron", "expression": "0 10 * * *"}
    assert (after["form_data"], after["version"]) == ({"region": "east"}, 2)
    assert after["next_fire_at"] == "2026-10-02T02:00:00Z"


def test_objects_merge_and_null_removes_a_key_or_restores_a_default(
    admin: Api, live: str, services: Services
) -> None:
    merged = admin.patch(live, {"form_data": {"team": "ops", "region": None}}).json
    assert merged["form_data"] == {"team": "ops"}
    defaults = admin.patch(live, {"timezone": None, "enabled": None, "form_data": None}).json
    assert (defaults["timezone"], defaults["enabled"], defaults["form_data"]) == (
        services.settings.timezone,
        False,
        {},
    )


def test_a_patch_is_validated_as_a_put(admin: Api, live: str) -> None:
    no_name = assert_problem(admin.patch(live, {"name": None}), 422, "VALIDATION_FAILED")
    assert list(no_name["errors"]) == ["name"]
    typo = assert_problem(admin.patch(live, {"enabeld": False}), 422, "VALIDATION_FAILED")
    assert list(typo["errors"]) == ["enabeld"]
    bad_zone = assert_problem(
        admin.patch(live, {"timezone": "Mars/Base"}), 422, "VALIDATION_FAILED"
    )
    assert "timezone" in bad_zone["errors"]
    assert admin.get(live).json["version"] == 1


def test_a_patch_honours_the_version_in_its_body(admin: Api, live: str) -> None:
    assert admin.patch(live, {"name": "first", "version": 1}).json["version"] == 2
    stale = admin.patch(live, {"name": "late", "version": 1})
    assert_problem(stale, 409, "VERSION_CONFLICT")
    assert admin.get(live).json["name"] == "first"


def test_a_patch_takes_merge_patch_or_plain_json_only(admin: Api, live: str) -> None:
    plain = admin.patch(live, {"name": "plain"}, headers={"Content-Type": "application/json"})
    assert plain.json["name"] == "plain"
    text = admin.call("PATCH", live, data='{"name": "x"}', headers={"Content-Type": "text/plain"})
    assert_problem(text, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_an_account_patch_keeps_the_fields_it_leaves_out(admin: Api) -> None:
    admin.post("/api/accounts", {"id": "ann", "name": "Ann", "roles": ["requester"]})
    patched = admin.patch("/api/accounts/ann", {"roles": ["auditor"]}).json
    assert (patched["name"], patched["roles"], patched["version"]) == ("Ann", ["auditor"], 2)
    left_out = admin.put("/api/accounts/ann", {"name": "Ann", "version": 2})
    assert list(assert_problem(left_out, 422, "VALIDATION_FAILED")["errors"]) == ["roles"]


def test_a_definition_patch_keeps_its_presets(admin: Api, definition: dict[str, Any]) -> None:
    path = f"/api/definitions/{definition['id']}"
    patched = admin.patch(path, {"review_window_seconds": 60, "reviewers": DECIDERS}).json
    assert patched["schedule_presets"] == definition["schedule_presets"]
    assert (patched["review_window_seconds"], patched["name"]) == (60, "Daily")
    left_out = admin.put(
        path,
        {
            "name": "Daily",
            "external": False,
            "review_window_seconds": 60,
            "reviewers": DECIDERS,
            "version": 3,
        },
    )
    assert set(assert_problem(left_out, 422, "VALIDATION_FAILED")["errors"]) == {
        "schedule_presets",
        "allow_self_approval",
    }


def test_the_openapi_document_shows_put_and_patch(client: FlaskClient) -> None:
    spec = client.get("/api/openapi.json").json
    schemas = spec["components"]["schemas"]
    assert {"timezone", "form_data", "enabled", "version"} <= set(
        schemas["ScheduleUpdate"]["required"]
    )
    assert "required" not in schemas["SchedulePatch"]
    for path in (f"{SCHEDULES}/{{schedule_id}}", "/api/accounts/{account_id}"):
        content = spec["paths"][path]["patch"]["requestBody"]["content"]
        assert set(content) == {MERGE_PATCH}  # so a generated client sends it; JSON is taken too
    assert "patch" in spec["paths"]["/api/definitions/{definition_id}"]
