"""`webhooks` (a tenant's subscriptions) and `webhook_deliveries` (each message and its attempts).

`webhook_deliveries.due_at` is when the notifier may next try a message: its next attempt, or
when the lease of the attempt being sent runs out; null once it is delivered, given up, or
cancelled (its subscription was deleted while it waited). `position` is where the message was
scheduled on the log: a subscription's messages go out in that order.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from cronledger.persistence.store import Store, as_instant
from domain.webhooks import (
    CANCELLED,
    PENDING,
    RETRY_WAIT,
    SENDING,
    WebhookDelivery,
    WebhookSubscription,
    message_id_of,
)
from projections.engine import EventClass, Handler, Projection, Sql, Stamped
from projections.keyset import ListSpec, Order, Row, Slice, Window, read_slice

# Oldest first, as they were created; a subscription's messages newest first.
WEBHOOK_ORDER = Order("webhooks", "position")
DELIVERY_ORDER = Order("webhook_deliveries", "position", descending=True)
WEBHOOK_LISTING = ListSpec(
    WEBHOOK_ORDER,
    "created_at",
    {"url": "url", "created_at": "position", "updated_at": "updated_at", "enabled": "enabled"},
    tie="position",
    searched=("LOWER(url)", "LOWER(description)"),
)
DELIVERY_LISTING = ListSpec(
    DELIVERY_ORDER,
    "-created_at",
    {"created_at": "position", "status": "status", "event_type": "event_type"},
    tie="position",
    searched=("LOWER(event_type)", "LOWER(message_id)"),
)
NOT_CANCELLED = f"status <> '{CANCELLED}'"


class WebhooksProjection(Projection):
    """One row per live subscription (a deleted one's row is removed), one per message."""

    name = "webhooks"
    tables = ("webhooks", "webhook_deliveries")

    def ddl(self, sql: Sql) -> list[str]:
        ts, seconds = sql.timestamp_type, sql.seconds_type
        return [
            "CREATE TABLE IF NOT EXISTS webhooks ("
            "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, url TEXT NOT NULL, "
            "event_types TEXT NOT NULL, description TEXT NOT NULL, enabled BOOLEAN NOT NULL, "
            f"generation INTEGER NOT NULL, created_at {ts} NOT NULL, updated_at {ts} NOT NULL, "
            "version INTEGER NOT NULL, position BIGINT NOT NULL)",
            "CREATE INDEX IF NOT EXISTS webhooks_in_order ON webhooks (tenant_id, position)",
            "CREATE TABLE IF NOT EXISTS webhook_deliveries ("
            "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, subscription_id TEXT NOT NULL, "
            "event_type TEXT NOT NULL, message_id TEXT NOT NULL, status TEXT NOT NULL, "
            "attempts INTEGER NOT NULL, max_attempts INTEGER NOT NULL, response_status INTEGER, "
            f"latency_seconds {seconds}, last_error TEXT, next_attempt_at {ts}, due_at {ts}, "
            f"created_at {ts} NOT NULL, updated_at {ts} NOT NULL, finished_at {ts}, "
            "version INTEGER NOT NULL, position BIGINT NOT NULL)",
            "CREATE INDEX IF NOT EXISTS webhook_deliveries_in_order "
            "ON webhook_deliveries (subscription_id, position)",
            "CREATE INDEX IF NOT EXISTS webhook_deliveries_due "
            "ON webhook_deliveries (due_at) WHERE due_at IS NOT NULL",
        ]

    def handlers(self) -> dict[EventClass, Handler]:
        return {
            WebhookSubscription.Created: self.created,
            WebhookSubscription.Changed: _subscription(
                lambda e: {
                    "url": e.url,
                    "event_types": ",".join(e.event_types),
                    "description": e.description,
                    "enabled": e.enabled,
                }
            ),
            WebhookSubscription.SecretRotated: _subscription(
                lambda e: {"generation": e.generation}
            ),
            WebhookSubscription.Deleted: self.deleted,
            WebhookDelivery.Scheduled: self.scheduled,
            WebhookDelivery.AttemptStarted: _delivery(
                lambda e: {
                    "status": SENDING,
                    "attempts": e.number,
                    "next_attempt_at": None,
                    "due_at": e.lease_expires_at,
                }
            ),
            WebhookDelivery.AttemptSucceeded: _delivery(
                lambda e: {
                    "status": e.status,
                    "response_status": e.response_status,
                    "latency_seconds": e.latency_seconds,
                    "last_error": None,
                    "next_attempt_at": None,
                    "due_at": None,
                    "finished_at": e.at,
                }
            ),
            WebhookDelivery.AttemptFailed: _delivery(
                lambda e: {
                    **_ended(e),
                    "response_status": e.response_status,
                    "latency_seconds": e.latency_seconds,
                }
            ),
            WebhookDelivery.AttemptInterrupted: _delivery(
                lambda e: {**_ended(e), "response_status": None, "latency_seconds": None}
            ),
            WebhookDelivery.Redelivered: _delivery(
                lambda e: {
                    "status": e.status,
                    "next_attempt_at": e.at,
                    "due_at": e.at,
                    "finished_at": None,
                }
            ),
        }

    @staticmethod
    def created(sql: Sql, event: WebhookSubscription.Created, position: int) -> None:
        sql.write(
            "INSERT INTO webhooks (id, tenant_id, url, event_types, description, enabled, "
            "generation, created_at, updated_at, version, position) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                str(event.originator_id),
                str(event.tenant_id),
                event.url,
                ",".join(event.event_types),
                event.description,
                event.enabled,
                event.generation,
                event.at,
                event.at,
                event.originator_version,
                position,
            ),
        )

    @staticmethod
    def deleted(sql: Sql, event: WebhookSubscription.Deleted, position: int) -> None:
        """The row goes; its messages still waiting will never be sent."""
        subscription_id = str(event.originator_id)
        sql.write("DELETE FROM webhooks WHERE id = ?", (subscription_id,))
        sql.write(
            f"UPDATE webhook_deliveries SET status = '{CANCELLED}', due_at = NULL, "  # noqa: S608
            "next_attempt_at = NULL, updated_at = ? WHERE subscription_id = ? "
            "AND due_at IS NOT NULL",
            (event.at, subscription_id),
        )

    @staticmethod
    def scheduled(sql: Sql, event: WebhookDelivery.Scheduled, position: int) -> None:
        """A new message; one scheduled for a subscription deleted meanwhile is cancelled."""
        delivery_id = str(event.originator_id)
        sql.write(
            "INSERT INTO webhook_deliveries (id, tenant_id, subscription_id, event_type, "
            "message_id, status, attempts, max_attempts, next_attempt_at, due_at, created_at, "
            "updated_at, version, position) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)",
            (
                delivery_id,
                str(event.tenant_id),
                str(event.subscription_id),
                event.event_type,
                message_id_of(event.originator_id),
                PENDING,
                event.max_attempts,
                event.at,
                event.at,
                event.at,
                event.at,
                event.originator_version,
                position,
            ),
        )
        sql.write(
            f"UPDATE webhook_deliveries SET status = '{CANCELLED}', due_at = NULL, "  # noqa: S608
            "next_attempt_at = NULL WHERE id = ? AND NOT EXISTS "
            "(SELECT 1 FROM webhooks WHERE webhooks.id = webhook_deliveries.subscription_id)",
            (delivery_id,),
        )


def _ended(
    event: WebhookDelivery.AttemptFailed | WebhookDelivery.AttemptInterrupted,
) -> dict[str, Any]:
    """A failed or interrupted attempt: waiting to retry, or given up."""
    return {
        "status": event.status,
        "last_error": event.error,
        "next_attempt_at": event.next_attempt_at,
        "due_at": event.next_attempt_at,
        "finished_at": None if event.next_attempt_at else event.at,
    }


def _subscription(columns_of: Callable[[Any], dict[str, Any]]) -> Handler:
    def handler(sql: Sql, event: Stamped, position: int) -> None:
        columns = {**columns_of(event), "updated_at": event.at, "version": event.originator_version}
        assignments = ", ".join(f"{name} = ?" for name in columns)
        sql.write(
            f"UPDATE webhooks SET {assignments} WHERE id = ?",  # noqa: S608
            (*columns.values(), str(event.originator_id)),
        )

    return handler


def _delivery(columns_of: Callable[[Any], dict[str, Any]]) -> Handler:
    """A handler setting a message's columns, unless it was cancelled with its subscription."""

    def handler(sql: Sql, event: Stamped, position: int) -> None:
        columns = {**columns_of(event), "updated_at": event.at, "version": event.originator_version}
        if columns.get("latency_seconds") is not None:
            columns["latency_seconds"] = _rounded_latency(columns["latency_seconds"])
        assignments = ", ".join(f"{name} = ?" for name in columns)
        sql.write(
            f"UPDATE webhook_deliveries SET {assignments} WHERE id = ? AND {NOT_CANCELLED}",  # noqa: S608
            (*columns.values(), str(event.originator_id)),
        )

    return handler


def _rounded_latency(seconds: Any) -> float:
    """A latency as `webhook_deliveries` keeps it: to the microsecond."""
    return round(float(seconds), 6)


class WebhookRow(NamedTuple):
    """A subscription as its `webhooks` row keeps it: what the API answers of it."""

    id: str
    url: str
    event_types: list[str]
    description: str
    enabled: bool
    generation: int
    version: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: Row) -> WebhookRow:
        values = dict(zip(cls._fields, row, strict=True))
        values["event_types"] = values["event_types"].split(",") if values["event_types"] else []
        values["enabled"] = bool(values["enabled"])
        values["created_at"] = as_instant(values["created_at"])
        values["updated_at"] = as_instant(values["updated_at"])
        return cls(**values)

    @classmethod
    def of_aggregate(cls, subscription: WebhookSubscription) -> WebhookRow:
        """The subscription as a command left it: what its row holds once the read model has
        applied the command's events."""
        return cls(
            id=str(subscription.id),
            url=subscription.url,
            event_types=list(subscription.event_types),
            description=subscription.description,
            enabled=subscription.enabled,
            generation=subscription.generation,
            version=subscription.version,
            created_at=subscription.created_at,
            updated_at=subscription.updated_at,
        )


class DeliveryRow(NamedTuple):
    """A message as its `webhook_deliveries` row keeps it."""

    id: str
    subscription_id: str
    message_id: str
    event_type: str
    status: str
    attempts: int
    max_attempts: int
    response_status: int | None
    latency_seconds: float | None
    last_error: str | None
    next_attempt_at: datetime | None
    created_at: datetime
    finished_at: datetime | None
    version: int

    @classmethod
    def of(cls, row: Row) -> DeliveryRow:
        values = dict(zip(cls._fields, row, strict=True))
        for name in ("next_attempt_at", "created_at", "finished_at"):
            values[name] = as_instant(values[name])
        latency = values["latency_seconds"]
        values["latency_seconds"] = None if latency is None else float(latency)
        return cls(**values)

    @classmethod
    def of_aggregate(cls, delivery: WebhookDelivery) -> DeliveryRow:
        """The message as a command left it: what its row holds once the read model has
        applied the command's events (its last attempt's latency rounded as the row keeps it)."""
        last = delivery.attempts[-1] if delivery.attempts else {}
        latency = last.get("latency_seconds")
        waiting = delivery.status in (PENDING, RETRY_WAIT)
        return cls(
            id=str(delivery.id),
            subscription_id=str(delivery.subscription_id),
            message_id=delivery.message_id,
            event_type=delivery.event_type,
            status=delivery.status,
            attempts=len(delivery.attempts),
            max_attempts=delivery.max_attempts,
            response_status=last.get("response_status"),
            latency_seconds=None if latency is None else _rounded_latency(latency),
            last_error=last.get("error"),
            next_attempt_at=delivery.next_attempt_at if waiting else None,
            created_at=delivery.created_at,
            finished_at=delivery.finished_at,
            version=delivery.version,
        )


class SubscriptionRow(NamedTuple):
    """What the notifier needs of an enabled subscription to schedule messages for it."""

    id: UUID
    tenant_id: UUID
    event_types: frozenset[str]
    position: int


def webhook_page(store: Store, tenant_id: UUID, window: Window) -> Slice[WebhookRow]:
    """One page of the tenant's subscriptions (oldest first unless sorted), and how many."""
    where = ("tenant_id = ?", [str(tenant_id)])
    columns = ", ".join(WebhookRow._fields)
    found = read_slice(store, "webhooks", where, WEBHOOK_LISTING, window, columns)
    return found.mapped(WebhookRow.of)


def webhook_row(store: Store, tenant_id: UUID, webhook_id: UUID) -> WebhookRow | None:
    """The tenant's live subscription as its row keeps it; None if there is none (deleted, or
    another tenant's)."""
    rows = store.query(
        f"SELECT {', '.join(WebhookRow._fields)} FROM webhooks "  # noqa: S608
        "WHERE id = ? AND tenant_id = ?",
        (str(webhook_id), str(tenant_id)),
    )
    return WebhookRow.of(rows[0]) if rows else None


def live_webhook_count(store: Store, tenant_id: UUID) -> int:
    """How many live subscriptions (enabled or not) the tenant has."""
    rows = store.query("SELECT COUNT(*) FROM webhooks WHERE tenant_id = ?", (str(tenant_id),))
    return int(rows[0][0])


def delivery_page(store: Store, subscription_id: UUID, window: Window) -> Slice[DeliveryRow]:
    """One page of a subscription's messages (newest first unless sorted), and how many."""
    where = ("subscription_id = ?", [str(subscription_id)])
    columns = ", ".join(DeliveryRow._fields)
    found = read_slice(store, "webhook_deliveries", where, DELIVERY_LISTING, window, columns)
    return found.mapped(DeliveryRow.of)


def enabled_subscriptions(store: Store) -> list[SubscriptionRow]:
    """Every enabled subscription, of every tenant (few: one query per batch of the log)."""
    rows = store.query("SELECT id, tenant_id, event_types, position FROM webhooks WHERE enabled")
    return [
        SubscriptionRow(UUID(i), UUID(t), frozenset(kinds.split(",")), int(p))
        for i, t, kinds, p in rows
    ]


class Due(NamedTuple):
    """A message due now, and whose tenant it is."""

    delivery_id: UUID
    tenant_id: UUID


def due_deliveries(store: Store, now: datetime, limit: int, per_tenant: int) -> list[Due]:
    """Messages due now, at most one per subscription: each enabled subscription's oldest
    waiting message, if its time has come (a later one never overtakes it). At most
    `per_tenant` of each tenant, taken in turns: every tenant's longest due first, then every
    tenant's second, and so on, so that no tenant fills the `limit` alone."""
    rows = store.query(
        "SELECT id, tenant_id FROM (SELECT d.id, d.tenant_id, d.due_at, d.position, "
        "ROW_NUMBER() OVER (PARTITION BY d.tenant_id ORDER BY d.due_at, d.position) AS turn "
        "FROM webhook_deliveries d JOIN webhooks w ON w.id = d.subscription_id "
        "WHERE w.enabled AND d.due_at IS NOT NULL AND d.due_at <= ? AND d.position = ("
        "SELECT MIN(e.position) FROM webhook_deliveries e "
        "WHERE e.subscription_id = d.subscription_id AND e.due_at IS NOT NULL)) due "
        "WHERE turn <= ? ORDER BY turn, due_at, position LIMIT ?",
        (now, per_tenant, limit),
    )
    return [Due(UUID(delivery_id), UUID(tenant_id)) for delivery_id, tenant_id in rows]


def waiting_deliveries(store: Store) -> tuple[int, datetime | None]:
    """How many messages wait to be delivered, and the earliest time one of them was due."""
    count, oldest = store.query(
        "SELECT COUNT(*), MIN(due_at) FROM webhook_deliveries WHERE due_at IS NOT NULL"
    )[0]
    return int(count), as_instant(oldest)
