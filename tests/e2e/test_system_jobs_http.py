"""Schedules that run built-in jobs over HTTP, on both stores (docs/jobs.md): a nightly
`audit.verify` records its result and its next run verifies only what was appended since, a
`webhook.ping` reaches its receiver (and retries when refused), a bad target is 422 naming
each fault, and only directory managers save one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from flask.testing import FlaskClient

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.e2e.helpers import account, assert_problem, other_tenant
from tests.support import Api, FakeClock, Opener
from tests.webhook_receiver import receiving
from web import create_app

SCHEDULES = "/api/workflows/schedules"
SECRET_KEY = "a test key that is at least thirty-two characters long"
NIGHTLY = {"kind": "cron", "expression": "0 2 * * *"}
VERIFY = {"kind": "audit.verify"}


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    """Services that may sign, and ping the tests' receivers on loopback over http."""
    settings = Settings(
        database_url=store_url,
        secret_key=SECRET_KEY,
        webhook_allow_private=True,
        webhook_allow_http=True,
        retry_base_seconds=10,
    )
    opened = open_services(settings, clock)
    yield opened
    opened.close()


def job(target: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A schedule that runs a built-in job, nightly in Shanghai."""
    return {
        "name": "夜间审计",
        "trigger": NIGHTLY,
        "timezone": "Asia/Shanghai",
        "group": "OPS",
        "target": target,
        **fields,
    }


def at(text: str) -> datetime:
    return datetime.fromisoformat(f"{text}+08:00")


def work(services: Services, clock: FakeClock, when: datetime) -> int:
    """The tick and a worker at `when`; how many attempts succeeded."""
    clock.now = when
    ticker = Ticker.of(services)
    while ticker.scan().registered:
        pass
    done = Worker.of(services).drain().succeeded
    services.projector.catch_up()
    return done


def runs_of(admin: Api, schedule_id: str) -> list[dict[str, Any]]:
    answer = admin.get(f"{SCHEDULES}/{schedule_id}/runs?page_size=100")
    assert answer.status_code == 200, answer.json
    return list(reversed(answer.json["items"]))  # oldest first


def test_a_nightly_audit_verify_records_its_result_and_then_verifies_only_what_was_appended(
    admin: Api, services: Services, clock: FakeClock
) -> None:
    clock.now = at("2026-10-01T12:00")
    created = admin.post(SCHEDULES, job(VERIFY, enabled=True))
    assert created.status_code == 201, created.json
    schedule = created.json
    assert schedule["target"] == {
        "kind": "audit.verify",
        "params": {"full": False},
        "timeout_seconds": 10,
    }
    assert (schedule["definition_id"], schedule["initiator_id"]) == (None, None)
    assert schedule["definition_revision"] is None
    assert work(services, clock, at("2026-10-02T02:00:01")) == 1
    (first,) = runs_of(admin, schedule["id"])
    assert (first["status"], first["target_kind"], first["instance_id"]) == (
        "SUCCEEDED",
        "audit.verify",
        None,
    )
    assert first["initiator_id"] is None
    result = first["result"]
    assert (result["ok"], result["full"], result["from_position"]) == (True, False, 1)
    assert 0 < result["events_verified"] <= result["to_position"]  # the whole log so far
    assert work(services, clock, at("2026-10-03T02:00:01")) == 1
    second = runs_of(admin, schedule["id"])[1]["result"]
    assert second["from_position"] > result["to_position"]
    assert 0 < second["events_verified"] <= second["to_position"] - result["to_position"]
    assert second["events_verified"] < result["events_verified"]  # only what was appended
    detail = admin.get(
        f"{SCHEDULES}/{schedule['id']}/runs/{runs_of(admin, schedule['id'])[1]['id']}"
    )
    assert detail.json["attempts"][-1]["result"] == second


def test_a_full_verify_takes_a_longer_timeout_and_says_it_was_a_whole_pass(
    admin: Api, services: Services, clock: FakeClock
) -> None:
    clock.now = at("2026-10-01T12:00")
    target = {"kind": "audit.verify", "params": {"full": True}, "timeout_seconds": 300}
    created = admin.post(SCHEDULES, job(target, enabled=True)).json
    assert created["target"] == target
    assert work(services, clock, at("2026-10-02T02:00:01")) == 1
    (run,) = runs_of(admin, created["id"])
    assert (run["result"]["full"], run["result"]["from_position"]) == (True, 1)
    assert run["result"]["checkpoints_proven"] >= 0


def test_a_webhook_ping_job_reaches_its_receiver_and_retries_when_refused(
    admin: Api, services: Services, clock: FakeClock
) -> None:
    with receiving() as receiver:
        receiver.script.append(503)
        hook = admin.post(
            "/api/webhooks", {"url": receiver.url, "event_types": ["ping"], "description": "ops"}
        ).json
        clock.now = at("2026-10-01T12:00")
        target = {"kind": "webhook.ping", "params": {"webhook_id": hook["id"]}}
        created = admin.post(SCHEDULES, job(target, enabled=True)).json
        assert created["target"]["timeout_seconds"] == 10
        assert work(services, clock, at("2026-10-02T02:00:01")) == 0
        (run,) = runs_of(admin, created["id"])
        assert (run["status"], run["last_error"]["code"]) == ("RETRY_WAIT", "WEBHOOK_REFUSED")
        assert run["last_error"]["params"] == {"status": "503"}
        assert work(services, clock, at("2026-10-02T02:00:12")) == 1
        (run,) = runs_of(admin, created["id"])
        assert (run["status"], run["result"]["status"]) == ("SUCCEEDED", 200)
        assert len(receiver.received) == 2
        message = json.loads(receiver.received[-1].body)  # signed at the fake clock's time
        assert receiver.received[-1].headers["webhook-signature"].startswith("v1,")
        assert (message["type"], message["data"]["webhook_id"]) == ("ping", hook["id"])
    deliveries = admin.get(f"/api/webhooks/{hook['id']}/deliveries").json["items"]
    assert {d["id"] for d in deliveries} >= {run["result"]["delivery_id"]}


def test_a_job_run_now_runs_at_once_and_its_run_shows_no_approval(
    admin: Api, services: Services, clock: FakeClock
) -> None:
    created = admin.post(SCHEDULES, job({"kind": "system.health_check"})).json
    ran = admin.post(f"{SCHEDULES}/{created['id']}/run", {"request_id": "check-1"})
    assert ran.status_code == 202, ran.json
    assert ran.json["target_kind"] == "system.health_check"
    assert work(services, clock, clock.now) == 1
    (run,) = runs_of(admin, created["id"])
    assert run["result"] == {"ok": True, "loops": 0}
    assert admin.get("/api/approvals").json["total"] == 0


def test_an_unknown_kind_or_a_bad_param_is_422_naming_each_fault(
    admin: Api, definition: dict[str, Any]
) -> None:
    unknown = admin.post(SCHEDULES, job({"kind": "shell.exec", "params": {"cmd": "ls"}}))
    problem = assert_problem(unknown, 422, "VALIDATION_FAILED")
    assert list(problem["errors"]) == ["target.kind"]
    bad = {"kind": "audit.verify", "params": {"full": "yes", "deep": True}, "timeout_seconds": 11}
    problem = assert_problem(admin.post(SCHEDULES, job(bad)), 422, "VALIDATION_FAILED")
    assert set(problem["errors"]) == {
        "target.params.full",
        "target.params.deep",
        "target.timeout_seconds",
    }
    long = {"kind": "audit.verify", "params": {"full": True}, "timeout_seconds": 601}
    problem = assert_problem(admin.post(SCHEDULES, job(long)), 422, "VALIDATION_FAILED")
    assert list(problem["errors"]) == ["target.timeout_seconds"]
    ping = {"kind": "webhook.ping", "params": {"webhook_id": "no-such-hook"}}
    problem = assert_problem(admin.post(SCHEDULES, job(ping)), 422, "VALIDATION_FAILED")
    assert list(problem["errors"]) == ["target.params.webhook_id"]
    no_id = {"kind": "webhook.ping"}
    problem = assert_problem(admin.post(SCHEDULES, job(no_id)), 422, "VALIDATION_FAILED")
    assert list(problem["errors"]) == ["target.params.webhook_id"]
    with_approval = job(VERIFY, definition_id=definition["id"], initiator_id="root")
    problem = assert_problem(admin.post(SCHEDULES, with_approval), 422, "VALIDATION_FAILED")
    assert set(problem["errors"]) == {"definition_id", "initiator_id"}
    approval = {"name": "审批", "trigger": NIGHTLY, "target": {"kind": "approval"}}
    problem = assert_problem(admin.post(SCHEDULES, approval), 422, "VALIDATION_FAILED")
    assert set(problem["errors"]) == {"definition_id", "initiator_id"}


def test_only_directory_managers_save_built_in_jobs(
    admin: Api, services: Services, client: FlaskClient, body: dict[str, Any]
) -> None:
    operator = account(admin, "olga", ["operator"])
    assert_problem(operator.post(SCHEDULES, job(VERIFY)), 403, "FORBIDDEN")
    created = admin.post(SCHEDULES, job(VERIFY)).json
    path = f"{SCHEDULES}/{created['id']}"
    assert operator.get(path).json["target"]["kind"] == "audit.verify"
    assert_problem(operator.post(f"{path}/enable", {}), 403, "FORBIDDEN")
    assert_problem(operator.patch(path, {"name": "改名"}), 403, "FORBIDDEN")
    approval = operator.post(SCHEDULES, body).json  # an approval's schedule stays theirs
    problem = operator.patch(
        f"{SCHEDULES}/{approval['id']}",
        {"target": VERIFY, "definition_id": None, "initiator_id": None, "form_data": None},
    )
    assert_problem(problem, 403, "FORBIDDEN")
    enabled = admin.post(f"{path}/enable", {})
    assert (enabled.status_code, enabled.json["enabled"]) == (200, True)
    globex = other_tenant(services, client)
    assert_problem(globex.get(path), 404, "NOT_FOUND")


def test_a_schedule_switches_from_approval_to_a_job_and_back_by_merge_patch(
    admin: Api, body: dict[str, Any]
) -> None:
    created = admin.post(SCHEDULES, body).json
    path = f"{SCHEDULES}/{created['id']}"
    refused = admin.patch(path, {"target": {"kind": "system.health_check"}})
    problem = assert_problem(refused, 422, "VALIDATION_FAILED")
    assert {"definition_id", "initiator_id"} <= set(problem["errors"])
    to_job = {
        "target": {"kind": "system.health_check", "timeout_seconds": 3},
        "definition_id": None,
        "initiator_id": None,
        "title_template": None,
        "form_data": None,
    }
    switched = admin.patch(path, to_job)
    assert switched.status_code == 200, switched.json
    assert switched.json["target"] == {
        "kind": "system.health_check",
        "params": {},
        "timeout_seconds": 3,
    }
    back = {
        "target": {"kind": "approval", "params": None, "timeout_seconds": None},
        "definition_id": created["definition_id"],
        "initiator_id": created["initiator_id"],
    }
    restored = admin.patch(path, back)
    assert restored.status_code == 200, restored.json
    assert restored.json["target"] == {"kind": "approval"}
    assert restored.json["definition_revision"] == created["definition_revision"]


def test_a_job_run_registered_before_its_schedule_was_switched_runs_nothing(
    admin: Api, services: Services, clock: FakeClock, body: dict[str, Any]
) -> None:
    created = admin.post(SCHEDULES, job({"kind": "audit.checkpoint"})).json
    path = f"{SCHEDULES}/{created['id']}"
    admin.post(f"{path}/run", {"request_id": "sign-1"})
    switched = {**body, "target": {"kind": "approval"}, "version": 1, "enabled": False}
    assert admin.put(path, switched).status_code == 200
    clock.now += timedelta(seconds=1)
    assert work(services, clock, clock.now) == 0
    (run,) = runs_of(admin, created["id"])
    assert (run["status"], run["last_error"]["code"]) == ("FAILED", "JOB_CHANGED")
    assert run["last_error"]["params"] == {"kind": "audit.checkpoint"}


class Ticking(FakeClock):
    """A clock a second further on each time it is read: a job outlasts a short timeout."""

    def __call__(self) -> datetime:
        return self.advance(1)


def test_a_job_past_its_timeout_fails_with_job_timeout_and_waits_to_retry(
    open_with: Opener,
) -> None:
    clock = Ticking()
    opened = open_with(clock, retry_base_seconds=600)
    client = create_app({"SERVICES": opened, "TESTING": True}).test_client()
    admin = Api(client, opened.directory.bootstrap("acme", "root").token)
    target = {"kind": "audit.verify", "timeout_seconds": 1}
    created = admin.post(SCHEDULES, job(target)).json
    admin.post(f"{SCHEDULES}/{created['id']}/run", {"request_id": "slow-1"})
    Worker.of(opened).drain()
    opened.projector.catch_up()
    (run,) = runs_of(admin, created["id"])
    assert (run["status"], run["last_error"]["code"]) == ("RETRY_WAIT", "JOB_TIMEOUT")
    assert run["last_error"]["params"] == {"seconds": "1"}


def test_a_job_that_fails_for_good_counts_toward_auto_pause(
    admin: Api, services: Services, clock: FakeClock
) -> None:
    hook = admin.post(
        "/api/webhooks", {"url": "http://127.0.0.1:9/hook", "event_types": ["ping"]}
    ).json
    target = {"kind": "webhook.ping", "params": {"webhook_id": hook["id"]}}
    created = admin.post(SCHEDULES, job(target, enabled=True, auto_pause_after_failures=1)).json
    assert admin.post(f"{SCHEDULES}/{created['id']}/run", {"request_id": "gone"}).status_code == 202
    assert admin.delete(f"/api/webhooks/{hook['id']}").status_code == 204
    assert work(services, clock, clock.now) == 0
    (run,) = runs_of(admin, created["id"])
    assert (run["status"], run["last_error"]["code"]) == ("FAILED", "WEBHOOK_NOT_FOUND")
    paused = admin.get(f"{SCHEDULES}/{created['id']}").json
    assert paused["enabled"] is False
    assert paused["auto_paused"]["runs"] == [
        {"run_id": run["id"], "error_code": "WEBHOOK_NOT_FOUND"}
    ]
