"""Outbound webhooks (docs/webhooks.md): a tenant's subscriptions, and each message's delivery.

A subscription names a URL and the event types it wants; its signing secret is derived from the
service's key and the subscription's `generation` (which rotation makes), so events hold the
generation, never the secret. A delivery is one message to one subscription: its payload, frozen
when it is scheduled, and every attempt to send it, until it is delivered or given up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.directory import NAMESPACE
from domain.errors import DomainError, InvalidState, ValidationFailed
from domain.messages import Message

RUN_DEAD_LETTERED = "run.dead_lettered"
RUN_FAILED = "run.failed"
RUN_SKIPPED = "run.skipped"
SCHEDULE_AUTO_PAUSED = "schedule.auto_paused"
APPROVAL_SUBMITTED = "approval.submitted"
APPROVAL_DECIDED = "approval.decided"
APPROVAL_EXPIRED = "approval.expired"
APPROVAL_REMINDER_DUE = "approval.reminder_due"
APPROVAL_ESCALATED = "approval.escalated"
APPROVAL_REJECTED = "approval.rejected"
APPROVAL_CLAIMED = "approval.claimed"
APPROVAL_REASSIGNED = "approval.reassigned"
APPROVAL_COMMENTED = "approval.commented"
APPROVAL_RETURNED = "approval.returned"
APPROVAL_DEADLINE_PAUSED = "approval.deadline_paused"
APPROVAL_DEADLINE_RESUMED = "approval.deadline_resumed"
APPROVAL_LEVEL_COMPLETED = "approval.level_completed"
APPROVAL_REVISED = "approval.revised"
APPROVAL_RESUBMITTED = "approval.resubmitted"
APPROVAL_CANCELLATION_REQUESTED = "approval.cancellation_requested"
APPROVAL_CANCELLED = "approval.cancelled"
APPROVAL_CANCELLATION_REFUSED = "approval.cancellation_refused"
CALLBACK_LATE = "callback.late"
CALLBACK_MISMATCHED = "callback.mismatched"
CHECKPOINT_SIGNED = "checkpoint.signed"
PING = "ping"
EVENT_TYPES = (
    RUN_DEAD_LETTERED,
    RUN_FAILED,
    RUN_SKIPPED,
    SCHEDULE_AUTO_PAUSED,
    APPROVAL_SUBMITTED,
    APPROVAL_DECIDED,
    APPROVAL_EXPIRED,
    APPROVAL_REMINDER_DUE,
    APPROVAL_ESCALATED,
    APPROVAL_REJECTED,
    APPROVAL_CLAIMED,
    APPROVAL_REASSIGNED,
    APPROVAL_COMMENTED,
    APPROVAL_RETURNED,
    APPROVAL_DEADLINE_PAUSED,
    APPROVAL_DEADLINE_RESUMED,
    APPROVAL_LEVEL_COMPLETED,
    APPROVAL_REVISED,
    APPROVAL_RESUBMITTED,
    APPROVAL_CANCELLATION_REQUESTED,
    APPROVAL_CANCELLED,
    APPROVAL_CANCELLATION_REFUSED,
    CALLBACK_LATE,
    CALLBACK_MISMATCHED,
    CHECKPOINT_SIGNED,
    PING,
)
# Types about the whole log, every tenant's (not one tenant's events): chosen by auditors only.
LOG_WIDE_TYPES = frozenset({CHECKPOINT_SIGNED})
CREATE_WEBHOOK = "webhook.create"  # the operation an Idempotency-Key of a create is kept under
NOTIFIER_ACTOR = "system:notifier"  # who schedules and sends deliveries
MAX_URL = 2000
MAX_DESCRIPTION = 500
NOT_A_URL = Message("is not a URL")
FIRST_GENERATION = 1

# A delivery's status: waiting for its next attempt, being sent, waiting to retry, or final.
PENDING = "PENDING"
SENDING = "SENDING"
RETRY_WAIT = "RETRY_WAIT"
DELIVERED = "DELIVERED"
FAILED = "FAILED"  # given up: every attempt of its round failed (redeliverable by hand)
CANCELLED = "CANCELLED"  # read models only: its subscription was deleted while it waited
DELIVERY_STATUSES = (PENDING, SENDING, RETRY_WAIT, DELIVERED, FAILED, CANCELLED)
WAITING = frozenset({PENDING, SENDING, RETRY_WAIT})
INTERRUPTED = "the notifier stopped before it recorded the attempt's outcome"


def delivery_uuid(subscription_id: UUID, source: str) -> UUID:
    """The one delivery of a source (an event and its webhook type, or a ping) to a subscription:
    scheduling it twice finds the first."""
    return uuid5(NAMESPACE, f"webhook/{subscription_id}/message/{source}")


def message_id_of(delivery_id: UUID) -> str:
    """The `webhook-id` of every attempt of a delivery, so receivers can deduplicate."""
    return f"msg_{delivery_id.hex}"


def checked_url(url: str, allow_http: bool) -> str:
    """An absolute https URL (http only when allowed) naming a host, with no credentials in it
    (events keep the URL) and no fragment. Where the host points is checked elsewhere."""
    if len(url) > MAX_URL:
        raise ValidationFailed.of(
            "url", Message("must be at most {count} characters long", count=MAX_URL)
        )
    try:
        parts = urlsplit(url)
        port = parts.port  # a port out of range is a ValueError
    except ValueError:
        raise ValidationFailed.of("url", NOT_A_URL) from None
    schemes = ("https", "http") if allow_http else ("https",)
    if parts.scheme not in schemes:
        raise ValidationFailed.of(
            "url",
            Message("must use https or http")
            if allow_http
            else Message("must use https (http only when the operator allows it)"),
        )
    if not parts.hostname:
        raise ValidationFailed.of("url", Message("must name a host"))
    if parts.username is not None or parts.password is not None:
        raise ValidationFailed.of("url", Message("must not carry credentials: they would be kept"))
    if parts.fragment or url.endswith("#"):
        raise ValidationFailed.of("url", Message("must not have a fragment"))
    if port == 0 or any(c.isspace() for c in url):
        raise ValidationFailed.of("url", NOT_A_URL)
    return url


def checked_event_types(event_types: Sequence[str], may_audit: bool = True) -> list[str]:
    """One or more distinct known types, in the order of EVENT_TYPES; a log-wide type only
    for whoever `may_audit` (reads the log's checkpoints)."""
    unknown = sorted(set(event_types) - set(EVENT_TYPES))
    if unknown:
        raise ValidationFailed.of(
            "event_types",
            Message(
                "unknown type(s) {unknown}; known: {known}",
                unknown=", ".join(unknown),
                known=", ".join(EVENT_TYPES),
            ),
        )
    if not event_types:
        raise ValidationFailed.of("event_types", Message("name at least one type"))
    log_wide = sorted(LOG_WIDE_TYPES & set(event_types))
    if log_wide and not may_audit:
        raise ValidationFailed.of(
            "event_types",
            Message(
                "{types}: only an account with the audit:read permission may choose it (it "
                "tells about the whole log, every tenant's)",
                types=", ".join(log_wide),
            ),
        )
    return [kind for kind in EVENT_TYPES if kind in event_types]


class TooManyWebhooks(DomainError):
    """A tenant that has as many subscriptions as it may have asked for another."""

    code = "TOO_MANY_WEBHOOKS"

    def __init__(self, count: int, cap: int) -> None:
        super().__init__(
            Message(
                "the tenant has {count} webhook subscriptions and may have {cap} at most "
                "(CRONLEDGER_WEBHOOKS_PER_TENANT): delete one it no longer needs, then try again",
                count=count,
                cap=cap,
            )
        )


def check_room_for_webhook(count: int, cap: int) -> None:
    """A tenant with `count` live subscriptions may make another only below `cap`."""
    if count >= cap:
        raise TooManyWebhooks(count, cap)


@dataclass(frozen=True)
class SubscriptionFields:
    """What a subscription's owner sets."""

    url: str
    event_types: list[str]
    description: str
    enabled: bool


class WebhookSubscription(Aggregate):
    """A tenant's URL that hears the event types it names, signed with a rotatable secret."""

    class Created(Aggregate.Created):
        tenant_id: UUID
        url: str
        event_types: list[str]
        description: str
        enabled: bool
        generation: int
        at: datetime
        actor: str

    @event(Created)
    def __init__(
        self,
        tenant_id: UUID,
        url: str,
        event_types: list[str],
        description: str,
        enabled: bool,
        generation: int,
        at: datetime,
        actor: str,
    ) -> None:
        self.tenant_id = tenant_id
        self.url = url
        self.event_types = event_types
        self.description = description
        self.enabled = enabled
        self.generation = generation
        self.created_at = at
        self.updated_at = at
        self.deleted = False

    @property
    def fields(self) -> SubscriptionFields:
        return SubscriptionFields(self.url, self.event_types, self.description, self.enabled)

    def change(self, fields: SubscriptionFields, at: datetime, actor: str) -> None:
        """Replace the settings; an unchanged subscription records nothing."""
        self.check_not_deleted()
        if fields != self.fields:
            self._changed(
                url=fields.url,
                event_types=fields.event_types,
                description=fields.description,
                enabled=fields.enabled,
                at=at,
                actor=actor,
            )

    def rotate_secret(self, at: datetime, actor: str) -> None:
        """A new secret (the next generation); the old one stops signing at once."""
        self.check_not_deleted()
        self._secret_rotated(generation=self.generation + 1, at=at, actor=actor)

    def delete(self, at: datetime, actor: str, reason: str | None = None) -> None:
        self.check_not_deleted()
        self._deleted(at=at, actor=actor, reason=reason)

    def check_not_deleted(self) -> None:
        if self.deleted:
            raise InvalidState(Message("the webhook subscription was deleted"))

    def check_enabled(self) -> None:
        self.check_not_deleted()
        if not self.enabled:
            raise InvalidState(Message("the webhook subscription is disabled: enable it first"))

    class Changed(Aggregate.Event):
        url: str
        event_types: list[str]
        description: str
        enabled: bool
        at: datetime
        actor: str

    @event(Changed)
    def _changed(
        self,
        url: str,
        event_types: list[str],
        description: str,
        enabled: bool,
        at: datetime,
        actor: str,
    ) -> None:
        self.url = url
        self.event_types = event_types
        self.description = description
        self.enabled = enabled
        self.updated_at = at

    class SecretRotated(Aggregate.Event):
        generation: int
        at: datetime
        actor: str

    @event(SecretRotated)
    def _secret_rotated(self, generation: int, at: datetime, actor: str) -> None:
        self.generation = generation
        self.updated_at = at

    class Deleted(Aggregate.Event):
        at: datetime
        actor: str
        reason: str | None

    @event(Deleted)
    def _deleted(self, at: datetime, actor: str, reason: str | None) -> None:
        self.deleted = True
        self.updated_at = at


@dataclass(frozen=True)
class DeliveryPolicy:
    """How often a message is tried in a round, and how long it waits between tries."""

    max_attempts: int
    retry_base: timedelta

    def retry_delay(self, attempt_in_round: int) -> timedelta:
        """Try n+1 waits base x 2^(n-1): 30, 60, 120 s ... by default."""
        return self.retry_base * float(2 ** (attempt_in_round - 1))


@dataclass(frozen=True)
class Response:
    """What one attempt got: the receiver's status (None: no answer), how long it took, and
    what went wrong (None for a 2xx)."""

    status: int | None
    latency_seconds: float
    error: str | None

    @property
    def delivered(self) -> bool:
        return self.error is None


class WebhookDelivery(Aggregate):
    """One message to one subscription, and every attempt to send it."""

    @staticmethod
    def create_id(subscription_id: UUID, source: str) -> UUID:
        return delivery_uuid(subscription_id, source)

    class Scheduled(Aggregate.Created):
        tenant_id: UUID
        subscription_id: UUID
        source: str
        event_type: str
        payload: dict[str, Any]
        max_attempts: int
        at: datetime
        actor: str

    @event(Scheduled)
    def __init__(
        self,
        tenant_id: UUID,
        subscription_id: UUID,
        source: str,
        event_type: str,
        payload: dict[str, Any],
        max_attempts: int,
        at: datetime,
        actor: str,
    ) -> None:
        self.tenant_id = tenant_id
        self.subscription_id = subscription_id
        self.event_type = event_type
        self.payload = payload
        self.max_attempts = max_attempts
        self.status = PENDING
        self.created_at = at
        self.next_attempt_at: datetime | None = at
        self.lease_expires_at: datetime | None = None
        self.attempts: list[dict[str, Any]] = []
        self.round_start = 0  # attempts before it belong to rounds before a redelivery
        self.finished_at: datetime | None = None

    @property
    def message_id(self) -> str:
        return message_id_of(self.id)

    @property
    def attempts_in_round(self) -> int:
        return len(self.attempts) - self.round_start

    def start_attempt(self, worker: str, lease: timedelta, now: datetime) -> int:
        """Claim the next attempt until `now + lease`; one whose sender stopped before it told
        the outcome is ended first (it may have reached the receiver: the message is sent
        again with the same id). The number of the attempt started."""
        if self.status == SENDING:
            self._interrupt(now)
        if self.status not in (PENDING, RETRY_WAIT):
            raise InvalidState(
                Message(
                    "delivery {id} is {status}, not waiting to be sent",
                    id=str(self.id),
                    status=self.status,
                )
            )
        number = len(self.attempts) + 1
        self._attempt_started(
            number=number, worker=worker, lease_expires_at=now + lease, at=now, actor=worker
        )
        return number

    def holds(self, number: int, worker: str) -> bool:
        """Whether `worker` still holds attempt `number` (no one took it over)."""
        current = self.attempts[-1] if self.attempts else None
        return (
            self.status == SENDING
            and current is not None
            and (current["number"], current["worker"]) == (number, worker)
        )

    def finish_attempt(
        self, number: int, worker: str, response: Response, policy: DeliveryPolicy, at: datetime
    ) -> None:
        """Record what attempt `number` got: delivered, or failed and retried later or given up
        after the round's last attempt."""
        if not self.holds(number, worker):
            raise InvalidState(
                Message(
                    "attempt {number} of delivery {id} is no longer {worker}'s",
                    number=number,
                    id=str(self.id),
                    worker=worker,
                )
            )
        if response.delivered:
            self._attempt_succeeded(
                number=number,
                response_status=response.status,
                latency_seconds=response.latency_seconds,
                status=DELIVERED,
                at=at,
                actor=worker,
            )
            return
        exhausted = self.attempts_in_round >= self.max_attempts
        self._attempt_failed(
            number=number,
            response_status=response.status,
            latency_seconds=response.latency_seconds,
            error=response.error,
            status=FAILED if exhausted else RETRY_WAIT,
            next_attempt_at=None if exhausted else at + policy.retry_delay(self.attempts_in_round),
            at=at,
            actor=worker,
        )

    def _interrupt(self, at: datetime) -> None:
        exhausted = self.attempts_in_round >= self.max_attempts
        self._attempt_interrupted(
            number=len(self.attempts),
            error=INTERRUPTED,
            status=FAILED if exhausted else RETRY_WAIT,
            next_attempt_at=None if exhausted else at,
            at=at,
            actor=NOTIFIER_ACTOR,
        )

    def redeliver(self, at: datetime, actor: str, reason: str | None = None) -> None:
        """Send a delivered or given-up message again, with a new round of attempts."""
        if self.status in WAITING:
            raise InvalidState(
                Message(
                    "delivery {id} is {status}: it is being sent already",
                    id=str(self.id),
                    status=self.status,
                )
            )
        if self.status == CANCELLED:
            raise InvalidState(
                Message("delivery {id} was cancelled with its subscription", id=str(self.id))
            )
        self._redelivered(status=PENDING, at=at, actor=actor, reason=reason)

    class AttemptStarted(Aggregate.Event):
        number: int
        worker: str
        lease_expires_at: datetime
        at: datetime
        actor: str

    @event(AttemptStarted)
    def _attempt_started(
        self, number: int, worker: str, lease_expires_at: datetime, at: datetime, actor: str
    ) -> None:
        self.status = SENDING
        self.lease_expires_at = lease_expires_at
        self.attempts.append({"number": number, "worker": worker, "started_at": at})

    class AttemptSucceeded(Aggregate.Event):
        number: int
        response_status: int | None
        latency_seconds: float
        status: str
        at: datetime
        actor: str

    @event(AttemptSucceeded)
    def _attempt_succeeded(
        self,
        number: int,
        response_status: int | None,
        latency_seconds: float,
        status: str,
        at: datetime,
        actor: str,
    ) -> None:
        self._end(response_status, latency_seconds, None, at)
        self.status = status
        self.next_attempt_at = None
        self.finished_at = at

    class AttemptFailed(Aggregate.Event):
        number: int
        response_status: int | None
        latency_seconds: float
        error: str | None
        status: str
        next_attempt_at: datetime | None
        at: datetime
        actor: str

    @event(AttemptFailed)
    def _attempt_failed(
        self,
        number: int,
        response_status: int | None,
        latency_seconds: float,
        error: str | None,
        status: str,
        next_attempt_at: datetime | None,
        at: datetime,
        actor: str,
    ) -> None:
        self._end(response_status, latency_seconds, error, at)
        self.status = status
        self.next_attempt_at = next_attempt_at
        self.finished_at = at if status == FAILED else None

    class AttemptInterrupted(Aggregate.Event):
        number: int
        error: str
        status: str
        next_attempt_at: datetime | None
        at: datetime
        actor: str

    @event(AttemptInterrupted)
    def _attempt_interrupted(
        self,
        number: int,
        error: str,
        status: str,
        next_attempt_at: datetime | None,
        at: datetime,
        actor: str,
    ) -> None:
        self._end(None, None, error, at)
        self.status = status
        self.next_attempt_at = next_attempt_at
        self.finished_at = at if status == FAILED else None

    def _end(
        self, response_status: int | None, latency: float | None, error: str | None, at: datetime
    ) -> None:
        self.lease_expires_at = None
        self.attempts[-1] = {
            **self.attempts[-1],
            "finished_at": at,
            "response_status": response_status,
            "latency_seconds": latency,
            "error": error,
        }

    class Redelivered(Aggregate.Event):
        status: str
        at: datetime
        actor: str
        reason: str | None

    @event(Redelivered)
    def _redelivered(self, status: str, at: datetime, actor: str, reason: str | None) -> None:
        self.status = status
        self.round_start = len(self.attempts)
        self.next_attempt_at = at
        self.finished_at = None
