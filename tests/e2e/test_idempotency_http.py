"""One idempotency story (docs/api.md#idempotency): an `Idempotency-Key` header on every
creating POST and every approval command, one replay signal, and a key reused with another
request refused."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from domain.directory import tenant_uuid
from domain.idempotency import CREATE_SCHEDULE, idempotency_key_uuid
from tests.e2e.helpers import CRON_9AM, account, assert_problem, submit
from tests.support import DECIDERS, Api, FakeClock, Opener
from web import create_app
from web.idempotency import reuse_code

KEY = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"


def keyed(key: str) -> dict[str, dict[str, str]]:
    return {"headers": {KEY: key}}


@dataclass(frozen=True)
class Creation:
    """A creating POST whose key is recorded with what it creates."""

    name: str
    path: str
    body: Callable[[dict[str, Any]], dict[str, Any] | None]  # from the test's definition
    other_body: Callable[[dict[str, Any]], dict[str, Any] | None]
    count: Callable[[Api], int]  # how many such resources there are
    id_field: str = "id"


def _schedules(admin: Api) -> int:
    return int(admin.get("/api/workflows/schedules").json["total"])


def _accounts(admin: Api) -> int:
    return int(admin.get("/api/accounts").json["total"])


def _definitions(admin: Api) -> int:
    return int(admin.get("/api/definitions").json["total"])


def _tokens(admin: Api) -> int:
    timeline = admin.get("/api/accounts/root/timeline").json["items"]
    return sum(entry["type"] == "Account.TokenIssued" for entry in timeline)


def _schedule(definition: dict[str, Any], name: str = "Daily") -> dict[str, Any]:
    return {
        "name": name,
        "definition_id": definition["id"],
        "trigger": CRON_9AM,
        "initiator_id": "root",
    }


def _preset(definition: dict[str, Any], name: str = "From a preset") -> dict[str, Any]:
    return {
        "definition_id": definition["id"],
        "preset_id": "weekday-morning",
        "initiator_id": "root",
        "name": name,
    }


def _definition(key: str) -> dict[str, Any]:
    return {
        "key": key,
        "name": key,
        "external": False,
        "review_window_seconds": 60,
        "reviewers": DECIDERS,
    }


CREATIONS = [
    Creation(
        "schedule",
        "/api/workflows/schedules",
        _schedule,
        lambda d: _schedule(d, "Nightly"),
        _schedules,
    ),
    Creation(
        "schedule from a preset",
        "/api/workflows/schedules",
        _preset,
        lambda d: _preset(d, "Another name"),
        _schedules,
    ),
    Creation(
        "account",
        "/api/accounts",
        lambda _: {"name": "Ann", "roles": ["requester"]},
        lambda _: {"name": "Bob", "roles": ["requester"]},
        _accounts,
    ),
    Creation(
        "definition",
        "/api/definitions",
        lambda _: _definition("expenses"),
        lambda _: _definition("travel"),
        _definitions,
    ),
    Creation(
        "token",
        "/api/accounts/root/tokens",
        lambda _: None,
        lambda _: {"unused": True},
        _tokens,
        id_field="token_id",
    ),
]


@pytest.fixture(params=CREATIONS, ids=lambda creation: creation.name)
def creation(request: pytest.FixtureRequest) -> Creation:
    return request.param  # type: ignore[no-any-return]


def test_a_repeat_with_the_key_replays_the_first_answer(
    admin: Api, definition: dict[str, Any], creation: Creation
) -> None:
    before = creation.count(admin)
    first = admin.post(creation.path, creation.body(definition), **keyed("k-1"))
    assert first.status_code == 201, first.json
    assert REPLAYED not in first.headers
    again = admin.post(creation.path, creation.body(definition), **keyed("k-1"))
    assert again.status_code == 201, again.json
    assert again.headers[REPLAYED] == "true"
    assert again.json[creation.id_field] == first.json[creation.id_field]
    assert creation.count(admin) == before + 1


def test_a_key_reused_with_another_body_is_refused(
    admin: Api, definition: dict[str, Any], creation: Creation
) -> None:
    admin.post(creation.path, creation.body(definition), **keyed("k-1"))
    before = creation.count(admin)
    reused = admin.post(creation.path, creation.other_body(definition), **keyed("k-1"))
    body = assert_problem(reused, 409, "IDEMPOTENCY_KEY_REUSED")
    assert "k-1" in body["detail"]
    assert REPLAYED not in reused.headers
    assert creation.count(admin) == before


@pytest.mark.parametrize("key", ["", "has space", "tab\there", "k" * 129, "caf\u00e9"], ids=repr)
def test_a_malformed_key_is_refused_and_nothing_is_created(
    admin: Api, definition: dict[str, Any], creation: Creation, key: str
) -> None:
    before = creation.count(admin)
    refused = admin.post(creation.path, creation.body(definition), **keyed(key))
    body = assert_problem(refused, 422, "VALIDATION_FAILED")
    assert list(body["errors"]) == [KEY]
    assert creation.count(admin) == before


def test_the_longest_key_is_accepted(admin: Api, definition: dict[str, Any]) -> None:
    key = "~!" * 64
    first = admin.post("/api/workflows/schedules", _schedule(definition), **keyed(key))
    assert first.status_code == 201
    again = admin.post("/api/workflows/schedules", _schedule(definition), **keyed(key))
    assert (again.json["id"], again.headers[REPLAYED]) == (first.json["id"], "true")


def test_without_a_key_each_post_creates_its_own(admin: Api, definition: dict[str, Any]) -> None:
    body = _schedule(definition)
    ids = {admin.post("/api/workflows/schedules", body).json["id"] for _ in range(2)}
    assert len(ids) == 2
    tokens = {admin.post("/api/accounts/root/tokens").json["token_id"] for _ in range(2)}
    assert len(tokens) == 2
    accounts = [admin.post("/api/accounts", {"name": "Ann", "roles": []}) for _ in range(2)]
    assert len({created.json["id"] for created in accounts}) == 2


def test_a_definition_key_is_still_unique_without_an_idempotency_key(admin: Api) -> None:
    assert admin.post("/api/definitions", _definition("expenses")).status_code == 201
    again = admin.post("/api/definitions", _definition("expenses"))
    assert list(assert_problem(again, 422, "VALIDATION_FAILED")["errors"]) == ["key"]


def test_the_body_is_compared_whatever_its_key_order_and_spacing(
    admin: Api, definition: dict[str, Any]
) -> None:
    body = _schedule(definition)
    first = admin.post("/api/workflows/schedules", body, **keyed("k-1"))
    reordered = "{" + ", ".join(f'"{k}":  {json.dumps(v)}' for k, v in reversed(body.items())) + "}"
    again = admin.client.post(
        "/api/workflows/schedules",
        data=reordered,
        headers={"Authorization": f"Bearer {admin.token}", KEY: "k-1"},
    )
    assert (again.status_code, again.json["id"]) == (201, first.json["id"])
    assert again.headers[REPLAYED] == "true"


def test_a_replay_answers_the_resource_as_it_is_now(admin: Api) -> None:
    first = admin.post("/api/accounts", {"id": "ann", "name": "Ann", "roles": []}, **keyed("k"))
    admin.put("/api/accounts/ann", {"name": "Ann Lee", "roles": ["auditor"], "version": 1})
    again = admin.post("/api/accounts", {"id": "ann", "name": "Ann", "roles": []}, **keyed("k"))
    assert again.status_code == 201
    assert again.json == admin.get("/api/accounts/ann").json
    assert (again.json["name"], again.json["roles"]) == ("Ann Lee", ["auditor"])
    assert again.json["version"] > first.json["version"]


def test_a_token_replay_never_shows_the_secret_again(admin: Api) -> None:
    first = admin.post("/api/accounts/root/tokens", **keyed("t-1"))
    assert first.json["token"].startswith("clt_")
    again = admin.post("/api/accounts/root/tokens", **keyed("t-1"))
    assert again.status_code == 201
    assert again.json == {"token": None, "token_id": first.json["token_id"]}
    assert again.headers[REPLAYED] == "true"
    assert Api(admin.client, first.json["token"]).get("/api/accounts/root").status_code == 200


def test_the_same_key_on_another_account_path_is_a_reuse(admin: Api) -> None:
    admin.post("/api/accounts", {"id": "ann", "name": "Ann", "roles": []})
    admin.post("/api/accounts/root/tokens", **keyed("t-1"))
    other = admin.post("/api/accounts/ann/tokens", **keyed("t-1"))
    assert_problem(other, 409, "IDEMPOTENCY_KEY_REUSED")


def test_keys_belong_to_the_account_that_sent_them(admin: Api, definition: dict[str, Any]) -> None:
    olga = account(admin, "olga", ["admin"])
    mine = admin.post("/api/workflows/schedules", _schedule(definition), **keyed("k-1"))
    hers = olga.post("/api/workflows/schedules", _schedule(definition), **keyed("k-1"))
    assert hers.status_code == 201
    assert REPLAYED not in hers.headers
    assert hers.json["id"] != mine.json["id"]


def test_a_refused_request_leaves_its_key_free(admin: Api, definition: dict[str, Any]) -> None:
    refused = admin.post(
        "/api/workflows/schedules",
        {**_schedule(definition), "initiator_id": "nobody"},
        **keyed("k"),
    )
    assert_problem(refused, 422, "VALIDATION_FAILED")
    created = admin.post("/api/workflows/schedules", _schedule(definition), **keyed("k"))
    assert created.status_code == 201
    assert REPLAYED not in created.headers


def test_one_key_serves_each_operation_apart(admin: Api, definition: dict[str, Any]) -> None:
    schedule = admin.post("/api/workflows/schedules", _schedule(definition), **keyed("k"))
    created = admin.post("/api/definitions", _definition("travel"), **keyed("k"))
    assert (schedule.status_code, created.status_code) == (201, 201)
    assert REPLAYED not in created.headers


def test_a_replay_of_a_deleted_schedule_is_not_found(
    admin: Api, definition: dict[str, Any]
) -> None:
    created = admin.post("/api/workflows/schedules", _schedule(definition), **keyed("k"))
    admin.delete(f"/api/workflows/schedules/{created.json['id']}?version=1")
    again = admin.post("/api/workflows/schedules", _schedule(definition), **keyed("k"))
    assert_problem(again, 404, "NOT_FOUND")
    assert _schedules(admin) == 0


# -- the keys of approval commands and run-now: command_id and request_id -------------------


def _approval(definition_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "definition_id": definition_id,
        "title": "Open account",
        "form_data": {"customer": "Xinghe"},
        "material_version": 2,
        **extra,
    }


def test_a_submission_may_take_its_command_id_from_the_header(
    admin: Api, definition_id: str
) -> None:
    first = admin.post("/api/approvals", _approval(definition_id), **keyed("s-1"))
    assert first.status_code == 201, first.json
    assert REPLAYED not in first.headers
    again = admin.post("/api/approvals", _approval(definition_id, command_id="s-1"))
    assert (again.status_code, again.json["id"]) == (201, first.json["id"])
    assert again.headers[REPLAYED] == "true"
    both = admin.post("/api/approvals", _approval(definition_id, command_id="s-1"), **keyed("s-1"))
    assert (both.status_code, both.json["id"]) == (201, first.json["id"])
    reused = admin.post("/api/approvals", _approval(definition_id, title="Other"), **keyed("s-1"))
    assert_problem(reused, 409, "COMMAND_ID_REUSED")


def test_a_key_field_that_differs_from_the_header_is_refused(
    admin: Api, definition_id: str
) -> None:
    refused = admin.post("/api/approvals", _approval(definition_id, command_id="a"), **keyed("b"))
    body = assert_problem(refused, 422, "VALIDATION_FAILED")
    assert body["errors"] == {"command_id": ["differs from the Idempotency-Key header"]}
    assert admin.get("/api/approvals").json["total"] == 0


def test_without_header_or_field_the_key_field_is_missing(admin: Api, definition_id: str) -> None:
    refused = admin.post("/api/approvals", _approval(definition_id, title=""))
    body = assert_problem(refused, 422, "VALIDATION_FAILED")
    assert body["errors"]["command_id"] == ["Missing data for required field."]
    assert "title" in body["errors"]


@pytest.fixture
def instance(admin: Api, definition_id: str) -> tuple[Api, str]:
    """An instance root submitted, and olga, who may decide it."""
    olga = account(admin, "olga", ["operator", "requester"])
    created = submit(admin, definition_id)
    assert created.status_code == 201, created.json
    return olga, created.json["id"]


def test_a_decision_takes_its_command_id_from_the_header(
    admin: Api, instance: tuple[Api, str]
) -> None:
    olga, instance_id = instance
    path = f"/api/approvals/{instance_id}/approve"
    first = olga.post(path, {"material_version": 2}, **keyed("a-1"))
    assert first.status_code == 200, first.json
    assert (first.json["replayed"], REPLAYED in first.headers) == (False, False)
    again = olga.post(path, {"command_id": "a-1", "material_version": 2})
    assert again.status_code == 200
    assert (again.json["replayed"], again.headers[REPLAYED]) == (True, "true")
    reused = olga.post(path, {"material_version": 3}, **keyed("a-1"))
    assert_problem(reused, 409, "COMMAND_ID_REUSED")
    mismatch = olga.post(path, {"command_id": "a-2", "material_version": 2}, **keyed("a-1"))
    errors = assert_problem(mismatch, 422, "VALIDATION_FAILED")["errors"]
    assert errors == {"command_id": ["differs from the Idempotency-Key header"]}
    missing = olga.post(path, {"material_version": 2})
    errors = assert_problem(missing, 422, "VALIDATION_FAILED")["errors"]
    assert errors == {"command_id": ["Missing data for required field."]}


def test_a_lost_decision_replays_its_409(admin: Api, instance: tuple[Api, str]) -> None:
    olga, instance_id = instance
    olga.post(f"/api/approvals/{instance_id}/approve", {"material_version": 2}, **keyed("a"))
    path = f"/api/approvals/{instance_id}/withdraw"
    lost = admin.post(path, {}, **keyed("w"))
    assert lost.status_code == 409
    assert REPLAYED not in lost.headers
    again = admin.post(path, {}, **keyed("w"))
    assert (again.status_code, again.headers[REPLAYED]) == (409, "true")
    timeline = admin.get(f"/api/approvals/{instance_id}/timeline").json["items"]
    assert [entry["command_id"] for entry in timeline].count("w") == 1


def test_a_broken_rule_claims_no_command_id(admin: Api, instance: tuple[Api, str]) -> None:
    olga, instance_id = instance
    path = f"/api/approvals/{instance_id}/extend-deadline"
    timeline = f"/api/approvals/{instance_id}/timeline"
    too_far = {"new_deadline_at": "2026-11-02T09:00:00Z", "reason": "asked"}
    refused = olga.post(path, too_far, **keyed("e-1"))
    first = assert_problem(refused, 422, "VALIDATION_FAILED")["errors"]
    recorded = len(admin.get(timeline).json["items"])
    again = olga.post(path, too_far, **keyed("e-1"))
    assert assert_problem(again, 422, "VALIDATION_FAILED")["errors"] == first
    assert len(admin.get(timeline).json["items"]) == recorded
    corrected = {"new_deadline_at": "2026-10-02T12:00:00+08:00", "reason": "asked"}
    extended = olga.post(path, corrected, **keyed("e-1"))
    assert (extended.status_code, extended.json["outcome"], extended.json["replayed"]) == (
        200,
        "EXTENDED",
        False,
    )
    repeated = olga.post(path, corrected, **keyed("e-1"))
    assert (repeated.status_code, repeated.headers[REPLAYED]) == (200, "true")
    assert_problem(olga.post(path, too_far, **keyed("e-1")), 409, "COMMAND_ID_REUSED")
    assert len(admin.get(timeline).json["items"]) == recorded + 1


def test_a_lost_command_s_id_stays_claimed(admin: Api, instance: tuple[Api, str]) -> None:
    olga, instance_id = instance
    olga.post(f"/api/approvals/{instance_id}/approve", {"material_version": 2}, **keyed("a"))
    path = f"/api/approvals/{instance_id}/withdraw"
    assert_problem(admin.post(path, {}, **keyed("w")), 409, "COMMAND_REJECTED")
    changed = admin.post(path, {"material_version": 2}, **keyed("w"))
    assert_problem(changed, 409, "COMMAND_ID_REUSED")


@pytest.mark.parametrize(
    ("command", "body"),
    [
        ("extend-deadline", {"new_deadline_at": "2026-10-02T12:00:00+08:00", "reason": "asked"}),
        (
            "callbacks/sign",
            {
                "contract_id": "C-9",
                "material_version": 2,
                "occurred_at": "2026-10-01T09:00:00Z",
                "source": "esign",
            },
        ),
    ],
)
def test_other_commands_take_the_header_too(
    admin: Api, instance: tuple[Api, str], command: str, body: dict[str, Any]
) -> None:
    olga, instance_id = instance
    signer = account(admin, "sig", ["integration"]) if command == "callbacks/sign" else olga
    path = f"/api/approvals/{instance_id}/{command}"
    first = signer.post(path, body, **keyed("c-1"))
    assert first.status_code == 200, first.json
    again = signer.post(path, body, **keyed("c-1"))
    assert (again.status_code, again.headers[REPLAYED], again.json["replayed"]) == (
        200,
        "true",
        True,
    )


def test_run_now_takes_its_request_id_from_the_header(
    admin: Api, definition: dict[str, Any]
) -> None:
    schedule = admin.post("/api/workflows/schedules", _schedule(definition)).json
    path = f"/api/workflows/schedules/{schedule['id']}/run"
    first = admin.post(path, {}, **keyed("r-1"))
    assert first.status_code == 202, first.json
    assert REPLAYED not in first.headers
    assert first.json["request_id"] == "r-1"
    again = admin.post(path, {"request_id": "r-1"})
    assert (again.status_code, again.json["id"]) == (202, first.json["id"])
    assert again.headers[REPLAYED] == "true"
    mismatch = admin.post(path, {"request_id": "r-2"}, **keyed("r-1"))
    errors = assert_problem(mismatch, 422, "VALIDATION_FAILED")["errors"]
    assert errors == {"request_id": ["differs from the Idempotency-Key header"]}
    missing = admin.post(path, {})
    errors = assert_problem(missing, 422, "VALIDATION_FAILED")["errors"]
    assert errors == {"request_id": ["Missing data for required field."]}
    runs = admin.get(f"/api/workflows/schedules/{schedule['id']}/runs").json
    assert runs["total"] == 1


def test_run_now_with_the_key_after_the_schedule_changed_is_a_reuse(
    admin: Api, definition: dict[str, Any]
) -> None:
    schedule = admin.post("/api/workflows/schedules", _schedule(definition)).json
    path = f"/api/workflows/schedules/{schedule['id']}/run"
    admin.post(path, {}, **keyed("r-1"))
    admin.post(f"/api/workflows/schedules/{schedule['id']}/enable", {})
    assert_problem(admin.post(path, {}, **keyed("r-1")), 409, "REQUEST_ID_REUSED")


@pytest.mark.parametrize("key", ["", "two words", "k" * 129])
def test_a_malformed_key_on_a_command_is_refused(
    admin: Api, instance: tuple[Api, str], key: str
) -> None:
    olga, instance_id = instance
    refused = olga.post(
        f"/api/approvals/{instance_id}/approve", {"material_version": 2}, **keyed(key)
    )
    assert list(assert_problem(refused, 422, "VALIDATION_FAILED")["errors"]) == [KEY]
    assert admin.get(f"/api/approvals/{instance_id}").json["state"] == "WAITING_REVIEW"


def test_two_processes_racing_one_key_make_one_schedule(
    open_with: Opener, clock: FakeClock, definition: dict[str, Any], admin: Api
) -> None:
    clients = [create_app({"SERVICES": open_with(clock), "TESTING": True}).test_client()]
    clients.append(admin.client)
    start = threading.Barrier(len(clients))

    def post(client: FlaskClient) -> TestResponse:
        start.wait()
        return Api(client, admin.token).post(
            "/api/workflows/schedules", _schedule(definition), **keyed("race")
        )

    with ThreadPoolExecutor(max_workers=len(clients)) as pool:
        answers = list(pool.map(post, clients))
    assert [answer.status_code for answer in answers] == [201, 201]
    assert len({answer.json["id"] for answer in answers}) == 1
    assert sorted(answer.headers.get(REPLAYED, "") for answer in answers) == ["", "true"]
    assert _schedules(admin) == 1


def test_a_key_record_has_no_timeline_of_its_own_in_the_api(
    admin: Api, definition: dict[str, Any]
) -> None:
    admin.post("/api/workflows/schedules", _schedule(definition), **keyed("k"))
    record_id = idempotency_key_uuid(tenant_uuid("acme"), "root", CREATE_SCHEDULE, "k")
    assert_problem(admin.get(f"/api/audit/timeline/{record_id}"), 404, "NOT_FOUND")


def test_every_creating_post_and_command_takes_the_key(app: Flask) -> None:
    declared = {
        view.__name__: reuse_code(view.endpoint_spec.body)
        for view in app.view_functions.values()
        if getattr(view, "endpoint_spec", None) and view.endpoint_spec.idempotent
    }
    assert declared == {
        "create_schedule": "IDEMPOTENCY_KEY_REUSED",
        "create_account": "IDEMPOTENCY_KEY_REUSED",
        "create_definition": "IDEMPOTENCY_KEY_REUSED",
        "issue_token": "IDEMPOTENCY_KEY_REUSED",
        "create_callback_source": "IDEMPOTENCY_KEY_REUSED",
        "create_group": "IDEMPOTENCY_KEY_REUSED",
        "create_calendar": "IDEMPOTENCY_KEY_REUSED",
        "create_webhook": "IDEMPOTENCY_KEY_REUSED",
        "run_now": "REQUEST_ID_REUSED",
        "submit_approval": "COMMAND_ID_REUSED",
        "approve": "COMMAND_ID_REUSED",
        "withdraw": "COMMAND_ID_REUSED",
        "extend_deadline": "COMMAND_ID_REUSED",
        "sign_callback": "COMMAND_ID_REUSED",
        "reject": "COMMAND_ID_REUSED",
        "claim": "COMMAND_ID_REUSED",
        "unclaim": "COMMAND_ID_REUSED",
        "reassign": "COMMAND_ID_REUSED",
        "comment": "COMMAND_ID_REUSED",
        "pause_deadline": "COMMAND_ID_REUSED",
        "resume_deadline": "COMMAND_ID_REUSED",
        "return_for_changes": "COMMAND_ID_REUSED",
        "revise": "COMMAND_ID_REUSED",
        "resubmit": "COMMAND_ID_REUSED",
        "request_cancellation": "COMMAND_ID_REUSED",
        **dict.fromkeys(
            (
                "enable_schedule",
                "disable_schedule",
                "retry_run",
                "cancel_run",
                "activate_account",
                "deactivate_account",
                "publish_definition",
                "unpublish_definition",
                "rotate_callback_source_secret",
                "rotate_webhook_secret",
                "ping_webhook",
                "redeliver_webhook",
                "import_calendar",
                "pause_schedules",
                "resume_schedules",
                "read_notification",
            ),
            "IDEMPOTENCY_KEY_REUSED",
        ),
    }
