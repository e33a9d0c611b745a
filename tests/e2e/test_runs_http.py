"""Runs over HTTP: an every-second schedule's cycles, manual runs, the runs list."""

from __future__ import annotations

from typing import Any

import pytest

from cronledger.application.cycles import Ticker
from cronledger.application.services import Services
from tests.e2e.helpers import account, assert_problem
from tests.support import Api, FakeClock

EVERY_SECOND = {"kind": "cron", "expression": "* * * * * *"}


@pytest.fixture
def every_second(admin: Api, body: dict[str, Any]) -> dict[str, Any]:
    created = admin.post(
        "/api/workflows/schedules", {**body, "trigger": EVERY_SECOND, "enabled": True}
    )
    assert created.status_code == 201
    return created.json  # type: ignore[no-any-return]


def test_cycles_appear_with_consecutive_planned_instants(
    admin: Api, every_second: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    for _ in range(5):
        clock.advance(1)
        Ticker.of(services).scan()
    services.projector.catch_up()  # as the projections loop does after the tick's writes
    path = f"/api/workflows/schedules/{every_second['id']}"
    runs = admin.get(f"{path}/runs").json
    assert runs["total"] == 5
    assert [r["planned_at"] for r in runs["items"]] == [
        f"2026-10-01T09:00:0{s}Z" for s in (5, 4, 3, 2, 1)
    ]
    first = runs["items"][-1]
    assert (first["trigger"], first["status"], first["title"]) == (
        "schedule",
        "PENDING",
        "每日检查 2026-10-01",
    )
    assert (first["attempt_count"], first["max_attempts"], first["instance_id"]) == (0, 5, None)
    assert (first["initiator_id"], first["form_data"]) == ("root", {"region": "east"})
    detail = admin.get(f"{path}/runs/{first['id']}").json
    assert detail["attempts"] == []
    assert admin.get(path).json["last_run"] == {
        "run_id": runs["items"][0]["id"],
        "planned_at": "2026-10-01T09:00:05Z",
        "status": "PENDING",
    }


def test_a_manual_run_is_manual_and_leaves_next_fire_alone(
    admin: Api, every_second: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    path = f"/api/workflows/schedules/{every_second['id']}"
    clock.advance(0.25)
    accepted = admin.post(f"{path}/run", {"request_id": "ops-1"})
    assert accepted.status_code == 202
    run = accepted.json
    assert (run["trigger"], run["status"], run["planned_at"]) == (
        "manual",
        "PENDING",
        "2026-10-01T09:00:00.25Z",
    )
    assert admin.post(f"{path}/run", {"request_id": "ops-1"}).json["id"] == run["id"]
    assert admin.get(path).json["next_fire_at"] == every_second["next_fire_at"]
    listed = admin.get(f"{path}/runs?status=PENDING").json["items"]
    assert [r["id"] for r in listed] == [run["id"]]
    assert admin.get(f"{path}/runs?status=SUCCEEDED").json["total"] == 0


def test_run_now_validates_and_needs_edit(
    admin: Api,
    every_second: dict[str, Any],
    definition: dict[str, Any],
) -> None:
    path = f"/api/workflows/schedules/{every_second['id']}"
    auditor = account(admin, "aud", ["auditor"])
    assert_problem(auditor.post(f"{path}/run", {"request_id": "x"}), 403, "FORBIDDEN")
    assert_problem(admin.post(f"{path}/run", {}), 422, "VALIDATION_FAILED")
    admin.post(f"/api/definitions/{definition['id']}/unpublish")
    refused = admin.post(f"{path}/run", {"request_id": "y"})
    assert "definition_id" in assert_problem(refused, 422, "VALIDATION_FAILED")["errors"]


def test_delete_is_refused_while_a_cycle_is_pending(
    admin: Api, every_second: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    path = f"/api/workflows/schedules/{every_second['id']}"
    clock.advance(1)
    Ticker.of(services).scan()
    assert_problem(admin.delete(f"{path}?version=1"), 409, "IN_FLIGHT")
    assert admin.get(f"{path}/runs").json["total"] == 1


def test_unknown_runs_are_404(admin: Api, every_second: dict[str, Any]) -> None:
    path = f"/api/workflows/schedules/{every_second['id']}"
    assert_problem(admin.get(f"{path}/runs/not-a-run"), 404, "NOT_FOUND")
    assert_problem(admin.get(f"{path}/runs/{every_second['id']}"), 404, "NOT_FOUND")
