"""Webhook rules without a store: URLs and addresses, the delivery's attempts, the settings."""

from __future__ import annotations

import ipaddress
from datetime import timedelta
from typing import Any
from uuid import uuid4

import pytest

from cronledger.application.webhooks import AddressGuard, Destination, refusal_of
from cronledger.config import ConfigError, Settings
from domain.errors import InvalidState, ValidationFailed
from domain.webhooks import (
    DELIVERED,
    FAILED,
    INTERRUPTED,
    PENDING,
    RETRY_WAIT,
    SENDING,
    DeliveryPolicy,
    Response,
    SubscriptionFields,
    WebhookDelivery,
    WebhookSubscription,
    checked_event_types,
    checked_url,
    delivery_uuid,
    message_id_of,
)
from tests.support import T0

POLICY = DeliveryPolicy(3, timedelta(seconds=30))
LEASE = timedelta(seconds=20)
FAILURE = Response(500, 0.2, "the receiver answered 500")
SUCCESS = Response(204, 0.1, None)


def resolving(*addresses: str) -> Any:
    return lambda host, port, **kwargs: [(2, 1, 6, "", (a, port)) for a in addresses]


def delivery() -> WebhookDelivery:
    return WebhookDelivery(
        tenant_id=uuid4(),
        subscription_id=uuid4(),
        source="ping/1",
        event_type="ping",
        payload={"type": "ping"},
        max_attempts=POLICY.max_attempts,
        at=T0,
        actor="root",
    )


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.64.0.1",
     "0.0.0.0", "224.0.0.251", "240.0.0.1", "::1", "fe80::1", "fd12:3456::1", "ff02::1",
     "::ffff:10.0.0.1", "::"],
)  # fmt: skip
def test_addresses_that_are_not_public_are_refused(address: str) -> None:
    assert refusal_of(ipaddress.ip_address(address)) is not None


WRAPPED = [
    ("2002:7f00:1::", "127.0.0.1"),
    ("2002:a9fe:a9fe::", "169.254.169.254"),
    ("2002:a00:1::", "10.0.0.1"),
    ("2002:c0a8:101:1::5", "192.168.1.1"),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1"),
    ("64:ff9b::a9fe:a9fe", "169.254.169.254"),
    ("::ffff:7f00:1", "127.0.0.1"),
]


@pytest.mark.parametrize(("address", "wrapped"), WRAPPED)
def test_ipv6_that_wraps_a_refused_ipv4_address_is_refused_for_it(
    address: str, wrapped: str
) -> None:
    """6to4, Teredo, NAT64 and IPv4-mapped forms: `ipaddress` calls 2002:7f00:1:: global."""
    refused = refusal_of(ipaddress.ip_address(address))
    assert refused is not None
    assert refused.startswith(f"{wrapped} wrapped in IPv6")


def test_a_6to4_url_that_wraps_loopback_is_refused_as_a_webhook_target() -> None:
    guard = AddressGuard(False, False, resolving("2002:7f00:1::"))
    with pytest.raises(ValidationFailed, match="url") as refused:
        guard.destination("https://[2002:7f00:1::]/x")
    assert "127.0.0.1 wrapped in IPv6: a loopback address" in refused.value.errors["url"][0]


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "2002:808:808::1"]
)
def test_public_addresses_are_taken(address: str) -> None:
    assert refusal_of(ipaddress.ip_address(address)) is None


def test_one_private_address_among_a_host_s_refuses_it() -> None:
    guard = AddressGuard(False, False, resolving("93.184.216.34", "10.0.0.1"))
    with pytest.raises(ValidationFailed, match="url") as refused:
        guard.destination("https://mixed.example.com/hook")
    assert "10.0.0.1, a private address" in refused.value.errors["url"][0]
    allowed = AddressGuard(False, True, resolving("10.0.0.1"))
    assert allowed.destination("https://intranet.example.com/h").address == "10.0.0.1"


def test_the_message_goes_to_the_address_checked_with_the_name_kept() -> None:
    v4 = Destination("https://hooks.example.com:8443/in?x=1", "93.184.216.34")
    assert v4.pinned_url == "https://93.184.216.34:8443/in?x=1"
    assert (v4.host, v4.host_header) == ("hooks.example.com", "hooks.example.com:8443")
    v6 = Destination("https://hooks.example.com/in", "2606:4700::1")
    assert v6.pinned_url == "https://[2606:4700::1]/in"
    assert v6.host_header == "hooks.example.com"


@pytest.mark.parametrize(
    ("url", "allow_http", "why"),
    [
        ("http://example.com/", False, "must use https"),
        ("https://example.com/#top", False, "fragment"),
        ("https://a:b@example.com/", False, "credentials"),
        ("https://example.com:99999/", False, "is not a URL"),
        ("https://example.com/a b", False, "is not a URL"),
        ("javascript:alert(1)", True, "must use https or http"),
    ],
)
def test_urls_break_their_rules_by_name(url: str, allow_http: bool, why: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        checked_url(url, allow_http)
    assert why in refused.value.errors["url"][0]
    assert checked_url("http://example.com/", True) == "http://example.com/"


def test_event_types_are_known_and_kept_in_their_documented_order() -> None:
    assert checked_event_types(["ping", "run.failed", "ping"]) == ["run.failed", "ping"]
    for wrong in ([], ["run.exploded"]):
        with pytest.raises(ValidationFailed, match="event_types"):
            checked_event_types(wrong)


def test_a_failing_message_backs_off_then_is_given_up() -> None:
    message = delivery()
    at = T0
    for attempt, wait in ((1, 30), (2, 60)):
        number = message.start_attempt("n1", LEASE, at)
        assert (number, message.status) == (attempt, SENDING)
        message.finish_attempt(number, "n1", FAILURE, POLICY, at)
        assert (message.status, message.next_attempt_at) == (
            RETRY_WAIT,
            at + timedelta(seconds=wait),
        )
        at = message.next_attempt_at
    message.finish_attempt(message.start_attempt("n1", LEASE, at), "n1", FAILURE, POLICY, at)
    assert (message.status, message.next_attempt_at, message.finished_at) == (FAILED, None, at)
    with pytest.raises(InvalidState):
        message.start_attempt("n1", LEASE, at)

    message.redeliver(at, "root", "fixed")
    assert (message.status, message.attempts_in_round) == (PENDING, 0)
    message.finish_attempt(message.start_attempt("n2", LEASE, at), "n2", SUCCESS, POLICY, at)
    assert (message.status, len(message.attempts)) == (DELIVERED, 4)
    assert message.message_id == message_id_of(message.id)


def test_an_attempt_left_claimed_is_interrupted_and_the_next_one_starts() -> None:
    message = delivery()
    message.start_attempt("killed", LEASE, T0)
    later = T0 + LEASE
    assert message.start_attempt("n2", LEASE, later) == 2
    assert message.attempts[0]["error"] == INTERRUPTED
    assert not message.holds(1, "killed")
    with pytest.raises(InvalidState, match="no longer killed's"):
        message.finish_attempt(1, "killed", SUCCESS, POLICY, later)
    assert [type(e).__qualname__ for e in message.collect_events()][-2:] == [
        "WebhookDelivery.AttemptInterrupted",
        "WebhookDelivery.AttemptStarted",
    ]


def test_a_waiting_message_is_not_redelivered() -> None:
    with pytest.raises(InvalidState, match="being sent already"):
        delivery().redeliver(T0, "root")


def test_a_delivery_s_id_and_webhook_id_follow_from_its_source() -> None:
    subscription = uuid4()
    assert delivery_uuid(subscription, "e/1/ping") == delivery_uuid(subscription, "e/1/ping")
    assert delivery_uuid(subscription, "e/1/ping") != delivery_uuid(uuid4(), "e/1/ping")
    assert WebhookDelivery.create_id(subscription, "x") == delivery_uuid(subscription, "x")


def test_a_subscription_records_only_changes_and_rotates_its_generation() -> None:
    fields = SubscriptionFields("https://example.com/", ["ping"], "", True)
    subscription = WebhookSubscription(uuid4(), *fields.__dict__.values(), 1, T0, "root")
    subscription.change(fields, T0, "root")
    assert len(subscription.collect_events()) == 1
    subscription.rotate_secret(T0, "root")
    assert subscription.generation == 2
    subscription.delete(T0, "root", "gone")
    with pytest.raises(InvalidState, match="deleted"):
        subscription.rotate_secret(T0, "root")


def test_the_webhook_settings_read_their_variables() -> None:
    settings = Settings.from_env(
        {"CRONLEDGER_WEBHOOK_ALLOW_PRIVATE": "TRUE", "CRONLEDGER_WEBHOOK_MAX_ATTEMPTS": "3"}
    )
    assert (settings.webhook_allow_private, settings.webhook_allow_http) == (True, False)
    assert settings.webhook_max_attempts == 3
    for variable, value in (
        ("CRONLEDGER_WEBHOOK_ALLOW_HTTP", "yes"),
        ("CRONLEDGER_WEBHOOK_MAX_ATTEMPTS", "0"),
        ("CRONLEDGER_WEBHOOK_READ_TIMEOUT_SECONDS", "301"),
    ):
        with pytest.raises(ConfigError, match=variable):
            Settings.from_env({variable: value})
