"""Lists are answered from the read models' rows, one query per page: each item is exactly
what reading it alone (from the log) answers, whatever happened to it."""

from __future__ import annotations

from typing import Any

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services
from tests.e2e.helpers import account, assert_problem, lists_show_what_reads_show, submit
from tests.support import Api, FakeClock

EVERY_MINUTE = {"kind": "cron", "expression": "* * * * *"}


def test_list_items_are_what_single_reads_answer(
    admin: Api, body: dict[str, Any], definition_id: str, services: Services, clock: FakeClock
) -> None:
    schedules = "/api/workflows/schedules"
    skipping = admin.post(
        schedules,
        {
            **body,
            "trigger": EVERY_MINUTE,
            "misfire_policy": "skip",
            "enabled": True,
            "form_data": {"z": 1, "a": {"y": [1.5, None, "东"], "b": True}},
        },
    ).json
    path = f"{schedules}/{skipping['id']}"
    gone = admin.post(schedules, {**body, "name": "gone"}).json
    admin.delete(f"{schedules}/{gone['id']}?version={gone['version']}")
    clock.advance(600.5)  # missed cycles, one on time
    Ticker.of(services).scan()
    clock.advance(1)
    admin.post(f"{path}/run", {"request_id": "overlaps"})
    Worker.of(services).poll()  # launches the cycle on time; the manual run overlaps it
    admin.post(f"{path}/disable", {"reason": "quiet week"})

    requester = account(admin, "sales", ["requester"])
    esign = account(admin, "esign", ["integration"])
    deadline = "2026-10-01T20:00:00+08:00"
    observed = submit(requester, definition_id, "a", review_deadline_at=deadline).json
    callback = {"command_id": "cb-1", "contract_id": "C-9", "material_version": 2}
    esign.post(f"/api/approvals/{observed['id']}/callbacks/sign", {**callback, "source": "x"})
    submit(requester, definition_id, "b", review_deadline_at="2026-10-01T09:20:00Z")
    expiring = submit(requester, definition_id, "c", review_deadline_at="2026-10-01T09:20:00Z")
    clock.advance(900)
    late = {"command_id": "late", "material_version": 2}
    assert admin.post(f"/api/approvals/{expiring.json['id']}/approve", late).status_code == 409
    services.approvals.sweep()
    services.projector.catch_up()  # as the projections loop does after the loops' writes

    runs = admin.get(f"{path}/runs").json["items"]
    assert {run["status"] for run in runs} >= {"SKIPPED_MISSED", "SKIPPED_OVERLAP", "SUCCEEDED"}
    states = {item["state"] for item in admin.get("/api/approvals").json["items"]}
    assert states == {"WAITING_REVIEW", "EXPIRED"}
    assert [s["id"] for s in admin.get(schedules).json["items"]] == [skipping["id"]]
    lists_show_what_reads_show(admin)


def test_a_read_waits_for_the_position_a_write_answered(
    admin: Api, body: dict[str, Any], services: Services
) -> None:
    created = admin.post("/api/workflows/schedules", body)
    position = int(created.headers["X-Log-Position"])
    assert position == services.ledger.recorder.max_notification_id()
    listed = admin.get("/api/workflows/schedules", headers={"X-Min-Log-Position": str(position)})
    assert [s["id"] for s in listed.json["items"]] == [created.json["id"]]
    assert "X-Log-Position" not in listed.headers


def test_a_read_naming_a_position_catches_up_to_it(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    schedule = admin.post(
        "/api/workflows/schedules", {**body, "trigger": EVERY_MINUTE, "enabled": True}
    ).json
    clock.advance(60)
    Ticker.of(services).scan()  # its writes wait for the projections loop, which is not running
    end = services.ledger.recorder.max_notification_id()
    runs = f"/api/workflows/schedules/{schedule['id']}/runs"
    assert admin.get(runs).json["total"] == 0
    assert admin.get(runs, headers={"X-Min-Log-Position": str(end)}).json["total"] == 1
    for wrong in ("soon", "-1", str(end + 1), "1\u00b2", "\u0663"):
        refused = admin.get(runs, headers={"X-Min-Log-Position": wrong})
        assert list(assert_problem(refused, 422, "VALIDATION_FAILED")["errors"]) == [
            "X-Min-Log-Position"
        ]
