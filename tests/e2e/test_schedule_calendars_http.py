"""Schedules on a working calendar over HTTP, on both stores (docs/calendars.md#schedules-on-a-
calendar): the seed 001 window skips the National Day holidays, a daily schedule moved to the
next working day launches once, the preview marks both, and a calendar's revision applies only
to cycles not yet registered."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services
from tests.e2e.helpers import assert_problem
from tests.e2e.test_calendars_http import CALENDARS, cn_calendar
from tests.support import Api, FakeClock

SCHEDULES = "/api/workflows/schedules"
# Seed 001's market-hours window, Asia/Shanghai (docs/time.md).
MARKET_HOURS = {
    "kind": "window-interval",
    "weekdays": [1, 2, 3, 4, 5],
    "windows": [{"start": "09:30", "end": "11:30"}, {"start": "13:00", "end": "15:00"}],
    "interval_minutes": 5,
}
DAILY_NINE = {"kind": "cron", "expression": "0 9 * * *"}
FIRST_OF_MONTH = {"kind": "cron", "expression": "0 9 1 * *"}
WEEKDAYS_NINE = {"kind": "cron", "expression": "0 9 * * 1-5"}


def at(text: str) -> datetime:
    return datetime.fromisoformat(f"{text}+08:00")


def on_calendar(admin: Api, body: dict[str, Any], trigger: dict[str, Any], rule: str) -> str:
    created = admin.post(
        SCHEDULES,
        {**body, "trigger": trigger, "calendar": "cn", "calendar_rule": rule, "enabled": True},
    )
    assert created.status_code == 201, created.json
    assert (created.json["calendar"], created.json["calendar_rule"]) == ("cn", rule)
    return str(created.json["id"])


def tick_at(services: Services, clock: FakeClock, text: str) -> int:
    """The tick and a worker at that Shanghai time; how many runs the worker launched."""
    clock.now = at(text)
    ticker = Ticker.of(services)
    while ticker.scan().registered:  # at most CRONLEDGER_CATCHUP_PER_SCHEDULE a scan
        pass
    launched = Worker.of(services).drain().succeeded
    services.projector.catch_up()
    return launched


def runs_of(admin: Api, schedule_id: str) -> list[dict[str, Any]]:
    answer = admin.get(f"{SCHEDULES}/{schedule_id}/runs?page_size=100")
    assert answer.status_code == 200, answer.json
    return list(reversed(answer.json["items"]))  # oldest first


def test_the_market_hours_window_registers_no_launch_on_a_holiday(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    cn_calendar(admin)
    clock.now = at("2026-10-01T20:00")
    schedule_id = on_calendar(admin, body, MARKET_HOURS, "working_days_only")
    assert tick_at(services, clock, "2026-10-02T15:30") == 0  # Friday, National Day
    runs = runs_of(admin, schedule_id)
    assert len(runs) == 50  # 25 fires in each window
    assert {run["status"] for run in runs} == {"SKIPPED_CALENDAR"}
    reason = runs[0]["skip_reason"]
    assert (reason["code"], reason["holiday"], reason["day"]) == (
        "CALENDAR",
        "国庆节",
        "2026-10-02",
    )
    assert (reason["calendar"], reason["calendar_revision"]) == ("cn", 2)
    assert admin.get("/api/approvals").json["total"] == 0
    last_skip = admin.get(f"{SCHEDULES}/{schedule_id}").json["last_skip"]
    assert last_skip["skip_reason"]["holiday"] == "国庆节"
    assert tick_at(services, clock, "2026-10-08T09:31") == 1  # the first working day's first
    assert admin.get("/api/approvals").json["total"] == 1


def test_a_week_of_holidays_moved_to_the_next_working_day_launches_once(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    names = {day["date"]: day["name"] for day in cn_calendar(admin)["holidays"]}
    clock.now = at("2026-09-30T20:00")
    schedule_id = on_calendar(admin, body, DAILY_NINE, "next_working_day")
    launched = [tick_at(services, clock, f"2026-10-0{day}T09:00:01") for day in range(1, 9)]
    assert launched == [0, 0, 0, 0, 0, 0, 0, 1]  # once, on 10-08
    runs = runs_of(admin, schedule_id)
    assert [run["status"] for run in runs] == ["SKIPPED_CALENDAR"] * 7 + ["SUCCEEDED"]
    ran = runs[-1]
    assert ran["planned_at"] == "2026-10-08T01:00:00Z"
    for skipped in runs[:-1]:
        reason = skipped["skip_reason"]
        assert reason["holiday"] == names[reason["day"]]  # as the library names it
        assert reason["launched_run_id"] == ran["id"]
        assert reason["launched_planned_at"] == "2026-10-08T01:00:00+00:00"
    instance = admin.get(f"/api/approvals/{ran['instance_id']}").json
    assert instance["title"] == "每日检查 2026-10-08"


def test_a_moved_cycle_keeps_its_key_and_launches_on_the_next_working_day(
    admin: Api, body: dict[str, Any], services: Services, clock: FakeClock
) -> None:
    calendar = cn_calendar(admin)
    clock.now = at("2026-09-30T20:00")
    schedule_id = on_calendar(admin, body, FIRST_OF_MONTH, "next_working_day")
    assert tick_at(services, clock, "2026-10-01T09:00:01") == 0
    (run,) = runs_of(admin, schedule_id)
    assert (run["status"], run["planned_at"], run["moved_to"]) == (
        "PENDING",
        "2026-10-01T01:00:00Z",
        "2026-10-08T01:00:00Z",
    )
    assert run["calendar"]["holiday"] == "国庆节"
    # a later revision (10-08 made a holiday too) leaves the registered cycle as it was
    current = admin.get(f"{CALENDARS}/{calendar['id']}").json
    changed = admin.patch(
        f"{CALENDARS}/{calendar['id']}",
        {
            "holidays": [*current["holidays"], {"date": "2026-10-08", "name": "Company day"}],
            "version": current["version"],
        },
    )
    assert changed.status_code == 200, changed.json
    assert tick_at(services, clock, "2026-10-07T09:00") == 0
    assert tick_at(services, clock, "2026-10-08T09:00:01") == 1
    (ran,) = runs_of(admin, schedule_id)
    assert (ran["status"], ran["planned_at"]) == ("SUCCEEDED", "2026-10-01T01:00:00Z")
    assert ran["calendar"]["calendar_revision"] == 2
    origin = admin.get(f"/api/approvals/{ran['instance_id']}").json["origin"]
    assert origin["scheduled_for"] == "2026-10-01T01:00:00Z"
    assert origin["moved_to"] == "2026-10-08T01:00:00Z"
    assert admin.get(f"/api/approvals/{ran['instance_id']}").json["title"] == "每日检查 2026-10-08"
    # the next cycle, not yet registered then, is placed on the new revision
    preview = admin.get(f"{SCHEDULES}/{schedule_id}/preview?after=2026-09-30T00:00:00Z&count=2")
    first = preview.json["fires"][0]
    assert (first["outcome"], first["moved_to"]) == ("MOVED", "2026-10-09T01:00:00Z")
    assert first["calendar"]["calendar_revision"] == 3


def test_the_preview_marks_skipped_and_moved_fires_with_the_holiday(admin: Api) -> None:
    cn_calendar(admin)
    skipping = admin.post(
        f"{SCHEDULES}/preview",
        {
            "trigger": MARKET_HOURS,
            "timezone": "Asia/Shanghai",
            "after": "2026-09-30T15:00:00+08:00",
            "count": 2,
            "calendar": "cn",
            "calendar_rule": "working_days_only",
        },
    )
    assert skipping.status_code == 200, skipping.json
    first = skipping.json["fires"][0]
    assert (first["at"], first["outcome"]) == ("2026-10-01T01:30:00Z", "SKIPPED")
    assert (first["calendar"]["holiday"], first["calendar"]["day_reason"]) == (
        "国庆节",
        "HOLIDAY",
    )
    assert skipping.json["fire_times"] == ["2026-10-01T01:30:00Z", "2026-10-01T01:35:00Z"]
    moving = admin.post(
        f"{SCHEDULES}/preview",
        {
            "trigger": DAILY_NINE,
            "timezone": "Asia/Shanghai",
            "after": "2026-10-06T12:00:00+08:00",
            "count": 3,
            "calendar": "cn",
            "calendar_rule": "next_working_day",
        },
    )
    fires = moving.json["fires"]
    assert [fire["outcome"] for fire in fires] == ["SKIPPED", "FIRES", "FIRES"]
    assert fires[0]["calendar"]["launched_planned_at"] == "2026-10-08T01:00:00+00:00"
    plain = admin.post(f"{SCHEDULES}/preview", {"trigger": DAILY_NINE, "count": 1}).json
    assert [fire["outcome"] for fire in plain["fires"]] == ["FIRES"]


def test_a_rule_only_takes_fires_away_a_make_up_saturday_adds_none(admin: Api) -> None:
    cn_calendar(admin)

    def outcomes(trigger: dict[str, Any]) -> list[tuple[str, str]]:
        answer = admin.post(
            f"{SCHEDULES}/preview",
            {
                "trigger": trigger,
                "timezone": "Asia/Shanghai",
                "after": "2026-10-09T00:00:00+08:00",
                "count": 3,
                "calendar": "cn",
                "calendar_rule": "working_days_only",
            },
        )
        return [(fire["local"][:10], fire["outcome"]) for fire in answer.json["fires"]]

    assert outcomes(WEEKDAYS_NINE) == [
        ("2026-10-09", "FIRES"),
        ("2026-10-12", "FIRES"),
        ("2026-10-13", "FIRES"),
    ]
    assert outcomes(DAILY_NINE) == [
        ("2026-10-09", "FIRES"),
        ("2026-10-10", "FIRES"),  # the make-up Saturday is worked
        ("2026-10-11", "SKIPPED"),
    ]


def test_a_calendar_and_its_rule_are_checked_by_field(admin: Api, body: dict[str, Any]) -> None:
    cn_calendar(admin)
    unknown = admin.post(
        SCHEDULES, {**body, "calendar": "nowhere", "calendar_rule": "next_working_day"}
    )
    assert "calendar" in assert_problem(unknown, 422, "VALIDATION_FAILED")["errors"]
    alone = admin.post(SCHEDULES, {**body, "calendar_rule": "next_working_day"})
    assert "calendar_rule" in assert_problem(alone, 422, "VALIDATION_FAILED")["errors"]
    ruleless = admin.post(SCHEDULES, {**body, "calendar": "cn"})
    assert "calendar_rule" in assert_problem(ruleless, 422, "VALIDATION_FAILED")["errors"]
    odd = admin.post(SCHEDULES, {**body, "calendar": "cn", "calendar_rule": "sometimes"})
    assert "calendar_rule" in assert_problem(odd, 422, "VALIDATION_FAILED")["errors"]
    plain = admin.post(SCHEDULES, body)
    assert (plain.json["calendar"], plain.json["calendar_rule"]) == (None, None)
