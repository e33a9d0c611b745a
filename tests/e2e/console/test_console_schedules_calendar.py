"""A schedule on a working calendar in a real browser, in Chinese and English, on both stores: on
a CN calendar with 2026 imported and the rule "working days only", the form's live preview from
2026-10-01 marks that day's fire skipped, naming 国庆节, and the saved schedule keeps both."""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

import pytest
from playwright.sync_api import expect

from tests.e2e.console.conftest import (
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    pick,
    sign_in,
)
from tests.support import DECIDERS

SCHEDULES = "/api/workflows/schedules"
SCHEDULE_PAGE = re.compile(r"/console/schedules/[0-9a-f-]{36}$")
WORDS = {
    "en": {"skipped": "Skipped: 2026-10-01 is a day off (国庆节)", "rule": "Working days only"},
    "zh": {"skipped": "跳过：2026-10-01 不是工作日（国庆节）", "rule": "仅工作日执行"},
}


@pytest.fixture(scope="module")
def published(site: Site) -> dict[str, Any]:
    created = site.api(
        "POST",
        "/api/definitions",
        {
            "key": "daily-check",
            "name": "Daily check",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
    )
    return site.api("POST", f"/api/definitions/{created['id']}/publish")  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def cn(site: Site) -> str:
    """A CN calendar with 2026 imported from the holiday libraries: its key."""
    created = site.api(
        "POST", "/api/calendars", {"key": "cn", "name": "中国大陆", "timezone": "Asia/Shanghai"}
    )
    site.api("POST", f"/api/calendars/{created['id']}/import", {"region": "CN", "years": [2026]})
    return "cn"


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_preview_marks_a_national_day_fire_skipped_on_working_days_only(
    site: Site, browser: Any, published: dict[str, Any], cn: str, language: str
) -> None:
    words = WORDS[language]
    page = new_page(browser, language)
    sign_in(page, site, then="/console/schedules/new")
    name = f"weekday-{language}-{uuid4().hex[:6]}"
    page.fill("#name", name)
    pick(page, "#definition_id", "Daily", published["name"])
    page.fill("#timezone", "Asia/Shanghai")
    page.fill("#expression", "0 9 * * *")
    page.fill("#preview_after", "2026-10-01T00:00")
    expect(page.locator("#calendar_rule option:checked")).to_contain_text(words["rule"])
    page.select_option("#calendar", cn)
    holiday = page.locator('#preview li[data-day="2026-10-01"]')
    expect(holiday).to_have_attribute("data-outcome", "SKIPPED")
    expect(holiday).to_contain_text(words["skipped"])
    expect(page.locator('#preview li[data-outcome="SKIPPED"]')).to_have_count(5)  # 10-01..05
    if language == "en":
        check_accessible(page)
        fits_narrow(page)

    page.click("#schedule-form button[type=submit]")
    page.wait_for_url(SCHEDULE_PAGE)
    saved = site.api("GET", f"{SCHEDULES}/{page.url.rsplit('/', 1)[1]}")
    assert (saved["calendar"], saved["calendar_rule"]) == (cn, "working_days_only")
    expect(page.locator("h1")).to_contain_text(name)
