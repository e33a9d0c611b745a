"""Outbound webhooks: subscriptions, their secrets and their deliveries (docs/webhooks.md)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from cronledger.application.idempotency import once
from cronledger.application.webhooks import WebhookWithSecret
from cronledger.persistence.ledger import TimelineEntry
from domain.directory import Principal
from domain.permissions import AUDIT_READ, DIRECTORY_MANAGE
from domain.webhooks import CREATE_WEBHOOK, SubscriptionFields
from projections.webhooks import (
    DELIVERY_LISTING,
    DELIVERY_ORDER,
    WEBHOOK_LISTING,
    WEBHOOK_ORDER,
    DeliveryRow,
    WebhookRow,
)
from web.api import Answered, endpoint, services
from web.command_keys import Replays
from web.idempotency import keyed_request, replay_headers
from web.paging import listed, window
from web.schemas.audit import TimelineOut
from web.schemas.base import ReasonBody, VersionBody, VersionReasonBody
from web.schemas.webhooks import (
    DeliveryListQuery,
    DeliveryOut,
    DeliveryPage,
    WebhookCreate,
    WebhookListQuery,
    WebhookOut,
    WebhookPage,
    WebhookSecretOut,
    WebhookUpdate,
)

bp = Blueprint("webhooks", __name__, url_prefix="/api/webhooks")
TAG = "webhooks"


def _webhook(principal: Principal, webhook_id: str) -> WebhookRow:
    """The subscription as a write reads it: from its log, never behind it."""
    return services().webhooks.current(principal.tenant_id, webhook_id)


def _shown(made: WebhookWithSecret) -> dict[str, Any]:
    """The subscription with its secret, as WebhookSecretOut dumps it."""
    return {**made.webhook._asdict(), "secret": made.secret}


def _without_secret(principal: Principal, webhook_id: str) -> dict[str, Any]:
    """The subscription as a repeated rotation answers it: its secret is shown once."""
    return _shown(WebhookWithSecret(_webhook(principal, webhook_id), None))


def _delivery(
    principal: Principal, webhook_id: str, delivery_id: str = "", answered: str = ""
) -> DeliveryRow:
    """The message a repeated redelivery (`delivery_id`) or ping (`answered`) answers."""
    found = services().webhooks.delivery(principal.tenant_id, webhook_id, delivery_id or answered)
    return DeliveryRow.of_aggregate(found)


def _fields(body: dict[str, Any]) -> SubscriptionFields:
    return SubscriptionFields(
        body["url"], list(body["event_types"]), body["description"], body["enabled"]
    )


def _meaning(fields: dict[str, Any], principal: Principal, **path: str) -> None:
    """The rules the URL (where it points now) and the event types break besides their
    shapes, at once."""
    services().webhooks.check(principal, fields.get("url"), fields.get("event_types"))


@bp.post("")
@endpoint(
    "Subscribe a URL to messages (the signing secret is shown once)",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=WebhookCreate,
    versioned=True,
    response=WebhookSecretOut,
    status=201,
    location="/api/webhooks/{id}",
    idempotent=True,
    meaning=_meaning,
)
def create_webhook(principal: Principal, body: dict[str, Any]) -> Answered:
    request = keyed_request(principal, CREATE_WEBHOOK)
    created = once(
        lambda: services().webhooks.create(principal, _fields(body), request),
        lambda webhook_id: WebhookWithSecret(_webhook(principal, webhook_id), None),
    )
    return Answered(_shown(created.value), 201, replay_headers(created.replayed))


@bp.get("")
@endpoint(
    "List webhook subscriptions",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    query=WebhookListQuery,
    response=WebhookPage,
)
def list_webhooks(principal: Principal, query: dict[str, Any]) -> Answered:
    page = services().webhooks.webhooks(principal.tenant_id, window(query, WEBHOOK_LISTING))
    return listed(page, WEBHOOK_ORDER, WebhookOut)


@bp.get("/<webhook_id>")
@endpoint(
    "Read a webhook subscription (never its secret)",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    versioned=True,
    response=WebhookOut,
)
def get_webhook(principal: Principal, webhook_id: str) -> WebhookRow:
    return services().webhooks.webhook(principal.tenant_id, webhook_id)


@bp.put("/<webhook_id>")
@endpoint(
    "Replace a webhook subscription's URL, types, description and whether it is enabled",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=WebhookUpdate,
    versioned=_webhook,
    response=WebhookOut,
    meaning=_meaning,
)
def update_webhook(principal: Principal, webhook_id: str, body: dict[str, Any]) -> WebhookRow:
    return services().webhooks.update(principal, webhook_id, _fields(body), body["version"])


@bp.delete("/<webhook_id>")
@endpoint(
    "Delete a webhook subscription: its waiting messages are cancelled",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=VersionReasonBody,
    versioned=_webhook,
    status=204,
)
def delete_webhook(principal: Principal, webhook_id: str, body: dict[str, Any]) -> None:
    services().webhooks.delete(principal, webhook_id, body.get("version"), body["reason"])


@bp.post("/<webhook_id>/rotate-secret")
@endpoint(
    "Rotate the signing secret (the new one is shown once; the old one stops at once)",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=VersionBody,
    versioned=_webhook,
    response=WebhookSecretOut,
    idempotent=Replays(_without_secret),
)
def rotate_webhook_secret(
    principal: Principal, webhook_id: str, body: dict[str, Any]
) -> dict[str, Any]:
    return _shown(services().webhooks.rotate_secret(principal, webhook_id, body.get("version")))


@bp.post("/<webhook_id>/ping")
@endpoint(
    "Send a test message of type `ping` (the notifier delivers it like any other)",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    response=DeliveryOut,
    status=202,
    idempotent=Replays(_delivery, by_answer=True),
)
def ping_webhook(principal: Principal, webhook_id: str) -> DeliveryRow:
    return services().webhooks.ping(principal, webhook_id)


@bp.get("/<webhook_id>/deliveries")
@endpoint(
    "A subscription's messages, newest first: status, attempts, last response and latency",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    query=DeliveryListQuery,
    response=DeliveryPage,
)
def list_webhook_deliveries(
    principal: Principal, webhook_id: str, query: dict[str, Any]
) -> Answered:
    wanted = window(query, DELIVERY_LISTING)
    page = services().webhooks.deliveries(principal.tenant_id, webhook_id, wanted)
    return listed(page, DELIVERY_ORDER, DeliveryOut)


@bp.post("/<webhook_id>/deliveries/<delivery_id>/redeliver")
@endpoint(
    "Send a delivered or given-up message again, with the same `webhook-id`",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=ReasonBody,
    response=DeliveryOut,
    status=202,
    idempotent=Replays(_delivery),
)
def redeliver_webhook(
    principal: Principal, webhook_id: str, delivery_id: str, body: dict[str, Any]
) -> DeliveryRow:
    return services().webhooks.redeliver(principal, webhook_id, delivery_id, body["reason"])


@bp.get("/<webhook_id>/timeline")
@endpoint(
    "Every event of the webhook subscription", tag=TAG, permission=AUDIT_READ, response=TimelineOut
)
def webhook_timeline(principal: Principal, webhook_id: str) -> dict[str, list[TimelineEntry]]:
    return {"items": services().webhooks.timeline(principal.tenant_id, webhook_id)}
