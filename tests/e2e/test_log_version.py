"""A timeline entry's number on its resource's log is `log_version`, never the API's `version`."""

from __future__ import annotations

import json
from typing import Any

from flask.testing import FlaskClient

from cronledger.application.services import Services
from tests.processes import run_cli
from tests.support import Api

SCHEDULES = "/api/workflows/schedules"
LATER = "2999-01-01T00:00:00Z"


def edited_schedule(admin: Api, body: dict[str, Any]) -> str:
    """A schedule enabled, then run by hand: its log runs ahead of its `version`."""
    created = admin.post(SCHEDULES, {**body, "enabled": True}).json
    admin.post(f"{SCHEDULES}/{created['id']}/run", {"request_id": "now"})
    return str(created["id"])


def test_timelines_and_states_say_log_version(
    admin: Api, body: dict[str, Any], services: Services
) -> None:
    schedule_id = edited_schedule(admin, body)
    items = admin.get(f"{SCHEDULES}/{schedule_id}/timeline").json["items"]
    assert [item["log_version"] for item in items] == list(range(1, len(items) + 1))
    assert all("version" not in item for item in items)
    assert admin.get(f"{SCHEDULES}/{schedule_id}").json["version"] < items[-1]["log_version"]
    state = services.audit.state(schedule_id, services.ledger.clock())
    assert (state["log_version"], "version" in state) == (items[-1]["log_version"], False)


def test_the_cli_says_log_version(admin: Api, body: dict[str, Any], store_url: str) -> None:
    schedule_id = edited_schedule(admin, body)
    timeline = run_cli(store_url, "audit", "timeline", schedule_id)
    assert timeline.returncode == 0, timeline.stderr
    assert "log_version=1" in timeline.stdout.splitlines()[0]
    state = run_cli(store_url, "audit", "state", schedule_id, "--at", LATER, "--json")
    assert state.returncode == 0, state.stderr
    assert "log_version" in json.loads(state.stdout)


def test_the_openapi_document_says_log_version(client: FlaskClient) -> None:
    entry = client.get("/api/openapi.json").json["components"]["schemas"]["TimelineEntryOut"]
    assert "log_version" in entry["properties"]
    assert "version" not in entry["properties"]
