"""`/api/callback-sources` on both stores: a tenant's sources, each secret shown once and never
recorded, rotated and deleted (docs/webhooks.md#verified-callbacks)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest
from flask.testing import FlaskClient

from cronledger.application.secrets import derived_secret
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from domain.callback_sources import callback_source_uuid
from tests.e2e.helpers import account, assert_problem, other_tenant
from tests.support import Api, FakeClock, Opener
from web import create_app

SECRET_KEY = "callback-sources-test-key-of-32-characters"
SOURCES = "/api/callback-sources"


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    opened = open_services(Settings(database_url=store_url, secret_key=SECRET_KEY), clock)
    yield opened
    opened.close()


def register(admin: Api, name: str = "esign", **more: Any) -> dict[str, Any]:
    created = admin.post(SOURCES, {"name": name, **more})
    assert created.status_code == 201, created.json
    return created.json  # type: ignore[no-any-return]


def the_log_holds(services: Services, text: str) -> bool:
    """Whether any stored event's bytes hold `text`."""
    stored = services.ledger.recorder.select_notifications(start=1, limit=100_000)
    return any(text.encode() in bytes(n.state) for n in stored)


def test_a_source_is_registered_with_its_secret_shown_once_and_never_recorded(
    services: Services, admin: Api
) -> None:
    created = admin.post(SOURCES, {"name": "esign", "description": "The e-signature system"})
    assert created.status_code == 201, created.json
    assert created.headers["ETag"] == '"1"'
    source = created.json
    tenant_id = services.directory.authenticate(admin.token).tenant_id  # type: ignore[union-attr]
    assert source["id"] == str(callback_source_uuid(tenant_id, "esign"))
    assert source["secret"] == derived_secret(SECRET_KEY, "callback-source", source["id"], 1)
    assert source["secret"].startswith("whsec_")
    shown = {key: value for key, value in source.items() if key != "secret"}
    assert shown == {
        "id": source["id"],
        "name": "esign",
        "description": "The e-signature system",
        "generation": 1,
        "created_at": "2026-10-01T09:00:00Z",
        "secret_created_at": "2026-10-01T09:00:00Z",
        "version": 1,
    }
    assert admin.get(f"{SOURCES}/{source['id']}").json == shown
    assert admin.get(SOURCES).json["items"] == [shown]
    assert not the_log_holds(services, source["secret"])
    assert not the_log_holds(services, source["secret"].removeprefix("whsec_"))


def test_names_are_checked_and_unique_in_a_tenant(
    services: Services, client: FlaskClient, admin: Api
) -> None:
    first = register(admin)
    taken = admin.post(SOURCES, {"name": "esign"})
    assert_problem(taken, 422, "VALIDATION_FAILED")
    assert list(taken.json["errors"]) == ["name"]
    for bad in ({"name": "e sign"}, {"name": ""}, {}, {"name": "x", "description": "d" * 501}):
        refused = admin.post(SOURCES, bad)
        assert_problem(refused, 422, "VALIDATION_FAILED")
    theirs = register(other_tenant(services, client))
    assert theirs["id"] != first["id"]
    assert theirs["secret"] != first["secret"]
    assert [s["name"] for s in admin.get(SOURCES).json["items"]] == ["esign"]


def test_rotating_makes_the_next_secret_and_takes_the_version(admin: Api, clock: FakeClock) -> None:
    source = register(admin)
    clock.advance(3600)
    rotated = admin.post(f"{SOURCES}/{source['id']}/rotate-secret", {"reason": "leaked"})
    assert rotated.status_code == 200, rotated.json
    assert (rotated.json["generation"], rotated.json["version"]) == (2, 2)
    assert rotated.json["secret_created_at"] == "2026-10-01T10:00:00Z"
    assert rotated.json["secret"] == derived_secret(SECRET_KEY, "callback-source", source["id"], 2)
    assert rotated.json["secret"] != source["secret"]
    assert "secret" not in admin.get(f"{SOURCES}/{source['id']}").json
    stale = admin.post(f"{SOURCES}/{source['id']}/rotate-secret", {"version": 1})
    assert_problem(stale, 409, "VERSION_CONFLICT")
    tagged = admin.post(f"{SOURCES}/{source['id']}/rotate-secret", headers={"If-Match": '"1"'})
    assert_problem(tagged, 412, "PRECONDITION_FAILED")
    assert admin.get(f"{SOURCES}/{source['id']}").json["generation"] == 2


def test_a_deleted_source_is_gone_and_its_name_comes_back_with_a_new_secret(
    services: Services, admin: Api
) -> None:
    source = register(admin)
    deleted = admin.delete(f"{SOURCES}/{source['id']}", json={"reason": "replaced"})
    assert deleted.status_code == 204
    for answer in (
        admin.get(f"{SOURCES}/{source['id']}"),
        admin.post(f"{SOURCES}/{source['id']}/rotate-secret"),
        admin.delete(f"{SOURCES}/{source['id']}"),
    ):
        assert_problem(answer, 404, "NOT_FOUND")
    assert admin.get(SOURCES).json == {
        "items": [],
        "page": 1,
        "page_size": 20,
        "total": 0,
        "total_capped": False,
        "next_cursor": None,
    }
    again = register(admin)
    assert (again["id"], again["generation"]) == (source["id"], 2)
    assert again["secret"] != source["secret"]
    assert [s["generation"] for s in admin.get(SOURCES).json["items"]] == [2]
    kinds = [e.type for e in services.ledger.timeline(UUID(source["id"]))]
    assert kinds == [
        "CallbackSource.Registered",
        "CallbackSource.Deleted",
        "CallbackSource.Reregistered",
    ]


def test_another_tenant_s_source_is_not_found(
    services: Services, client: FlaskClient, admin: Api
) -> None:
    theirs = register(other_tenant(services, client), "gx-sign")
    for answer in (
        admin.get(f"{SOURCES}/{theirs['id']}"),
        admin.post(f"{SOURCES}/{theirs['id']}/rotate-secret"),
        admin.delete(f"{SOURCES}/{theirs['id']}"),
        admin.get(f"{SOURCES}/not-a-uuid"),
    ):
        assert_problem(answer, 404, "NOT_FOUND")


def test_only_directory_managers_see_and_change_sources(admin: Api) -> None:
    source = register(admin)
    operator = account(admin, "olga", ["operator", "auditor", "integration"])
    for answer in (
        operator.get(SOURCES),
        operator.get(f"{SOURCES}/{source['id']}"),
        operator.post(SOURCES, {"name": "mine"}),
        operator.post(f"{SOURCES}/{source['id']}/rotate-secret"),
        operator.delete(f"{SOURCES}/{source['id']}"),
    ):
        assert_problem(answer, 403, "FORBIDDEN")
    assert admin.get(f"{SOURCES}/{source['id']}").json["generation"] == 1


def test_a_repeat_with_its_idempotency_key_shows_no_secret(admin: Api) -> None:
    key = {"Idempotency-Key": "register-esign"}
    first = admin.post(SOURCES, {"name": "esign"}, headers=key)
    again = admin.post(SOURCES, {"name": "esign"}, headers=key)
    assert again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json == {**first.json, "secret": None}
    other = admin.post(SOURCES, {"name": "docusign"}, headers=key)
    assert_problem(other, 409, "IDEMPOTENCY_KEY_REUSED")


def test_without_a_secret_key_no_source_is_registered(open_with: Opener, clock: FakeClock) -> None:
    services = open_with(clock)
    client = create_app({"SERVICES": services, "TESTING": True}).test_client()
    admin = Api(client, services.directory.bootstrap("acme", "root").token)
    refused = admin.post(SOURCES, {"name": "esign"})
    body = assert_problem(refused, 409, "INVALID_STATE")
    assert "CRONLEDGER_SECRET_KEY" in body["detail"]
    assert admin.get(SOURCES).json["total"] == 0
