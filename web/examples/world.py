"""The one story every example tells: tenant `acme` on 2026-10-01, its ids and its instants.

Ids are the kind the server makes (UUIDs; deterministic ones where the server derives them);
instants in answers are UTC with `Z`, as the server writes them.
"""

from __future__ import annotations

from typing import Any

TENANT_ID = "ebad926b-2f1c-5cb4-9aae-53510e9c273f"
ANN_AGGREGATE_ID = "fe3baea8-72cb-5bc4-b2ac-07266670183d"  # account `ann` on the log
TOKEN_ID = "3496c3af-90b4-59a8-8084-d64ca4ccce6c"  # noqa: S105 (an id, not the secret)
DEFINITION_ID = "6509034f-9dda-5c36-bd75-95623d596d88"
CRON_SCHEDULE_ID = "517d7f6c-a4ef-4508-bafd-a2842d8301f5"
WINDOW_SCHEDULE_ID = "aa558eea-05b5-42be-80f7-3834ab33504b"
PRESET_SCHEDULE_ID = "ca6de5dd-84e9-46e0-895b-0c225e6f5f34"
MANUAL_RUN_ID = "2c837076-d6d7-59d7-b5e9-e31aec995670"
SKIPPED_RUN_ID = "45d04c60-366d-55cb-a049-b123fb86fb85"
FAILING_RUN_ID = "334cb6cd-b70e-573d-b662-ebe5c1bc1646"
NIGHTLY_SCHEDULE_ID = "3bb29033-02f2-4d2e-933a-b342256bfec3"  # a nightly `audit.verify`
VERIFIED_RUN_ID = "d3075e04-546f-557b-987e-514d18320aed"  # its run of 2026-10-02 02:00 (+08)
LAUNCHED_INSTANCE_ID = "a4c6e629-b97c-5047-be64-cbe7e0bc34db"
SUBMITTED_INSTANCE_ID = "ccb2525e-0e17-5f2b-9c1e-34327bf78399"
EXPIRED_INSTANCE_ID = "29bba8cb-448d-5845-a461-1ea02d8c50f5"
REMINDED_INSTANCE_ID = "40d8eb4a-6bac-5a93-b0aa-e0564666ae1a"  # of the definition's revision 2
REFUND_DEFINITION_ID = "1818419b-c83c-515f-86b4-7990c48f1070"  # `refund`, a cancellation process
# The expired instance resubmitted by ann (command `re-1`), and the approved one's cancellation
# she asked for (command `x-1`): ids derived from the original and the command.
RESUBMITTED_INSTANCE_ID = "0be3a439-6d3d-525a-8bb2-307166b69447"
CANCELLATION_INSTANCE_ID = "eb60cc71-67ac-56b4-bdb2-207aa3387d3b"
WORKER = "worker:ops-1:4211:9f3a2c"

CREATED_AT = "2026-10-01T09:00:00Z"

CRON_TRIGGER: dict[str, Any] = {"kind": "cron", "expression": "0 9 * * *"}
WINDOW_TRIGGER: dict[str, Any] = {
    "kind": "window-interval",
    "weekdays": [1, 2, 3, 4, 5],
    "windows": [{"start": "09:30", "end": "11:30"}, {"start": "13:00", "end": "15:00"}],
    "interval_minutes": 30,
}
PRESET_TRIGGER: dict[str, Any] = {"kind": "cron", "expression": "0 8 * * MON-FRI"}

PRESET: dict[str, Any] = {
    "id": "weekday-morning",
    "title": "Morning check {{date}}",
    "timezone": "Europe/London",
    "trigger": PRESET_TRIGGER,
    "form_data": {"shift": "early"},
}
