"""Request and response shapes of outbound webhooks (docs/webhooks.md)."""

from __future__ import annotations

from marshmallow import fields

from domain.webhooks import DELIVERY_STATUSES, EVENT_TYPES, MAX_DESCRIPTION, MAX_URL
from projections.webhooks import DELIVERY_LISTING, WEBHOOK_LISTING
from web.schemas import validate
from web.schemas.base import (
    Choice,
    Choices,
    OutSchema,
    StrictSchema,
    UtcDateTime,
    list_query,
    page_of,
    replacing,
    server_uuid,
    strict_bool,
)

WEBHOOK_EVENT_TYPE = Choices(
    "WebhookEventType",
    EVENT_TYPES,
    "a type of message a webhook subscription may hear (docs/webhooks.md#event-types)",
)
DELIVERY_STATUS = Choices(
    "DeliveryStatus",
    DELIVERY_STATUSES,
    "where a message stands: waiting for an attempt (`PENDING`, `RETRY_WAIT`), being sent, "
    "`DELIVERED`, `FAILED` (given up after its last attempt; redeliverable), or `CANCELLED` "
    "(its subscription was deleted while it waited)",
)


class WebhookFieldsIn(StrictSchema):
    url = fields.String(
        required=True,
        validate=validate.Length(1, MAX_URL),
        metadata={
            "description": "where messages are posted: https (http only when the operator "
            "allows it); its host must resolve to public addresses unless the operator allows "
            "private ones (docs/webhooks.md#safe-by-default)"
        },
    )
    event_types = fields.List(
        Choice(WEBHOOK_EVENT_TYPE),
        required=True,
        validate=validate.Length(1, len(EVENT_TYPES)),
        metadata={"description": "the types of message it hears, at least one"},
    )
    description = fields.String(validate=validate.Length(max=MAX_DESCRIPTION), load_default="")
    enabled = strict_bool(
        load_default=True,
        metadata={"description": "a disabled subscription gets no message; those waiting wait"},
    )


class WebhookCreate(WebhookFieldsIn):
    pass


WebhookUpdate = replacing(WebhookFieldsIn, "WebhookUpdate")


class WebhookOut(OutSchema):
    id = server_uuid()
    url = fields.String()
    event_types = fields.List(Choice(WEBHOOK_EVENT_TYPE))
    description = fields.String()
    enabled = fields.Boolean()
    generation = fields.Integer(
        metadata={"description": "which secret signs its messages: 1, then one more per rotation"}
    )
    version = fields.Integer()
    created_at = UtcDateTime()
    updated_at = UtcDateTime()


class WebhookSecretOut(WebhookOut):
    secret = fields.String(
        allow_none=True,
        metadata={
            "description": "the signing secret (`whsec_` and base64), shown this once: keep it "
            "to verify the messages (null when a repeated create is answered)"
        },
    )


class DeliveryOut(OutSchema):
    id = server_uuid()
    message_id = fields.String(
        metadata={"description": "its `webhook-id` header: the same on every attempt"}
    )
    event_type = Choice(WEBHOOK_EVENT_TYPE)
    status = Choice(DELIVERY_STATUS)
    attempts = fields.Integer(metadata={"description": "attempts made, redeliveries included"})
    max_attempts = fields.Integer(
        metadata={"description": "attempts of a round before it is given up"}
    )
    response_status = fields.Integer(
        allow_none=True,
        metadata={"description": "the receiver's status on the last attempt; null: no answer"},
    )
    latency_seconds = fields.Float(
        allow_none=True, metadata={"description": "how long the last attempt waited for it"}
    )
    last_error = fields.String(
        allow_none=True, metadata={"description": "why the last attempt failed; null if it did not"}
    )
    next_attempt_at = UtcDateTime(
        allow_none=True, metadata={"description": "when it is tried next; null unless waiting"}
    )
    created_at = UtcDateTime()
    finished_at = UtcDateTime(
        allow_none=True, metadata={"description": "when it was delivered or given up"}
    )
    version = fields.Integer()


WebhookPage = page_of(WebhookOut)
DeliveryPage = page_of(DeliveryOut)


WebhookListQuery = list_query("WebhookListQuery", WEBHOOK_LISTING, "URL or description")
DeliveryListQuery = list_query("DeliveryListQuery", DELIVERY_LISTING, "event type or message id")
