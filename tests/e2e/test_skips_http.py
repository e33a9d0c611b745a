"""Overlap and skips over HTTP: the three overlap policies, the deprecated `skip`, the bulk move
to the default, edits while a cycle is in flight, and every skipped run saying why."""

from __future__ import annotations

from typing import Any

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker, WorkReport
from cronledger.application.services import Services
from domain.runs import CALENDAR_SKIP_KEYS
from tests.e2e.helpers import DEFINITION, account, assert_problem, other_tenant
from tests.support import Api, FakeClock

EVERY_MINUTE = {"kind": "cron", "expression": "* * * * *"}
EVERY_SECOND = {"kind": "cron", "expression": "* * * * * *"}
SCHEDULES = "/api/workflows/schedules"
MOVE = f"{SCHEDULES}/move-overlap-policy"


def seconds_pass(services: Services, clock: FakeClock, seconds: int) -> WorkReport:
    report = WorkReport()
    for _ in range(seconds):
        clock.advance(1)
        Ticker.of(services).scan()
        report.add(Worker.of(services).drain())
    services.projector.catch_up()
    return report


def created(admin: Api, body: dict[str, Any], **fields: Any) -> dict[str, Any]:
    answer = admin.post(SCHEDULES, {**body, **fields})
    assert answer.status_code == 201, answer.json
    return answer.json  # type: ignore[no-any-return]


def test_a_daily_approval_starts_every_cycle_by_default(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    unset = {k: v for k, v in body.items() if k != "overlap_policy"}
    schedule = created(admin, unset, trigger=EVERY_SECOND, enabled=True)
    assert schedule["overlap_policy"] == "skip_while_launching"
    assert seconds_pass(services, clock, 5) == WorkReport(claimed=5, succeeded=5)
    runs = admin.get(f"{SCHEDULES}/{schedule['id']}/runs").json["items"]
    assert [run["status"] for run in runs] == ["SUCCEEDED"] * 5
    waiting = admin.get("/api/approvals?state=WAITING_REVIEW").json
    assert waiting["total"] == 5
    answer = admin.post(f"{SCHEDULES}/{schedule['id']}/run", {"request_id": "now"})
    assert answer.status_code == 202, answer.json
    manual = answer.json
    Worker.of(services).drain()
    assert admin.get(f"{SCHEDULES}/{schedule['id']}/runs/{manual['id']}").json["status"] == (
        "SUCCEEDED"
    )


def test_skip_is_accepted_as_skip_while_open_and_says_which_instance_blocked(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    schedule = created(admin, body, trigger=EVERY_SECOND, overlap_policy="skip", enabled=True)
    assert schedule["overlap_policy"] == "skip_while_open"
    assert seconds_pass(services, clock, 3) == WorkReport(claimed=1, succeeded=1, skipped=2)
    path = f"{SCHEDULES}/{schedule['id']}"
    launched = admin.get(f"{path}/runs?status=SUCCEEDED").json["items"][0]
    skipped = admin.get(f"{path}/runs?status=SKIPPED_OVERLAP").json["items"][0]
    assert skipped["skip_reason"] == {
        "code": "OVERLAP",
        "blocking_run_id": launched["id"],
        "blocking_status": "SUCCEEDED",
        "blocking_instance_id": launched["instance_id"],
        "count": None,
    }
    assert admin.get(path).json["last_skip"]["skip_reason"] == skipped["skip_reason"]
    patched = admin.patch(path, {"overlap_policy": "skip", "name": "renamed"}).json
    assert (patched["name"], patched["overlap_policy"]) == ("renamed", "skip_while_open")


def test_skipped_runs_and_their_schedule_say_why(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    schedule = created(admin, body, trigger=EVERY_MINUTE, misfire_policy="skip", enabled=True)
    path = f"{SCHEDULES}/{schedule['id']}"
    clock.advance(600.5)  # 09:01 … 09:09 missed, 09:10 on time
    Ticker.of(services).scan()
    clock.advance(1)
    manual = admin.post(f"{path}/run", {"request_id": "ops-1"}).json
    Worker.of(services).poll()  # launches 09:10; the manual run overlaps it
    services.projector.catch_up()

    missed = admin.get(f"{path}/runs?status=SKIPPED_MISSED").json["items"][0]
    assert missed["skip_reason"] == {
        "code": "MISSED",
        "blocking_run_id": None,
        "blocking_status": None,
        "blocking_instance_id": None,
        "count": 9,
    }
    on_time = admin.get(f"{path}/runs?status=SUCCEEDED").json["items"][0]
    assert on_time["skip_reason"] is None
    overlapped = admin.get(f"{path}/runs/{manual['id']}").json
    assert (overlapped["status"], overlapped["skip_reason"]) == (
        "SKIPPED_OVERLAP",
        {
            "code": "OVERLAP",
            "blocking_run_id": on_time["id"],
            "blocking_status": "PENDING",
            "blocking_instance_id": None,
            "count": None,
        },
    )
    shown = admin.get(path).json
    assert shown["last_run"]["run_id"] == manual["id"]
    assert shown["last_skip"] == {
        "run_id": manual["id"],
        "planned_at": "2026-10-01T09:10:01.5Z",
        "skipped_at": "2026-10-01T09:10:01.5Z",
        "skip_reason": overlapped["skip_reason"],
    }


def test_the_bulk_move_saves_each_schedule_as_an_ordinary_edit(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    old = created(admin, body, name="old", overlap_policy="skip")
    current = created(admin, body, name="current", overlap_policy="skip_while_launching")
    globex = other_tenant(services, admin.client)
    their_definition = globex.post("/api/definitions", {**DEFINITION, "schedule_presets": []}).json
    globex.post(f"/api/definitions/{their_definition['id']}/publish")
    theirs = created(
        globex, body, name="theirs", definition_id=their_definition["id"], initiator_id="boss"
    )
    assert admin.get(f"{SCHEDULES}?overlap_policy=skip").json["total"] == 1
    ids = [old["id"], current["id"], theirs["id"], "no-such-id", old["id"]]
    moved = admin.post(MOVE, {"schedule_ids": ids})
    assert moved.status_code == 200, moved.json
    assert moved.json["items"] == [
        {
            "schedule_id": old["id"],
            "outcome": "MOVED",
            "version": 2,
            "overlap_policy": "skip_while_launching",
        },
        {
            "schedule_id": current["id"],
            "outcome": "UNCHANGED",
            "version": 1,
            "overlap_policy": "skip_while_launching",
        },
        {
            "schedule_id": theirs["id"],
            "outcome": "NOT_FOUND",
            "version": None,
            "overlap_policy": None,
        },
        {
            "schedule_id": "no-such-id",
            "outcome": "NOT_FOUND",
            "version": None,
            "overlap_policy": None,
        },
    ]
    assert admin.get(f"{SCHEDULES}?overlap_policy=skip_while_open").json["total"] == 0
    edit = admin.get(f"{SCHEDULES}/{old['id']}/timeline").json["items"][-1]
    assert (edit["type"], edit["actor"], edit["data"]["changes"]) == (
        "Schedule.Updated",
        "root",
        [{"field": "overlap_policy", "old": "skip_while_open", "new": "skip_while_launching"}],
    )
    operations = admin.get("/api/audit/operations?kind=schedule.updated").json["items"]
    assert [op["aggregate_id"] for op in operations] == [old["id"]]
    back = admin.post(MOVE, {"schedule_ids": [old["id"]], "overlap_policy": "skip"}).json
    assert back["items"][0]["overlap_policy"] == "skip_while_open"


def test_the_bulk_move_refuses_what_it_cannot_do(
    admin: Api, body: dict[str, Any], services: Services
) -> None:
    schedule = created(admin, body)
    assert_problem(admin.post(MOVE, {"schedule_ids": []}), 422, "VALIDATION_FAILED")
    assert_problem(admin.post(MOVE, {"schedule_ids": ["x"] * 201}), 422, "VALIDATION_FAILED")
    refused = admin.post(MOVE, {"schedule_ids": [schedule["id"]], "overlap_policy": "queue"})
    assert "overlap_policy" in assert_problem(refused, 422, "VALIDATION_FAILED")["errors"]
    requester = account(admin, "rita", ["requester"])
    assert_problem(requester.post(MOVE, {"schedule_ids": [schedule["id"]]}), 403, "FORBIDDEN")
    assert admin.get(f"{SCHEDULES}/{schedule['id']}").json["version"] == 1


def test_an_edit_while_a_cycle_waits_to_retry_leaves_its_frozen_values(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    account(admin, "ann", ["requester"])
    schedule = created(admin, body, initiator_id="ann")
    path = f"{SCHEDULES}/{schedule['id']}"
    run = admin.post(f"{path}/run", {"request_id": "r1"}).json
    admin.post("/api/accounts/ann/deactivate")  # after run-now, which checks the initiator
    Worker.of(services).drain()
    waiting = admin.get(f"{path}/runs/{run['id']}").json
    assert (waiting["status"], waiting["last_error"]["code"]) == (
        "RETRY_WAIT",
        "INITIATOR_INACTIVE",
    )

    patched = admin.patch(path, {"initiator_id": "root", "title_template": "new {{date}}"})
    assert patched.status_code == 200, patched.json
    after = admin.get(f"{path}/runs/{run['id']}").json
    frozen = ("title", "initiator_id", "form_data", "schedule_version")
    assert {k: after[k] for k in frozen} == {k: waiting[k] for k in frozen}
    refused = admin.delete(f"{path}?version={patched.json['version']}")
    assert_problem(refused, 409, "IN_FLIGHT")

    admin.post("/api/accounts/ann/activate")  # the cause fixed, the retry launches as frozen
    clock.advance(60)
    assert Worker.of(services).drain().succeeded == 1
    instance_id = admin.get(f"{path}/runs/{run['id']}").json["instance_id"]
    assert admin.get(f"/api/approvals/{instance_id}").json["applicant_id"] == "ann"


def test_the_openapi_document_names_the_policies_and_what_blocked_a_skip(
    openapi_document: dict[str, Any],
) -> None:
    schemas = openapi_document["components"]["schemas"]
    assert "skip_reason" in schemas["RunOut"]["properties"]
    assert "last_skip" in schemas["ScheduleOut"]["properties"]
    assert set(schemas["SkipReasonOut"]["properties"]) == {
        "code",
        "blocking_run_id",
        "blocking_status",
        "blocking_instance_id",
        "count",
        *CALENDAR_SKIP_KEYS,  # a CALENDAR skip's (docs/calendars.md#schedules-on-a-calendar)
    }
    assert set(schemas["LastSkipOut"]["properties"]) == {
        "run_id",
        "planned_at",
        "skipped_at",
        "skip_reason",
    }
    assert schemas["OverlapPolicy"]["enum"] == ["allow", "skip_while_launching", "skip_while_open"]
    assert schemas["OverlapPolicyIn"]["enum"] == [*schemas["OverlapPolicy"]["enum"], "skip"]
    assert "deprecated" in schemas["OverlapPolicyIn"]["description"]
    overlap = schemas["ScheduleFieldsIn"]["properties"]["overlap_policy"]
    assert "default `skip_while_launching`" in overlap["description"]
    move = openapi_document["paths"][MOVE]["post"]
    assert move["operationId"] == "move_overlap_policy"
