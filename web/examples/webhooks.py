"""Examples of webhook subscriptions and their deliveries."""

from __future__ import annotations

from typing import Any

from web.examples.world import CREATED_AT

WEBHOOK_ID = "7c1e3f0a-5b2d-4e8f-9a61-3d2c4b5a6f70"
# The dead letter of FAILING_RUN_ID told to WEBHOOK_ID, and a ping (ids derived as the server
# derives them: domain.webhooks.delivery_uuid).
DEAD_LETTER_DELIVERY_ID = "362f4481-f145-5dcb-ba3a-b206ddfb562f"
PING_DELIVERY_ID = "fe834a6a-fe65-5bb9-ac27-01fd6feac238"

FIELDS = {
    "url": "https://ops.example.com/hooks/cronledger",
    "event_types": ["run.dead_lettered", "approval.expired", "callback.late"],
    "description": "on-call alerts",
    "enabled": True,
}
WEBHOOK = {
    "id": WEBHOOK_ID,
    **FIELDS,
    "generation": 1,
    "version": 1,
    "created_at": CREATED_AT,
    "updated_at": CREATED_AT,
}
ROTATED = {**WEBHOOK, "generation": 2, "version": 2, "updated_at": "2026-10-02T08:00:00Z"}
DEAD_LETTER = {
    "id": DEAD_LETTER_DELIVERY_ID,
    "message_id": "msg_362f4481f1455dcbba3ab206ddfb562f",
    "event_type": "run.dead_lettered",
    "status": "DELIVERED",
    "attempts": 2,
    "max_attempts": 8,
    "response_status": 204,
    "latency_seconds": 0.182,
    "last_error": None,
    "next_attempt_at": None,
    "created_at": "2026-10-01T10:05:01Z",
    "finished_at": "2026-10-01T10:05:32Z",
    "version": 5,
}
PING = {
    "id": PING_DELIVERY_ID,
    "message_id": "msg_fe834a6afe655bb9ac2701fd6feac238",
    "event_type": "ping",
    "status": "PENDING",
    "attempts": 0,
    "max_attempts": 8,
    "response_status": None,
    "latency_seconds": None,
    "last_error": None,
    "next_attempt_at": "2026-10-01T11:00:00Z",
    "created_at": "2026-10-01T11:00:00Z",
    "finished_at": None,
    "version": 1,
}
GIVEN_UP = {
    **PING,
    "status": "FAILED",
    "attempts": 8,
    "last_error": "no answer within the timeouts",
    "next_attempt_at": None,
    "finished_at": "2026-10-01T13:07:40Z",
    "version": 17,
}

EXAMPLES: dict[str, dict[str, Any]] = {
    "WebhookCreate": {"on-call": FIELDS},
    "WebhookUpdate": {"disabled": {**FIELDS, "enabled": False, "version": 1}},
    "WebhookOut": {"created": WEBHOOK, "rotated": ROTATED},
    "WebhookSecretOut": {
        "created": {**WEBHOOK, "secret": "whsec_DdqK9uOIf12CyI03cs3o9W9nYijH2YRgvlJMWeqXc1k="},
        "rotated": {**ROTATED, "secret": "whsec_ohL8n132x/k1gpkiyQr97uFvh4yT+Z+pOmfa73DdBzc="},
        "replayed": {**WEBHOOK, "secret": None},
    },
    "WebhookPage": {
        "first-page": {
            "items": [WEBHOOK],
            "page": 1,
            "page_size": 20,
            "total": 1,
            "total_capped": False,
            "next_cursor": None,
        },
    },
    "DeliveryOut": {
        "ping": PING,
        "redelivered": {
            **GIVEN_UP,
            "status": "PENDING",
            "next_attempt_at": "2026-10-01T14:00:00Z",
            "finished_at": None,
            "version": 18,
        },
    },
    "DeliveryPage": {
        "first-page": {
            "items": [PING, DEAD_LETTER],
            "page": 1,
            "page_size": 20,
            "total": 2,
            "total_capped": False,
            "next_cursor": None,
        },
        "given-up": {
            "items": [GIVEN_UP],
            "page": 1,
            "page_size": 1,
            "total": 2,
            "total_capped": False,
            "next_cursor": "WyJ3ZWJob29rX2RlbGl2ZXJpZXMiLDEyXX42MTE0NmZkZmU2ODU",
        },
    },
}
