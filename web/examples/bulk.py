"""Examples of bulk actions: two schedules disabled (one refused as stale), a run now of both,
and a cancel of a run waiting to retry beside one already launched."""

from __future__ import annotations

from typing import Any

from web.examples.world import (
    CRON_SCHEDULE_ID,
    FAILING_RUN_ID,
    MANUAL_RUN_ID,
    PRESET_SCHEDULE_ID,
    SKIPPED_RUN_ID,
    WINDOW_SCHEDULE_ID,
)

STALE = {
    "id": WINDOW_SCHEDULE_ID,
    "outcome": "REFUSED",
    "status": 409,
    "code": "VERSION_CONFLICT",
    "detail": "schedule is at version 2, not 1: reload it and apply your change again",
    "errors": {},
    "name": "Market hours check",
    "version": None,
    "run_id": None,
    "run_status": None,
}
GONE = {
    "id": PRESET_SCHEDULE_ID,
    "outcome": "REFUSED",
    "status": 404,
    "code": "NOT_FOUND",
    "detail": f"schedule {PRESET_SCHEDULE_ID} was not found",
    "errors": {},
    "name": None,
    "version": None,
    "run_id": None,
    "run_status": None,
}

EXAMPLES: dict[str, dict[str, Any]] = {
    "ScheduleBulkIn": {
        "disable": {
            "action": "disable",
            "ids": [CRON_SCHEDULE_ID, WINDOW_SCHEDULE_ID, PRESET_SCHEDULE_ID],
            "versions": {CRON_SCHEDULE_ID: 2, WINDOW_SCHEDULE_ID: 1},
            "reason": "month-end freeze",
        },
        "run-now": {
            "action": "run",
            "ids": [CRON_SCHEDULE_ID],
            "request_id": "ops-2026-10-01-1",
        },
    },
    "RunBulkIn": {
        "cancel": {"action": "cancel", "ids": [FAILING_RUN_ID, SKIPPED_RUN_ID]},
        "cancel-one": {"action": "cancel", "ids": [FAILING_RUN_ID]},
    },
    "BulkOut": {
        "disable": {
            "action": "disable",
            "items": [
                {
                    "id": CRON_SCHEDULE_ID,
                    "outcome": "DONE",
                    "status": 200,
                    "code": None,
                    "detail": None,
                    "errors": {},
                    "name": "Daily check",
                    "version": 3,
                    "run_id": None,
                    "run_status": None,
                },
                STALE,
                GONE,
            ],
        },
        "run-now": {
            "action": "run",
            "items": [
                {
                    "id": CRON_SCHEDULE_ID,
                    "outcome": "DONE",
                    "status": 202,
                    "code": None,
                    "detail": None,
                    "errors": {},
                    "name": "Daily check",
                    "version": None,
                    "run_id": MANUAL_RUN_ID,
                    "run_status": "PENDING",
                },
            ],
        },
        "cancel": {
            "action": "cancel",
            "items": [
                {
                    "id": FAILING_RUN_ID,
                    "outcome": "DONE",
                    "status": 202,
                    "code": None,
                    "detail": None,
                    "errors": {},
                    "name": "Market hours check 2026-10-01",
                    "version": 4,
                    "run_id": FAILING_RUN_ID,
                    "run_status": "CANCELLED",
                },
                {
                    "id": SKIPPED_RUN_ID,
                    "outcome": "REFUSED",
                    "status": 409,
                    "code": "INVALID_STATE",
                    "detail": f"run {SKIPPED_RUN_ID} is SKIPPED_OVERLAP: only PENDING or "
                    "RETRY_WAIT runs can be cancelled",
                    "errors": {},
                    "name": "Daily check 2026-10-02",
                    "version": None,
                    "run_id": None,
                    "run_status": None,
                },
            ],
        },
    },
}
