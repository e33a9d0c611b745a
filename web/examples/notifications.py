"""Examples of notices: ann's submitted instance, approved by bob."""

from __future__ import annotations

from typing import Any

from web.examples.world import SUBMITTED_INSTANCE_ID

DECIDED = {
    "id": "0f3c5a52-6a46-5b8e-a1c3-0d6c8b1e9f21",
    "kind": "APPLICATION_DECIDED",
    "instance_id": SUBMITTED_INSTANCE_ID,
    "params": {"title": "Open account", "outcome": "APPROVED", "actor": "bob"},
    "created_at": "2026-10-02T09:30:00Z",
    "read_at": None,
}
READ = {**DECIDED, "read_at": "2026-10-02T10:00:00Z"}

EXAMPLES: dict[str, dict[str, Any]] = {
    "NotificationOut": {"unread": DECIDED, "read": READ},
    "NotificationPage": {
        "inbox": {
            "items": [DECIDED],
            "page": 1,
            "page_size": 20,
            "total": 1,
            "total_capped": False,
            "next_cursor": None,
            "unread": 1,
        },
    },
}
