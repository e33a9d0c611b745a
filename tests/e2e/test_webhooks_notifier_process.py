"""`cronledger notifier` as a process: killed with SIGKILL between sending a message and recording
it, restarted: the message is sent again with the same `webhook-id`, and nothing is lost."""

from __future__ import annotations

import threading
from uuid import UUID

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from domain.webhooks import SubscriptionFields
from projections.keyset import Window
from tests.processes import killed_mid_work, started
from tests.webhook_receiver import receiving

SECRET_KEY = "a test key that is at least thirty-two characters long"
ENVIRONMENT = {
    "CRONLEDGER_SECRET_KEY": SECRET_KEY,
    "CRONLEDGER_WEBHOOK_ALLOW_PRIVATE": "true",
    "CRONLEDGER_WEBHOOK_ALLOW_HTTP": "true",
    "CRONLEDGER_WEBHOOK_CONNECT_TIMEOUT_SECONDS": "1",
    "CRONLEDGER_WEBHOOK_READ_TIMEOUT_SECONDS": "5",
    "CRONLEDGER_WEBHOOK_ATTEMPT_DEADLINE_SECONDS": "6",  # its claim lasts 11 s
}


def test_a_notifier_killed_before_recording_an_attempt_sends_it_again_after_a_restart(
    store_url: str,
) -> None:
    settings = Settings(
        database_url=store_url,
        secret_key=SECRET_KEY,
        webhook_allow_private=True,
        webhook_allow_http=True,
    )
    services = open_services(settings)
    root = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    assert root is not None
    held = threading.Event()
    with receiving() as receiver:
        receiver.answer(held)  # the first request waits until its notifier is dead
        fields = SubscriptionFields(receiver.url, ["ping"], "", True)
        made = services.webhooks.create(root, fields)
        webhook = made.webhook
        pings = [services.webhooks.ping(root, webhook.id) for _ in range(3)]
        killed_mid_work(
            store_url,
            "notifier",
            receiver.entered.is_set,
            "the first message reached the receiver",
            **ENVIRONMENT,
        )
        held.set()
        assert _statuses(services, webhook.id) == ["SENDING", "PENDING", "PENDING"]

        with started(store_url, "notifier", **ENVIRONMENT) as child:
            child.wait_for(
                lambda: _statuses(services, webhook.id) == ["DELIVERED"] * 3,
                "every message delivered after the restart",
                timeout=60,
            )
        received = list(receiver.received)
    ids = [message.message_id for message in received]
    assert ids == [pings[0].message_id, *(ping.message_id for ping in pings)]
    assert received[0].body == received[1].body
    for message in received:
        message.verified(made.secret or "")
    first = services.webhooks.delivery(root.tenant_id, webhook.id, pings[0].id)
    assert [a.get("error") for a in first.attempts] == [
        "the notifier stopped before it recorded the attempt's outcome",
        None,
    ]
    services.close()


def _statuses(services: Services, webhook_id: str) -> list[str]:
    """The subscription's messages' statuses, oldest first."""
    services.projector.catch_up()
    page = services.webhooks.deliveries(_tenant(services), webhook_id, Window(10))
    return [delivery.status for delivery in reversed(page.items)]


def _tenant(services: Services) -> UUID:
    return services.directory.tenants()["acme"]


def test_the_notifier_stops_gracefully_on_sigterm(store_url: str) -> None:
    with started(store_url, "notifier", "--interval", "0.2", **ENVIRONMENT) as child:
        child.wait_for(lambda: child.logged("loop started"), "its loop started")
        assert child.stop() == 0, child.describe()
    assert "notifier" in child.stderr
