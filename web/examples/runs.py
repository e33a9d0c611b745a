"""Examples of runs: registered by run now, launched, skipped, failing with a retry due, and
a nightly `audit.verify` job's run with its result."""

from __future__ import annotations

from typing import Any

from web.examples.world import (
    CRON_SCHEDULE_ID,
    FAILING_RUN_ID,
    LAUNCHED_INSTANCE_ID,
    MANUAL_RUN_ID,
    NIGHTLY_SCHEDULE_ID,
    SKIPPED_RUN_ID,
    VERIFIED_RUN_ID,
    WINDOW_SCHEDULE_ID,
    WORKER,
)

REGISTERED = {
    "id": MANUAL_RUN_ID,
    "schedule_id": CRON_SCHEDULE_ID,
    "schedule_version": 2,
    "definition_revision": 1,
    "target_kind": "approval",
    "planned_at": "2026-10-01T09:00:00Z",
    "planned_at_local": "2026-10-01T17:00:00+08:00",
    "trigger": "manual",
    "triggered_by": "root",
    "request_id": "ops-2026-10-01-1",
    "status": "PENDING",
    "title": "Daily check 2026-10-01",
    "form_data": {"region": "east"},
    "initiator_id": "ann",
    "attempt_count": 0,
    "max_attempts": 5,
    "next_attempt_at": "2026-10-01T09:00:00Z",
    "last_error": None,
    "instance_id": None,
    "result": None,
    "registered_at": "2026-10-01T09:00:00Z",
    "started_at": None,
    "finished_at": None,
    "duration_seconds": None,
    "error_code": None,
    "trace_id": "2c837076d6d759d7b5e9e31aec995670",
    "skipped_count": 0,
    "missed_until": None,
    "skip_reason": None,
    "moved_to": None,
    "moved_to_local": None,
    "calendar": None,
    "version": 1,
}
LAUNCHED = {
    **REGISTERED,
    "status": "SUCCEEDED",
    "attempt_count": 1,
    "next_attempt_at": None,
    "instance_id": LAUNCHED_INSTANCE_ID,
    "started_at": "2026-10-01T09:00:01Z",
    "finished_at": "2026-10-01T09:00:01.25Z",
    "duration_seconds": 0.25,
    "version": 3,
}
SKIPPED = {
    **REGISTERED,
    "id": SKIPPED_RUN_ID,
    "planned_at": "2026-10-02T01:00:00Z",
    "planned_at_local": "2026-10-02T09:00:00+08:00",
    "trigger": "schedule",
    "triggered_by": "system:tick",
    "request_id": None,
    "status": "SKIPPED_OVERLAP",
    "title": "Daily check 2026-10-02",
    "next_attempt_at": None,
    "registered_at": "2026-10-02T01:00:01Z",
    "finished_at": "2026-10-02T01:00:01Z",
    "trace_id": "45d04c60366d55cba049b123fb86fb85",
    "skip_reason": {
        "code": "OVERLAP",
        "blocking_run_id": MANUAL_RUN_ID,
        "blocking_status": "SUCCEEDED",
        "blocking_instance_id": LAUNCHED_INSTANCE_ID,
        "count": None,
    },
    "version": 2,
}
INACTIVE = {
    "code": "INITIATOR_INACTIVE",
    "message": "initiator ann is inactive",
    "params": {"subject": "ann"},
}
FAILING = {
    **REGISTERED,
    "id": FAILING_RUN_ID,
    "schedule_id": WINDOW_SCHEDULE_ID,
    "schedule_version": 1,
    "request_id": "ops-2026-10-01-2",
    "status": "RETRY_WAIT",
    "title": "Market hours check 2026-10-01",
    "form_data": {},
    "attempt_count": 1,
    "next_attempt_at": "2026-10-01T09:00:31Z",
    "last_error": INACTIVE,
    "started_at": "2026-10-01T09:00:01Z",
    "error_code": "INITIATOR_INACTIVE",
    "trace_id": "334cb6cdb70e573db662ebe5c1bc1646",
    "version": 3,
}


VERIFY_RESULT = {
    "ok": True,
    "full": False,
    "events_verified": 120,
    "from_position": 1001,
    "to_position": 1120,
}
VERIFIED = {
    **REGISTERED,
    "id": VERIFIED_RUN_ID,
    "schedule_id": NIGHTLY_SCHEDULE_ID,
    "schedule_version": 1,
    "definition_revision": None,
    "target_kind": "audit.verify",
    "planned_at": "2026-10-01T18:00:00Z",
    "planned_at_local": "2026-10-02T02:00:00+08:00",
    "trigger": "schedule",
    "triggered_by": "system:tick",
    "request_id": None,
    "status": "SUCCEEDED",
    "title": "Nightly audit",
    "form_data": {},
    "initiator_id": None,
    "attempt_count": 1,
    "next_attempt_at": None,
    "result": VERIFY_RESULT,
    "registered_at": "2026-10-01T18:00:01Z",
    "started_at": "2026-10-01T18:00:02Z",
    "finished_at": "2026-10-01T18:00:02.5Z",
    "duration_seconds": 0.5,
    "trace_id": "d3075e04546f557b987e514d18320aed",
    "version": 3,
}


def _attempt(
    outcome: str,
    error: Any,
    instance_id: Any,
    finished_at: str,
    started_at: str = "2026-10-01T09:00:01Z",
    result: Any = None,
) -> dict[str, Any]:
    """The first attempt, started a second after the run was registered."""
    return {
        "number": 1,
        "started_at": started_at,
        "finished_at": finished_at,
        "outcome": outcome,
        "error": error,
        "instance_id": instance_id,
        "result": result,
        "worker": WORKER,
    }


EXAMPLES: dict[str, dict[str, Any]] = {
    "RunNowIn": {"run-now": {"request_id": "ops-2026-10-01-1", "version": 2}},
    "RunDetailOut": {
        "registered": {**REGISTERED, "attempts": []},
        "launched": {
            **LAUNCHED,
            "attempts": [
                _attempt("SUCCEEDED", None, LAUNCHED_INSTANCE_ID, "2026-10-01T09:00:01.25Z")
            ],
        },
        "retry-due": {
            **FAILING,
            "attempts": [_attempt("FAILED", INACTIVE, None, "2026-10-01T09:00:01Z")],
        },
        "nightly-audit-verify": {
            **VERIFIED,
            "attempts": [
                _attempt(
                    "SUCCEEDED",
                    None,
                    None,
                    "2026-10-01T18:00:02.5Z",
                    "2026-10-01T18:00:02Z",
                    VERIFY_RESULT,
                )
            ],
        },
    },
    "RunPage": {
        "newest-first": {
            "items": [SKIPPED, LAUNCHED],
            "page": 1,
            "page_size": 20,
            "total": 2,
            "total_capped": False,
            "next_cursor": None,
        },
    },
}
