"""Skips over HTTP: overlap skipped by default, and every skipped run and its schedule say why."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from cronledger.application.services import Services
from tests.support import Api, FakeClock
from tick.ticker import Ticker
from tick.worker import Worker

EVERY_MINUTE = {"kind": "cron", "expression": "* * * * *"}


def test_skipped_runs_and_their_schedule_say_why(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    schedule = admin.post(
        "/api/workflows/schedules",
        {**body, "trigger": EVERY_MINUTE, "misfire_policy": "skip", "enabled": True},
    ).json
    assert schedule["overlap_policy"] == "skip"
    path = f"/api/workflows/schedules/{schedule['id']}"
    clock.advance(600.5)  # 09:01 … 09:09 missed, 09:10 on time
    Ticker.of(services).scan()
    clock.advance(1)
    manual = admin.post(f"{path}/run", {"request_id": "ops-1"}).json
    Worker.of(services).poll()  # launches 09:10; the manual run overlaps it
    services.projector.catch_up()

    missed = admin.get(f"{path}/runs?status=SKIPPED_MISSED").json["items"][0]
    assert missed["skip_reason"] == {"code": "MISSED", "blocking_run_id": None, "count": 9}
    on_time = admin.get(f"{path}/runs?status=SUCCEEDED").json["items"][0]
    assert on_time["skip_reason"] is None
    overlapped = admin.get(f"{path}/runs/{manual['id']}").json
    assert (overlapped["status"], overlapped["skip_reason"]) == (
        "SKIPPED_OVERLAP",
        {"code": "OVERLAP", "blocking_run_id": on_time["id"], "count": None},
    )
    shown = admin.get(path).json
    assert shown["last_run"]["run_id"] == manual["id"]
    assert shown["last_skip"] == {
        "run_id": manual["id"],
        "planned_at": "2026-10-01T09:10:01.5Z",
        "skipped_at": "2026-10-01T09:10:01.5Z",
        "skip_reason": overlapped["skip_reason"],
    }


def test_the_openapi_document_shows_skip_reasons(client: FlaskClient) -> None:
    schemas = client.get("/api/openapi.json").json["components"]["schemas"]
    assert "skip_reason" in schemas["RunOut"]["properties"]
    assert "last_skip" in schemas["ScheduleOut"]["properties"]
    assert set(schemas["SkipReasonOut"]["properties"]) == {"code", "blocking_run_id", "count"}
    assert set(schemas["LastSkipOut"]["properties"]) == {
        "run_id",
        "planned_at",
        "skipped_at",
        "skip_reason",
    }
    overlap = schemas["ScheduleFieldsIn"]["properties"]["overlap_policy"]
    assert overlap["default"] == "skip"
