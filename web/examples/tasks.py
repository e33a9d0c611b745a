"""Examples of a reviewer's tasks: olga's inbox, with the instance of web/examples/approvals.py."""

from __future__ import annotations

from typing import Any

from web.examples.world import DEFINITION_ID, SUBMITTED_INSTANCE_ID

CLAIMED_BY_OLGA = {
    "instance_id": SUBMITTED_INSTANCE_ID,
    "task_id": "1",
    "title": "Open account",
    "definition_id": DEFINITION_ID,
    "applicant_id": "ann",
    "review_deadline_at": "2026-10-03T10:00:00Z",
    "time_left_seconds": 171000.0,
    "priority": "normal",
    "state": "ASSIGNED",
    "assignee_id": "olga",
    "claimed_at": "2026-10-01T10:10:00Z",
    "candidates": ["olga", "pei"],
    "decided_by": None,
    "decided_at": None,
    "outcome": None,
    "level": 1,
}

EXAMPLES: dict[str, dict[str, Any]] = {
    "TaskPageOut": {
        "assigned-to-me": {
            "items": [CLAIMED_BY_OLGA],
            "page": 1,
            "page_size": 20,
            "total": 1,
            "total_capped": False,
            "next_cursor": None,
            "counts": {"assigned": 1, "claimable": 3, "decided": 12},
        },
    },
}
