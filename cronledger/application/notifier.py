"""Outbound webhooks (the notifier's commands, run by its loop inside `cronledger serve`, or
alone as `cronledger notifier`).

It reads the log from a position of its own and schedules a `WebhookDelivery` for every enabled
subscription that names the type of an event it reads (docs/webhooks.md). A delivery's id is
derived from its subscription, its event and its type, so a batch read again after a crash
schedules nothing twice; the position is saved once the batch's deliveries are on the log.
Signed checkpoints are not events: the notifier reads them from `signed_checkpoints` after a
cursor of its own (a tree size) the same way, for the subscriptions that choose
`checkpoint.signed`, and moves the cursor past a checkpoint only once it was signed SETTLED
ago (a checkpoint of a smaller tree signed at the same time by another process may be written
after a larger one: until then the notifier reads it again, scheduling nothing twice).

Then it sends what is due, at most one message per subscription at a time, oldest first: an
attempt is claimed on the log (with a lease) before it is sent and its outcome recorded after,
so a notifier killed in between leaves the attempt claimed; once the lease has run out the
message is sent again, with the same `webhook-id`.

An attempt ends at its deadline (CRONLEDGER_WEBHOOK_ATTEMPT_DEADLINE_SECONDS), from the address's
check to the answer, however slowly the receiver drips it. Attempts are sent beside each other
and recorded as each ends: the notifier never waits for a slow one before it sends others, and
one tenant has at most TENANT_SHARE of the SENDERS at once, so one tenant's slow receivers
cost that tenant alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import takewhile
from typing import Any
from uuid import UUID, uuid4

import httpx
from eventsourcing.persistence import IntegrityError, Notification
from standardwebhooks import Webhook

from cronledger.application.evidence import Evidence
from cronledger.application.services import Services
from cronledger.application.webhooks import (
    CARRY_TENANT,
    TOLD_BY,
    Destination,
    Webhooks,
    checkpoint_payload,
    checkpoint_source,
    delivery_source,
    payload_of,
    types_of,
)
from cronledger.persistence.ledger import Ledger, Undecodable
from cronledger.version import installed_version
from domain.errors import DomainError, ValidationFailed
from domain.evidence import Checkpoint
from domain.webhooks import (
    CHECKPOINT_SIGNED,
    NOTIFIER_ACTOR,
    Response,
    WebhookDelivery,
    WebhookSubscription,
)
from projections.engine import Projector, Sql
from projections.webhooks import SubscriptionRow, due_deliveries, enabled_subscriptions

log = logging.getLogger("tick.notifier")
POSITION = "webhook-notifier"  # the notifier's row in `projection_positions`
CHECKPOINTS_READ = "webhook-notifier-checkpoints"  # and its cursor in `signed_checkpoints`
SETTLED = timedelta(minutes=5)  # a checkpoint's cursor passes it this long after its signing
CHECKPOINTS_BATCH = 100  # checkpoints read at once
BATCH = 2000  # events read at once
SAVE_CHUNK = 500  # deliveries scheduled per transaction
SENDERS = 16  # attempts under way at once, each of a different subscription
TENANT_SHARE = 4  # of which one tenant's, at most
SENDS_PER_PASS = 50  # due messages looked at once, at most TENANT_SHARE of each tenant
ROUND_SECONDS = 0.5  # while attempts are under way, how often the log and what is due are read
BUSY_SECONDS = 10.0  # the longest one `work` goes on while attempts keep it busy
LEASE_MARGIN_SECONDS = 5.0  # a claim lasts the attempt deadline and this
USER_AGENT = f"cronledger/{installed_version()}"


@dataclass(frozen=True)
class Claim:
    """An attempt this notifier holds: what to send, where, and with which secret."""

    delivery_id: UUID
    tenant_id: UUID
    number: int
    message_id: str
    payload: dict[str, Any]
    url: str
    secret: str

    @classmethod
    def of(cls, delivery: WebhookDelivery, number: int, url: str, secret: str) -> Claim:
        """Attempt `number` of `delivery`, to `url` signed with `secret`."""
        return cls(
            delivery.id,
            delivery.tenant_id,
            number,
            delivery.message_id,
            delivery.payload,
            url,
            secret,
        )


class Notifier:
    @classmethod
    def of(cls, services: Services, name: str | None = None) -> Notifier:
        return cls(services.ledger, services.projector, services.webhooks, services.evidence, name)

    def __init__(
        self,
        ledger: Ledger,
        projector: Projector,
        webhooks: Webhooks,
        evidence: Evidence,
        name: str | None = None,
    ) -> None:
        self.ledger = ledger
        self.projector = projector
        self.webhooks = webhooks
        self.evidence = evidence
        settings = webhooks.settings
        self.timeout = httpx.Timeout(
            connect=settings.webhook_connect_timeout_seconds,
            read=settings.webhook_read_timeout_seconds,
            write=settings.webhook_read_timeout_seconds,
            pool=settings.webhook_connect_timeout_seconds,
        )
        self.tls = httpx.create_ssl_context(trust_env=False)  # shared: making one costs more
        # than sending a message to a nearby receiver
        self.deadline = settings.webhook_attempt_deadline_seconds
        self.lease = timedelta(seconds=self.deadline + LEASE_MARGIN_SECONDS)
        self.response_bytes = settings.webhook_response_bytes
        self.name = name or f"notifier:{socket.gethostname()}:{os.getpid()}:{uuid4().hex[:6]}"
        self.stopping = threading.Event()
        self.senders = ThreadPoolExecutor(SENDERS, "notifier-send")
        # Where hosts are resolved: a slow lookup holds its thread, never its attempt's end.
        self.resolvers = ThreadPoolExecutor(SENDERS, "notifier-resolve")
        self.sending: dict[Future[Response], Claim] = {}  # the attempts under way

    def work(self) -> None:
        """One loop iteration: schedule what the log tells and send what is due, a batch of the
        log and a round of sends at a time, until the notifier is at the log's end and nothing
        is due or being sent; or for BUSY_SECONDS at most (what is being sent then goes on, and
        is recorded by the next call, or by `finish_sending`)."""
        began = time.monotonic()
        while not self.stopping.is_set():
            self._record_finished()
            at_the_end = self.schedule() < BATCH
            self.schedule_checkpoints()
            self._start_due()
            if (at_the_end and not self.sending) or time.monotonic() - began > BUSY_SECONDS:
                return
            if at_the_end:  # wait for an attempt to end, or for the next round
                wait(self.sending, ROUND_SECONDS, FIRST_COMPLETED)

    def pause(self, seconds: float) -> None:
        """The loop's wait between two calls of `work`: cut short by an attempt that ends (its
        outcome is then recorded at once), or by a stop when nothing is being sent."""
        if self.sending:
            wait(self.sending, seconds, FIRST_COMPLETED)
        else:
            self.stopping.wait(seconds)

    def finish_sending(self) -> None:
        """Wait for what is being sent (each within its attempt deadline), and record it."""
        wait(self.sending)
        self._record_finished()

    # -- scheduling --------------------------------------------------------------------------

    def schedule(self) -> int:
        """Read one batch of the log after the notifier's position and schedule its messages;
        how many events were read (0: the notifier is at the end of the log)."""
        start = self._position()
        head = self.ledger.recorder.max_notification_id() or 0
        if head <= start:
            return 0
        self.projector.catch_up(until=head)  # the subscriptions as of `head` at least
        subscriptions = enabled_subscriptions(self.ledger.store)
        if not subscriptions:  # any subscription made from now on comes after `head`
            self._advance(start, head)
            return head - start
        notifications = self.ledger.recorder.select_notifications(start=start + 1, limit=BATCH)
        if not notifications:
            return 0
        deliveries = self._deliveries(notifications, subscriptions)
        with self.ledger.projections_deferred():
            for first in range(0, len(deliveries), SAVE_CHUNK):
                self._save_new(deliveries[first : first + SAVE_CHUNK])
        self._advance(start, notifications[-1].id)
        if deliveries:
            log.info("webhook messages scheduled", extra={"messages": len(deliveries)})
        return len(notifications)

    def schedule_checkpoints(self) -> int:
        """Schedule a `checkpoint.signed` message of each checkpoint signed after the cursor
        for every enabled subscription that chose the type and whose creation its tree holds;
        how many checkpoints were read."""
        start = self._position(CHECKPOINTS_READ)
        signed = self.evidence.checkpoints(start, CHECKPOINTS_BATCH)
        if not signed:
            return 0
        self.projector.catch_up(until=signed[-1].position)  # the subscriptions its tree holds
        listening = [
            s
            for s in enabled_subscriptions(self.ledger.store)
            if CHECKPOINT_SIGNED in s.event_types
        ]
        deliveries = [
            self._checkpoint_delivery(checkpoint, subscription)
            for checkpoint in signed
            for subscription in listening
            if subscription.position <= checkpoint.position
        ]
        if deliveries:
            scheduled = self.ledger.get_many([d.id for d in deliveries])
            self._save_new([d for d in deliveries if d.id not in scheduled])
        now = self.ledger.clock()
        settled = [
            *takewhile(lambda c: now - datetime.fromisoformat(c.signed_at) >= SETTLED, signed)
        ]
        if settled:
            self._advance(start, settled[-1].tree_size, CHECKPOINTS_READ)
        return len(signed)

    def _checkpoint_delivery(
        self, checkpoint: Checkpoint, subscription: SubscriptionRow
    ) -> WebhookDelivery:
        key = self.evidence.key
        return WebhookDelivery(
            tenant_id=subscription.tenant_id,
            subscription_id=subscription.id,
            source=checkpoint_source(checkpoint.tree_size),
            event_type=CHECKPOINT_SIGNED,
            payload=checkpoint_payload(
                checkpoint, subscription.tenant_id, key.public_pem() if key else None
            ),
            max_attempts=self.webhooks.policy.max_attempts,
            at=self.ledger.clock(),
            actor=NOTIFIER_ACTOR,
        )

    def _deliveries(
        self, notifications: Sequence[Notification], subscriptions: list[SubscriptionRow]
    ) -> list[WebhookDelivery]:
        """The deliveries the events owe the subscriptions made before them."""
        wanted = {kind for s in subscriptions for kind in s.event_types}
        told: list[tuple[int, Any, list[str]]] = []
        for notification in notifications:
            if notification.topic.partition(":")[2] not in TOLD_BY:
                continue
            event = self.ledger.decode(notification)
            kinds = [] if isinstance(event, Undecodable) else types_of(event)
            if set(kinds) & wanted:
                told.append((notification.id, event, kinds))
        subjects = self.ledger.get_many(
            [e.originator_id for _, e, _ in told if type(e).__qualname__ not in CARRY_TENANT]
        )
        at = self.ledger.clock()
        deliveries = []
        for position, event, kinds in told:
            subject = subjects.get(event.originator_id)
            tenant_id = getattr(event, "tenant_id", None) or getattr(subject, "tenant_id", None)
            for kind in kinds:
                for subscription in subscriptions:
                    if (
                        subscription.tenant_id == tenant_id
                        and kind in subscription.event_types
                        and subscription.position < position
                    ):
                        deliveries.append(
                            WebhookDelivery(
                                tenant_id=tenant_id,
                                subscription_id=subscription.id,
                                source=delivery_source(event, kind),
                                event_type=kind,
                                payload=payload_of(kind, event, tenant_id, subject),
                                max_attempts=self.webhooks.policy.max_attempts,
                                at=at,
                                actor=NOTIFIER_ACTOR,
                            )
                        )
        return deliveries

    def _save_new(self, deliveries: list[WebhookDelivery]) -> None:
        """Save the deliveries; those scheduled already (a batch read again) are left out."""
        try:
            self.ledger.save(*deliveries)
        except IntegrityError:
            found = self.ledger.get_many([d.id for d in deliveries])
            self.ledger.save(*[d for d in deliveries if d.id not in found])

    def _position(self, name: str = POSITION) -> int:
        rows = self.ledger.store.query(
            "SELECT position FROM projection_positions WHERE name = ?", (name,)
        )
        return int(rows[0][0]) if rows else 0

    def _advance(self, start: int, end: int, name: str = POSITION) -> None:
        """Move the position from `start` to `end`, unless another notifier moved it first."""
        with self.ledger.store.connect() as connection:
            sql = Sql(self.ledger.store.kind, connection)
            with sql.transaction():
                sql.execute(
                    "INSERT INTO projection_positions (name, position) VALUES (?, 0) "
                    "ON CONFLICT (name) DO NOTHING",
                    (name,),
                )
                sql.execute(
                    "UPDATE projection_positions SET position = ? WHERE name = ? AND position = ?",
                    (end, name, start),
                )

    # -- delivering --------------------------------------------------------------------------

    def _start_due(self) -> None:
        """Claim due messages (one per subscription) and start sending them, while senders
        are free and their tenants have fewer than TENANT_SHARE being sent."""
        if len(self.sending) >= SENDERS:
            return
        self.projector.catch_up()
        now = self.ledger.clock()
        shares = Counter(claim.tenant_id for claim in self.sending.values())
        for due in due_deliveries(self.ledger.store, now, SENDS_PER_PASS, TENANT_SHARE):
            if len(self.sending) >= SENDERS:
                return
            if shares[due.tenant_id] >= TENANT_SHARE:
                continue
            claim = self._claim(due.delivery_id, now)
            if claim is not None:
                shares[claim.tenant_id] += 1
                self.sending[self.senders.submit(self.send, claim)] = claim

    def _record_finished(self) -> None:
        """Record the outcome of every attempt that has finished."""
        for future in [future for future in self.sending if future.done()]:
            self._record(self.sending.pop(future), future.result())

    def _claim(self, delivery_id: UUID, now: datetime) -> Claim | None:
        """Start the delivery's next attempt under this notifier's lease, if it is still due.

        Without CRONLEDGER_SECRET_KEY nothing is claimed: the loop fails, saying so."""
        try:
            delivery = self.ledger.find(WebhookDelivery, delivery_id, "delivery", delivery_id)
            subscription = self.ledger.find(
                WebhookSubscription, delivery.subscription_id, "webhook", delivery.subscription_id
            )
        except DomainError:  # unreadable (logged): the others are still sent
            return None
        secret = self.webhooks.secret_of(subscription.id, subscription.generation)
        if subscription.deleted or not subscription.enabled or not _due(delivery, now):
            return None
        try:
            number = delivery.start_attempt(self.name, self.lease, now)
            self.ledger.save(delivery)
        except (IntegrityError, DomainError):  # another notifier claimed it first
            return None
        return Claim.of(delivery, number, subscription.url, secret)

    def send_now(
        self, delivery: WebhookDelivery, subscription: WebhookSubscription, deadline: float
    ) -> Response:
        """A message made elsewhere (a `webhook.ping` job's), saved with its first attempt
        claimed (so no notifier loop sends it too), sent at once within `deadline` seconds (or
        the attempt deadline, if shorter), and its outcome recorded as any attempt's."""
        number = delivery.start_attempt(self.name, self.lease, self.ledger.clock())
        self.ledger.save(delivery)
        secret = self.webhooks.secret_of(subscription.id, subscription.generation)
        claim = Claim.of(delivery, number, subscription.url, secret)
        response = self.send(claim, min(deadline, self.deadline))
        self._record(claim, response)
        return response

    def send(self, claim: Claim, deadline: float | None = None) -> Response:
        """One attempt, ended at the attempt deadline (or `deadline` seconds) whatever the
        receiver does: the URL checked again, the message signed and posted to the checked
        address; what came back (a 2xx is delivered, anything else failed)."""
        started = time.perf_counter()
        return asyncio.run(self._attempt(claim, started, deadline or self.deadline))

    async def _attempt(self, claim: Claim, started: float, deadline: float) -> Response:
        """The attempt, or why it failed."""
        try:
            ends_at = asyncio.get_running_loop().time() + deadline
            return await self._post(claim, started, ends_at)
        except TimeoutError:
            too_late = f"no complete answer within the attempt deadline ({deadline:g} s)"
            return Response(None, _since(started), too_late)
        except ValidationFailed as refused:
            return Response(None, 0.0, f"refused: {' '.join(refused.errors['url'])}")
        except httpx.TimeoutException:
            return Response(None, _since(started), "no answer within the timeouts")
        except httpx.HTTPError as error:
            return Response(None, _since(started), f"{type(error).__name__}: {error}")

    async def _post(self, claim: Claim, started: float, ends_at: float) -> Response:
        """The address checked, the message posted and the answer read, all by `ends_at`: once
        the status has come, only the reading of the body is cut short."""
        async with asyncio.timeout_at(ends_at):
            destination = await asyncio.get_running_loop().run_in_executor(
                self.resolvers, self.webhooks.guard.destination, claim.url
            )
        async with self._client() as client:
            request = self._request(client, claim, destination)
            async with asyncio.timeout_at(ends_at):
                response = await client.send(request, stream=True)
            verdict = self._answer(response, started)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(ends_at):
                    await self._read_some(response)
            await response.aclose()
            return verdict

    def _client(self) -> httpx.AsyncClient:
        """A client that follows no redirect and no proxy of the environment."""
        return httpx.AsyncClient(
            timeout=self.timeout, verify=self.tls, follow_redirects=False, trust_env=False
        )

    def _request(
        self, client: httpx.AsyncClient, claim: Claim, destination: Destination
    ) -> httpx.Request:
        """The message, signed now, to the checked address (TLS still checks the name)."""
        body = json.dumps(claim.payload, ensure_ascii=False, separators=(",", ":"))
        sent_at = self.ledger.clock().astimezone(UTC)
        headers = {
            "Host": destination.host_header,
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "webhook-id": claim.message_id,
            "webhook-timestamp": str(int(sent_at.timestamp())),
            "webhook-signature": Webhook(claim.secret).sign(claim.message_id, sent_at, body),
        }
        request = client.build_request(
            "POST", destination.pinned_url, content=body.encode(), headers=headers
        )
        if claim.url.startswith("https:"):
            request.extensions["sni_hostname"] = destination.host
        return request

    def _answer(self, response: httpx.Response, started: float) -> Response:
        """The receiver's verdict, from its status (a 2xx is delivered)."""
        latency = _since(started)
        status = response.status_code
        if 200 <= status < 300:
            return Response(status, latency, None)
        if 300 <= status < 400:
            where = response.headers.get("location", "")
            return Response(status, latency, f"redirect to {where[:200]} not followed")
        return Response(status, latency, f"the receiver answered {status}")

    async def _read_some(self, response: httpx.Response) -> None:
        """At most `response_bytes` of the answer's body are read."""
        read = 0
        async for chunk in response.aiter_raw():
            read += len(chunk)
            if read >= self.response_bytes:
                return

    def _record(self, claim: Claim, response: Response) -> None:
        """The attempt's outcome on the log, unless another notifier took the attempt over."""

        def record() -> None:
            delivery = self.ledger.find(
                WebhookDelivery, claim.delivery_id, "delivery", claim.delivery_id
            )
            if not delivery.holds(claim.number, self.name):
                log.warning(
                    "a webhook attempt was taken over before its outcome was recorded",
                    extra={"message_id": claim.message_id, "attempt": claim.number},
                )
                return
            policy = self.webhooks.policy
            delivery.finish_attempt(claim.number, self.name, response, policy, self.ledger.clock())
            self.ledger.save(delivery)

        self.ledger.retrying(record)
        log.info(
            "webhook attempt",
            extra={
                "message_id": claim.message_id,
                "attempt": claim.number,
                "status": response.status,
                "error": response.error,
                "latency_seconds": round(response.latency_seconds, 3),
            },
        )


def _due(delivery: WebhookDelivery, now: datetime) -> bool:
    """Whether an attempt may start now: its time has come, or the lease of the attempt being
    sent has run out."""
    if delivery.lease_expires_at is not None:
        return delivery.lease_expires_at <= now
    return delivery.next_attempt_at is not None and delivery.next_attempt_at <= now


def _since(started: float) -> float:
    return time.perf_counter() - started
