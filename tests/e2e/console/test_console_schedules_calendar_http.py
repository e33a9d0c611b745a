"""Schedules on a working calendar in the console, through Flask's test client, on both stores
(docs/console/schedules.md): the form picks a calendar and its rule and keeps them through an
edit, a key the tenant has no calendar for is refused beside its field, the preview marks each
fire skipped or moved naming the holiday, and a run's page says which holiday skipped or moved
it, in Chinese and English."""

from __future__ import annotations

import re
from typing import Any

from flask.testing import FlaskClient

from cronledger.application.services import Services
from tests.e2e.console.test_console_schedules_forms import Console, form_of
from tests.e2e.test_calendars_http import cn_calendar
from tests.e2e.test_schedule_calendars_http import (
    FIRST_OF_MONTH,
    at,
    on_calendar,
    runs_of,
    tick_at,
)
from tests.support import Api, FakeClock

SCHEDULES = "/api/workflows/schedules"


def field_error(page: str, field: str) -> str:
    found = re.search(rf'id="{re.escape(field)}-error" class="field-error">(.*?)</p>', page, re.S)
    assert found, f"no error next to {field}"
    return found.group(1)


def fire(page: str, day: str) -> str:
    """The preview's line for the fire on `day` (local), its markup stripped."""
    found = re.search(rf'<li [^>]*data-day="{day}"[^>]*>(.*?)</li>', page, re.S)
    assert found, f"no marked fire on {day}"
    outcome = re.search(r'data-outcome="(\w+)"', found.group(0))
    assert outcome
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(1)))
    return f"{outcome.group(1)} {text}"


def selected(page: str, field: str) -> str:
    """The chosen option's value of a select."""
    select = re.search(rf'<select id="{field}" name="{field}".*?</select>', page, re.S)
    assert select, f"no select {field}"
    chosen = re.search(r'<option value="([^"]*)" selected>', select.group(0))
    assert chosen, f"nothing chosen in {field}"
    return chosen.group(1)


def test_the_form_keeps_a_calendar_and_its_rule_through_an_edit(
    client: FlaskClient, admin: Api, body: dict[str, Any]
) -> None:
    cn_calendar(admin)
    console = Console(client, admin.token)
    offered = console.get("/console/schedules/new").text
    assert '<option value="cn">中国大陆 (cn)</option>' in offered
    assert selected(offered, "calendar") == ""
    answer = console.post(
        "/console/schedules/new",
        form_of(body, calendar="cn", calendar_rule="next_working_day"),
    )
    assert answer.status_code == 303, answer.text
    schedule_id = answer.headers["Location"].rsplit("/", 1)[1]
    saved = admin.get(f"{SCHEDULES}/{schedule_id}").json
    assert (saved["calendar"], saved["calendar_rule"]) == ("cn", "next_working_day")
    edit = console.get(f"/console/schedules/{schedule_id}/edit").text
    assert (selected(edit, "calendar"), selected(edit, "calendar_rule")) == (
        "cn",
        "next_working_day",
    )
    detail = console.get(f"/console/schedules/{schedule_id}").text
    assert "Next working day: move a cycle on a day off" in detail
    off = console.post(
        f"/console/schedules/{schedule_id}/edit",
        form_of(body, calendar="", calendar_rule="next_working_day", version="1"),
    )
    assert off.status_code == 303, off.text
    saved = admin.get(f"{SCHEDULES}/{schedule_id}").json
    assert (saved["calendar"], saved["calendar_rule"]) == (None, None)


def test_a_calendar_the_tenant_lacks_is_refused_beside_its_field(
    client: FlaskClient, admin: Api, body: dict[str, Any]
) -> None:
    for language, said in (("en", "no calendar nope"), ("zh", "nope")):
        console = Console(client, admin.token, language)
        answer = console.post("/console/schedules/new", form_of(body, calendar="nope"))
        assert answer.status_code == 422
        page = answer.text
        assert said in field_error(page, "calendar")
        assert selected(page, "calendar") == "nope"  # what was chosen stays
        assert 'href="#calendar"' in page  # the summary leads to the field
    assert admin.get(SCHEDULES).json["total"] == 0


def test_the_preview_marks_skipped_and_moved_fires_with_the_holiday(
    client: FlaskClient, admin: Api, body: dict[str, Any]
) -> None:
    cn_calendar(admin)
    for language, words in (
        ("en", {"skipped": "Skipped", "joins": "joins the cycle planned for", "moved": "Moved to"}),
        ("zh", {"skipped": "跳过", "joins": "并入原定于", "moved": "顺延至"}),
    ):
        console = Console(client, admin.token, language)
        typed = form_of(body, timezone="Asia/Shanghai", preview_after="2026-09-30T10:00")
        skipping = console.post(
            "/console/schedules/preview",
            {**typed, "calendar": "cn", "calendar_rule": "working_days_only"},
        ).text
        first = fire(skipping, "2026-10-01")
        assert first.startswith("SKIPPED")
        assert f"{words['skipped']}" in first
        assert "国庆节" in first
        moving = console.post(
            "/console/schedules/preview",
            {**typed, "calendar": "cn", "calendar_rule": "next_working_day"},
        ).text
        joined = fire(moving, "2026-10-01")
        assert joined.startswith("SKIPPED")
        assert words["joins"] in joined
        assert "2026-10-08 09:00:00" in joined  # the holiday week's cycles launch once, then
        monthly = console.post(
            "/console/schedules/preview",
            {
                **typed,
                "expression": FIRST_OF_MONTH["expression"],
                "calendar": "cn",
                "calendar_rule": "next_working_day",
            },
        ).text
        moved = fire(monthly, "2026-10-01")
        assert moved.startswith("MOVED")
        assert words["moved"] in moved
        assert "2026-10-08 09:00:00" in moved
        assert "国庆节" in moved
        plain = console.post("/console/schedules/preview", typed).text
        assert "data-day=" not in plain
        assert 'data-outcome="FIRES"' in plain


def test_a_runs_page_names_the_holiday_that_skipped_or_moved_it(
    client: FlaskClient,
    admin: Api,
    body: dict[str, Any],
    services: Services,
    clock: FakeClock,
) -> None:
    cn_calendar(admin)
    clock.now = at("2026-09-30T20:00")
    moving = on_calendar(admin, body, FIRST_OF_MONTH, "next_working_day")
    skipping = on_calendar(admin, {**body, "name": "skips"}, FIRST_OF_MONTH, "working_days_only")
    tick_at(services, clock, "2026-10-01T09:00:01")
    (moved,) = runs_of(admin, moving)
    (skipped,) = runs_of(admin, skipping)
    assert skipped["status"] == "SKIPPED_CALENDAR"
    for language, words in (("en", ("Moved to", "is a day off")), ("zh", ("顺延至", "不是工作日"))):
        console = Console(client, admin.token, language)
        page = console.get(f"/console/runs/{moved['id']}").text
        shown = page.split('id="moved-to"', 1)[1].split("</dd>", 1)[0]
        assert "2026-10-08 09:00:00" in shown
        assert "国庆节" in shown
        assert f"<dt>{words[0]}</dt>" in page
        page = console.get(f"/console/runs/{skipped['id']}").text
        reason = page.split('id="calendar-skip"', 1)[1].split("</span>", 1)[0]
        assert "2026-10-01" in reason
        assert "国庆节" in reason
        assert words[1] in reason
