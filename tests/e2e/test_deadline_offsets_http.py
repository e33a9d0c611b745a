"""Deadlines keep the offset they were given with beside their UTC value (issue 14, item 8)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from cronledger.application.services import open_services
from cronledger.config import Settings
from tests.e2e.helpers import account, submit
from tests.release_stores import facts, store_written_by
from tests.support import Api, FakeClock
from web import create_app

OLD = "release-0.1.0-working"


@pytest.fixture
def requester(admin: Api) -> Api:
    return account(admin, "sales", ["requester"])


def test_a_given_deadline_keeps_its_offset_beside_utc(requester: Api, definition_id: str) -> None:
    created = submit(requester, definition_id, review_deadline_at="2026-10-01T18:00:00+08:00")
    read = requester.get(f"/api/approvals/{created.json['id']}").json

    assert created.status_code == 201
    assert read["review_deadline_at"] == "2026-10-01T10:00:00Z"
    assert read["review_deadline_at_local"] == "2026-10-01T18:00:00+08:00"


def test_the_same_instant_with_another_offset_replays_the_first(
    requester: Api, definition_id: str
) -> None:
    first = submit(requester, definition_id, review_deadline_at="2026-10-01T18:00:00+08:00")
    again = submit(requester, definition_id, review_deadline_at="2026-10-01T10:00:00Z")

    assert again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json["review_deadline_at_local"] == first.json["review_deadline_at_local"]


def test_a_deadline_from_the_review_window_is_shown_in_utc(
    requester: Api, definition_id: str
) -> None:
    created = submit(requester, definition_id).json

    assert created["review_deadline_at"] == "2026-10-01T10:00:00Z"
    assert created["review_deadline_at_local"] == "2026-10-01T10:00:00+00:00"


def test_an_extension_keeps_the_offset_it_was_given_with(
    admin: Api, requester: Api, definition_id: str
) -> None:
    instance = submit(requester, definition_id, review_deadline_at="2026-10-01T18:00:00+08:00")
    extend = {
        "command_id": "later",
        "reason": "asked",
        "new_deadline_at": "2026-10-02T07:00:00-05:00",
    }
    path = f"/api/approvals/{instance.json['id']}/extend-deadline"

    extended = admin.post(path, extend)
    repeated = admin.post(path, {**extend, "new_deadline_at": "2026-10-02T12:00:00Z"})

    assert extended.status_code == 200
    shown = extended.json["instance"]
    assert shown["review_deadline_at"] == "2026-10-02T12:00:00Z"
    assert shown["review_deadline_at_local"] == "2026-10-02T07:00:00-05:00"
    assert repeated.json["replayed"] is True  # the same instant: the same command


def test_instances_of_0_1_0_show_their_deadline_in_utc(store_url: str, tmp_path: Path) -> None:
    old = facts(OLD)
    clock = FakeClock(datetime.fromisoformat(old["clock"]))
    services = open_services(
        Settings(database_url=store_written_by(OLD, store_url, tmp_path, clock)), clock
    )
    services.projector.catch_up()  # as its projections loop does (a log copied in is not yet)
    try:
        api = Api(create_app({"SERVICES": services, "TESTING": True}).test_client(), "")
        api.token = old["tokens"]["acme"]
        for instance_id in old["instances"].values():
            read = api.get(f"/api/approvals/{instance_id}").json
            utc = datetime.fromisoformat(read["review_deadline_at"])
            assert read["review_deadline_at_local"] == utc.isoformat()
    finally:
        services.close()
