"""In a real browser, in Chinese, on each store: the schedule form's cron builder writing the
expression and the preview following it (and the plain field without a script), and a
schedule's timeline read as sentences with what an edit changed, its JSON on demand, and a
jump to an instant."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from playwright.sync_api import expect

from tests.e2e.console.conftest import (
    LOCALES,
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    pick,
    sign_in,
)
from tests.e2e.console.test_console_schedules import (
    SCHEDULE_PAGE,
    SCHEDULES,
    published,
    schedule,
    unique,
)

__all__ = ["published"]  # the fixture, shared with the schedules' tests


def test_the_builder_writes_the_expression_and_the_preview_follows_in_chinese(
    site: Site, browser: Any, published: dict[str, Any]
) -> None:
    page = new_page(browser, "zh")
    sign_in(page, site, then="/console/schedules/new")
    builder = page.locator("#cron-builder")
    expect(builder).to_be_visible()
    expect(page.locator("#builder-mode")).to_have_value("daily")  # the form's 0 9 * * *
    words = page.locator("#preview .words")

    page.select_option("#builder-mode", "weekly")
    page.fill("#builder-time", "08:30")
    expect(page.locator("#expression")).to_have_value("30 8 * * 1-5")
    expect(words).to_contain_text("每周一至周五 08:30")
    page.locator('.builder-day[value="5"]').uncheck()  # Friday
    expect(page.locator("#expression")).to_have_value("30 8 * * 1-4")
    expect(words).to_contain_text("每周一至周四 08:30")

    page.select_option("#builder-mode", "minutes")
    expect(page.locator("#builder-time")).to_be_hidden()
    page.fill("#builder-every", "15")
    expect(page.locator("#expression")).to_have_value("*/15 * * * *")
    expect(words).to_contain_text("每 15 分钟")

    page.select_option("#builder-mode", "monthly")
    page.fill("#builder-day", "28")
    expect(page.locator("#expression")).to_have_value("30 8 28 * *")
    expect(words).to_contain_text("每月 28 日 08:30")

    page.fill("#expression", "*/10 * * * * *")  # six fields, typed: the builder steps aside
    expect(page.locator("#builder-mode")).to_have_value("advanced")
    expect(words).to_contain_text("每 10 秒")
    check_accessible(page)
    fits_narrow(page)

    name = unique("builder")
    page.fill("#name", name)
    pick(page, "#definition_id", published["name"])
    page.click("#schedule-form button[type=submit]")
    page.wait_for_url(SCHEDULE_PAGE)
    saved = site.api("GET", f"{SCHEDULES}/{page.url.rsplit('/', 1)[1]}")
    assert saved["trigger"]["expression"] == "*/10 * * * * *"
    expect(page.locator("main")).to_contain_text("每 10 秒")
    page.context.close()


def test_without_a_script_the_expression_field_is_all_there_is(site: Site, browser: Any) -> None:
    context = browser.new_context(locale=LOCALES["zh"], java_script_enabled=False)
    page = context.new_page()
    sign_in(page, site, then="/console/schedules/new")
    expect(page.locator("#cron-builder")).to_be_hidden()
    expect(page.locator("#expression")).to_be_visible()
    expect(page.locator("#expression")).to_be_editable()
    context.close()


def test_a_schedule_timeline_reads_as_sentences_in_chinese(
    site: Site, browser: Any, published: dict[str, Any]
) -> None:
    made = schedule(site, published, unique("history"))
    edited = site.api(
        "PATCH", f"{SCHEDULES}/{made['id']}", {"name": "月度结账", "timezone": "Europe/Berlin"}
    )
    events = site.api("GET", f"{SCHEDULES}/{made['id']}/timeline")["items"]
    assert [e["type"] for e in events] == ["Schedule.Created", "Schedule.Updated"]
    page = new_page(browser, "zh")
    sign_in(page, site, then=f"/console/timelines/schedule/{made['id']}")
    edit = page.locator('li.event[data-type="Schedule.Updated"]')
    expect(edit.locator(".event-name")).to_have_text("修改定时任务")
    expect(edit.locator(".sentence")).to_have_text("admin 修改了定时任务。")
    name = edit.locator('tr[data-change="name"]')
    expect(name.locator("th")).to_contain_text("名称")
    expect(name.locator(".old")).to_have_text(made["name"])
    expect(name.locator(".new")).to_contain_text(edited["name"])
    expect(edit.locator('tr[data-change="timezone"] .new')).to_contain_text("Europe/Berlin")
    json = edit.locator("details.json pre")
    expect(json).to_be_hidden()
    edit.locator("details.json summary").click()
    expect(json).to_contain_text('"changes"')
    check_accessible(page)
    fits_narrow(page)

    created = datetime.fromisoformat(events[0]["at"]) + timedelta(milliseconds=1)
    berlin = created.astimezone(ZoneInfo("Europe/Berlin"))  # the browser's zone (new_page's)
    page.fill("#jump", berlin.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3])
    page.get_by_role("button", name="跳转").click()
    expect(page).to_have_url(re.compile(r"jump="))
    expect(page.locator("li.event.here")).to_have_attribute("data-type", "Schedule.Created")
    page.context.close()
