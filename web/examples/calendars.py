"""Examples of calendars: `cn`, acme's mainland China calendar, imported for 2026, and a
deadline of three working days with an 18:00 cut-off counted on it (docs/calendars.md)."""

from __future__ import annotations

from typing import Any

from web.examples.world import CREATED_AT

CALENDAR_ID = "c30538a5-c4b5-5526-ae60-9612c7e4807b"  # derived from the tenant and the key
MID_AUTUMN, NATIONAL_DAY = "Mid-Autumn Festival", "National Day"
MAKE_UP = "National Day (make-up working day)"
HOLIDAYS = [{"date": f"2026-09-{day}", "name": MID_AUTUMN} for day in (25, 26, 27)] + [
    {"date": f"2026-10-0{day}", "name": NATIONAL_DAY} for day in range(1, 8)
]
WORKDAYS = [{"date": "2026-09-20", "name": MAKE_UP}, {"date": "2026-10-10", "name": MAKE_UP}]
BY_HAND: dict[str, Any] = {
    "name": "中国大陆 Mainland China",
    "region": None,
    "timezone": "Asia/Shanghai",
    "weekend": [6, 7],
    "holidays": [],
    "workdays": [],
    "working_hours": [{"start": "09:00", "end": "18:00"}],
    "years": [],
}
CREATED = {
    "id": CALENDAR_ID,
    "key": "cn",
    **BY_HAND,
    "revision": 1,
    "source": {"kind": "manual"},
    "created_at": CREATED_AT,
    "updated_at": CREATED_AT,
    "version": 1,
}
IMPORTED = {
    **CREATED,
    "region": "CN",
    "holidays": HOLIDAYS,
    "workdays": WORKDAYS,
    "years": [2026],
    "revision": 2,
    "source": {
        "kind": "import",
        "region": "CN",
        "years": [2026],
        "libraries": {"holidays": "0.109", "chinesecalendar": "1.11.0"},
    },
    "updated_at": "2026-10-01T09:05:00Z",
    "version": 2,
}
THREE_WORKING_DAYS = {"kind": "working_days", "days": 3, "calendar": "cn", "cutoff": "18:00"}


def holiday(date: str, name: str) -> dict[str, Any]:
    return {"date": date, "working": False, "reason": "HOLIDAY", "name": name, "assumed": False}


# Submitted on Wednesday 2026-09-30 at 19:00 in Shanghai, after the cut-off: its business day
# is 10-08, after the National Day week; then 10-09, the make-up Saturday 10-10, and 10-12.
AFTER_THE_CUTOFF = {
    "deadline_at": "2026-10-12T10:00:00Z",
    "calendar": "cn",
    "calendar_revision": 2,
    "business_day": "2026-10-08",
    "counted_days": ["2026-10-09", "2026-10-10", "2026-10-12"],
    "skipped_days": [
        *(holiday(f"2026-10-0{day}", NATIONAL_DAY) for day in range(1, 8)),
        {
            "date": "2026-10-11",
            "working": False,
            "reason": "WEEKEND",
            "name": None,
            "assumed": False,
        },
    ],
    "assumed": False,
}

EXAMPLES: dict[str, dict[str, Any]] = {
    "CalendarCreate": {"by-hand": {"key": "cn", **BY_HAND}},
    "CalendarUpdate": {
        "office-hours": {
            **BY_HAND,
            "working_hours": [
                {"start": "09:00", "end": "12:00"},
                {"start": "13:00", "end": "18:00"},
            ],
            "version": 1,
            "reason": "lunch break is not working time",
        }
    },
    "CalendarPatch": {
        "a-company-holiday": {
            "holidays": [{"date": "2026-12-31", "name": "Company day"}],
            "years": [2026],
            "version": 1,
        }
    },
    "CalendarImport": {
        "cn-2026": {"region": "CN", "years": [2026], "version": 1, "reason": "the 2026 notice"}
    },
    "CalendarOut": {"created": CREATED, "imported": IMPORTED},
    "CalendarPage": {
        "first-page": {
            "items": [IMPORTED],
            "page": 1,
            "page_size": 20,
            "total": 1,
            "total_capped": False,
            "next_cursor": None,
        },
    },
    "DaysOut": {
        "after-the-national-day-week": {
            "calendar": "cn",
            "revision": 2,
            "items": [
                {
                    "date": "2026-10-09",
                    "working": True,
                    "reason": "WEEKDAY",
                    "name": None,
                    "assumed": False,
                },
                {
                    "date": "2026-10-10",
                    "working": True,
                    "reason": "MAKEUP_WORKDAY",
                    "name": MAKE_UP,
                    "assumed": False,
                },
                {
                    "date": "2026-10-11",
                    "working": False,
                    "reason": "WEEKEND",
                    "name": None,
                    "assumed": False,
                },
            ],
        }
    },
    "DeadlinePreviewIn": {
        "after-the-cutoff": {
            "submitted_at": "2026-09-30T19:00:00+08:00",
            "rule": THREE_WORKING_DAYS,
        }
    },
    "DeadlinePreviewOut": {"after-the-cutoff": AFTER_THE_CUTOFF},
}
