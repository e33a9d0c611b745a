"""Pausing every schedule of a tenant over HTTP: the tick holds them, other tenants carry on,
and resuming lets each schedule's misfire policy decide what the pause missed."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from cronledger.application.cycles import Ticker
from cronledger.application.services import Services
from tests.support import DECIDERS, Api, FakeClock

EVERY_MINUTE = {"kind": "cron", "expression": "* * * * *"}
INCIDENT = "INC-7: the approval backend is down"


def schedule(api: Api, body: dict[str, Any], name: str, misfire: str) -> str:
    made = api.post(
        "/api/workflows/schedules",
        {
            **body,
            "name": name,
            "trigger": EVERY_MINUTE,
            "timezone": "UTC",
            "misfire_policy": misfire,
            "enabled": True,
        },
    )
    assert made.status_code == 201, made.json
    return str(made.json["id"])


def runs_of(api: Api, schedule_id: str) -> list[dict[str, Any]]:
    return api.get(f"/api/workflows/schedules/{schedule_id}/runs?page_size=100").json["items"]  # type: ignore[no-any-return]


def other_tenant(services: Services, client: FlaskClient) -> tuple[Api, str]:
    """Tenant `beta` with an every-minute schedule of its own."""
    beta = Api(client, services.directory.bootstrap("beta", "boss").token)
    created = beta.post(
        "/api/definitions",
        {
            "key": "k",
            "name": "K",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
    ).json
    beta.post(f"/api/definitions/{created['id']}/publish")
    body = {"definition_id": created["id"], "initiator_id": "boss"}
    return beta, schedule(beta, body, "beta's", "catch_up")


def test_a_paused_tenant_registers_nothing_until_resumed_by_misfire_policy(
    admin: Api, body: dict[str, Any], services: Services, client: FlaskClient, clock: FakeClock
) -> None:
    catch_up = schedule(admin, body, "catches up", "catch_up")
    skip = schedule(admin, body, "skips", "skip")
    beta, beta_schedule = other_tenant(services, client)
    assert admin.get("/api/tenant").json["schedules_paused"] is None

    paused = admin.post("/api/tenant/pause-schedules", {"reason": INCIDENT})
    assert paused.status_code == 200, paused.json
    assert paused.json["schedules_paused"] == {
        "at": "2026-10-01T09:00:00Z",
        "actor": "root",
        "reason": INCIDENT,
    }
    assert admin.get("/api/tenant").json == paused.json
    clock.advance(600.5)  # 09:01 … 09:10 come due while paused
    ticker = Ticker.of(services)
    ticker.scan()
    services.projector.catch_up()  # as the projections loop does after the tick's writes
    assert runs_of(admin, catch_up) == runs_of(admin, skip) == []
    assert len(runs_of(beta, beta_schedule)) == 10  # the other tenant is not paused
    assert admin.get("/api/backlog").json["due_schedules"] == 0  # held, not overdue
    assert beta.get("/api/tenant").json["schedules_paused"] is None

    resumed = admin.post("/api/tenant/resume-schedules", {"reason": "INC-7 resolved"})
    assert resumed.json["schedules_paused"] is None
    ticker.scan()
    services.projector.catch_up()
    caught_up = runs_of(admin, catch_up)
    assert [r["status"] for r in caught_up] == ["PENDING"] * 10  # every missed cycle
    skipped = {r["status"]: r for r in runs_of(admin, skip)}
    assert set(skipped) == {"SKIPPED_MISSED", "PENDING"}  # 09:10 is on time
    assert skipped["SKIPPED_MISSED"]["skip_reason"]["count"] == 9


def test_the_audit_and_the_tenants_timeline_say_who_paused_and_why(
    admin: Api, services: Services
) -> None:
    admin.post("/api/tenant/pause-schedules", {"reason": INCIDENT})
    again = admin.post("/api/tenant/pause-schedules", {"reason": "twice"})
    assert again.json["schedules_paused"]["reason"] == INCIDENT  # already paused: unchanged
    admin.post("/api/tenant/resume-schedules", {"reason": "INC-7 resolved"})

    operations = admin.get("/api/audit/operations").json["items"]
    kinds = [(o["kind"], o["actor"], o["summary"]) for o in operations[:2]]
    assert kinds == [
        (
            "tenant.schedules_resumed",
            "root",
            "every schedule of the tenant resumed: INC-7 resolved",
        ),
        ("tenant.schedules_paused", "root", f"every schedule of the tenant paused: {INCIDENT}"),
    ]
    timeline = admin.get(operations[0]["timeline"]).json["items"]
    pauses = [(e["type"], e["reason"]) for e in timeline if "Schedules" in e["type"]]
    assert pauses == [
        ("Tenant.SchedulesPaused", INCIDENT),
        ("Tenant.SchedulesResumed", "INC-7 resolved"),
    ]


def test_pausing_needs_the_permission_to_edit_schedules_and_a_reason(
    admin: Api, services: Services, client: FlaskClient
) -> None:
    for account, role in (("olga", "operator"), ("ann", "requester")):
        admin.post("/api/accounts", {"id": account, "name": account, "roles": [role]})
    operator = Api(client, admin.post("/api/accounts/olga/tokens").json["token"])
    requester = Api(client, admin.post("/api/accounts/ann/tokens").json["token"])

    refused = requester.post("/api/tenant/pause-schedules", {"reason": INCIDENT})
    assert (refused.status_code, refused.json["code"]) == (403, "FORBIDDEN")
    missing = operator.post("/api/tenant/pause-schedules", {})
    assert (missing.status_code, list(missing.json["errors"])) == (422, ["reason"])
    assert operator.post("/api/tenant/pause-schedules", {"reason": "ops"}).status_code == 200
    assert admin.get("/api/tenant").json["schedules_paused"]["actor"] == "olga"


def test_run_now_still_works_while_paused(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    schedule_id = schedule(admin, body, "manual", "catch_up")
    admin.post("/api/tenant/pause-schedules", {"reason": INCIDENT})
    clock.advance(120)
    manual = admin.post(f"/api/workflows/schedules/{schedule_id}/run", {"request_id": "by-hand"})
    assert manual.status_code == 202, manual.json
    Ticker.of(services).scan()
    services.projector.catch_up()  # as the projections loop does after the tick's writes
    assert [r["trigger"] for r in runs_of(admin, schedule_id)] == ["manual"]
