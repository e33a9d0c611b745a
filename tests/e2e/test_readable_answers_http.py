"""Answers people can read: UTF-8 text, who decided an instance, and why a command lost."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import account, assert_problem, submit
from tests.support import Api

CHINESE_TITLE = "开户审批"


@pytest.fixture
def requester(admin: Api) -> Api:
    return account(admin, "sales", ["requester"])


def test_json_carries_non_ascii_text_as_utf8(requester: Api, definition_id: str) -> None:
    created = submit(requester, definition_id, title=CHINESE_TITLE)
    refused = requester.post("/api/approvals", {"command_id": "x", "title": CHINESE_TITLE})

    assert created.status_code == 201
    assert CHINESE_TITLE.encode() in created.get_data()
    assert b"\\u" not in created.get_data()
    assert created.json["title"] == CHINESE_TITLE
    assert_problem(refused, 422, "VALIDATION_FAILED")
    assert b"\\u" not in refused.get_data()


def test_a_losing_command_is_told_why_and_which_command_won(
    admin: Api, requester: Api, definition_id: str
) -> None:
    instance = submit(requester, definition_id).json
    path = f"/api/approvals/{instance['id']}"
    assert (instance["decided_by"], instance["winning_command"]) == (None, None)
    approved = admin.post(f"{path}/approve", {"command_id": "ok", "material_version": 2})

    lost = requester.post(f"{path}/withdraw", {"command_id": "too-late"})

    winner = {"command_id": "ok", "kind": "approve", "actor": "root"}
    assert approved.status_code == 200
    assert approved.json["winning_command"] == winner
    assert lost.status_code == 409
    assert lost.json["outcome"] == "CONFLICT"
    assert lost.json["reason"]
    assert lost.json["winning_command"] == winner
    detail = admin.get(path).json
    assert (detail["decided_by"], detail["winning_command"]) == ("root", winner)


def test_the_openapi_document_shows_the_new_fields(admin: Api) -> None:
    schemas = admin.get("/api/openapi.json").json["components"]["schemas"]
    assert {"decided_by", "winning_command"} <= set(schemas["ApprovalOut"]["properties"])
    assert {"reason", "winning_command"} <= set(schemas["CommandOut"]["properties"])


def test_schedule_instants_come_with_the_schedules_local_time(
    admin: Api, body: dict[str, Any]
) -> None:
    account(admin, "ann", ["requester"])
    created = admin.post(
        "/api/workflows/schedules", {**body, "initiator_id": "ann", "enabled": True}
    ).json
    run = admin.post(f"/api/workflows/schedules/{created['id']}/run", {"request_id": "r1"}).json

    assert created["next_fire_at"] == "2026-10-02T01:00:00Z"
    assert created["next_fire_at_local"] == "2026-10-02T09:00:00+08:00"
    assert (run["planned_at"], run["planned_at_local"]) == (
        "2026-10-01T09:00:00Z",
        "2026-10-01T17:00:00+08:00",
    )
