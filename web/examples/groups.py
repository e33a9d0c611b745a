"""Examples of groups: `finance` and, under it, `finance.payables` of tenant `acme`."""

from __future__ import annotations

from typing import Any

from web.examples.world import CREATED_AT

FINANCE = {
    "id": "0541a0fc-ebc5-571b-9ba8-99052b457d25",  # derived from the tenant and the key
    "key": "finance",
    "name": "财务部 Finance",
    "members": ["olga"],
    "leader_id": "olga",
    "parent_key": None,
    "created_at": CREATED_AT,
    "updated_at": CREATED_AT,
    "version": 1,
}
PAYABLES = {
    "id": "029ad42a-8bf3-58bc-9284-8d855fafb94e",
    "key": "finance.payables",
    "name": "应付组 Payables",
    "members": ["ann", "bob"],
    "leader_id": "bob",
    "parent_key": "finance",
    "created_at": CREATED_AT,
    "updated_at": "2026-10-01T12:00:00Z",
    "version": 2,
}
PAYABLES_FIELDS = {
    "name": "应付组 Payables",
    "members": ["ann", "bob"],
    "leader_id": "bob",
    "parent_key": "finance",
}

EXAMPLES: dict[str, dict[str, Any]] = {
    "GroupCreate": {"payables": {"key": "finance.payables", **PAYABLES_FIELDS}},
    "GroupUpdate": {
        "new-leader": {**PAYABLES_FIELDS, "version": 1, "reason": "Bob leads payables now"}
    },
    "GroupPatch": {"new-leader": {"leader_id": "bob", "version": 1}},
    "GroupOut": {"top": FINANCE, "under-finance": PAYABLES},
    "GroupPage": {
        "first-page": {
            "items": [FINANCE, PAYABLES],
            "page": 1,
            "page_size": 20,
            "total": 2,
            "total_capped": False,
            "next_cursor": None,
        },
    },
}
