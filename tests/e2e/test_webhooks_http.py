"""Webhook subscriptions over HTTP, on both stores: the secret shown once, URLs refused unless
the operator allows them, the deliveries list, permissions and tenants."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from cronledger.application.notifier import Notifier
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.e2e.helpers import account, assert_problem, other_tenant
from tests.support import Api, FakeClock, Opener
from tests.webhook_receiver import receiving
from web import create_app

SECRET_KEY = "a test key that is at least thirty-two characters long"
LOCAL = "http://127.0.0.1:9/hook"  # nothing listens: messages there fail
BODY = {"url": LOCAL, "event_types": ["run.dead_lettered", "ping"], "description": "on call"}


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    """Services that may sign, and send to loopback over http (the tests' receivers)."""
    settings = Settings(
        database_url=store_url,
        secret_key=SECRET_KEY,
        webhook_allow_private=True,
        webhook_allow_http=True,
        webhook_max_attempts=2,
        webhook_retry_base_seconds=1,
        webhook_read_timeout_seconds=0.5,
    )
    opened = open_services(settings, clock)
    yield opened
    opened.close()


def strict_api(open_with: Opener, clock: FakeClock, tenant: str = "acme", **settings: Any) -> Api:
    """An admin of a service with the default allowances (https, public addresses only) but
    those given."""
    services = open_with(clock, secret_key=SECRET_KEY, **settings)
    client = create_app({"SERVICES": services, "TESTING": True}).test_client()
    return Api(client, services.directory.bootstrap(tenant, "root").token)


def test_the_secret_is_answered_once_and_kept_nowhere(admin: Api, services: Services) -> None:
    created = admin.post("/api/webhooks", BODY, headers={"Idempotency-Key": "hook-1"})
    assert created.status_code == 201, created.json
    secret = created.json["secret"]
    assert secret.startswith("whsec_")
    assert created.headers["ETag"] == '"1"'
    webhook_id = created.json["id"]
    assert created.json["event_types"] == ["run.dead_lettered", "ping"]
    assert (created.json["enabled"], created.json["generation"]) == (True, 1)

    again = admin.post("/api/webhooks", BODY, headers={"Idempotency-Key": "hook-1"})
    assert (again.status_code, again.headers["Idempotent-Replayed"]) == (201, "true")
    assert (again.json["id"], again.json["secret"]) == (webhook_id, None)

    read = admin.get(f"/api/webhooks/{webhook_id}")
    assert "secret" not in read.json
    assert read.json == {k: v for k, v in created.json.items() if k != "secret"}
    listed = admin.get("/api/webhooks").json
    assert [item["id"] for item in listed["items"]] == [webhook_id]
    assert listed["items"][0] == read.json

    rotated = admin.post(f"/api/webhooks/{webhook_id}/rotate-secret", {"version": 1})
    assert rotated.status_code == 200, rotated.json
    assert rotated.json["generation"] == 2
    assert rotated.json["secret"].startswith("whsec_")
    assert rotated.json["secret"] != secret
    timeline = json.dumps(admin.get(f"/api/webhooks/{webhook_id}/timeline").json)
    assert [e["type"] for e in json.loads(timeline)["items"]] == [
        "WebhookSubscription.Created",
        "WebhookSubscription.SecretRotated",
    ]
    events = services.store.query(f"SELECT state FROM {services.ledger.events_table}")
    stored = b"".join(bytes(row[0]) for row in events)
    for shown in (secret, rotated.json["secret"]):
        assert shown not in timeline
        assert shown.encode() not in stored
        assert shown.removeprefix("whsec_").encode() not in stored


def test_subscriptions_beyond_the_tenant_s_cap_are_refused_in_either_language(
    open_with: Opener, clock: FakeClock
) -> None:
    services = open_with(
        clock,
        secret_key=SECRET_KEY,
        webhook_allow_private=True,
        webhook_allow_http=True,
        webhooks_per_tenant=2,
    )
    client = create_app({"SERVICES": services, "TESTING": True}).test_client()
    admin = Api(client, services.directory.bootstrap("acme", "root").token)
    first = admin.post("/api/webhooks", BODY, headers={"Idempotency-Key": "first"}).json["id"]
    assert admin.post("/api/webhooks", BODY).status_code == 201

    refused = assert_problem(admin.post("/api/webhooks", BODY), 409, "TOO_MANY_WEBHOOKS")
    assert refused["detail"] == (
        "the tenant has 2 webhook subscriptions and may have 2 at most "
        "(CRONLEDGER_WEBHOOKS_PER_TENANT): delete one it no longer needs, then try again"
    )
    chinese = admin.post("/api/webhooks", BODY, headers={"Accept-Language": "zh-CN"})
    problem = assert_problem(chinese, 409, "TOO_MANY_WEBHOOKS")
    assert problem["title"] == "Webhook 过多"
    assert problem["detail"].startswith("该租户已有 2 个 Webhook 订阅，最多只能有 2 个")
    assert admin.get("/api/webhooks").json["total"] == 2
    again = admin.post("/api/webhooks", BODY, headers={"Idempotency-Key": "first"})
    assert (again.status_code, again.json["id"]) == (201, first)  # a repeat, not a new one

    assert other_tenant(services, client).post("/api/webhooks", BODY).status_code == 201
    assert admin.delete(f"/api/webhooks/{first}", json={}).status_code == 204
    assert admin.post("/api/webhooks", BODY).status_code == 201


def test_a_subscription_is_replaced_and_deleted_at_its_version(admin: Api) -> None:
    webhook_id = admin.post("/api/webhooks", BODY).json["id"]
    changed = {**BODY, "event_types": ["ping", "approval.expired"], "enabled": False}
    stale = admin.put(f"/api/webhooks/{webhook_id}", {**changed, "version": 7})
    assert_problem(stale, 409, "VERSION_CONFLICT")
    replaced = admin.put(f"/api/webhooks/{webhook_id}", {**changed, "version": 1})
    assert replaced.status_code == 200, replaced.json
    assert replaced.json["event_types"] == ["approval.expired", "ping"]  # the documented order
    assert (replaced.json["enabled"], replaced.json["version"]) == (False, 2)
    assert_problem(admin.post(f"/api/webhooks/{webhook_id}/ping"), 409, "INVALID_STATE")

    refused = admin.delete(f"/api/webhooks/{webhook_id}", json={}, headers={"If-Match": '"1"'})
    assert_problem(refused, 412, "PRECONDITION_FAILED")
    deleted = admin.delete(f"/api/webhooks/{webhook_id}", json={"reason": "moved"})
    assert deleted.status_code == 204
    for path in ("", "/deliveries", "/timeline"):
        assert_problem(admin.get(f"/api/webhooks/{webhook_id}{path}"), 404, "NOT_FOUND")
    assert admin.get("/api/webhooks").json["total"] == 0


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://ops.example.com/hook", "must use https"),
        ("https://127.0.0.1/hook", "a loopback address"),
        ("https://localhost:8443/hook", "a loopback address"),
        ("https://10.1.2.3/hook", "a private address"),
        ("https://192.168.0.7/hook", "a private address"),
        ("https://169.254.169.254/latest/meta-data", "a link-local address"),
        ("https://[::1]/hook", "a loopback address"),
        ("https://[fd00::1]/hook", "a private address"),
        ("https://[::ffff:127.0.0.1]/hook", "a loopback address"),
        ("https://224.0.0.1/hook", "a multicast address"),
        ("https://0.0.0.0/hook", "the unspecified address"),
        ("https://user:pw@ops.example.com/hook", "must not carry credentials"),
        ("https:///hook", "must name a host"),
        ("ftp://ops.example.com/", "must use https"),
        ("https://no-such-host.invalid/hook", "cannot be resolved"),
    ],
)
def test_urls_are_refused_unless_the_operator_allows_them(
    open_with: Opener, clock: FakeClock, url: str, why: str
) -> None:
    api = strict_api(open_with, clock)
    refused = api.post("/api/webhooks", {**BODY, "url": url})
    problem = assert_problem(refused, 422, "VALIDATION_FAILED")
    assert why in " ".join(problem["errors"]["url"])
    assert api.get("/api/webhooks").json["total"] == 0


def test_private_addresses_and_http_are_taken_once_allowed(
    open_with: Opener, clock: FakeClock
) -> None:
    only_private = strict_api(open_with, clock, webhook_allow_private=True)
    loopback = {**BODY, "url": "https://127.0.0.1/h"}
    assert only_private.post("/api/webhooks", loopback).status_code == 201
    refused = only_private.post("/api/webhooks", BODY)
    assert "must use https" in refused.json["errors"]["url"][0]
    only_http = strict_api(open_with, clock, "globex", webhook_allow_http=True)
    refused = only_http.post("/api/webhooks", BODY)
    assert "a loopback address" in refused.json["errors"]["url"][0]


def test_updates_check_the_url_too(open_with: Opener, clock: FakeClock) -> None:
    api = strict_api(open_with, clock, webhook_allow_private=True)
    created = api.post("/api/webhooks", {**BODY, "url": "https://127.0.0.1/h"}).json
    changed = {**BODY, "url": "http://127.0.0.1/h", "version": created["version"]}
    assert_problem(api.put(f"/api/webhooks/{created['id']}", changed), 422, "VALIDATION_FAILED")


def test_bad_bodies_are_refused_by_field(admin: Api) -> None:
    for body, field in (
        ({**BODY, "event_types": []}, "event_types"),
        ({**BODY, "event_types": ["run.exploded"]}, "event_types.0"),
        ({**BODY, "url": "x" * 2001}, "url"),
        ({**BODY, "enabled": "yes"}, "enabled"),
        ({**BODY, "secret": "whsec_mine"}, "secret"),
        ({"event_types": ["ping"]}, "url"),
    ):
        problem = assert_problem(admin.post("/api/webhooks", body), 422, "VALIDATION_FAILED")
        assert field in problem["errors"], (body, problem)


def test_without_a_secret_key_no_subscription_is_made(open_with: Opener, clock: FakeClock) -> None:
    services = open_with(clock, webhook_allow_private=True, webhook_allow_http=True)
    client = create_app({"SERVICES": services, "TESTING": True}).test_client()
    api = Api(client, services.directory.bootstrap("acme", "root").token)
    problem = assert_problem(api.post("/api/webhooks", BODY), 409, "INVALID_STATE")
    assert "CRONLEDGER_SECRET_KEY" in problem["detail"]


def test_only_directory_managers_of_the_tenant_reach_subscriptions(
    admin: Api, services: Services, client: FlaskClient
) -> None:
    webhook_id = admin.post("/api/webhooks", BODY).json["id"]
    operator = account(admin, "olga", ["operator"])
    assert_problem(operator.get("/api/webhooks"), 403, "FORBIDDEN")
    assert_problem(operator.post("/api/webhooks", BODY), 403, "FORBIDDEN")
    assert_problem(operator.post(f"/api/webhooks/{webhook_id}/ping"), 403, "FORBIDDEN")
    globex = other_tenant(services, client)
    assert globex.get("/api/webhooks").json["total"] == 0
    for path in (f"/api/webhooks/{webhook_id}", f"/api/webhooks/{webhook_id}/deliveries"):
        assert_problem(globex.get(path), 404, "NOT_FOUND")
    assert_problem(globex.post(f"/api/webhooks/{webhook_id}/ping"), 404, "NOT_FOUND")
    assert_problem(admin.get("/api/webhooks/not-an-id"), 404, "NOT_FOUND")


def test_a_message_never_answered_is_given_up_listed_as_failed_and_redelivered(
    admin: Api, services: Services, clock: FakeClock
) -> None:
    with receiving() as receiver:
        receiver.status = 504
        webhook_id = admin.post("/api/webhooks", {**BODY, "url": receiver.url}).json["id"]
        ping = admin.post(f"/api/webhooks/{webhook_id}/ping")
        assert ping.status_code == 202, ping.json
        assert (ping.json["status"], ping.json["attempts"]) == ("PENDING", 0)
        delivery_id = ping.json["id"]
        redeliver = f"/api/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver"
        assert_problem(admin.post(redeliver, {}), 409, "INVALID_STATE")

        notifier = Notifier.of(services)
        notifier.work()
        waiting = admin.get(f"/api/webhooks/{webhook_id}/deliveries").json["items"][0]
        assert (waiting["status"], waiting["attempts"], waiting["response_status"]) == (
            "RETRY_WAIT",
            1,
            504,
        )
        clock.advance(1)
        notifier.work()
        listed = admin.get(f"/api/webhooks/{webhook_id}/deliveries").json
        failed = listed["items"][0]
        assert listed["total"] == 1
        assert (failed["status"], failed["attempts"], failed["max_attempts"]) == ("FAILED", 2, 2)
        assert failed["last_error"] == "the receiver answered 504"
        assert failed["next_attempt_at"] is None
        assert failed["finished_at"] is not None
        assert failed["latency_seconds"] >= 0

        receiver.status = 204
        again = admin.post(redeliver, {"reason": "receiver fixed"})
        assert again.status_code == 202, again.json
        assert again.json["status"] == "PENDING"
        notifier.work()
        delivered = admin.get(f"/api/webhooks/{webhook_id}/deliveries").json["items"][0]
        assert (delivered["status"], delivered["attempts"]) == ("DELIVERED", 3)
        assert delivered["response_status"] == 204
        assert {r.message_id for r in receiver.received} == {ping.json["message_id"]}
        assert len(receiver.received) == 3


def test_deliveries_are_paged_newest_first(admin: Api) -> None:
    webhook_id = admin.post("/api/webhooks", BODY).json["id"]
    pings = [admin.post(f"/api/webhooks/{webhook_id}/ping").json["id"] for _ in range(3)]
    first = admin.get(f"/api/webhooks/{webhook_id}/deliveries?page_size=2")
    assert [d["id"] for d in first.json["items"]] == pings[:0:-1]
    assert first.json["total"] == 3
    after = admin.get(
        f"/api/webhooks/{webhook_id}/deliveries?page_size=2&cursor={first.json['next_cursor']}"
    )
    assert [d["id"] for d in after.json["items"]] == pings[:1]
    assert first.headers["Link"].startswith(f"</api/webhooks/{webhook_id}/deliveries?")


def test_a_repeated_ping_with_its_key_answers_the_same_message(admin: Api) -> None:
    path = f"/api/webhooks/{admin.post('/api/webhooks', BODY).json['id']}/ping"
    keyed = {"headers": {"Idempotency-Key": "ping-1"}}
    first, again = admin.post(path, **keyed), admin.post(path, **keyed)
    assert (first.status_code, again.status_code) == (202, 202)
    assert again.json["id"] == first.json["id"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert admin.post(path).json["id"] != first.json["id"]  # without the key, another
