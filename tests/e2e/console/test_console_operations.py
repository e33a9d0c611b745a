"""The operations dashboard and audit in a real browser, in Chinese and English."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.e2e.console.conftest import (
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    screenshot,
    sign_in,
)
from tests.support import DECIDERS, wait_until

DASHBOARD = "/console/operations/"
AUDIT = "/console/operations/audit"


@pytest.fixture(scope="module")
def launched(site: Site) -> dict[str, str]:
    """A published definition, a schedule the admin initiates, and one run now, succeeded."""
    definition = site.api(
        "POST",
        "/api/definitions",
        {
            "key": "ops-daily",
            "name": "Daily",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
    )
    site.api("POST", f"/api/definitions/{definition['id']}/publish", {})
    schedule = site.api(
        "POST",
        "/api/workflows/schedules",
        {
            "name": "每日检查",
            "definition_id": definition["id"],
            "trigger": {"kind": "cron", "expression": "0 9 * * *"},
            "timezone": "Asia/Shanghai",
            "initiator_id": "admin",
            "title_template": "每日检查 {{date}}",
            "form_data": {"region": "east"},
            "enabled": False,
            "misfire_policy": "catch_up",
            "overlap_policy": "skip_while_open",
        },
    )
    runs = f"/api/workflows/schedules/{schedule['id']}/runs"
    run = site.api("POST", f"/api/workflows/schedules/{schedule['id']}/run", {"request_id": "o1"})
    wait_until(
        lambda: site.api("GET", f"{runs}/{run['id']}")["status"] == "SUCCEEDED",
        "the run succeeded",
    )
    return {"schedule_id": schedule["id"], "run_id": run["id"]}


def cells(row: Any) -> list[str]:
    return [text.strip() for text in row.locator("th, td").all_inner_texts()]


def test_the_dashboard_shows_the_backlog_and_the_last_days_charts(
    site: Site, browser: Any, launched: dict[str, str]
) -> None:
    from playwright.sync_api import expect

    page = new_page(browser, "en")
    sign_in(page, site, then=DASHBOARD)
    expect(page.locator("h1")).to_have_text("Operations")
    for figure in ("due", "pending", "retry", "dead-letters", "overdue", "projection-lag"):
        expect(page.locator(f"#figure-{figure} .value")).to_have_text(re.compile(r"^\d+$"))
    dead_letters = page.locator("#figure-dead-letters a")
    expect(dead_letters).to_have_attribute("href", "/console/runs/dead-letters")

    for key in ("registration-lag", "launch-outcomes"):
        expect(page.locator(f"#{key} svg[role=img]")).to_be_visible()
    expect(page.locator("#launch-outcomes rect.series-0")).not_to_have_count(0)
    outcomes = page.locator("#launch-outcomes-desc")
    expect(outcomes).to_contain_text(re.compile(r"[1-9]\d* succeeded"))
    expect(page.locator("#registration-lag-desc")).to_contain_text("registered")

    page.get_by_text("Launch outcomes as a table").click()
    rows = page.locator("#launch-outcomes-table tbody tr")
    expect(rows).to_have_count(24)
    hour, succeeded, *_ = cells(rows.last)
    assert int(succeeded) >= 1
    # Each hour is written in the zone the page names (the viewer's), its UTC start beside it.
    named = re.search(r"\(([\w/+-]+)\)", page.locator("#charts-heading + p").inner_text())
    assert named is not None
    start = datetime.fromisoformat(str(rows.last.locator("time").get_attribute("datetime")))
    assert hour == start.astimezone(ZoneInfo(named.group(1))).strftime("%H:%M")
    page.get_by_text("Registration lag as a table").click()
    lags = page.locator("#registration-lag-table tbody tr")
    expect(lags).to_have_count(24)
    assert int(cells(lags.last)[1]) >= 1  # runs planned this hour (a manual run's lag is 0)

    check_accessible(page)
    fits_narrow(page)
    page.locator("details.chart-data").evaluate_all("all => all.forEach(d => d.open = false)")
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "operations-dashboard")


def test_the_dashboard_in_chinese(site: Site, browser: Any, launched: dict[str, str]) -> None:
    from playwright.sync_api import expect

    page = new_page(browser, "zh")
    sign_in(page, site, then=DASHBOARD)
    expect(page.locator("h1")).to_have_text("运维")
    expect(page.locator("#figure-dead-letters dt")).to_have_text("死信")
    expect(page.locator("#figure-overdue dt")).to_have_text("超时的审批")
    expect(page.locator("#registration-lag-title")).to_have_text(re.compile("登记延迟"))
    expect(page.locator("#launch-outcomes-desc")).to_contain_text("成功")
    expect(page.locator("#launch-outcomes .legend")).to_contain_text("进入死信")
    check_accessible(page)


def test_the_audit_lists_operations_and_filters_them_to_one_aggregate(
    site: Site, browser: Any, launched: dict[str, str]
) -> None:
    from playwright.sync_api import expect

    page = new_page(browser, "en")
    sign_in(page, site, then=f"{AUDIT}?aggregate={launched['schedule_id']}")
    rows = page.locator("#audit-table tbody tr")
    expect(rows).to_have_count(1)
    assert cells(rows.first)[1:3] == ["admin", "Schedule created\nschedule.created"]
    expect(page.locator("#aggregate")).to_have_value(launched["schedule_id"])

    page.click("text=Clear")
    page.select_option("#kind", "run.manual")
    page.click("form.filters button[type=submit]")
    expect(page.locator("#audit-table tbody tr")).to_have_count(1)
    expect(page.locator("#audit-table")).to_contain_text("manual run of schedule '每日检查'")
    page.locator("#audit-table a.aggregate-link").first.click()
    expect(page).to_have_url(re.compile(rf"aggregate={launched['run_id']}"))

    page.fill("#from", "2026-10-01T09:00")
    page.fill("#to", "2026-09-30T09:00")
    page.click("form.filters button[type=submit]")
    expect(page.locator("#to-error")).to_be_visible()
    expect(page.locator("#to")).to_have_attribute("aria-invalid", "true")

    page.goto(f"{site.url}{AUDIT}")
    expect(page.locator("#audit-table tbody tr").first).to_be_visible()
    check_accessible(page)
    fits_narrow(page)
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "operations-audit")
