"""Webhook messages delivered to a real receiver on loopback, on both stores: every event type
once and signed, retries with backoff and the same `webhook-id`, order per subscription, and
the URL checked again before each attempt."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest

from cronledger.application.cycles import Ticker
from cronledger.application.directory import DefinitionFields
from cronledger.application.launches import Worker
from cronledger.application.notifier import Notifier
from cronledger.application.services import Services
from cronledger.application.webhooks import WebhookWithSecret
from cronledger.persistence.signing_key import create_signing_key
from domain.approvals import Command, Submission
from domain.directory import Principal
from domain.launch import LaunchFailed
from domain.policy import RunPolicy
from domain.webhooks import EVENT_TYPES, SubscriptionFields
from projections.keyset import Window
from tests.sent_shapes import sent_shapes
from tests.support import DECIDERS, FakeClock, Opener, World, wait_until
from tests.webhook_receiver import Receiver, receiving
from tick.processes import notifier_loop

SECRET_KEY = "a test key that is at least thirty-two characters long"
EVERY_MINUTE = {"kind": "cron", "expression": "* * * * *"}
SETTINGS = {
    "secret_key": SECRET_KEY,
    "webhook_allow_private": True,
    "webhook_allow_http": True,
    "webhook_read_timeout_seconds": 0.5,
    "max_attempts": 1,  # a run that fails once is dead-lettered
}


def now_clock() -> FakeClock:
    """A hand-set clock at the real time: receivers check a message's timestamp against theirs."""
    return FakeClock(datetime.now(UTC).replace(microsecond=0))


def subscribe(services: Services, root: Principal, url: str, *types: str) -> WebhookWithSecret:
    fields = SubscriptionFields(url, list(types or EVENT_TYPES), "test", True)
    return services.webhooks.create(root, fields)


def deliveries(services: Services, root: Principal, webhook_id: str) -> list[Any]:
    services.projector.catch_up()
    return services.webhooks.deliveries(root.tenant_id, webhook_id, Window(200)).items


# Two launches and eight submissions by ann; every instance but the approved, the rejected and
# the returned one expires (the one with levels too); a rejection is a decision too. Then two
# approved instances whose cancellation is requested (one cancelled, one expires: refused), and
# a resubmission that expires.
EXPECTED = {
    "approval.submitted": 15,
    "approval.expired": 9,
    "approval.decided": 5,
    "approval.cancellation_requested": 2,
}


def deliver(notifier: Notifier, receiver: Receiver, expected: int) -> None:
    """Have the notifier work until the receiver holds `expected` messages: one call goes on
    for ten seconds at most, and a loaded machine may need more of them."""
    wait_until(lambda: notifier.work() or len(receiver.received) >= expected, "delivered", 180)


def test_every_event_type_arrives_once_signed(open_with: Opener, tmp_path: Path) -> None:
    clock = FakeClock(datetime.now(UTC) - timedelta(hours=2))  # the events take an hour
    create_signing_key(tmp_path / "key.pem")  # checkpoint.signed: the log's tree is signed
    patient = {**SETTINGS, "webhook_read_timeout_seconds": 30}  # no retry on a loaded machine
    services = open_with(clock, signing_key_file=str(tmp_path / "key.pem"), **patient)
    world = World(services, clock, auto_pause_after_failures=1)
    root, ann = world.root, _account(services, world, "ann")
    with receiving() as receiver:
        made = subscribe(services, root, receiver.url)
        _every_kind_of_event(services, world, root, ann)
        clock.now = datetime.now(UTC)  # the receiver checks the timestamps against its clock
        notifier = Notifier.of(services)
        deliver(notifier, receiver, sum({**dict.fromkeys(EVENT_TYPES, 1), **EXPECTED}.values()))
        notifier.work()  # nothing is sent twice
        received = list(receiver.received)
    messages = [r.verified(made.secret or "") for r in received]
    assert {m["type"] for m in messages} == set(EVENT_TYPES)
    for message in messages:  # each as the document's schema of its type says
        sent_shapes().check_message(message)
    assert len({r.message_id for r in received}) == len(received)
    counts = Counter(m["type"] for m in messages)
    assert counts == {**dict.fromkeys(EVENT_TYPES, 1), **EXPECTED}, counts
    by_type = {m["type"]: m for m in messages}
    tenant = str(root.tenant_id)
    assert {m["data"]["tenant_id"] for m in messages} == {tenant}
    dead = by_type["run.dead_lettered"]["data"]
    assert (dead["status"], dead["error"]["code"]) == ("DEAD_LETTER", "INITIATOR_INACTIVE")
    assert by_type["run.failed"]["data"]["error"]["code"] == "DEFINITION_NOT_FOUND"
    paused = by_type["schedule.auto_paused"]["data"]  # the dead letter paused its schedule
    assert (paused["schedule_id"], paused["name"]) == (world.schedule, "Daily")
    assert paused["runs"] == [{"run_id": dead["run_id"], "error_code": "INITIATOR_INACTIVE"}]
    skip_reason = by_type["run.skipped"]["data"]["skip_reason"]
    assert (skip_reason["code"], skip_reason["blocking_status"]) == ("OVERLAP", "PENDING")
    decided = {m["data"]["state"] for m in messages if m["type"] == "approval.decided"}
    assert decided == {"APPROVED", "REJECTED"}
    assert by_type["approval.rejected"]["data"]["comment"] == "材料不全"
    assert by_type["approval.claimed"]["data"]["assignee_id"] == "root"
    reassigned = by_type["approval.reassigned"]["data"]
    assert (reassigned["assignee_id"], reassigned["reason"]) == ("rev", "休假")
    assert by_type["approval.commented"]["data"]["comment"] == "请补充合同"
    assert by_type["approval.expired"]["data"]["decided_by"] == "system:sweeper"
    returned = by_type["approval.returned"]["data"]
    assert (returned["state"], returned["reason"], returned["actor"]) == (
        "RETURNED",
        "补发票",
        "root",
    )
    assert by_type["approval.deadline_paused"]["data"]["reason"] == "核对款项"
    resumed = by_type["approval.deadline_resumed"]["data"]
    assert resumed["old_deadline_at"] == resumed["new_deadline_at"]  # stood no time
    assert by_type["callback.late"]["data"]["outcome"] == "LATE_OR_CONFLICT"
    assert by_type["callback.mismatched"]["data"]["material_version"] == 99
    assert by_type["approval.escalated"]["data"]["account_id"] == "root"
    assert by_type["approval.reminder_due"]["data"]["before_seconds"] == 1800
    completed = by_type["approval.level_completed"]["data"]
    assert (completed["level"], completed["next_level"]) == (1, 2)
    revised = by_type["approval.revised"]["data"]
    assert (revised["material_version"], revised["lapsed_votes"]) == (2, 1)
    assert (revised["back_to_level"], revised["reason"]) == (1, "补充合同")
    assert by_type["ping"]["data"] == {"tenant_id": tenant, "webhook_id": made.webhook.id}
    resubmitted = by_type["approval.resubmitted"]["data"]
    assert (resubmitted["reason"], resubmitted["actor"]) == ("补充材料", "ann")
    assert by_type["approval.cancelled"]["data"]["outcome"] == "APPROVED"
    assert by_type["approval.cancellation_refused"]["data"]["outcome"] == "EXPIRED"
    signed = services.evidence.latest()
    assert signed is not None
    assert by_type["checkpoint.signed"]["data"]["checkpoint"] == signed.as_json()
    assert {d.status for d in deliveries(services, root, made.webhook.id)} == {"DELIVERED"}


def test_a_message_unlike_its_schema_in_the_document_is_caught() -> None:
    """The check above fails on a field the schema does not declare, and on a required one
    missing: a payload that changes shape changes the document too."""
    data = {"tenant_id": str(uuid4()), "webhook_id": str(uuid4())}
    ping = {"type": "ping", "timestamp": "2026-10-01T10:05:00Z", "data": data}
    sent_shapes().check_message(ping)
    with pytest.raises(AssertionError, match="Additional properties"):
        sent_shapes().check_message({**ping, "data": {**data, "url": "https://example.com"}})
    with pytest.raises(AssertionError, match="'webhook_id' is a required property"):
        sent_shapes().check_message({**ping, "data": {"tenant_id": data["tenant_id"]}})


def _account(services: Services, world: World, account_id: str) -> Principal:
    principal = services.directory.authenticate(
        services.directory.issue_token(world.root, account_id).token
    )
    assert principal is not None
    return principal


def _every_kind_of_event(services: Services, world: World, root: Principal, ann: Principal) -> None:
    """One event of each kind a subscription may hear, in tenant `acme`."""
    clock, approvals = world.clock, services.approvals
    services.webhooks.ping(root, services.webhooks.webhooks(root.tenant_id, Window()).items[0].id)
    world.run_now("launched")  # approval.submitted
    Worker.of(services).drain()
    services.schedules.set_enabled(root, world.schedule, True, None)
    world.run_now("dead")  # run.dead_lettered: one attempt, and the initiator is inactive
    world.set_ann_active(False)
    Worker.of(services).drain()
    world.set_ann_active(True)
    failing = world.run(world.run_now("failed"))  # run.failed: a permanent failure
    number = failing.claim("w", clock(), timedelta(seconds=60))
    gone = LaunchFailed("DEFINITION_NOT_FOUND", "the definition is gone", permanent=True)
    failing.fail(number, "w", gone, RunPolicy(timedelta(seconds=5), 1), clock())
    services.ledger.save(failing)
    _overlap(services, world)  # run.skipped

    noticed = services.directory.create_definition(
        root,
        "noticed",
        DefinitionFields(
            "Noticed",
            False,
            3600,
            [],
            reminders=[{"before_seconds": 1800}],
            escalation={"after_seconds": 600, "account_id": "root"},
            reviewers=DECIDERS,
        ),
    ).id
    services.directory.set_published(root, noticed, True, None)
    one = {"reviewers": DECIDERS}
    leveled = services.directory.create_definition(
        root,
        "leveled",
        DefinitionFields("Leveled", False, 3600, [], levels=[one, one]),
    ).id
    services.directory.set_published(root, leveled, True, None)

    def submit(key: str, definition_id: str = world.definition) -> str:
        view, _ = approvals.submit(ann, Submission(key, definition_id, key, {}, 1, None))
        return view.id

    decided, waiting, expiring = submit("decided"), submit("waiting"), submit("expiring")
    reminded, rejected = submit("reminded", noticed), submit("rejected")
    approvals.command(root, decided, Command("approve", "a1", {"material_version": 1}))
    refusal = {"material_version": 1, "comment": "材料不全"}
    approvals.command(root, rejected, Command("reject", "r1", refusal))
    services.directory.create_account(root, "rev", "Rev", ["operator"])
    approvals.command(root, waiting, Command("claim", "c1", {}))
    approvals.command(
        root, waiting, Command("reassign", "m1", {"assignee_id": "rev", "reason": "休假"})
    )
    approvals.command(ann, waiting, Command("comment", "n1", {"comment": "请补充合同"}))
    levels = submit("levels", leveled)  # approval.level_completed, then approval.revised
    approvals.command(root, levels, Command("approve", "l1", {"material_version": 1}))
    revise = {"material_version": 2, "reason": "补充合同", "form_data": None}
    approvals.command(ann, levels, Command("revise", "v1", revise))
    approvals.link(ann, rejected, Command("resubmit", "re1", _again))
    cancellable = services.directory.create_definition(
        root,
        "cancellable",
        DefinitionFields(
            "Cancellable",
            False,
            3600,
            [],
            reviewers=DECIDERS,
            cancellation_definition=world.definition,
        ),
    ).id
    services.directory.set_published(root, cancellable, True, None)
    cancelled, kept = submit("cancelled", cancellable), submit("kept", cancellable)
    for approved in (cancelled, kept):
        approvals.command(root, approved, Command("approve", "a1", {"material_version": 1}))
    cancel = {"reason": "客户取消", "form_data": None}
    linked = approvals.link(ann, cancelled, Command("request-cancellation", "x1", cancel)).linked
    assert linked is not None
    approvals.command(root, linked.id, Command("approve", "a1", {"material_version": 1}))
    approvals.link(ann, kept, Command("request-cancellation", "x1", cancel))  # it expires
    signed = {"contract_id": "c-1", "occurred_at": clock(), "source": "esign"}
    approvals.command(root, decided, Command("sign", "s1", {**signed, "material_version": 1}))
    approvals.command(root, waiting, Command("sign", "s2", {**signed, "material_version": 99}))
    paused, returned = submit("paused"), submit("returned")
    approvals.command(root, paused, Command("pause-deadline", "p1", {"reason": "核对款项"}))
    approvals.command(root, paused, Command("resume-deadline", "p2", {"reason": "核对完毕"}))
    approvals.command(root, returned, Command("return", "b1", {"comment": "补发票"}))
    clock.advance(1801)  # the reminder (30 min before) and the escalation (after 10 min)
    approvals.sweep()
    clock.advance(1800)  # the deadlines of `waiting`, `expiring` and `reminded`
    approvals.sweep()
    services.projector.catch_up()
    expired = services.store.query("SELECT id FROM approvals WHERE state = 'EXPIRED'")
    assert {expiring, reminded} <= {row[0] for row in expired}
    assert services.evidence.checkpoint(force=True) is not None  # checkpoint.signed


_again = {"reason": "补充材料", "material_version": 2, "form_data": None, "title": None}


def _overlap(services: Services, world: World) -> None:
    """A schedule that skips overlaps, run by hand at a fire instant: its cycle is skipped."""
    body = {
        "name": "Every minute",
        "definition_id": world.definition,
        "trigger": EVERY_MINUTE,
        "timezone": "UTC",
        "initiator_id": "ann",
        "overlap_policy": "skip_while_launching",
    }
    settings = services.schedules.settings_from(body)
    schedule = services.schedules.create(world.root, settings, True).id
    world.clock.now = world.clock.now.replace(second=0) + timedelta(minutes=1)
    services.schedules.run_now(world.root, schedule, "overlap")
    Ticker.of(services).scan()
    Worker.of(services).poll()
    services.schedules.set_enabled(world.root, schedule, False, None)


def test_a_receiver_failing_three_times_gets_the_message_on_the_fourth_try(
    open_with: Opener,
) -> None:
    clock = now_clock()
    services = open_with(clock, **SETTINGS)
    world = World(services, clock)
    with receiving() as receiver:
        receiver.answer(500, 500, 500)
        made = subscribe(services, world.root, receiver.url, "ping")
        services.webhooks.ping(world.root, made.webhook.id)
        notifier = Notifier.of(services)
        notifier.work()
        for wait in (30, 60, 120):  # base x 2^(n-1)
            clock.advance(wait - 1)
            notifier.work()
            assert len(receiver.received) == 1 + (30, 60, 120).index(wait), "tried too soon"
            clock.advance(1)
            notifier.work()
        received = list(receiver.received)
    assert len(received) == 4
    assert len({r.message_id for r in received}) == 1
    assert len({r.body for r in received}) == 1
    assert len({r.headers["webhook-timestamp"] for r in received}) == 4  # signed as sent
    for message in received:
        message.verified(made.secret or "")
    (delivery,) = deliveries(services, world.root, made.webhook.id)
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("DELIVERED", 4, 200)


def test_a_receiver_that_never_answers_is_given_up_then_redelivered_by_hand(
    open_with: Opener,
) -> None:
    clock = now_clock()
    services = open_with(clock, **SETTINGS, webhook_max_attempts=3, webhook_retry_base_seconds=1)
    world = World(services, clock)
    never = threading.Event()
    with receiving() as receiver:
        receiver.answer(never, never, never)
        made = subscribe(services, world.root, receiver.url, "ping")
        ping = services.webhooks.ping(world.root, made.webhook.id)
        notifier = Notifier.of(services)
        for _ in range(3):
            notifier.work()
            clock.advance(10)
        (given_up,) = deliveries(services, world.root, made.webhook.id)
        assert (given_up.status, given_up.attempts) == ("FAILED", 3)
        assert given_up.last_error == "no answer within the timeouts"
        assert given_up.response_status is None
        notifier.work()
        assert len(receiver.received) == 3  # given up: not tried again by itself

        services.webhooks.redeliver(world.root, made.webhook.id, ping.id, "the receiver is back")
        notifier.work()
        never.set()
        received = list(receiver.received)
    (delivered,) = deliveries(services, world.root, made.webhook.id)
    assert (delivered.status, delivered.attempts) == ("DELIVERED", 4)
    assert {r.message_id for r in received} == {ping.message_id}


def test_a_stopped_notifier_loop_records_the_attempt_it_was_sending(open_with: Opener) -> None:
    clock = now_clock()
    services = open_with(clock, **{**SETTINGS, "webhook_read_timeout_seconds": 30})
    world = World(services, clock)
    answer = threading.Event()
    with receiving() as receiver:
        receiver.answer(answer)  # held until the loop has been asked to stop
        made = subscribe(services, world.root, receiver.url, "ping")
        services.webhooks.ping(world.root, made.webhook.id)
        loop = notifier_loop(services, 0.05)
        running = loop.start()
        wait_until(receiver.entered.is_set, "the message reached the receiver")
        loop.stop.set()
        answer.set()
        running.join()
    (delivery,) = deliveries(services, world.root, made.webhook.id)
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("DELIVERED", 1, 200)


def test_a_redirect_is_not_followed(open_with: Opener) -> None:
    clock = now_clock()
    services = open_with(clock, **SETTINGS)
    world = World(services, clock)
    with receiving() as elsewhere, receiving() as receiver:
        receiver.answer(302)
        receiver.location = elsewhere.url
        made = subscribe(services, world.root, receiver.url, "ping")
        services.webhooks.ping(world.root, made.webhook.id)
        Notifier.of(services).work()
        assert elsewhere.received == []
    (delivery,) = deliveries(services, world.root, made.webhook.id)
    assert (delivery.status, delivery.response_status) == ("RETRY_WAIT", 302)
    assert delivery.last_error == f"redirect to {elsewhere.url} not followed"


def test_the_address_is_checked_again_before_each_attempt(open_with: Opener) -> None:
    """DNS can change between the subscription's save and a message: a host that now resolves
    to a private address gets nothing, and the attempt fails."""
    clock = now_clock()
    services = open_with(clock, secret_key=SECRET_KEY)
    world = World(services, clock)
    public = [(2, 1, 6, "", ("93.184.216.34", 443))]
    services.webhooks.guard.resolve = lambda *args, **kwargs: public
    made = subscribe(services, world.root, "https://hooks.example.com/in", "ping")
    services.webhooks.ping(world.root, made.webhook.id)
    services.webhooks.guard.resolve = lambda *args, **kwargs: [(2, 1, 6, "", ("10.0.0.5", 443))]
    Notifier.of(services).work()
    (delivery,) = deliveries(services, world.root, made.webhook.id)
    assert (delivery.status, delivery.attempts) == ("RETRY_WAIT", 1)
    assert delivery.last_error is not None
    assert "10.0.0.5, a private address" in delivery.last_error


def test_a_subscription_s_messages_go_in_order_and_wait_for_a_retry(open_with: Opener) -> None:
    clock = now_clock()
    services = open_with(clock, **SETTINGS)
    world = World(services, clock)
    with receiving() as receiver:
        receiver.answer(503)
        made = subscribe(services, world.root, receiver.url, "ping")
        first = services.webhooks.ping(world.root, made.webhook.id)
        second = services.webhooks.ping(world.root, made.webhook.id)
        notifier = Notifier.of(services)
        notifier.work()
        assert [r.message_id for r in receiver.received] == [first.message_id]
        clock.advance(30)
        notifier.work()
        order = [r.message_id for r in receiver.received]
    assert order == [first.message_id, first.message_id, second.message_id]


def test_subscriptions_hear_only_their_tenant_their_types_and_what_follows_them(
    open_with: Opener,
) -> None:
    clock = now_clock()
    services = open_with(clock, **SETTINGS)
    world = World(services, clock)
    world.run_now("before")  # approval.submitted before any subscription
    Worker.of(services).drain()
    with receiving() as receiver:
        submitted = subscribe(services, world.root, receiver.url, "approval.submitted")
        subscribe(services, world.root, receiver.url, "run.failed")
        disabled = subscribe(services, world.root, receiver.url, "approval.submitted")
        fields = SubscriptionFields(receiver.url, ["approval.submitted"], "", False)
        services.webhooks.update(world.root, disabled.webhook.id, fields, None)
        globex = services.directory.authenticate(
            services.directory.bootstrap("globex", "boss").token
        )
        assert globex is not None
        subscribe(services, globex, receiver.url, "approval.submitted")
        world.run_now("after")
        Worker.of(services).drain()
        Notifier.of(services).work()
        received = list(receiver.received)
    (message,) = received
    assert message.verified(submitted.secret or "")["data"]["tenant_id"] == str(
        world.root.tenant_id
    )


def test_a_rotated_secret_signs_the_messages_sent_after_it(open_with: Opener) -> None:
    clock = now_clock()
    services = open_with(clock, **SETTINGS)
    world = World(services, clock)
    with receiving() as receiver:
        receiver.answer(500)
        made = subscribe(services, world.root, receiver.url, "ping")
        services.webhooks.ping(world.root, made.webhook.id)
        notifier = Notifier.of(services)
        notifier.work()
        rotated = services.webhooks.rotate_secret(world.root, made.webhook.id, None)
        clock.advance(30)
        notifier.work()
        first, retry = receiver.received
    first.verified(made.secret or "")
    retry.verified(rotated.secret or "")
    with pytest.raises(Exception, match="No matching signature"):
        retry.verified(made.secret or "")


def test_a_deleted_subscription_s_waiting_messages_are_never_sent(open_with: Opener) -> None:
    clock = now_clock()
    services = open_with(clock, **SETTINGS)
    world = World(services, clock)
    with receiving() as receiver:
        made = subscribe(services, world.root, receiver.url, "ping")
        services.webhooks.ping(world.root, made.webhook.id)
        services.webhooks.delete(world.root, made.webhook.id, None, "gone")
        Notifier.of(services).work()
        assert receiver.received == []
    services.projector.catch_up()
    rows = services.store.query("SELECT status, due_at FROM webhook_deliveries")
    assert rows == [("CANCELLED", None)]


def test_with_no_subscription_the_notifier_only_moves_to_the_end(open_with: Opener) -> None:
    clock = now_clock()
    services = open_with(clock, **SETTINGS)
    World(services, clock).run_now()
    notifier = Notifier.of(services)
    assert notifier.schedule() > 0
    assert notifier.schedule() == 0
    head = services.ledger.recorder.max_notification_id()
    query = "SELECT position FROM projection_positions WHERE name = 'webhook-notifier'"
    assert services.store.query(query) == [(head,)]
    assert services.store.query("SELECT COUNT(*) FROM webhook_deliveries") == [(0,)]


def test_two_notifiers_schedule_and_send_each_message_once(open_with: Opener) -> None:
    clock = now_clock()
    services = open_with(clock, **SETTINGS)
    world = World(services, clock)
    with receiving() as receiver:
        subscribe(services, world.root, receiver.url, "approval.submitted")
        for n in range(5):
            world.run_now(f"r{n}")
        Worker.of(services).drain()
        other = open_with(clock, **SETTINGS)
        first, second = Notifier.of(services), Notifier.of(other)
        threads = [threading.Thread(target=n.work) for n in (first, second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        first.work()
        received = list(receiver.received)
    assert len(received) == 5
    assert len({r.message_id for r in received}) == 5
    assert UUID(received[0].message_id.removeprefix("msg_"))
