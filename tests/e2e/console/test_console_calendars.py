"""Working calendars in a real browser, in Chinese and English, on both stores: a calendar
created, CN 2026 imported from the holiday libraries (named with their versions), October
showing 10-01 as the National Day holiday and Saturday 10-10 as a make-up workday (调休上班),
made the tenant's default calendar, and a three-working-day deadline previewed for Wednesday
2026-09-30 19:00 +08:00: Monday 2026-10-12 18:00, with each day it passed over and why."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from tests.e2e.console.conftest import (
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    screenshot,
    sign_in,
)

CALENDARS = "/console/calendars/"
WORDS = {
    "en": {
        "h1": "Working calendars",
        "new": "New calendar",
        "create": "Create the calendar",
        "created": "Calendar {key} created (revision 1).",
        "import": "Import",
        "imported": r"Imported CN 2026 from holidays [\d.]+, chinesecalendar [\d.]+: revision 2\.",
        "holiday": "Holiday",
        "makeup": "Make-up workday",
        "preview": "Preview a deadline",
        "go": "Preview",
        "skipped": "8 days skipped",
        "sunday": "Sun",
        "zone": "Beijing time",
        "make_default": "Make it the tenant's default",
        "default": "the tenant's default",
    },
    "zh": {
        "h1": "工作日历",
        "new": "新建工作日历",
        "create": "创建工作日历",
        "created": "已创建工作日历 {key}（第 1 版）。",
        "import": "导入",
        "imported": (
            r"已从 holidays [\d.]+, chinesecalendar [\d.]+ 导入 CN 2026 年的节假日：第 2 版。"
        ),
        "holiday": "节假日",
        "makeup": "调休上班",
        "preview": "预览截止时间",
        "go": "预览",
        "skipped": "跳过 8 天",
        "sunday": "周日",
        "zone": "北京时间",
        "make_default": "设为租户默认日历",
        "default": "租户默认",
    },
}


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_cn_calendar_is_imported_and_previews_a_deadline_in_working_days(
    site: Site, browser: Any, language: str
) -> None:
    from playwright.sync_api import expect

    words, key = WORDS[language], f"cn-{language}-{uuid.uuid4().hex[:6]}"
    page = new_page(browser, language)
    sign_in(page, site, then=CALENDARS)
    expect(page.locator("h1")).to_have_text(words["h1"])
    page.get_by_role("link", name=words["new"]).click()
    page.fill("#calendar-key", key)
    page.fill("#calendar-name", "中国大陆")
    expect(page.locator("#calendar-timezone")).to_have_value("Asia/Shanghai")
    check_accessible(page)
    page.get_by_role("button", name=words["create"]).click()
    expect(page.locator(".notice.good")).to_have_text(words["created"].format(key=key))

    page.fill("#import-region", "CN")
    page.fill("#import-years", "2026")
    page.locator("#import-form").get_by_role("button", name=words["import"]).click()
    expect(page.locator(".notice.good").last).to_have_text(re.compile(words["imported"]))
    expect(page.locator("#calendar-source")).to_contain_text("chinesecalendar")
    page.get_by_role("button", name=words["make_default"]).click()
    expect(page.locator("#default-badge")).to_have_text(words["default"])
    page.goto(page.url.split("?")[0] + "?month=2026-10")
    national_day = page.locator("#day-2026-10-01")
    expect(national_day).to_contain_text(words["holiday"])
    expect(national_day).to_contain_text("国庆节")
    expect(page.locator("#day-2026-10-10")).to_contain_text(words["makeup"])
    expect(page.locator("#day-2026-10-10")).to_have_class(re.compile(r"\bworked\b"))
    expect(page.locator("#revision-2")).to_be_visible()
    check_accessible(page)
    fits_narrow(page)
    if language == "zh":
        screenshot(page, "calendar-month")

    page.get_by_role("link", name=words["preview"]).click()
    page.fill("#submitted-at", "2026-09-30 19:00")
    page.fill("#preview-days", "3")
    page.fill("#preview-cutoff", "18:00")
    page.get_by_role("button", name=words["go"], exact=True).click()
    deadline = page.locator("#deadline-at")
    expect(deadline).to_contain_text("2026-10-12 18:00")
    expect(deadline).to_contain_text(words["zone"])
    expect(page.locator("#business-day")).to_have_text("2026-10-08")
    expect(page.locator("#counted-days")).to_have_text("2026-10-09, 2026-10-10, 2026-10-12")
    expect(page.locator("#preview-answer h3")).to_have_text(words["skipped"])
    expect(page.locator("#skipped-2026-10-01")).to_contain_text("国庆节")
    expect(page.locator("#skipped-2026-10-11")).to_contain_text(words["sunday"])
    check_accessible(page)
    fits_narrow(page)
    if language == "zh":
        screenshot(page, "calendar-deadline-preview")
