"""A step after the commit fails: the committed command still answers its success (issue 20).

A command's events are committed first; after the commit, in the same request, the save tells
this process's meters and brings the read models up to it. When one of those steps raises (a
projection's bug, a value a read model's table refuses), the command has taken effect all the
same: the client gets the command's own success answer, a warning is logged, and a retry with
the same key replays that answer with no second effect. The read models catch up afterwards,
as the projections runner makes them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import pytest
from werkzeug.test import TestResponse

from cronledger.application.services import Services
from tests.e2e.helpers import account, log_end, submit, with_reviewer
from tests.support import DECIDERS, Api

SCHEDULES = "/api/workflows/schedules"
APPROVALS = "/api/approvals"
INJECTED = "injected: the step after the commit failed"


@dataclass(frozen=True)
class Command:
    """A command as a client sends it (its key in the Idempotency-Key header), and where its
    effect shows once the read models catch up: the list at `listed`, holding the item that
    `shown` picks out of the success answer."""

    path: str
    body: dict[str, Any]
    status: int
    listed: str
    shown: Callable[[dict[str, Any]], dict[str, Any]]


def json_of(response: TestResponse) -> dict[str, Any]:
    """A JSON object answer."""
    answer = response.json
    assert isinstance(answer, dict), response.get_data()[:500]
    return answer


def the_resource(answer: dict[str, Any]) -> dict[str, Any]:
    """The answered resource as a list shows it (a run's without its attempts)."""
    return {name: value for name, value in answer.items() if name != "attempts"}


def create_account(admin: Api, definition_id: str) -> Command:
    body = {"id": "ann", "name": "Ann", "roles": ["requester"]}
    return Command("/api/accounts", body, 201, "/api/accounts", the_resource)


def create_schedule(admin: Api, definition_id: str) -> Command:
    body = schedule_body(definition_id, "nightly")
    return Command(SCHEDULES, body, 201, SCHEDULES, the_resource)


def run_now(admin: Api, definition_id: str) -> Command:
    created = admin.post(SCHEDULES, schedule_body(definition_id, "manual"))
    assert created.status_code == 201, created.json
    schedule = f"{SCHEDULES}/{json_of(created)['id']}"
    return Command(f"{schedule}/run", {}, 202, f"{schedule}/runs", the_resource)


def submit_approval(admin: Api, definition_id: str) -> Command:
    body = {
        "definition_id": definition_id,
        "title": "Open account",
        "form_data": {"customer": "Xinghe"},
        "material_version": 2,
    }
    return Command(APPROVALS, body, 201, APPROVALS, the_resource)


def approve(admin: Api, definition_id: str) -> Command:
    submitted = submit(account(admin, "ann", ["requester"]), definition_id)
    assert submitted.status_code == 201, submitted.json
    body = {"material_version": 2}
    path = f"{APPROVALS}/{json_of(submitted)['id']}/approve"
    return Command(path, body, 200, APPROVALS, lambda answer: answer["instance"])


COMMANDS: dict[str, Callable[[Api, str], Command]] = {
    "create-account": create_account,
    "create-schedule": create_schedule,
    "run-now": run_now,
    "submit-approval": submit_approval,
    "approve": approve,
}


def schedule_body(definition_id: str, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "definition_id": definition_id,
        "trigger": {"kind": "cron", "expression": "0 9 * * *"},
        "timezone": "UTC",
        "initiator_id": "root",
        "enabled": False,
    }


def broken(*_: object, **__: object) -> NoReturn:
    raise RuntimeError(INJECTED)


def break_read_models(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    """The read models' catch-up that a save asks for after its commit raises, as a
    projection's bug would (a catch-up asked for anything else still works)."""
    original = services.projector.catch_up

    def catch_up(until: int | None = None, **kwargs: Any) -> int:
        if until is not None and until == services.ledger.saved_position():
            broken()
        return original(until, **kwargs)

    monkeypatch.setattr(services.projector, "catch_up", catch_up)


def break_meters(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's meters, told of each committed save, raise."""
    monkeypatch.setattr(services.ledger, "after_record", broken)


FAILURES: dict[str, Callable[[Services, pytest.MonkeyPatch], None]] = {
    "read-models": break_read_models,
    "meters": break_meters,
}


@pytest.fixture
def definition_id(admin: Api) -> str:
    with_reviewer(admin)
    body = {"key": "onboarding", "name": "Onboarding", "external": False}
    created = admin.post(
        "/api/definitions",
        {**body, "review_window_seconds": 3600, "reviewers": DECIDERS},
    )
    definition_id = str(json_of(created)["id"])
    admin.post(f"/api/definitions/{definition_id}/publish")
    return definition_id


def without_replayed(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer less its `replayed` member (a decision command's answer tells it)."""
    return {name: value for name, value in answer.items() if name != "replayed"}


@pytest.mark.parametrize("failure", list(FAILURES))
@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_committed_command_answers_success_when_a_step_after_its_commit_fails(
    name: str,
    failure: str,
    services: Services,
    admin: Api,
    definition_id: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    command = COMMANDS[name](admin, definition_id)
    key = {"Idempotency-Key": f"post-commit-{name}"}
    with monkeypatch.context() as patched:
        FAILURES[failure](services, patched)
        before = log_end(services)
        with caplog.at_level(logging.WARNING, logger="cronledger"):
            first = admin.post(command.path, command.body, headers=key)
        assert first.status_code == command.status, first.get_data()[:500]
        committed = log_end(services)
        assert committed != before
        assert any(
            record.levelno >= logging.WARNING and INJECTED in str(record.exc_info)
            for record in caplog.records
        ), [record.getMessage() for record in caplog.records]

        again = admin.post(command.path, command.body, headers=key)
        assert again.status_code == command.status, again.get_data()[:500]
        assert again.headers.get("Idempotent-Replayed") == "true"
        assert without_replayed(json_of(again)) == without_replayed(json_of(first))
        assert log_end(services) == committed  # no second effect

    services.projector.catch_up()  # what the projections runner does next
    shown = command.shown(json_of(first))
    items = json_of(admin.get(f"{command.listed}?page_size=200"))["items"]
    assert [item for item in items if item["id"] == shown["id"]] == [shown]
