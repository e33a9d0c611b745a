"""Examples of schedules and fire-time previews: a cron trigger and a window-interval trigger,
and a nightly `audit.verify` job."""

from __future__ import annotations

from typing import Any

from web.examples.webhooks import WEBHOOK_ID
from web.examples.world import (
    CREATED_AT,
    CRON_SCHEDULE_ID,
    CRON_TRIGGER,
    DEFINITION_ID,
    LAUNCHED_INSTANCE_ID,
    MANUAL_RUN_ID,
    NIGHTLY_SCHEDULE_ID,
    PRESET_SCHEDULE_ID,
    PRESET_TRIGGER,
    SKIPPED_RUN_ID,
    VERIFIED_RUN_ID,
    WINDOW_SCHEDULE_ID,
    WINDOW_TRIGGER,
)


def marked(fire_times: list[str], local_times: list[str]) -> dict[str, Any]:
    """A preview without a calendar: every fire marked `FIRES`."""
    fires = [
        {
            "at": at,
            "local": local,
            "outcome": "FIRES",
            "moved_to": None,
            "moved_to_local": None,
            "calendar": None,
        }
        for at, local in zip(fire_times, local_times, strict=True)
    ]
    return {"fire_times": fire_times, "local_times": local_times, "fires": fires}


CRON_FIELDS = {
    "name": "Daily check",
    "definition_id": DEFINITION_ID,
    "trigger": CRON_TRIGGER,
    "timezone": "Asia/Shanghai",
    "initiator_id": "ann",
    "title_template": "Daily check {{date}}",
    "form_data": {"region": "east"},
}
WINDOW_FIELDS = {
    "name": "Market hours check",
    "definition_id": DEFINITION_ID,
    "trigger": WINDOW_TRIGGER,
    "timezone": "Asia/Shanghai",
    "initiator_id": "ann",
    "title_template": "Market hours check {{date}}",
    "enabled": True,
    "misfire_policy": "once",
}


def _fires(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"at": at, "local": local} for at, local in pairs]


SKIPPED_AT = "2026-10-02T01:00:00Z"
OVERLAP = {
    "code": "OVERLAP",
    "blocking_run_id": MANUAL_RUN_ID,
    "blocking_status": "SUCCEEDED",
    "blocking_instance_id": LAUNCHED_INSTANCE_ID,
    "count": None,
}
CRON_SCHEDULE = {
    "id": CRON_SCHEDULE_ID,
    **CRON_FIELDS,
    "enabled": True,
    "misfire_policy": "catch_up",
    "overlap_policy": "skip_while_open",
    "preset_id": None,
    "calendar": None,
    "calendar_rule": None,
    "group": "FINANCE",
    "target": {"kind": "approval"},
    "auto_pause_after_failures": 3,
    "auto_paused": None,
    "version": 2,
    "created_at": CREATED_AT,
    "updated_at": CREATED_AT,
    "updated_by": "root",
    "next_fire_at": "2026-10-03T01:00:00Z",
    "next_fire_at_local": "2026-10-03T09:00:00+08:00",
    "last_run": {"run_id": SKIPPED_RUN_ID, "planned_at": SKIPPED_AT, "status": "SKIPPED_OVERLAP"},
    "last_skip": {
        "run_id": SKIPPED_RUN_ID,
        "planned_at": SKIPPED_AT,
        "skipped_at": "2026-10-02T01:00:01Z",
        "skip_reason": OVERLAP,
    },
    "definition_revision": 1,
    "next_fires": _fires(
        ("2026-10-03T01:00:00Z", "2026-10-03T09:00:00+08:00"),
        ("2026-10-04T01:00:00Z", "2026-10-04T09:00:00+08:00"),
        ("2026-10-05T01:00:00Z", "2026-10-05T09:00:00+08:00"),
        ("2026-10-06T01:00:00Z", "2026-10-06T09:00:00+08:00"),
        ("2026-10-07T01:00:00Z", "2026-10-07T09:00:00+08:00"),
    ),
}
WINDOW_SCHEDULE = {
    "id": WINDOW_SCHEDULE_ID,
    **WINDOW_FIELDS,
    "form_data": {},
    "overlap_policy": "skip_while_launching",
    "preset_id": None,
    "calendar": None,
    "calendar_rule": None,
    "group": "DEFAULT",
    "target": {"kind": "approval"},
    "auto_pause_after_failures": 3,
    "auto_paused": None,
    "version": 1,
    "created_at": CREATED_AT,
    "updated_at": CREATED_AT,
    "updated_by": "root",
    "next_fire_at": "2026-10-02T01:30:00Z",
    "next_fire_at_local": "2026-10-02T09:30:00+08:00",
    "last_run": None,
    "last_skip": None,
    "definition_revision": 1,
    "next_fires": _fires(
        ("2026-10-02T01:30:00Z", "2026-10-02T09:30:00+08:00"),
        ("2026-10-02T02:00:00Z", "2026-10-02T10:00:00+08:00"),
        ("2026-10-02T02:30:00Z", "2026-10-02T10:30:00+08:00"),
        ("2026-10-02T03:00:00Z", "2026-10-02T11:00:00+08:00"),
        ("2026-10-02T03:30:00Z", "2026-10-02T11:30:00+08:00"),
    ),
}
PRESET_SCHEDULE = {
    **WINDOW_SCHEDULE,
    "id": PRESET_SCHEDULE_ID,
    "name": "Morning check",
    "trigger": PRESET_TRIGGER,
    "timezone": "Europe/London",
    "title_template": "Morning check {{date}}",
    "form_data": {"shift": "early"},
    "enabled": False,
    "misfire_policy": "catch_up",
    "preset_id": "weekday-morning",
    "next_fire_at": None,
    "next_fire_at_local": None,
    "next_fires": _fires(
        ("2026-10-02T07:00:00Z", "2026-10-02T08:00:00+01:00"),
        ("2026-10-05T07:00:00Z", "2026-10-05T08:00:00+01:00"),
        ("2026-10-06T07:00:00Z", "2026-10-06T08:00:00+01:00"),
        ("2026-10-07T07:00:00Z", "2026-10-07T08:00:00+01:00"),
        ("2026-10-08T07:00:00Z", "2026-10-08T08:00:00+01:00"),
    ),
}

FAILED_CYCLES = [
    {"run_id": "8656bc9f-8e93-5f3e-8fef-15d28464e09d", "error_code": "INITIATOR_INACTIVE"},
    {"run_id": "23402788-2371-5a94-9438-ca90d7d3486f", "error_code": "INITIATOR_INACTIVE"},
    {"run_id": "6ff836dd-e108-5064-b1dc-b9e24ec8ed72", "error_code": "INITIATOR_INACTIVE"},
]
AUTO_PAUSED_SCHEDULE = {
    **CRON_SCHEDULE,
    "enabled": False,
    "auto_paused": {
        "at": "2026-10-05T01:07:31Z",
        "reason": "3 cycle(s) in a row ended without launching: "
        + ", ".join(f"{c['run_id']} ({c['error_code']})" for c in FAILED_CYCLES),
        "runs": FAILED_CYCLES,
    },
    "version": 3,
    "next_fire_at": None,
    "next_fire_at_local": None,
    "last_run": {
        "run_id": FAILED_CYCLES[-1]["run_id"],
        "planned_at": "2026-10-05T01:00:00Z",
        "status": "DEAD_LETTER",
    },
    "next_fires": _fires(
        ("2026-10-06T01:00:00Z", "2026-10-06T09:00:00+08:00"),
        ("2026-10-07T01:00:00Z", "2026-10-07T09:00:00+08:00"),
        ("2026-10-08T01:00:00Z", "2026-10-08T09:00:00+08:00"),
        ("2026-10-09T01:00:00Z", "2026-10-09T09:00:00+08:00"),
        ("2026-10-10T01:00:00Z", "2026-10-10T09:00:00+08:00"),
    ),
}

NIGHTLY_TARGET = {"kind": "audit.verify", "params": {"full": False}, "timeout_seconds": 10}
NIGHTLY_FIELDS = {
    "name": "Nightly audit",
    "trigger": {"kind": "cron", "expression": "0 2 * * *"},
    "timezone": "Asia/Shanghai",
    "group": "OPS",
    "target": {"kind": "audit.verify"},
    "enabled": True,
}
NIGHTLY_SCHEDULE = {
    **WINDOW_SCHEDULE,
    "id": NIGHTLY_SCHEDULE_ID,
    **NIGHTLY_FIELDS,
    "definition_id": None,
    "initiator_id": None,
    "title_template": "",
    "form_data": {},
    "misfire_policy": "catch_up",
    "group": "OPS",
    "target": NIGHTLY_TARGET,
    "next_fire_at": "2026-10-02T18:00:00Z",
    "next_fire_at_local": "2026-10-03T02:00:00+08:00",
    "last_run": {
        "run_id": VERIFIED_RUN_ID,
        "planned_at": "2026-10-01T18:00:00Z",
        "status": "SUCCEEDED",
    },
    "definition_revision": None,
    "next_fires": _fires(
        ("2026-10-02T18:00:00Z", "2026-10-03T02:00:00+08:00"),
        ("2026-10-03T18:00:00Z", "2026-10-04T02:00:00+08:00"),
        ("2026-10-04T18:00:00Z", "2026-10-05T02:00:00+08:00"),
        ("2026-10-05T18:00:00Z", "2026-10-06T02:00:00+08:00"),
        ("2026-10-06T18:00:00Z", "2026-10-07T02:00:00+08:00"),
    ),
}
PING_TARGET = {"kind": "webhook.ping", "params": {"webhook_id": WEBHOOK_ID}}
TARGETS_IN = {
    "approval": {"kind": "approval"},
    "nightly-audit-verify": {"kind": "audit.verify"},
    "full-verify": {"kind": "audit.verify", "params": {"full": True}, "timeout_seconds": 300},
    "webhook-ping": PING_TARGET,
}
TARGETS_OUT = {
    "approval": {"kind": "approval"},
    "nightly-audit-verify": NIGHTLY_TARGET,
    "webhook-ping": {**PING_TARGET, "timeout_seconds": 10},
}
TRIGGERS = {"cron": CRON_TRIGGER, "window-interval": WINDOW_TRIGGER}

EXAMPLES: dict[str, dict[str, Any]] = {
    "TriggerIn": TRIGGERS,
    "TriggerOut": TRIGGERS,
    "CronTriggerIn": {"cron": CRON_TRIGGER},
    "CronTriggerOut": {"cron": CRON_TRIGGER},
    "WindowIntervalTriggerIn": {"window-interval": WINDOW_TRIGGER},
    "WindowIntervalTriggerOut": {"window-interval": WINDOW_TRIGGER},
    "TargetIn": TARGETS_IN,
    "TargetOut": TARGETS_OUT,
    "ScheduleFieldsIn": {
        "cron": CRON_FIELDS,
        "window-interval": WINDOW_FIELDS,
        "nightly-audit-verify": NIGHTLY_FIELDS,
    },
    "ScheduleFromPresetIn": {
        "from-a-preset": {
            "definition_id": DEFINITION_ID,
            "preset_id": "weekday-morning",
            "initiator_id": "ann",
        },
    },
    "ScheduleUpdate": {
        "enable": {
            **CRON_FIELDS,
            "enabled": True,
            "misfire_policy": "catch_up",
            "overlap_policy": "skip_while_launching",
            "version": 1,
        },
    },
    "SchedulePatch": {
        "enable": {"enabled": True, "version": 1},
        "every-cycle-while-reviews-wait": {"overlap_policy": "skip_while_launching"},
        "weekdays-only": {"trigger": {"kind": "cron", "expression": "0 9 * * MON-FRI"}},
    },
    "ScheduleOut": {
        "cron": CRON_SCHEDULE,
        "window-interval": WINDOW_SCHEDULE,
        "from-a-preset": PRESET_SCHEDULE,
        "auto-paused": AUTO_PAUSED_SCHEDULE,
        "nightly-audit-verify": NIGHTLY_SCHEDULE,
    },
    "SchedulePage": {
        "first-page": {
            "items": [CRON_SCHEDULE, PRESET_SCHEDULE, WINDOW_SCHEDULE],
            "page": 1,
            "page_size": 20,
            "total": 3,
            "total_capped": False,
            "next_cursor": None,
        },
    },
    "OverlapMoveIn": {
        "to-the-default": {"schedule_ids": [CRON_SCHEDULE_ID, WINDOW_SCHEDULE_ID]},
    },
    "OverlapMovesOut": {
        "to-the-default": {
            "items": [
                {
                    "schedule_id": CRON_SCHEDULE_ID,
                    "outcome": "MOVED",
                    "version": 3,
                    "overlap_policy": "skip_while_launching",
                },
                {
                    "schedule_id": WINDOW_SCHEDULE_ID,
                    "outcome": "UNCHANGED",
                    "version": 1,
                    "overlap_policy": "skip_while_launching",
                },
            ],
        },
    },
    "PreviewIn": {
        "daylight-saving": {
            "trigger": {"kind": "cron", "expression": "30 2 * * *"},
            "timezone": "America/New_York",
            "after": "2026-03-07T00:00:00Z",
            "count": 3,
        },
        "window-interval": {
            "trigger": WINDOW_TRIGGER,
            "timezone": "Asia/Shanghai",
            "after": "2026-10-02T03:00:00Z",
            "count": 4,
        },
    },
    "PreviewOut": {
        "daylight-saving": marked(
            ["2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"],
            ["2026-03-07T02:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"],
        ),
        "window-interval": marked(
            [
                "2026-10-02T03:30:00Z",
                "2026-10-02T05:00:00Z",
                "2026-10-02T05:30:00Z",
                "2026-10-02T06:00:00Z",
            ],
            [
                "2026-10-02T11:30:00+08:00",
                "2026-10-02T13:00:00+08:00",
                "2026-10-02T13:30:00+08:00",
                "2026-10-02T14:00:00+08:00",
            ],
        ),
    },
}
