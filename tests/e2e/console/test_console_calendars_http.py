"""The console's working calendars (web/console/calendars.py) through Flask's test client, on
both stores: created and edited by hand as new revisions, old revisions readable, a region's
year imported naming the libraries, a month's days marked, the deadline preview; readers see
them and are offered no change; refusals are shown next to their fields."""

from __future__ import annotations

import re

from tests.e2e.console.conftest import Console
from tests.e2e.helpers import account
from tests.support import Api

CALENDARS = "/console/calendars/"
ENGLISH = {"Accept-Language": "en"}
CHINESE = {"Accept-Language": "zh-CN"}
OFFICE = {
    "key": "office",
    "name": "上海办公室",
    "region": "",
    "timezone": "Asia/Shanghai",
    "weekend": ["6", "7"],
    "holidays": "2026-10-01 国庆节\n2026-10-02 国庆节",
    "workdays": "2026-10-10 国庆节调休",
    "working_hours": "09:00-12:00, 13:00-18:00",
    "years": "2026",
}


def created(console: Console, **changes: str) -> str:
    """A calendar made through the form: its page's path."""
    answer = console.post(CALENDARS, {**OFFICE, **changes})
    assert answer.status_code == 302, answer.get_data(as_text=True)
    return str(answer.headers["Location"])


def cell(page: str, day: str) -> str:
    found = re.search(rf'<td id="day-{day}" class="([^"]*)">(.*?)</td>', page, re.S)
    assert found, f"no cell for {day}"
    return found.group(1) + " " + re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(2)))


def field_error(page: str, field: str) -> str:
    found = re.search(rf'id="{re.escape(field)}-error" class="field-error">(.*?)</p>', page, re.S)
    assert found, f"no error next to {field}"
    return found.group(1)


def test_a_calendar_made_by_hand_marks_its_month_and_keeps_its_revisions(
    console: Console, admin: Api
) -> None:
    path = created(console)
    page = console.page(f"{path}?month=2026-10", headers=CHINESE)
    assert "holiday" in cell(page, "2026-10-01")
    assert "节假日 国庆节" in cell(page, "2026-10-01")
    assert "调休上班 国庆节调休" in cell(page, "2026-10-10")
    assert "worked weekday" in cell(page, "2026-10-09")
    assert "off weekend" in cell(page, "2026-10-11")
    assert "周末" in cell(page, "2026-10-11")
    calendar = admin.get("/api/calendars").json["items"][0]
    assert calendar["working_hours"] == [
        {"start": "09:00", "end": "12:00"},
        {"start": "13:00", "end": "18:00"},
    ]
    form = console.page(f"{path}/edit", headers=ENGLISH)
    assert "2026-10-01 国庆节\n2026-10-02 国庆节</textarea>" in form
    saved = console.post(
        path, {**OFFICE, "holidays": "2026-10-01 国庆节", "version": "1", "reason": "只放一天"}
    )
    assert saved.status_code == 302
    page = console.page(f"{path}?month=2026-10", headers=ENGLISH)
    assert "Working day" in cell(page, "2026-10-02")
    assert 'id="revision-2"' in page
    assert 'id="revision-1"' in page
    old = console.page(f"{path}/revisions/1", headers=ENGLISH)
    assert "An earlier revision" in old
    assert "2026-10-02</code> 国庆节" in old
    assert console.get(f"{path}/revisions/9").status_code == 404


def test_an_import_names_the_libraries_and_marks_the_holiday_week(console: Console) -> None:
    path = created(console, key="cn", holidays="", workdays="", years="")
    answer = console.post(
        f"{path}/import", {"region": "CN", "years": "2026", "version": "1"}, headers=ENGLISH
    )
    assert answer.status_code == 302
    page = console.page(answer.headers["Location"].replace("2026-01", "2026-10"), headers=ENGLISH)
    assert re.search(r"Imported CN 2026 from holidays [\d.]+, chinesecalendar [\d.]+", page)
    assert "Holiday" in cell(page, "2026-10-01")
    assert "Make-up workday" in cell(page, "2026-10-10")
    source = r"imported for <code>CN</code>, 2026, from\s*<code>holidays [\d.]+</code>"
    assert re.search(source, page)


def test_the_preview_explains_a_three_working_day_deadline(console: Console) -> None:
    path = created(console)
    query = "submitted_at=2026-09-30+19:00&kind=working_days&days=3&cutoff=18:00"
    page = console.page(f"{path}/deadline-preview?{query}", headers=CHINESE)
    deadline = page.split('id="deadline-at"', 1)[1].split("</span></h2>", 1)[0]
    # after the cut-off, on this calendar (only 10-01 and 10-02 off): business day 10-05
    assert "2026-10-08 18:00:00" in deadline
    assert "北京时间" in deadline
    assert "2026-10-01</code> 周四</td><td>节假日</td><td>国庆节" in page
    assert 'id="skipped-2026-10-03"' in page
    offset = console.page(
        f"{path}/deadline-preview?submitted_at=2026-09-30T11:00:00%2B00:00&days=3&cutoff=18:00",
        headers=ENGLISH,
    )
    assert "2026-10-08 18:00:00" in offset  # 19:00 in Shanghai, written in UTC


def test_refusals_are_shown_next_to_their_fields(console: Console) -> None:
    answer = console.post(
        CALENDARS,
        {**OFFICE, "timezone": "Mars/Olympus", "holidays": "2026-10-01 国庆节\n2026-13-01 坏日子"},
        headers=CHINESE,
    )
    assert answer.status_code == 422
    page = answer.get_data(as_text=True)
    assert "第 2 行" in field_error(page, "holidays")
    field_error(page, "timezone")
    assert "2026-13-01 坏日子</textarea>" in page  # what was typed stays
    years = console.post(CALENDARS, {**OFFICE, "years": "明年"})
    assert years.status_code == 422
    field_error(years.get_data(as_text=True), "years")
    path = created(console)
    refused = console.post(f"{path}/import", {"region": "XX", "years": "2026", "version": "1"})
    assert refused.status_code == 422
    field_error(refused.get_data(as_text=True), "region")
    wrong = console.get(f"{path}/deadline-preview?submitted_at=soon&days=0", headers=ENGLISH)
    assert wrong.status_code == 422
    field_error(wrong.get_data(as_text=True), "submitted_at")


def test_a_reader_sees_calendars_and_is_offered_no_change(console: Console, admin: Api) -> None:
    path = created(console)
    reader = account(admin, "ann", ["requester"])
    console.post("/console/sign-out")
    assert console.sign_in(reader.token).status_code == 302
    listed = console.page(CALENDARS, headers=ENGLISH)
    assert 'id="calendar-office"' in listed
    assert "New calendar" not in listed
    page = console.page(path, headers=ENGLISH)
    assert "Edit the calendar" not in page
    assert 'id="import-form"' not in page
    assert "Preview a deadline" in page
    assert 'id="default-form"' not in page
    assert console.post(f"{path}/default", {"make": "1"}).status_code == 403
    assert console.get(f"{path}/edit").status_code == 403
    assert console.post(f"{path}/import", {"region": "CN", "years": "2026"}).status_code == 403


def test_a_definition_made_in_the_console_counts_its_deadline_in_working_days(
    console: Console, admin: Api
) -> None:
    created(console)
    answer = console.post(
        "/console/directory/definitions",
        {
            "key": "contract",
            "name": "合同审批",
            "deadline_rule.kind": "working_days",
            "deadline_rule.days": "3",
            "deadline_rule.calendar": "office",
            "deadline_rule.cutoff": "18:00",
            "reviewers.roles": "operator",
        },
    )
    assert answer.status_code == 302, answer.get_data(as_text=True)
    definition = admin.get("/api/definitions/by-key/contract").json
    assert definition["deadline_rule"] == {
        "kind": "working_days",
        "days": 3,
        "calendar": "office",
        "cutoff": "18:00",
    }
    page = console.page("/console/directory/definitions", headers=ENGLISH)
    shown = page.split('id="definition-contract"', 1)[1].split('class="deadline-shown">', 1)[1]
    assert shown.startswith("3 working days, by 18:00, on the calendar <code>office</code>")
    refused = console.post(
        "/console/directory/definitions",
        {
            "key": "other",
            "name": "其他",
            "deadline_rule.kind": "working_hours",
            "deadline_rule.hours": "8",
            "deadline_rule.calendar": "nowhere",
            "reviewers.roles": "operator",
        },
    )
    assert refused.status_code == 422
    field_error(refused.get_data(as_text=True), "deadline_rule-calendar")


def test_a_manager_makes_a_calendar_the_tenant_s_default_and_stops_it(
    console: Console, admin: Api
) -> None:
    path = created(console)
    made = console.post(f"{path}/default", {"make": "1"}, headers=CHINESE)
    assert made.status_code == 302
    page = console.page(path, headers=CHINESE)
    assert "「上海办公室」已设为租户默认日历。" in page
    assert '<span class="state active" id="default-badge">租户默认</span>' in page
    assert "不再作为默认" in page
    assert admin.get("/api/tenant").json["default_calendar"] == "office"
    listed = console.page(CALENDARS, headers=ENGLISH)
    assert re.search(
        r'id="calendar-office">\s*<td>.*?<span class="state active">default</span>', listed, re.S
    )
    stopped = console.post(f"{path}/default", {"make": "0"}, headers=ENGLISH)
    assert stopped.status_code == 302
    page = console.page(path, headers=ENGLISH)
    assert "The tenant has no default calendar now." in page
    assert 'id="default-badge"' not in page
    assert admin.get("/api/tenant").json["default_calendar"] is None
