"""Launches over HTTP: the exact published revision, fire metadata, next fires, titles."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from flask.testing import FlaskClient

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services
from tests.conftest import Opener
from tests.support import DECIDERS, Api, FakeClock
from web import create_app

EVERY_MINUTE = {"kind": "cron", "expression": "* * * * *"}
EACH_MINUTE = {"trigger": EVERY_MINUTE, "timezone": "UTC", "overlap_policy": "allow"}


def launch_next(services: Services, clock: FakeClock) -> None:
    clock.advance(60)
    assert Ticker.of(services).scan().registered == 1
    assert Worker.of(services).poll().succeeded == 1
    services.projector.catch_up()  # as the projections loop does after the loops' writes


def newest_instance(admin: Api) -> dict[str, Any]:
    items = admin.get("/api/approvals?page_size=200").json["items"]
    return max(items, key=lambda item: item["submitted_at"])  # type: ignore[no-any-return]


def window_of(instance: dict[str, Any]) -> float:
    deadline = datetime.fromisoformat(instance["review_deadline_at"])
    return (deadline - datetime.fromisoformat(instance["submitted_at"])).total_seconds()


def test_a_schedule_launches_the_revision_it_was_saved_against(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    definition_path = f"/api/definitions/{body['definition_id']}"
    schedule = admin.post(
        "/api/workflows/schedules",
        {**body, **EACH_MINUTE, "enabled": True},
    ).json
    assert schedule["definition_revision"] == admin.get(definition_path).json["revision"] == 1
    definition = admin.get(definition_path).json
    changed = admin.put(
        definition_path,
        {
            "name": "Daily, renamed",
            "external": False,
            "review_window_seconds": 7200,
            "reviewers": DECIDERS,
            "schedule_presets": definition["schedule_presets"],
            "allow_self_approval": False,
            "version": definition["version"],
        },
    ).json
    assert (changed["revision"], changed["review_window_seconds"]) == (2, 7200)

    launch_next(services, clock)  # still revision 1: a one-hour window, the old name
    first = newest_instance(admin)
    assert window_of(first) == 3600
    origin = first["origin"]
    assert (origin["definition_revision"], origin["definition_name"]) == (1, "Daily")
    assert origin["fire_id"] == origin["run_id"]
    assert (origin["source"], origin["trigger_kind"]) == ("schedule", "cron")
    assert (origin["schedule_id"], origin["scheduled_for"]) == (
        schedule["id"],
        "2026-10-01T09:01:00Z",
    )
    path = f"/api/workflows/schedules/{schedule['id']}"
    run = admin.get(f"{path}/runs/{origin['fire_id']}").json
    assert run["definition_revision"] == 1

    resaved = admin.put(
        path,
        {**body, **EACH_MINUTE, "enabled": True, "version": 1},
    ).json
    assert resaved["definition_revision"] == 2
    launch_next(services, clock)
    second = newest_instance(admin)
    assert window_of(second) == 7200
    assert second["origin"]["definition_name"] == "Daily, renamed"

    admin.post(f"{definition_path}/unpublish")  # unpublishing still stops launches
    clock.advance(60)
    Ticker.of(services).scan()
    assert Worker.of(services).poll().failed == 1


def test_create_update_and_read_show_the_next_five_fires(admin: Api, body: dict[str, Any]) -> None:
    created = admin.post("/api/workflows/schedules", body)  # disabled: as if enabled
    assert created.status_code == 201
    fires = [
        {"at": f"2026-10-0{day}T01:00:00Z", "local": f"2026-10-0{day}T09:00:00+08:00"}
        for day in range(2, 7)
    ]
    assert (created.json["enabled"], created.json["next_fire_at"]) == (False, None)
    assert created.json["next_fires"] == fires
    path = f"/api/workflows/schedules/{created.json['id']}"
    assert admin.get(path).json["next_fires"] == fires
    updated = admin.put(path, {**body, "timezone": "UTC", "enabled": True, "version": 1}).json
    assert updated["next_fires"][0] == {
        "at": "2026-10-02T09:00:00Z",
        "local": "2026-10-02T09:00:00+00:00",
    }
    assert len(updated["next_fires"]) == 5
    assert updated["next_fires"][0]["at"] == updated["next_fire_at"]
    listed = admin.get("/api/workflows/schedules").json["items"]
    assert listed[0]["next_fires"] == updated["next_fires"]


def test_titles_take_the_business_zone(
    open_with: Opener, admin: Api, body: dict[str, Any], clock: FakeClock
) -> None:
    """21:00 on 1 October in New York is 09:00 on 2 October in Shanghai, the business zone."""
    shanghai = open_with(clock, timezone="Asia/Shanghai")
    api = Api(create_app({"SERVICES": shanghai, "TESTING": True}).test_client(), admin.token)
    schedule = api.post(
        "/api/workflows/schedules",
        {
            **body,
            "trigger": {"kind": "cron", "expression": "0 21 * * *"},
            "timezone": "America/New_York",
            "title_template": "检查 {{date}}",
            "enabled": True,
        },
    ).json
    assert schedule["next_fire_at"] == "2026-10-02T01:00:00Z"
    clock.now = datetime(2026, 10, 2, 1, 0, 1, tzinfo=UTC)
    assert Ticker.of(shanghai).scan().registered == 1
    shanghai.projector.catch_up()  # as the projections loop does after the tick's writes
    (run,) = api.get(f"/api/workflows/schedules/{schedule['id']}/runs").json["items"]
    assert run["title"] == "检查 2026-10-02"


def test_the_openapi_document_shows_the_new_fields(client: FlaskClient) -> None:
    schemas = client.get("/api/openapi.json").json["components"]["schemas"]
    assert {"definition_revision", "next_fires"} <= set(schemas["ScheduleOut"]["properties"])
    assert set(schemas["NextFireOut"]["properties"]) == {"at", "local"}
    assert "revision" in schemas["DefinitionOut"]["properties"]
    assert "definition_revision" in schemas["RunOut"]["properties"]
    assert {
        "source",
        "schedule_id",
        "schedule_name",
        "fire_id",
        "run_id",
        "scheduled_for",
        "trigger_kind",
        "trigger",
        "definition_revision",
    } <= set(schemas["OriginOut"]["properties"])
