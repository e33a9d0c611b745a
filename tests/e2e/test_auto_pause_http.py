"""Auto-pause over HTTP, on both stores (docs/api.md#auto-pause): a schedule whose initiator is
deactivated is paused after three dead letters in a row, once, with its event, its operation,
its webhook and its metric; a launch in between starts the count again; enabling it again is a
normal enable."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.notifier import Notifier
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.e2e.helpers import account, samples
from tests.support import Api, FakeClock
from tests.webhook_receiver import receiving

SCHEDULES = "/api/workflows/schedules"
EVERY_MINUTE = {"kind": "cron", "expression": "* * * * *"}
SECRET_KEY = "a test key that is at least thirty-two characters long"


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    """One attempt a run (a failed one dead-letters it), one run of a schedule at a time, and
    webhooks to the tests' receivers on loopback."""
    settings = Settings(
        database_url=store_url,
        max_attempts=1,
        schedule_concurrency=1,
        secret_key=SECRET_KEY,
        webhook_allow_private=True,
        webhook_allow_http=True,
    )
    opened = open_services(settings, clock)
    yield opened
    opened.close()


@pytest.fixture
def schedule_path(admin: Api, body: dict[str, Any]) -> str:
    """An enabled schedule firing every minute on behalf of `ann`, pausing after 3 failures."""
    account(admin, "ann", ["requester"])
    created = every_minute(admin, body)
    assert (created["auto_pause_after_failures"], created["auto_paused"]) == (3, None)
    return f"{SCHEDULES}/{created['id']}"


def every_minute(admin: Api, body: dict[str, Any], **changes: Any) -> dict[str, Any]:
    fields = {
        **body,
        "initiator_id": "ann",
        "trigger": EVERY_MINUTE,
        "timezone": "UTC",
        "overlap_policy": "allow",
        "enabled": True,
        **changes,
    }
    created = admin.post(SCHEDULES, fields)
    assert created.status_code == 201, created.json
    return dict(created.json)


def minutes_pass(services: Services, clock: FakeClock, minutes: int = 1) -> None:
    """The clock moves on, the tick registers what came due, the worker launches all it can."""
    clock.advance(60 * minutes)
    Ticker.of(services).scan()
    Worker.of(services).drain()
    services.projector.catch_up()  # as the projections loop does after the worker's writes


def runs_of(admin: Api, schedule_path: str) -> list[dict[str, Any]]:
    """The schedule's runs, oldest first."""
    return list(reversed(admin.get(f"{schedule_path}/runs?page_size=100").json["items"]))


def set_ann_active(admin: Api, active: bool) -> None:
    verb = "activate" if active else "deactivate"
    assert admin.post(f"/api/accounts/ann/{verb}").status_code == 200


def test_three_dead_letters_in_a_row_pause_the_schedule_once(
    admin: Api, schedule_path: str, services: Services, clock: FakeClock
) -> None:
    with receiving() as receiver:
        hook = {"url": receiver.url, "event_types": ["schedule.auto_paused"]}
        assert admin.post("/api/webhooks", hook).status_code == 201
        set_ann_active(admin, False)
        minutes_pass(services, clock)
        minutes_pass(services, clock)
        set_ann_active(admin, True)
        minutes_pass(services, clock)  # a launch: the count starts again
        set_ann_active(admin, False)
        minutes_pass(services, clock)
        minutes_pass(services, clock)
        assert admin.get(schedule_path).json["enabled"] is True  # two in a row since the launch
        minutes_pass(services, clock, 2)  # two cycles registered; the first pauses it
        Notifier.of(services).work()
        messages = [json.loads(r.body) for r in receiver.received]

    runs = runs_of(admin, schedule_path)
    assert [run["status"] for run in runs] == [
        "DEAD_LETTER",
        "DEAD_LETTER",
        "SUCCEEDED",
        *["DEAD_LETTER"] * 4,
    ]
    paused = admin.get(schedule_path).json
    assert (paused["enabled"], paused["next_fire_at"]) == (False, None)
    failed = [{"run_id": run["id"], "error_code": "INITIATOR_INACTIVE"} for run in runs[3:6]]
    assert paused["auto_paused"] == {
        "at": runs[5]["finished_at"],
        "reason": "3 cycle(s) in a row ended without launching: "
        + ", ".join(f"{f['run_id']} (INITIATOR_INACTIVE)" for f in failed),
        "runs": failed,
    }
    assert paused["updated_by"] == "root"  # who vouches for its launches stays
    timeline = admin.get(f"{schedule_path}/timeline").json["items"]
    counted = [e["type"] for e in timeline if e["type"] != "Schedule.PlanAdvanced"]
    assert counted == [
        "Schedule.Created",
        "Schedule.CycleFailed",
        "Schedule.CycleFailed",
        "Schedule.FailuresCleared",
        "Schedule.CycleFailed",
        "Schedule.CycleFailed",
        "Schedule.CycleFailed",
        "Schedule.AutoPaused",
    ]
    assert timeline[-1]["actor"] == "system:worker"
    assert [m["type"] for m in messages] == ["schedule.auto_paused"]
    assert messages[0]["data"] == {
        "tenant_id": messages[0]["data"]["tenant_id"],
        "schedule_id": paused["id"],
        "name": paused["name"],
        "runs": failed,
        "reason": paused["auto_paused"]["reason"],
    }
    operations = admin.get("/api/audit/operations?kind=schedule.auto_paused").json["items"]
    assert [(o["actor"], o["aggregate_id"]) for o in operations] == [
        ("system:worker", paused["id"])
    ]
    metrics = samples(admin.client.get("/metrics").get_data(as_text=True))
    assert metrics[("cronledger_schedules_auto_paused_total", ())] == 1


def test_enabling_again_is_a_normal_enable_and_counts_afresh(
    admin: Api, schedule_path: str, services: Services, clock: FakeClock
) -> None:
    set_ann_active(admin, False)
    for _ in range(3):
        minutes_pass(services, clock)
    paused = admin.get(schedule_path).json
    assert paused["auto_paused"] is not None
    set_ann_active(admin, True)

    enabled = admin.post(f"{schedule_path}/enable", {"version": paused["version"]})

    assert enabled.status_code == 200, enabled.json
    assert (enabled.json["enabled"], enabled.json["auto_paused"]) == (True, None)
    services.projector.catch_up()
    assert admin.get(schedule_path).json["auto_paused"] is None
    set_ann_active(admin, False)
    for _ in range(2):
        minutes_pass(services, clock)
    assert admin.get(schedule_path).json["enabled"] is True
    minutes_pass(services, clock)
    assert admin.get(schedule_path).json["auto_paused"] is not None


def test_null_never_pauses(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    account(admin, "ann", ["requester"])
    never = every_minute(admin, body, auto_pause_after_failures=None)
    assert never["auto_pause_after_failures"] is None
    schedule_path = f"{SCHEDULES}/{never['id']}"
    set_ann_active(admin, False)
    for _ in range(4):
        minutes_pass(services, clock)
    schedule = admin.get(schedule_path).json
    assert (schedule["enabled"], schedule["auto_paused"]) == (True, None)
    assert [run["status"] for run in runs_of(admin, schedule_path)] == ["DEAD_LETTER"] * 4
