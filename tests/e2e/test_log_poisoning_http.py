"""The attack that poisoned release 0.1.0's log, tried over HTTP again: the JSON is kept as is."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from cronledger.application.launches import Worker
from cronledger.application.services import Services
from tests.e2e.helpers import account, assert_problem, with_reviewer
from tests.support import DECIDERS, Api

LOOKALIKES = {
    "x": {"_type_": "no_such_type", "_data_": 1},
    "uuid": {"_type_": "uuid_hex", "_data_": "0123456789abcdef0123456789abcdef"},
    "settings": {"_type_": "schedule_settings", "_data_": {}},
    "ours": [{"_type_": "form_data_text", "_data_": "not json"}],
}


def publish(admin: Api, form_data: Any) -> dict[str, Any]:
    preset = {
        "id": "morning",
        "title": "Morning",
        "form_data": form_data,
        "trigger": {"kind": "cron", "expression": "0 8 * * *"},
    }
    with_reviewer(admin)
    created = admin.post(
        "/api/definitions",
        {
            "key": "daily",
            "name": "Daily",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
            "schedule_presets": [preset],
        },
    )
    assert created.status_code == 201, created.json
    return admin.post(f"/api/definitions/{created.json['id']}/publish").json  # type: ignore[no-any-return]


def submission(definition_id: str, form_data: Any, command_id: str = "c1") -> dict[str, Any]:
    return {
        "command_id": command_id,
        "definition_id": definition_id,
        "title": "t",
        "form_data": form_data,
        "material_version": 1,
    }


def test_a_requesters_lookalike_form_data_is_kept_and_breaks_nothing(
    admin: Api, client: FlaskClient, services: Services
) -> None:
    definition = publish(admin, LOOKALIKES)
    requester = account(admin, "rita", ["requester"])
    submitted = requester.post("/api/approvals", submission(definition["id"], LOOKALIKES))
    assert submitted.status_code == 201, submitted.json
    assert submitted.json["form_data"] == LOOKALIKES
    path = f"/api/approvals/{submitted.json['id']}"
    assert admin.get(path).json["form_data"] == LOOKALIKES
    assert admin.get("/api/approvals").json["items"][0]["form_data"] == LOOKALIKES
    assert admin.get(f"{path}/timeline").json["items"][0]["data"]["form_data"] == LOOKALIKES
    assert admin.get("/api/definitions").json["items"][0]["schedule_presets"][0]["form_data"] == (
        LOOKALIKES
    )
    assert client.get("/metrics").status_code == 200
    assert "cronledger_undecodable_events 0.0" in client.get("/metrics").get_data(as_text=True)
    again = requester.post("/api/approvals", submission(definition["id"], LOOKALIKES))
    assert again.headers.get("Idempotent-Replayed") == "true"


def test_a_schedules_lookalike_form_data_reaches_its_instances_as_given(
    admin: Api, services: Services
) -> None:
    definition = publish(admin, {})
    account(admin, "rita", ["requester"])
    schedule = admin.post(
        "/api/workflows/schedules",
        {
            "name": "n",
            "definition_id": definition["id"],
            "trigger": {"kind": "cron", "expression": "0 9 * * *"},
            "initiator_id": "rita",
            "form_data": LOOKALIKES,
        },
    )
    assert schedule.status_code == 201, schedule.json
    path = f"/api/workflows/schedules/{schedule.json['id']}"
    run = admin.post(f"{path}/run", {"request_id": "r1"}).json
    Worker.of(services).poll()
    services.projector.catch_up()  # as the projections loop does after the worker's writes
    launched = admin.get(f"{path}/runs/{run['id']}").json
    assert launched["form_data"] == LOOKALIKES
    instance = admin.get(f"/api/approvals/{launched['instance_id']}").json
    assert instance["form_data"] == LOOKALIKES
    from_preset = admin.post(
        "/api/workflows/schedules",
        {"definition_id": publish_second(admin), "preset_id": "morning", "initiator_id": "rita"},
    )
    assert from_preset.json["form_data"] == LOOKALIKES


def publish_second(admin: Api) -> str:
    with_reviewer(admin)
    created = admin.post(
        "/api/definitions",
        {
            "key": "second",
            "name": "Second",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
            "schedule_presets": [
                {
                    "id": "morning",
                    "title": "Morning",
                    "form_data": LOOKALIKES,
                    "trigger": {"kind": "cron", "expression": "0 8 * * *"},
                }
            ],
        },
    )
    assert admin.post(f"/api/definitions/{created.json['id']}/publish").status_code == 200
    return str(created.json["id"])


def test_a_lookalike_cannot_hide_in_a_preset_trigger(admin: Api) -> None:
    trigger = {"kind": "cron", "expression": "0 8 * * *", "x": LOOKALIKES["x"]}
    answer = admin.post(
        "/api/definitions",
        {
            "key": "k",
            "name": "K",
            "external": False,
            "review_window_seconds": 60,
            "reviewers": DECIDERS,
            "schedule_presets": [{"id": "p", "title": "P", "trigger": trigger}],
        },
    )
    assert_problem(answer, 422, "VALIDATION_FAILED")


def test_approval_and_preset_form_data_are_bounded_like_schedules(admin: Api) -> None:
    big = {"text": "x" * (64 * 1024)}
    refused = admin.post(
        "/api/definitions",
        {
            "key": "k",
            "name": "K",
            "external": False,
            "review_window_seconds": 60,
            "reviewers": DECIDERS,
            "schedule_presets": [
                {
                    "id": "p",
                    "title": "P",
                    "form_data": big,
                    "trigger": {"kind": "cron", "expression": "0 8 * * *"},
                }
            ],
        },
    )
    assert_problem(refused, 422, "VALIDATION_FAILED")
    assert list(refused.json["errors"]) == ["schedule_presets.0.form_data"]
    definition = publish(admin, {})
    too_big = admin.post("/api/approvals", submission(definition["id"], big))
    assert_problem(too_big, 422, "VALIDATION_FAILED")
    assert list(too_big.json["errors"]) == ["form_data"]
    assert admin.get("/api/approvals").json["total"] == 0
