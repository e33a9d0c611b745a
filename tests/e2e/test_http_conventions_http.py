"""HTTP conventions (docs/api.md): conditional reads (304), `Location` on every 201, an empty
`If-Match` refused, a bad body 422 before a stale `If-Match` is 412, and `Idempotency-Key` on
commands (replayed) but refused where it means nothing."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from cronledger.application.services import Services
from tests.e2e.helpers import assert_problem, log_end
from tests.support import Api

KEY = "Idempotency-Key"


def headers(**named: str) -> dict[str, dict[str, str]]:
    return {"headers": {name.replace("_", "-"): value for name, value in named.items()}}


@pytest.fixture
def schedule(admin: Api, body: dict[str, Any]) -> dict[str, Any]:
    created = admin.post("/api/workflows/schedules", body)
    assert created.status_code == 201, created.json
    return created.json  # type: ignore[no-any-return]


def test_an_unchanged_schedule_answers_304_with_its_etag(
    admin: Api, schedule: dict[str, Any]
) -> None:
    path = f"/api/workflows/schedules/{schedule['id']}"
    tag = admin.get(path).headers["ETag"]
    for named in (tag, f"W/{tag}", "*", f'"99", {tag}'):
        unchanged = admin.get(path, **headers(If_None_Match=named))
        assert (unchanged.status_code, unchanged.data) == (304, b""), named
        assert unchanged.headers["ETag"] == tag
    assert admin.post(f"{path}/enable").status_code == 200
    changed = admin.get(path, **headers(If_None_Match=tag))
    assert changed.status_code == 200
    assert changed.headers["ETag"] != tag
    assert changed.json["enabled"] is True


def test_a_list_answers_304_until_it_changes(
    admin: Api, schedule: dict[str, Any], body: dict[str, Any]
) -> None:
    path = "/api/workflows/schedules"
    first = admin.get(path)
    tag = first.headers["ETag"]
    assert admin.get(path).headers["ETag"] == tag  # the same page, the same tag
    assert admin.get(path, **headers(If_None_Match=tag)).status_code == 304
    assert admin.get(f"{path}?page_size=1").headers["ETag"] != tag  # another page
    admin.post(path, {**body, "name": "Another"})
    grown = admin.get(path, **headers(If_None_Match=tag))
    assert grown.status_code == 200
    assert grown.json["total"] == first.json["total"] + 1


def test_every_201_names_the_new_resource_in_location(
    admin: Api, schedule: dict[str, Any], definition: dict[str, Any]
) -> None:
    created = {
        "/api/workflows/schedules": schedule["id"],
        "/api/definitions": definition["id"],
    }
    for collection, made in created.items():
        assert admin.get(f"{collection}/{made}").status_code == 200
    account = admin.post("/api/accounts", {"id": "ann", "name": "Ann", "roles": []})
    assert account.headers["Location"] == "/api/accounts/ann"
    assert admin.get(account.headers["Location"]).json["name"] == "Ann"
    again = admin.post("/api/workflows/schedules", {**_settable(schedule), "name": "Twice"})
    assert again.headers["Location"] == f"/api/workflows/schedules/{again.json['id']}"
    token = admin.post("/api/accounts/ann/tokens")
    assert token.headers["Location"] == f"/api/accounts/ann/tokens/{token.json['token_id']}"
    assert admin.delete(token.headers["Location"]).status_code == 204


def _settable(schedule: dict[str, Any]) -> dict[str, Any]:
    fields = ("definition_id", "trigger", "initiator_id", "timezone", "form_data")
    return {name: schedule[name] for name in fields}


def test_an_empty_if_match_is_400_and_changes_nothing(
    admin: Api, services: Services, schedule: dict[str, Any]
) -> None:
    path = f"/api/workflows/schedules/{schedule['id']}"
    end = log_end(services)
    for write in (
        lambda: admin.post(f"{path}/enable", **headers(If_Match="")),
        lambda: admin.patch(path, {"name": "x"}, **headers(If_Match=" ")),
        lambda: admin.delete(path, **headers(If_Match="")),
    ):
        problem = assert_problem(write(), 400, "BAD_REQUEST")
        assert "If-Match" in problem["detail"]
    assert log_end(services) == end


def test_a_bad_body_is_422_before_a_stale_if_match_is_412(
    admin: Api, schedule: dict[str, Any], body: dict[str, Any]
) -> None:
    path = f"/api/workflows/schedules/{schedule['id']}"
    stale = headers(If_Match='"99"')
    bad = {key: value for key, value in body.items() if key != "name"}
    refused = assert_problem(admin.put(path, bad, **stale), 422, "VALIDATION_FAILED")
    assert "name" in refused["errors"]
    patched = admin.patch(path, {"misfire_policy": "sometimes"}, **stale)
    assert "misfire_policy" in assert_problem(patched, 422, "VALIDATION_FAILED")["errors"]
    meaningless = {
        **body,
        "timezone": "Mars/Olympus",
        "trigger": {"kind": "cron", "expression": "61 * * * *"},
    }
    wrong = assert_problem(admin.put(path, meaningless, **stale), 422, "VALIDATION_FAILED")
    assert set(wrong["errors"]) == {"timezone", "trigger.expression"}
    retimed = admin.patch(path, {"trigger": {"expression": "61 * * * *"}}, **stale)
    assert set(assert_problem(retimed, 422, "VALIDATION_FAILED")["errors"]) == {
        "trigger.expression"
    }
    assert_problem(admin.put(path, body, **stale), 412, "PRECONDITION_FAILED")
    assert_problem(admin.patch(path, {"name": "x"}, **stale), 412, "PRECONDITION_FAILED")


def test_a_command_replays_its_first_answer_for_its_key(
    admin: Api, services: Services, schedule: dict[str, Any]
) -> None:
    path = f"/api/workflows/schedules/{schedule['id']}"
    keyed = headers(Idempotency_Key="enable-1")
    enabled = admin.post(f"{path}/enable", **keyed)
    assert (enabled.status_code, enabled.json["enabled"]) == (200, True)
    assert "Idempotent-Replayed" not in enabled.headers
    admin.post(f"{path}/disable")
    end = log_end(services)
    again = admin.post(f"{path}/enable", **keyed)
    assert again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json["enabled"] is False  # the schedule as it is now: nothing done again
    assert log_end(services) == end
    other = admin.post(f"{path}/enable", {"reason": "another request"}, **keyed)
    assert_problem(other, 409, "IDEMPOTENCY_KEY_REUSED")
    assert admin.post(f"{path}/disable", **keyed).status_code == 200  # another operation


def test_an_idempotency_key_is_400_where_it_means_nothing(
    admin: Api, services: Services, schedule: dict[str, Any], body: dict[str, Any]
) -> None:
    path = f"/api/workflows/schedules/{schedule['id']}"
    keyed = headers(Idempotency_Key="k-1")
    end = log_end(services)
    for write in (
        lambda: admin.patch(path, {"name": "x"}, **keyed),
        lambda: admin.put(path, {**body, "version": 1}, **keyed),
        lambda: admin.delete(f"{path}?version=1", **keyed),
        lambda: admin.post(
            "/api/workflows/schedules/bulk",
            {"action": "disable", "ids": [schedule["id"]], "reason": "k"},
            **keyed,
        ),
        lambda: admin.post(
            "/api/workflows/schedules/preview",
            {"trigger": body["trigger"], "timezone": "UTC"},
            **keyed,
        ),
    ):
        problem = assert_problem(write(), 400, "BAD_REQUEST")
        assert KEY in problem["detail"]
    assert log_end(services) == end
    assert admin.get(path).json["name"] == schedule["name"]


def test_every_write_takes_the_key_or_refuses_it(app: Flask) -> None:
    """A POST takes the key or refuses it (a preview, a bulk action, a repeatable setting);
    a PUT, PATCH or DELETE never takes it."""
    neither = []
    for rule in app.url_map.iter_rules():
        spec = getattr(app.view_functions[rule.endpoint], "endpoint_spec", None)
        methods = (rule.methods or set()) - {"HEAD", "OPTIONS", "GET"}
        if spec is None or not methods:
            continue
        if methods & {"PUT", "PATCH", "DELETE"}:
            assert not spec.idempotent, rule.rule
        elif bool(spec.idempotent) == spec.keyless:
            neither.append(rule.rule)
    assert neither == []
