"""Signing callbacks signed by a registered callback source (Standard Webhooks), on both stores:
a verified delivery is recorded naming its source; one that is not verified is 401, leaves the
instance's log untouched and is counted on /metrics; a replayed `webhook-id` is recorded once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import pytest
from flask.testing import FlaskClient
from standardwebhooks import Webhook
from werkzeug.test import TestResponse

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.e2e.helpers import account, assert_problem, other_tenant, samples, submit
from tests.support import Api, FakeClock

SECRET_KEY = "signed-callbacks-test-key-of-32-characters"
TOLERANCE = timedelta(minutes=5)
CALLBACK = {
    "contract_id": "C-9",
    "material_version": 2,
    "occurred_at": "2026-10-01T08:58:00Z",
    "source": "esign",
}


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    """With a secret key to derive the sources' secrets from, and a budget of refusals these
    tests never spend."""
    settings = Settings(database_url=store_url, secret_key=SECRET_KEY, refusals_per_minute=10**4)
    opened = open_services(settings, clock)
    yield opened
    opened.close()


@pytest.fixture
def esign(admin: Api) -> dict[str, Any]:
    """The tenant's callback source `esign`, with its secret."""
    created = admin.post("/api/callback-sources", {"name": "esign"})
    assert created.status_code == 201, created.json
    return created.json  # type: ignore[no-any-return]


@pytest.fixture
def instance_id(admin: Api, definition_id: str) -> str:
    return str(submit(admin, definition_id).json["id"])


def deliver(
    client: FlaskClient,
    instance_id: str,
    secret: str,
    at: datetime,
    msg_id: str = "msg_2Ks9cbDqkUvzYBCa",
    body: dict[str, Any] | None = None,
    tampered: bool = False,
    **headers: str,
) -> TestResponse:
    """POST a callback signed with `secret` at `at`, as a registered source sends it: no token.
    `tampered`: its body changed after it was signed."""
    payload = json.dumps(CALLBACK if body is None else body)
    signed = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": Webhook(secret).sign(msg_id, at, payload),
        "Content-Type": "application/json",
    }
    if tampered:
        payload = payload.replace('"material_version": 2', '"material_version": 3')
    return client.post(
        f"/api/approvals/{instance_id}/callbacks/sign",
        data=payload,
        headers={**signed, **headers},
    )


def events_of(services: Services, instance_id: str) -> int:
    """How many events the instance's log holds."""
    return len(services.ledger.recorder.select_events(UUID(instance_id)))


def refusals(client: FlaskClient) -> dict[str, float]:
    """`cronledger_callbacks_refused_total` by reason, as /metrics shows it."""
    found = samples(client.get("/metrics").get_data(as_text=True))
    return {
        dict(labels)["reason"]: value
        for (name, labels), value in found.items()
        if name == "cronledger_callbacks_refused_total"
    }


def test_a_signed_callback_is_recorded_as_an_observation_naming_its_source(
    services: Services,
    client: FlaskClient,
    admin: Api,
    clock: FakeClock,
    esign: dict[str, Any],
    instance_id: str,
) -> None:
    answer = deliver(client, instance_id, esign["secret"], clock())
    assert answer.status_code == 200, answer.json
    assert (answer.json["outcome"], answer.json["replayed"]) == ("OBSERVED", False)
    [observation] = answer.json["instance"]["observations"]
    assert (observation["source"], observation["command_id"]) == ("esign", "msg_2Ks9cbDqkUvzYBCa")
    assert observation["contract_id"] == "C-9"
    last = admin.get(f"/api/approvals/{instance_id}/timeline").json["items"][-1]
    assert (last["type"], last["actor"]) == (
        "ApprovalInstance.CallbackObserved",
        f"source:{esign['id']}",
    )
    assert last["command_id"] == "msg_2Ks9cbDqkUvzYBCa"
    assert events_of(services, instance_id) == 2
    assert set(refusals(client).values()) == {0.0}


def test_a_delivery_signed_at_the_edge_of_the_tolerance_is_taken(
    client: FlaskClient, clock: FakeClock, esign: dict[str, Any], instance_id: str
) -> None:
    assert deliver(client, instance_id, esign["secret"], clock() - TOLERANCE).status_code == 200
    later = deliver(client, instance_id, esign["secret"], clock() + TOLERANCE, msg_id="msg_b")
    assert later.status_code == 200, later.json


def _refused_cases() -> dict[str, tuple[str, dict[str, Any]]]:
    """Each way a delivery is not verified: (the reason counted, how it is sent)."""
    return {
        "bad signature": ("signature", {"secret": "whsec_" + "QUJD" * 11}),
        "old timestamp": ("timestamp", {"age": TOLERANCE + timedelta(seconds=1)}),
        "future timestamp": ("timestamp", {"age": -TOLERANCE - timedelta(seconds=1)}),
        "unreadable timestamp": ("timestamp", {"headers": {"webhook-timestamp": "soon"}}),
        "absurd timestamp": ("timestamp", {"headers": {"webhook-timestamp": "9" * 40}}),
        "unknown source": ("source", {"body": {**CALLBACK, "source": "nobody"}}),
        "another tenant's source": ("source", {"tenant": "globex"}),
        "deleted source": ("source", {"deleted": True}),
        "no signature header": ("signature", {"headers": {"webhook-signature": ""}}),
        "body changed after signing": ("signature", {"tampered": True}),
        "unsigned without a token": ("unsigned", {"unsigned": True}),
    }


@pytest.mark.parametrize("case", list(_refused_cases()))
def test_a_delivery_that_is_not_verified_is_401_not_recorded_and_counted(
    case: str,
    services: Services,
    client: FlaskClient,
    admin: Api,
    clock: FakeClock,
    esign: dict[str, Any],
    instance_id: str,
) -> None:
    reason, how = _refused_cases()[case]
    secret, body = how.get("secret", esign["secret"]), how.get("body", CALLBACK)
    if "tenant" in how:
        theirs = other_tenant(services, client).post("/api/callback-sources", {"name": "gx-sign"})
        secret, body = theirs.json["secret"], {**CALLBACK, "source": "gx-sign"}
    if how.get("deleted"):
        assert admin.delete(f"/api/callback-sources/{esign['id']}").status_code == 204
    before, counted = events_of(services, instance_id), refusals(client)
    if how.get("unsigned"):
        answer = client.post(f"/api/approvals/{instance_id}/callbacks/sign", json=CALLBACK)
    else:
        at = clock() - how.get("age", timedelta(0))
        answer = deliver(
            client,
            instance_id,
            secret,
            at,
            body=body,
            tampered=how.get("tampered", False),
            **how.get("headers", {}),
        )
    assert_problem(answer, 401, "UNAUTHENTICATED")
    assert events_of(services, instance_id) == before
    assert admin.get(f"/api/approvals/{instance_id}").json["observations"] == []
    after = refusals(client)
    assert {r: after[r] - counted[r] for r in after} == {r: float(r == reason) for r in after}


def test_a_replayed_webhook_id_is_recorded_once_and_answered_with_the_first_result(
    services: Services,
    client: FlaskClient,
    admin: Api,
    clock: FakeClock,
    esign: dict[str, Any],
    instance_id: str,
) -> None:
    first = deliver(client, instance_id, esign["secret"], clock())
    assert first.status_code == 200, first.json
    withdrawn = admin.post(f"/api/approvals/{instance_id}/withdraw", {"command_id": "w-1"})
    assert withdrawn.status_code == 200
    recorded = events_of(services, instance_id)
    again = deliver(client, instance_id, esign["secret"], clock())
    assert again.status_code == 200, again.json
    assert again.headers["Idempotent-Replayed"] == "true"
    assert (again.json["outcome"], again.json["replayed"]) == ("OBSERVED", True)
    assert again.json["instance"]["state"] == "WITHDRAWN"  # the instance as it is now
    assert len(again.json["instance"]["observations"]) == 1
    assert events_of(services, instance_id) == recorded


def test_a_webhook_id_sent_again_to_another_instance_is_refused_there(
    services: Services,
    client: FlaskClient,
    admin: Api,
    clock: FakeClock,
    esign: dict[str, Any],
    instance_id: str,
    definition_id: str,
) -> None:
    """The signature does not cover the path: a delivery captured on its way to one instance
    and sent to another is the same key with another request, and records nothing there."""
    other = submit(admin, definition_id, "submit-2").json["id"]
    assert deliver(client, instance_id, esign["secret"], clock()).status_code == 200
    before = events_of(services, other)
    moved = deliver(client, other, esign["secret"], clock())
    assert_problem(moved, 409, "IDEMPOTENCY_KEY_REUSED")
    assert events_of(services, other) == before


def test_rotating_a_source_s_secret_makes_the_old_one_fail(
    services: Services,
    client: FlaskClient,
    admin: Api,
    clock: FakeClock,
    esign: dict[str, Any],
    instance_id: str,
) -> None:
    rotated = admin.post(f"/api/callback-sources/{esign['id']}/rotate-secret")
    assert rotated.status_code == 200, rotated.json
    counted = refusals(client)["signature"]
    old = deliver(client, instance_id, esign["secret"], clock())
    assert_problem(old, 401, "UNAUTHENTICATED")
    assert refusals(client)["signature"] == counted + 1
    assert events_of(services, instance_id) == 1
    new = deliver(client, instance_id, rotated.json["secret"], clock())
    assert new.status_code == 200, new.json


def test_an_account_token_with_the_callback_permission_still_works(
    client: FlaskClient, admin: Api, instance_id: str
) -> None:
    integration = account(admin, "erp", ["integration"])
    answer = integration.post(
        f"/api/approvals/{instance_id}/callbacks/sign",
        {**CALLBACK, "command_id": "cb-1", "source": "erp-batch"},
    )
    assert answer.status_code == 200, answer.json
    assert answer.json["instance"]["observations"][0]["source"] == "erp-batch"
    last = admin.get(f"/api/approvals/{instance_id}/timeline").json["items"][-1]
    assert (last["actor"], last["command_id"]) == ("erp", "cb-1")
    assert set(refusals(client).values()) == {0.0}


def test_a_signed_delivery_s_command_id_is_its_webhook_id(
    services: Services,
    client: FlaskClient,
    clock: FakeClock,
    esign: dict[str, Any],
    instance_id: str,
) -> None:
    named = {**CALLBACK, "command_id": "cb-1"}
    other = deliver(client, instance_id, esign["secret"], clock(), msg_id="msg_a", body=named)
    assert_problem(other, 422, "VALIDATION_FAILED")
    assert other.json["errors"] == {"command_id": ["differs from the webhook-id header"]}
    same = {**CALLBACK, "command_id": "msg_a"}
    taken = deliver(client, instance_id, esign["secret"], clock(), msg_id="msg_a", body=same)
    assert taken.status_code == 200, taken.json
    unusable = deliver(client, instance_id, esign["secret"], clock(), msg_id="msg a")
    assert_problem(unusable, 422, "VALIDATION_FAILED")
    assert list(unusable.json["errors"]) == ["webhook-id"]
    assert events_of(services, instance_id) == 2


def test_a_signed_delivery_is_checked_like_any_callback(
    client: FlaskClient, clock: FakeClock, esign: dict[str, Any], instance_id: str
) -> None:
    """Verified, it meets the same rules as a token's: fields are checked, a late one is late."""
    missing = {key: value for key, value in CALLBACK.items() if key != "contract_id"}
    invalid = deliver(client, instance_id, esign["secret"], clock(), body=missing)
    assert_problem(invalid, 422, "VALIDATION_FAILED")
    assert list(invalid.json["errors"]) == ["contract_id"]
    clock.advance(7200)  # past the definition's review window of one hour
    late = deliver(client, instance_id, esign["secret"], clock(), msg_id="msg_late")
    assert_problem(late, 409, "COMMAND_REJECTED")
    assert late.json["outcome"] == "EXPIRED"
