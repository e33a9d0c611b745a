"""Outbound webhooks (docs/webhooks.md): subscriptions, their messages, and where they may go.

A subscription's URL is checked when it is saved and again before every attempt (DNS can
change): https only (http when the operator allows it), and every address its host resolves
to must be public unless the operator allows private ones. A message is what one event of the
log tells one subscription, in the Standard Webhooks form: `{"type", "timestamp", "data"}`.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit
from uuid import UUID, uuid4

from cronledger.application.directory import Page
from cronledger.application.idempotency import check_key, key_record
from cronledger.application.secrets import SecretKeyMissing, derived_secret
from cronledger.config import Settings
from cronledger.persistence.ledger import ENVELOPE, Ledger, TimelineEntry, jsonable
from domain.approvals import (
    CANCELLED,
    COMMENT,
    EXPIRED,
    FORBIDDEN,
    LATE_OR_CONFLICT,
    REASSIGN,
    RETURN,
    RETURNED,
    SIGN,
    STATE_AFTER,
)
from domain.directory import Principal, Tenant, check_expected_version
from domain.errors import NotFound, ValidationFailed, every_problem
from domain.evidence import Checkpoint
from domain.idempotency import KeyedRequest
from domain.messages import Message
from domain.overlap import Blocker
from domain.permissions import AUDIT_READ
from domain.reason_codes import MISMATCHES
from domain.reviewers import FIRST_TASK
from domain.runs import (
    DEAD_LETTER,
    FAILED,
    SKIP_CALENDAR,
    SKIP_MISSED,
    SKIP_OVERLAP,
    SKIPPED_AT_REGISTRATION,
    SKIPPED_CALENDAR,
    skip_reason_of,
)
from domain.webhooks import (
    APPROVAL_CANCELLATION_REFUSED,
    APPROVAL_CANCELLATION_REQUESTED,
    APPROVAL_CANCELLED,
    APPROVAL_CLAIMED,
    APPROVAL_COMMENTED,
    APPROVAL_DEADLINE_PAUSED,
    APPROVAL_DEADLINE_RESUMED,
    APPROVAL_DECIDED,
    APPROVAL_ESCALATED,
    APPROVAL_EXPIRED,
    APPROVAL_LEVEL_COMPLETED,
    APPROVAL_REASSIGNED,
    APPROVAL_REJECTED,
    APPROVAL_REMINDER_DUE,
    APPROVAL_RESUBMITTED,
    APPROVAL_RETURNED,
    APPROVAL_REVISED,
    APPROVAL_SUBMITTED,
    CALLBACK_LATE,
    CALLBACK_MISMATCHED,
    CHECKPOINT_SIGNED,
    PING,
    RUN_DEAD_LETTERED,
    RUN_FAILED,
    RUN_SKIPPED,
    SCHEDULE_AUTO_PAUSED,
    DeliveryPolicy,
    SubscriptionFields,
    WebhookDelivery,
    WebhookSubscription,
    check_room_for_webhook,
    checked_event_types,
    checked_url,
)
from projections.engine import Projector
from projections.keyset import Window
from projections.webhooks import (
    DeliveryRow,
    WebhookRow,
    delivery_page,
    live_webhook_count,
    webhook_page,
    webhook_row,
)

SECRET_KIND = "webhook"  # noqa: S105 (what `derived_secret` derives a subscription's secret for)
MISMATCH = "; mismatch:"  # how the words of a callback's reason before 0.11.0 said it differed
Resolver = Callable[..., Sequence[tuple[Any, ...]]]  # socket.getaddrinfo's shape
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Act = Callable[[WebhookSubscription, datetime], object]  # a change to a subscription, at a time


# -- where a message may go ----------------------------------------------------------------


@dataclass(frozen=True)
class Destination:
    """A checked URL and the address it is sent to (the one checked, not a new lookup)."""

    url: str
    address: str

    @property
    def pinned_url(self) -> str:
        """The URL with its host replaced by the checked address (TLS still checks the name)."""
        parts = urlsplit(self.url)
        host = f"[{self.address}]" if ":" in self.address else self.address
        netloc = host if parts.port is None else f"{host}:{parts.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))

    @property
    def host(self) -> str:
        hostname = urlsplit(self.url).hostname
        assert hostname is not None  # a checked URL names its host
        return hostname

    @property
    def host_header(self) -> str:
        """The `Host` a request to the URL carries: the name, and a port that is not default."""
        return urlsplit(self.url).netloc


NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052's well-known prefix


def wrapped_ipv4(address: Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries inside it: IPv4-mapped (::ffff:a.b.c.d),
    6to4 (2002::/16), both of Teredo's (2001::/32) and NAT64's (64:ff9b::/96)."""
    if isinstance(address, ipaddress.IPv4Address):
        return []
    carried = [address.ipv4_mapped, address.sixtofour, *(address.teredo or ())]
    if address in NAT64:
        carried.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [a for a in carried if a is not None]


def refusal_of(address: Address) -> Message | None:
    """Why a message may not go to `address` unless private ones are allowed, or None. An IPv6
    address that wraps an IPv4 one is refused for what it wraps as well as for itself."""
    for carried in wrapped_ipv4(address):
        refused = refusal_of(carried)
        if refused is not None:
            return Message(
                "{address} wrapped in IPv6: {refused}", address=str(carried), refused=refused
            )
    if address.is_loopback:
        return Message("a loopback address")
    if address.is_link_local:
        return Message("a link-local address")
    if address.is_multicast:
        return Message("a multicast address")
    if address.is_unspecified:
        return Message("the unspecified address")
    if address.is_reserved:
        return Message("a reserved address")
    if address.is_private or not address.is_global:
        return Message("a private address")
    return None


class AddressGuard:
    """Checks a URL, then where its host resolves to, with the operator's allowances."""

    def __init__(
        self, allow_http: bool, allow_private: bool, resolve: Resolver = socket.getaddrinfo
    ) -> None:
        self.allow_http = allow_http
        self.allow_private = allow_private
        self.resolve = resolve

    def destination(self, url: str) -> Destination:
        """The URL and the first of its host's addresses; ValidationFailed on `url` if the URL
        is not allowed or any address its host resolves to is refused."""
        checked_url(url, self.allow_http)
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        addresses = self._addresses(host, port)
        if not self.allow_private:
            for address in addresses:
                refused = refusal_of(address)
                if refused is not None:
                    raise ValidationFailed.of(
                        "url",
                        Message(
                            "{host} resolves to {address}, {refused}: refused unless "
                            "CRONLEDGER_WEBHOOK_ALLOW_PRIVATE=true",
                            host=host,
                            address=str(address),
                            refused=refused,
                        ),
                    )
        return Destination(url, str(addresses[0]))

    def _addresses(self, host: str, port: int) -> list[Address]:
        try:
            found = self.resolve(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as error:
            raise ValidationFailed.of(
                "url",
                Message("the host {host} cannot be resolved: {error}", host=host, error=str(error)),
            ) from None
        addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in found))
        if not addresses:
            raise ValidationFailed.of(
                "url", Message("the host {host} resolves to no address", host=host)
            )
        return addresses


# -- what an event tells ---------------------------------------------------------------------


RUN_ENDINGS = ("Run.AttemptFailed", "Run.AttemptInterrupted")
DECISIONS = ("ApprovalInstance.Approved", "ApprovalInstance.Withdrawn")
CALLBACKS = ("ApprovalInstance.CallbackObserved", "ApprovalInstance.CommandRejected")
NOTICES = {
    "ApprovalInstance.ReminderDue": APPROVAL_REMINDER_DUE,
    "ApprovalInstance.Escalated": APPROVAL_ESCALATED,
    "ApprovalInstance.LevelCompleted": APPROVAL_LEVEL_COMPLETED,
}
REVISION = "ApprovalInstance.Revised"  # the applicant revised the material
# The review's work on an instance's task, and its comments: each its own type.
REVIEW_WORK = {
    "ApprovalInstance.Claimed": APPROVAL_CLAIMED,
    "ApprovalInstance.Reassigned": APPROVAL_REASSIGNED,
    "ApprovalInstance.Commented": APPROVAL_COMMENTED,
}
# The review clock and a return (退回): each its own type.
CLOCK = {
    "ApprovalInstance.Returned": APPROVAL_RETURNED,
    "ApprovalInstance.DeadlinePaused": APPROVAL_DEADLINE_PAUSED,
    "ApprovalInstance.DeadlineResumed": APPROVAL_DEADLINE_RESUMED,
}
REJECTION = "ApprovalInstance.Rejected"  # a decision (approval.decided) and approval.rejected
# Links between instances (docs/approvals.md#resubmit-and-cancel), told on the original.
LINKS = {
    "ApprovalInstance.Resubmitted": APPROVAL_RESUBMITTED,
    "ApprovalInstance.CancellationRequested": APPROVAL_CANCELLATION_REQUESTED,
}
SETTLED = "ApprovalInstance.CancellationSettled"  # approval.cancelled or cancellation_refused
AUTO_PAUSE = "Schedule.AutoPaused"
# Every event that may tell a subscription something, by qualified name (a topic's end).
TOLD_BY = frozenset(
    {
        *RUN_ENDINGS,
        "Run.Registered",
        "Run.SkippedOverlap",
        AUTO_PAUSE,
        "ApprovalInstance.Submitted",
        *DECISIONS,
        "ApprovalInstance.Expired",
        *CALLBACKS,
        *NOTICES,
        *REVIEW_WORK,
        *CLOCK,
        REJECTION,
        REVISION,
        *LINKS,
        SETTLED,
    }
)
# Those that carry their tenant; the others' is their aggregate's.
CARRY_TENANT = frozenset({"Run.Registered", "ApprovalInstance.Submitted"})


def types_of(event: Any) -> list[str]:
    """The webhook types an event of the log is, if any (most are none)."""
    name = type(event).__qualname__
    if name in RUN_ENDINGS:
        return {DEAD_LETTER: [RUN_DEAD_LETTERED], FAILED: [RUN_FAILED]}.get(event.status, [])
    if name == "Run.SkippedOverlap":
        return [RUN_SKIPPED]
    if name == "Run.Registered":
        return [RUN_SKIPPED] if event.status in SKIPPED_AT_REGISTRATION else []
    if name == AUTO_PAUSE:
        return [SCHEDULE_AUTO_PAUSED]
    if name == "ApprovalInstance.Submitted":
        return [APPROVAL_SUBMITTED]
    if name in DECISIONS:
        return [APPROVAL_DECIDED]
    if name == REJECTION:
        return [APPROVAL_DECIDED, APPROVAL_REJECTED]
    if name in REVIEW_WORK:
        return [REVIEW_WORK[name]]
    if name in CLOCK:
        return [CLOCK[name]]
    if name in LINKS:
        return [LINKS[name]]
    if name == SETTLED:
        return [APPROVAL_CANCELLED if event.state == CANCELLED else APPROVAL_CANCELLATION_REFUSED]
    if name == "ApprovalInstance.Expired":
        return [APPROVAL_EXPIRED]
    if name == REVISION:
        return [APPROVAL_REVISED]
    if name in NOTICES:
        return [NOTICES[name]]
    if name in CALLBACKS and event.command == SIGN and event.outcome != FORBIDDEN:
        late = [CALLBACK_LATE] if event.outcome in (EXPIRED, LATE_OR_CONFLICT) else []
        return late + ([CALLBACK_MISMATCHED] if mismatched(event) else [])
    return []


def payload_of(kind: str, event: Any, tenant_id: UUID, subject: Any) -> dict[str, Any]:
    """The message of type `kind` an event tells: what happened, named by the ids the tenant
    sees. `subject` is the event's aggregate, for what its event does not carry."""
    data = {"tenant_id": str(tenant_id), **_data_of(kind, event, subject)}
    return {"type": kind, "timestamp": jsonable(event.at), "data": jsonable(data)}


def ping_payload(subscription: WebhookSubscription, at: datetime) -> dict[str, Any]:
    data = {"tenant_id": str(subscription.tenant_id), "webhook_id": str(subscription.id)}
    return {"type": PING, "timestamp": jsonable(at), "data": data}


def checkpoint_payload(
    checkpoint: Checkpoint, tenant_id: UUID, public_pem: str | None
) -> dict[str, Any]:
    """The message that the log's tree was signed: the checkpoint as `audit checkpoints
    --export` writes it, and the public key (PEM) of the notifier's process if it has one."""
    data = {"tenant_id": str(tenant_id), "checkpoint": checkpoint.as_json()}
    return {
        "type": CHECKPOINT_SIGNED,
        "timestamp": checkpoint.signed_at,
        "data": {**data, "public_key": public_pem},
    }


def checkpoint_source(tree_size: int) -> str:
    """What a `checkpoint.signed` delivery is derived from: the checkpoint of one tree size."""
    return f"checkpoint/{tree_size}"


def _data_of(kind: str, event: Any, subject: Any) -> dict[str, Any]:
    if kind.startswith("run."):
        return {**_run(event, subject), **_run_detail(event)}
    if kind == SCHEDULE_AUTO_PAUSED:
        return _auto_paused(event, subject)
    instance = {"instance_id": str(event.originator_id)}
    if kind == APPROVAL_SUBMITTED:
        origin = event.origin or {}
        return {
            **instance,
            "state": "WAITING_REVIEW",
            "definition_id": event.definition_id,
            "applicant_id": event.applicant_id,
            "title": event.title,
            "review_deadline_at": event.review_deadline_at,
            "run_id": origin.get("run_id"),
        }
    if kind in (APPROVAL_DECIDED, APPROVAL_EXPIRED, APPROVAL_REJECTED):
        return {
            **instance,
            "state": STATE_AFTER[event.outcome],
            "decided_by": event.actor,
            "command_id": event.command_id,
            "reason": event.reason,
            **({"comment": event.payload["comment"]} if kind == APPROVAL_REJECTED else {}),
        }
    if kind in REVIEW_WORK.values():
        return {**instance, **_review_work(event)}
    if kind in CLOCK.values():
        return {**instance, **_clock(event)}
    if kind == APPROVAL_REVISED:
        return {**instance, **_revised(event)}
    if kind in LINKS.values():
        return {
            **instance,
            "linked_id": event.linked_id,
            "actor": event.actor,
            "command_id": event.command_id,
            "reason": event.payload["reason"],
        }
    if kind in (APPROVAL_CANCELLED, APPROVAL_CANCELLATION_REFUSED):
        return {**instance, "linked_id": event.linked_id, "outcome": event.outcome}
    if kind in (CALLBACK_LATE, CALLBACK_MISMATCHED):
        payload = event.payload
        return {
            **instance,
            "outcome": event.outcome,
            "reason": event.reason,
            "command_id": event.command_id,
            **{key: payload.get(key) for key in ("contract_id", "material_version", "source")},
        }
    fields = {k: v for k, v in event.__dict__.items() if k not in ENVELOPE | {"at", "actor"}}
    return {**instance, **fields}


def _revised(event: Any) -> dict[str, Any]:
    """The new material version, why, how many votes lapsed, where the review went back to;
    the deadline's old and new instants when the revise restarted it (never the form data)."""
    payload = event.payload
    return {
        "actor": event.actor,
        "command_id": event.command_id,
        "material_version": payload["material_version"],
        "reason": payload["reason"],
        "lapsed_votes": event.lapsed_votes,
        "back_to_level": event.back_to_level,
        "old_deadline_at": event.old_deadline_at,
        "new_deadline_at": payload.get("new_deadline_at"),
    }


def _auto_paused(event: Any, schedule: Any) -> dict[str, Any]:
    """The schedule the service paused (named as it is when the message is made), and why."""
    return {
        "schedule_id": str(event.originator_id),
        "name": schedule.settings.name if schedule is not None else None,
        "runs": event.runs,
        "reason": event.reason,
    }


def _review_work(event: Any) -> dict[str, Any]:
    """Who did what to which task: a claim's assignee is its actor, a reassignment names its
    own (with why); a comment carries its text."""
    payload = event.payload
    told = {"task_id": payload.get("task_id") or FIRST_TASK, "actor": event.actor}
    if event.command == REASSIGN:
        return {**told, "assignee_id": payload["assignee_id"], "reason": payload["reason"]}
    if event.command == COMMENT:
        return {**told, "comment": payload["comment"]}
    return {**told, "assignee_id": event.actor, "command_id": event.command_id}


def _clock(event: Any) -> dict[str, Any]:
    """Who stopped or ran the review clock and why; a resume (or a return ending a pause)
    with the old and new deadlines."""
    payload = event.payload
    told = {
        "actor": event.actor,
        "command_id": event.command_id,
        "reason": payload.get("reason") or payload.get("comment") or event.reason,
    }
    if event.command == RETURN:
        told = {**told, "task_id": payload.get("task_id") or FIRST_TASK, "state": RETURNED}
    clock = getattr(event, "clock", None)
    if clock is not None:
        told["paused_from"], told["paused_to"] = clock["from"], clock["to"]
        told["old_deadline_at"] = clock["old_deadline_at"]
        told["new_deadline_at"] = clock["new_deadline_at"]
    return told


def _run(event: Any, run: Any) -> dict[str, Any]:
    """The run's ids and its planned instant (a registration carries them itself)."""
    source = event if type(event).__qualname__ == "Run.Registered" else run
    return {
        "run_id": str(event.originator_id),
        "schedule_id": str(source.schedule_id),
        "planned_at": source.planned_at,
        "status": event.status,
    }


def _run_detail(event: Any) -> dict[str, Any]:
    name = type(event).__qualname__
    if name == "Run.SkippedOverlap":
        blocker = Blocker(event.earlier_run_id, event.blocking_status, event.blocking_instance_id)
        return {"skip_reason": skip_reason_of(SKIP_OVERLAP, blocker, 0)}
    if name == "Run.Registered" and event.status == SKIPPED_CALENDAR:
        return {"skip_reason": skip_reason_of(SKIP_CALENDAR, None, 1, event.calendar)}
    if name == "Run.Registered":
        return {"skip_reason": skip_reason_of(SKIP_MISSED, None, event.skipped_count)}
    return {"attempt": event.number, "error": {"code": event.code, "message": event.message}}


def mismatched(handled: Any) -> bool:
    """Whether a signing callback differed from its instance: as its reason's parameters say,
    or, recorded before reasons kept them, its words."""
    if handled.reason_code is not None:
        return bool((handled.reason_params or {}).get(MISMATCHES))
    return MISMATCH in handled.reason


def delivery_source(event: Any, kind: str) -> str:
    """What a delivery of an event is derived from: the event itself, and its type."""
    return f"{event.originator_id}/{event.originator_version}/{kind}"


# -- the service ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WebhookWithSecret:
    """A subscription and its signing secret: answered when it is made or rotated, and never
    again."""

    webhook: WebhookRow
    secret: str | None  # None: a repeated create answered, which never shows it again


class Webhooks:
    """Subscriptions' commands and queries, and what the notifier needs to sign and send."""

    def __init__(
        self,
        ledger: Ledger,
        projector: Projector,
        settings: Settings,
        resolve: Resolver = socket.getaddrinfo,
    ):
        self.ledger = ledger
        self.projector = projector
        self.settings = settings
        self.guard = AddressGuard(
            settings.webhook_allow_http, settings.webhook_allow_private, resolve
        )
        self.policy = DeliveryPolicy(
            settings.webhook_max_attempts, timedelta(seconds=settings.webhook_retry_base_seconds)
        )

    def secret_of(self, subscription_id: UUID, generation: int) -> str:
        """The subscription's signing secret at `generation` (derived: never stored)."""
        return derived_secret(
            self.settings.secret_key, SECRET_KIND, str(subscription_id), generation
        )

    def create(
        self, actor: Principal, fields: SubscriptionFields, request: KeyedRequest | None = None
    ) -> WebhookWithSecret:
        """A new subscription and its secret, saved with an event of its tenant (so creations
        in one tenant take turns) while the tenant has fewer than CRONLEDGER_WEBHOOKS_PER_TENANT;
        a repeat of a keyed `request` stops with `AlreadyCreated`."""
        if not self.settings.secret_key:
            raise SecretKeyMissing()
        checked = self._checked(actor, fields)
        return self.ledger.retrying(lambda: self._create(actor, checked, request))

    def _create(
        self, actor: Principal, fields: SubscriptionFields, request: KeyedRequest | None
    ) -> WebhookWithSecret:
        check_key(self.ledger, request)
        tenant = self.ledger.find(Tenant, actor.tenant_id, "tenant", actor.tenant_id)
        self.projector.catch_up()  # every subscription made before the tenant's version read
        count = live_webhook_count(self.ledger.store, actor.tenant_id)
        check_room_for_webhook(count, self.settings.webhooks_per_tenant)
        at = self.ledger.clock()
        subscription = WebhookSubscription(
            tenant_id=actor.tenant_id,
            url=fields.url,
            event_types=fields.event_types,
            description=fields.description,
            enabled=fields.enabled,
            generation=1,
            at=at,
            actor=actor.account_id,
        )
        tenant.webhook_added(subscription.id, at, actor.account_id)
        record = key_record(request, "webhook", str(subscription.id), at)
        self.ledger.save(subscription, tenant, record)
        return self._with_secret(subscription)

    def _with_secret(self, subscription: WebhookSubscription) -> WebhookWithSecret:
        secret = self.secret_of(subscription.id, subscription.generation)
        return WebhookWithSecret(WebhookRow.of_aggregate(subscription), secret)

    def _checked(self, actor: Principal, fields: SubscriptionFields) -> SubscriptionFields:
        """The fields with their types in order (a log-wide type only for an auditor), the URL
        checked where it points now."""
        self.check(actor, fields.url, fields.event_types)
        event_types = checked_event_types(fields.event_types, actor.can(AUDIT_READ))
        return SubscriptionFields(fields.url, event_types, fields.description, fields.enabled)

    def check(self, actor: Principal, url: str | None, event_types: list[str] | None) -> None:
        """Every rule the URL (where it points now) and the event types break, at once; None
        is one not to check."""
        errors = every_problem(
            lambda: url is None or self.guard.destination(url),
            lambda: event_types is None or checked_event_types(event_types, actor.can(AUDIT_READ)),
        )
        if errors:
            raise ValidationFailed(errors)

    def update(
        self, actor: Principal, webhook_id: str, fields: SubscriptionFields, version: int | None
    ) -> WebhookRow:
        checked = self._checked(actor, fields)
        return WebhookRow.of_aggregate(
            self._saved(
                actor, webhook_id, version, lambda s, at: s.change(checked, at, actor.account_id)
            )
        )

    def delete(
        self, actor: Principal, webhook_id: str, version: int | None, reason: str | None = None
    ) -> None:
        self._saved(
            actor, webhook_id, version, lambda s, at: s.delete(at, actor.account_id, reason)
        )

    def rotate_secret(
        self, actor: Principal, webhook_id: str, version: int | None
    ) -> WebhookWithSecret:
        """A new secret, answered this once; messages are signed with it from now on."""
        if not self.settings.secret_key:
            raise SecretKeyMissing()
        rotated = self._saved(
            actor, webhook_id, version, lambda s, at: s.rotate_secret(at, actor.account_id)
        )
        return self._with_secret(rotated)

    def _saved(
        self, actor: Principal, webhook_id: str, version: int | None, act: Act
    ) -> WebhookSubscription:
        """Get the subscription at `version` (if named), act on it and save it, again from a
        fresh read if another writer saved it meanwhile."""

        def command() -> WebhookSubscription:
            subscription = self.subscription(actor.tenant_id, webhook_id)
            check_expected_version("webhook", subscription.version, version)
            act(subscription, self.ledger.clock())
            self.ledger.save(subscription)
            return subscription

        return self.ledger.retrying(command)

    def ping(self, actor: Principal, webhook_id: str) -> DeliveryRow:
        """A test message of type `ping`, delivered as any other (the notifier sends it)."""
        subscription = self.subscription(actor.tenant_id, webhook_id)
        subscription.check_enabled()
        at = self.ledger.clock()
        delivery = WebhookDelivery(
            tenant_id=subscription.tenant_id,
            subscription_id=subscription.id,
            source=f"ping/{uuid4()}",
            event_type=PING,
            payload=ping_payload(subscription, at),
            max_attempts=self.policy.max_attempts,
            at=at,
            actor=actor.account_id,
        )
        self.ledger.save(delivery)
        return DeliveryRow.of_aggregate(delivery)

    def redeliver(
        self, actor: Principal, webhook_id: str, delivery_id: str, reason: str | None = None
    ) -> DeliveryRow:
        """Send a delivered or given-up message again, with the same `webhook-id`."""

        def command() -> DeliveryRow:
            delivery = self.delivery(actor.tenant_id, webhook_id, delivery_id)
            delivery.redeliver(self.ledger.clock(), actor.account_id, reason)
            self.ledger.save(delivery)
            return DeliveryRow.of_aggregate(delivery)

        return self.ledger.retrying(command)

    def webhook(self, tenant_id: UUID, webhook_id: str) -> WebhookRow:
        """A live subscription of this tenant, from its `webhooks` row; a deleted or another
        tenant's is not found."""
        try:
            wanted = UUID(webhook_id)
        except ValueError:
            raise NotFound("webhook", webhook_id) from None
        row = webhook_row(self.ledger.store, tenant_id, wanted)
        if row is None:
            raise NotFound("webhook", webhook_id)
        return row

    def current(self, tenant_id: UUID, webhook_id: str) -> WebhookRow:
        """A live subscription of this tenant as its log holds it now, never behind it as its
        row may be: what a write checks If-Match against and a repeated create answers."""
        return WebhookRow.of_aggregate(self.subscription(tenant_id, webhook_id))

    def webhooks(self, tenant_id: UUID, window: Window) -> Page[WebhookRow]:
        """The tenant's subscriptions, oldest first, from their `webhooks` rows."""
        found = webhook_page(self.ledger.store, tenant_id, window)
        return Page.of(found.rows, window, found)

    def deliveries(self, tenant_id: UUID, webhook_id: str, window: Window) -> Page[DeliveryRow]:
        """A live subscription's messages, newest first, from their `webhook_deliveries` rows."""
        subscription = self.webhook(tenant_id, webhook_id)
        found = delivery_page(self.ledger.store, UUID(subscription.id), window)
        return Page.of(found.rows, window, found)

    def timeline(self, tenant_id: UUID, webhook_id: str) -> list[TimelineEntry]:
        return self.ledger.timeline(self.subscription(tenant_id, webhook_id).id)

    def subscription(self, tenant_id: UUID, webhook_id: str) -> WebhookSubscription:
        """A live subscription of this tenant; a deleted or another tenant's is not found."""
        found = self.ledger.find_in_tenant(WebhookSubscription, webhook_id, "webhook", tenant_id)
        if found.deleted:
            raise NotFound("webhook", webhook_id)
        return found

    def delivery(self, tenant_id: UUID, webhook_id: str, delivery_id: str) -> WebhookDelivery:
        """A message of one of this tenant's live subscriptions."""
        subscription = self.subscription(tenant_id, webhook_id)
        found = self.ledger.find_in_tenant(WebhookDelivery, delivery_id, "delivery", tenant_id)
        if found.subscription_id != subscription.id:
            raise NotFound("delivery", delivery_id)
        return found
