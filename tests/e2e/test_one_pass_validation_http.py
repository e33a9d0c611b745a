"""Every invalid field of a body in one 422, whether it broke its shape (a length, a type, a
missing field) or a rule of meaning (a lookup, a parse, a zone, a rule of the instance):
docs/api.md, "every invalid field is reported at once"."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.e2e.helpers import account, assert_problem, submit
from tests.support import Api, FakeClock

SCHEDULES = "/api/workflows/schedules"


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    """Services that may sign (webhooks and callback sources have secrets)."""
    settings = Settings(
        database_url=store_url, secret_key="a key of at least thirty-two characters"
    )
    opened = open_services(settings, clock)
    yield opened
    opened.close()


def errors_of(answer: Any) -> set[str]:
    """The fields a 422 VALIDATION_FAILED names."""
    return set(assert_problem(answer, 422, "VALIDATION_FAILED")["errors"])


def broken_schedule(**fields: Any) -> dict[str, Any]:
    """A schedule with an empty name (its shape), an unknown definition, a minute 61 and a zone
    that is not one (their meaning)."""
    return {
        "name": "",
        "definition_id": "no-such-definition",
        "trigger": {"kind": "cron", "expression": "61 * * * *"},
        "timezone": "Mars/Olympus",
        "initiator_id": "root",
        **fields,
    }


def test_a_schedule_answers_its_shape_and_its_meaning_at_once(admin: Api) -> None:
    answer = admin.post(SCHEDULES, broken_schedule())
    assert errors_of(answer) == {"name", "definition_id", "trigger.expression", "timezone"}
    nobody = admin.post(SCHEDULES, broken_schedule(initiator_id="nobody"))
    assert errors_of(nobody) == {
        "name",
        "definition_id",
        "trigger.expression",
        "timezone",
        "initiator_id",
    }
    nothing = admin.get(SCHEDULES).json["items"]
    assert nothing == []


def test_an_edited_schedule_answers_every_error_at_once(admin: Api, body: dict[str, Any]) -> None:
    created = admin.post(SCHEDULES, body).json
    path = f"{SCHEDULES}/{created['id']}"
    replaced = admin.put(path, {**body, **broken_schedule(), "version": created["version"]})
    assert errors_of(replaced) == {"name", "definition_id", "trigger.expression", "timezone"}
    patched = admin.patch(path, {"name": "", "timezone": "Mars/Olympus"})
    assert errors_of(patched) == {"name", "timezone"}


def test_a_schedule_from_a_preset_answers_every_error_at_once(admin: Api) -> None:
    answer = admin.post(
        SCHEDULES,
        {"definition_id": "nope", "preset_id": "Not A Preset!", "initiator_id": "nobody"},
    )
    assert errors_of(answer) == {"definition_id", "preset_id", "initiator_id"}


def test_a_definition_answers_every_error_at_once(admin: Api) -> None:
    admin.post(
        "/api/definitions",
        {
            "key": "taken",
            "name": "Taken",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": {"roles": ["admin"]},
        },
    )
    answer = admin.post(
        "/api/definitions",
        {
            "key": "taken",
            "name": "",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": {"accounts": ["nobody"]},
            "schedule_presets": [
                {"id": "p1", "title": "P", "trigger": {"kind": "cron", "expression": "61 * * * *"}}
            ],
        },
    )
    assert errors_of(answer) == {
        "key",
        "name",
        "reviewers.accounts",
        "schedule_presets.0.trigger.expression",
    }


def test_an_account_answers_every_error_at_once(admin: Api) -> None:
    answer = admin.post("/api/accounts", {"id": "root", "name": "", "roles": ["operator"]})
    assert errors_of(answer) == {"id", "name"}


def test_a_group_answers_every_error_at_once(admin: Api) -> None:
    answer = admin.post(
        "/api/groups",
        {"key": "ops", "name": "", "members": ["nobody"], "parent_key": "no-such-group"},
    )
    assert errors_of(answer) == {"name", "members", "parent_key"}


def test_a_calendar_answers_every_error_at_once(admin: Api) -> None:
    answer = admin.post(
        "/api/calendars",
        {"key": "cn", "name": "", "timezone": "Mars/Olympus", "weekend": [6, 6]},
    )
    assert errors_of(answer) == {"name", "timezone", "weekend"}


def test_a_webhook_answers_every_error_at_once(admin: Api) -> None:
    answer = admin.post(
        "/api/webhooks",
        {
            "url": "https://someone:secret@hooks.example/x",
            "event_types": [],
            "description": 7,
        },
    )
    assert errors_of(answer) == {"url", "event_types", "description"}


def test_a_callback_source_answers_every_error_at_once(admin: Api) -> None:
    assert admin.post("/api/callback-sources", {"name": "esign"}).status_code == 201
    answer = admin.post("/api/callback-sources", {"name": "esign", "description": 7})
    assert errors_of(answer) == {"name", "description"}


def test_a_submission_answers_every_error_at_once(admin: Api, definition_id: str) -> None:
    answer = admin.post(
        "/api/approvals",
        {
            "command_id": "s-1",
            "definition_id": "no-such-definition",
            "title": "",
            "material_version": 1,
            "review_deadline_at": "2020-01-01T00:00:00Z",
        },
    )
    assert errors_of(answer) == {"definition_id", "title", "review_deadline_at"}


def test_a_command_answers_its_rule_with_its_shape_and_records_nothing(
    admin: Api, definition_id: str
) -> None:
    requester = account(admin, "sales", ["requester"])
    instance = submit(requester, definition_id).json
    path = f"/api/approvals/{instance['id']}"
    answer = admin.post(
        f"{path}/extend-deadline",
        {"command_id": "e-1", "new_deadline_at": "2026-11-30T00:00:00Z", "reason": ""},
    )
    assert errors_of(answer) == {"new_deadline_at", "reason"}
    revised = requester.post(
        f"{path}/revise", {"command_id": "r-1", "material_version": 2, "reason": ""}
    )
    assert errors_of(revised) == {"material_version", "reason"}
    timeline = admin.get(f"{path}/timeline").json["items"]
    assert [entry["command_id"] for entry in timeline] == ["submit-1"]


def test_a_key_field_that_differs_from_the_header_is_named_with_the_others(
    admin: Api, definition_id: str
) -> None:
    requester = account(admin, "sales", ["requester"])
    instance = submit(requester, definition_id).json
    answer = admin.post(
        f"/api/approvals/{instance['id']}/extend-deadline",
        {"command_id": "e-2", "new_deadline_at": "2026-11-30T00:00:00Z", "reason": ""},
        headers={"Idempotency-Key": "e-1"},
    )
    assert errors_of(answer) == {"command_id", "new_deadline_at", "reason"}
