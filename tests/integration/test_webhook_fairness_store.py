"""One tenant's slow receiver costs that tenant alone, on both stores: an attempt ends at its
deadline however slowly the receiver drips its answer (and is tried again, as any failed
attempt is), another tenant's messages go out while it is under way, one tenant has a bounded
share of the senders and of each pass, and a tenant's subscriptions stop at its cap."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from cronledger.application.notifier import TENANT_SHARE, Notifier
from cronledger.application.services import Services
from cronledger.application.webhooks import WebhookWithSecret
from domain.directory import Principal
from domain.webhooks import SubscriptionFields, TooManyWebhooks
from projections.keyset import Window
from projections.webhooks import due_deliveries
from tests.support import FakeClock, Opener, World, wait_until
from tests.webhook_receiver import dripping, receiving

SECRET_KEY = "a test key that is at least thirty-two characters long"
DEADLINE = 3.0  # seconds an attempt may take in all, here
DRIP_SECONDS = 6 * DEADLINE  # what a dripped answer takes to come whole
SETTINGS: dict[str, Any] = {
    "secret_key": SECRET_KEY,
    "webhook_allow_private": True,
    "webhook_allow_http": True,
    "webhook_read_timeout_seconds": 1.0,  # each read of a dripped answer takes 0.1 s
    "webhook_attempt_deadline_seconds": DEADLINE,
}


def now_clock() -> FakeClock:
    """A hand-set clock at the real time: receivers check a message's timestamp against theirs."""
    return FakeClock(datetime.now(UTC).replace(microsecond=0))


def subscribe(services: Services, tenant: Principal, url: str) -> WebhookWithSecret:
    return services.webhooks.create(tenant, SubscriptionFields(url, ["ping"], "test", True))


def globex(services: Services) -> Principal:
    principal = services.directory.authenticate(
        services.directory.bootstrap("globex", "boss").token
    )
    assert principal is not None
    return principal


def deliveries(services: Services, tenant: Principal, webhook: WebhookWithSecret) -> list[Any]:
    services.projector.catch_up()
    page = services.webhooks.deliveries(tenant.tenant_id, webhook.webhook.id, Window(50))
    return page.items


def statuses(services: Services, tenant: Principal, webhook: WebhookWithSecret) -> list[str]:
    return [delivery.status for delivery in deliveries(services, tenant, webhook)]


@pytest.mark.slow
def test_an_attempt_on_a_dripping_receiver_ends_at_its_deadline_and_is_tried_again(
    open_with: Opener,
) -> None:
    clock = now_clock()
    services = open_with(clock, **SETTINGS)
    world = World(services, clock)
    with dripping(DRIP_SECONDS) as drip:
        made = subscribe(services, world.root, drip.url)
        ping = services.webhooks.ping(world.root, made.webhook.id)
        notifier = Notifier.of(services)
        notifier.work()  # back once the attempt has ended and is recorded
        (failed,) = deliveries(services, world.root, made)
        assert (failed.status, failed.attempts, failed.response_status) == ("RETRY_WAIT", 1, None)
        assert failed.last_error == "no complete answer within the attempt deadline (3 s)"
        assert failed.latency_seconds is not None
        assert DEADLINE <= failed.latency_seconds < DRIP_SECONDS
        wait_until(drip.cut.is_set, "the receiver saw the notifier hang up mid-answer")

        clock.advance(30)  # the first retry's wait, as for any failed attempt
        notifier.work()  # the receiver answers this one at once
        received = list(drip.received)
    (delivered,) = deliveries(services, world.root, made)
    assert (delivered.status, delivered.attempts, delivered.response_status) == (
        "DELIVERED",
        2,
        200,
    )
    assert [r.message_id for r in received] == [ping.message_id] * 2
    for message in received:
        message.verified(made.secret or "")


@pytest.mark.slow
def test_a_dripping_receiver_of_one_tenant_does_not_hold_back_another_tenant_s_message(
    open_with: Opener,
) -> None:
    """acme's receiver drips; globex's message, made once acme's attempt is under way, arrives
    before that attempt ends: it waited less than one attempt deadline."""
    clock = now_clock()
    services = open_with(clock, **SETTINGS)
    world = World(services, clock)
    other = globex(services)
    with dripping(DRIP_SECONDS) as drip, receiving() as receiver:
        slow = subscribe(services, world.root, drip.url)
        quick = subscribe(services, other, receiver.url)
        services.webhooks.ping(world.root, slow.webhook.id)
        notifier = Notifier.of(services)
        working = threading.Thread(target=notifier.work)
        working.start()
        try:
            wait_until(drip.entered.is_set, "acme's message reached its dripping receiver")
            services.webhooks.ping(other, quick.webhook.id)
            wait_until(lambda: receiver.received, "globex's message delivered")
            assert not drip.ended.is_set(), "globex's message waited for acme's attempt to end"
        finally:
            working.join()
    assert statuses(services, other, quick) == ["DELIVERED"]
    assert statuses(services, world.root, slow) == ["RETRY_WAIT"]


def test_one_tenant_has_at_most_its_share_of_the_senders(open_with: Opener) -> None:
    """acme has more messages to slow receivers than its share: the others wait for a sender of
    acme's share to be free, while globex's messages go out."""
    clock = now_clock()
    services = open_with(
        clock,
        **{**SETTINGS, "webhook_read_timeout_seconds": 60, "webhook_attempt_deadline_seconds": 60},
    )
    world = World(services, clock)
    other = globex(services)
    gate = threading.Event()
    with receiving() as held, receiving() as receiver:
        held.answer(*[gate] * (TENANT_SHARE + 2))  # each request held until the gate opens
        hooks = [subscribe(services, world.root, held.url) for _ in range(TENANT_SHARE + 2)]
        for hook in hooks:
            services.webhooks.ping(world.root, hook.webhook.id)
        quick = subscribe(services, other, receiver.url)
        services.webhooks.ping(other, quick.webhook.id)
        notifier = Notifier.of(services)
        working = threading.Thread(target=notifier.work)
        working.start()
        try:
            wait_until(
                lambda: len(held.received) == TENANT_SHARE and receiver.received,
                "acme's share under way and globex's message delivered",
            )
            services.webhooks.ping(other, quick.webhook.id)  # a later round of the notifier
            wait_until(lambda: len(receiver.received) == 2, "globex's second message delivered")
            assert len(held.received) == TENANT_SHARE
        finally:
            gate.set()
            working.join()
        assert len(held.received) == TENANT_SHARE + 2
    for hook in hooks:
        assert statuses(services, world.root, hook) == ["DELIVERED"]


def test_a_pass_takes_the_tenants_due_messages_in_turns(open_with: Opener) -> None:
    """acme's backlog, older than globex's message, does not fill a pass alone: every tenant's
    longest due message first, then every tenant's second, and so on."""
    clock = now_clock()
    services = open_with(clock, **SETTINGS)
    world = World(services, clock)
    other = globex(services)
    for _ in range(5):
        hook = subscribe(services, world.root, "http://127.0.0.1:9/acme")
        services.webhooks.ping(world.root, hook.webhook.id)
    clock.advance(1)
    hook = subscribe(services, other, "http://127.0.0.1:9/globex")
    services.webhooks.ping(other, hook.webhook.id)
    services.projector.catch_up()
    due = due_deliveries(services.store, clock(), limit=3, per_tenant=2)
    acme, globex_id = world.root.tenant_id, other.tenant_id
    assert [d.tenant_id for d in due] == [acme, globex_id, acme]
    assert len(due_deliveries(services.store, clock(), limit=50, per_tenant=2)) == 3


def test_subscriptions_made_at_once_never_pass_the_tenant_s_cap(open_with: Opener) -> None:
    """Ten subscriptions asked for at once, through two processes' services, with room for
    two: two are made, and eight refused."""
    clock = now_clock()
    services = open_with(clock, **SETTINGS, webhooks_per_tenant=2)
    world = World(services, clock)
    processes = [services, open_with(clock, **SETTINGS, webhooks_per_tenant=2)]
    together = threading.Barrier(10)
    outcomes: Counter[str] = Counter()

    def make(n: int) -> None:
        together.wait()
        try:
            subscribe(processes[n % 2], world.root, f"http://127.0.0.1:9/{n}")
            outcomes["made"] += 1
        except TooManyWebhooks:
            outcomes["refused"] += 1

    threads = [threading.Thread(target=make, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes == {"made": 2, "refused": 8}
    services.projector.catch_up()
    assert services.webhooks.webhooks(world.root.tenant_id, Window()).total == 2
