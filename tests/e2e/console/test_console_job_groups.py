"""Job groups (任务组名) in a real browser, in Chinese and English, on both stores: a schedule
saved through the form in a group shows it on its page and in the list's column, and the list's
group filter finds it alone."""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

import pytest
from playwright.sync_api import expect

from tests.e2e.console.conftest import Site, check_accessible, new_page, pick, sign_in
from tests.support import DECIDERS

SCHEDULE_PAGE = re.compile(r"/console/schedules/[0-9a-f-]{36}$")
WORDS = {
    "en": {"group": "Job group", "filter": "Filter"},
    "zh": {"group": "任务组名", "filter": "筛选"},
}


@pytest.fixture(scope="module")
def published(site: Site) -> dict[str, Any]:
    created = site.api(
        "POST",
        "/api/definitions",
        {
            "key": "grouped-check",
            "name": "Grouped check",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
    )
    return site.api("POST", f"/api/definitions/{created['id']}/publish")  # type: ignore[no-any-return]


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_schedule_s_group_is_shown_and_filtered(
    site: Site, browser: Any, published: dict[str, Any], language: str
) -> None:
    words, group = WORDS[language], f"财务-{language}-{uuid4().hex[:4]}"
    page = new_page(browser, language)
    sign_in(page, site, then="/console/schedules/new")
    name = f"grouped-{language}-{uuid4().hex[:6]}"
    page.fill("#name", name)
    expect(page.locator("#group")).to_have_value("DEFAULT")
    page.fill("#group", group)
    pick(page, "#definition_id", "Grouped", published["name"])
    page.click("#schedule-form button[type=submit]")
    page.wait_for_url(SCHEDULE_PAGE)
    expect(page.locator("#schedule-group")).to_have_text(group)

    page.goto(site.url + "/console/schedules/")
    page.get_by_label(words["group"], exact=True).fill(group)
    page.get_by_role("button", name=words["filter"], exact=True).click()
    rows = page.locator("table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(name)
    expect(rows.first).to_contain_text(group)
    expect(page.get_by_role("columnheader", name=words["group"])).to_be_visible()
    check_accessible(page)
