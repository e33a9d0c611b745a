"""Acting in the lists in a real browser, on each store: picking schedules and disabling them
at once, with one deleted meanwhile, in Chinese; a row's toggle, and a bulk delete that asks
first, in English; picked runs cancelled with the ones that cannot be refused, in Chinese.
Each shows what every picked row got."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest
from playwright.sync_api import expect

from tests.e2e.console.conftest import (
    NARROW,
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    screenshot,
    sign_in,
)
from tests.support import DECIDERS, wait_until

SCHEDULES = "/api/workflows/schedules"
LIVE_SECONDS = 20  # a worker's tick and a launch


@pytest.fixture(scope="module")
def definition_id(site: Site) -> str:
    created = site.api(
        "POST",
        "/api/definitions",
        {
            "key": "bulk",
            "name": "Bulk",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
    )
    site.api("POST", f"/api/definitions/{created['id']}/publish")
    return str(created["id"])


def schedules(site: Site, definition_id: str, *names: str, **fields: Any) -> list[dict[str, Any]]:
    """Schedules made through the API, each firing once a year (the tick leaves them be)."""
    return [
        site.api(
            "POST",
            SCHEDULES,
            {
                "name": name,
                "definition_id": definition_id,
                "trigger": {"kind": "cron", "expression": "0 0 1 1 *"},
                "timezone": "Asia/Shanghai",
                "initiator_id": "admin",
                "overlap_policy": "allow",
                **fields,
            },
        )
        for name in names
    ]


def report_row(page: Any, item_id: str) -> Any:
    return page.locator(f'#bulk-report tr[data-item="{item_id}"]')


def test_picked_schedules_are_disabled_at_once_and_each_row_reported_in_chinese(
    site: Site, browser: Any, definition_id: str
) -> None:
    tag = uuid4().hex[:6]
    daily, weekly, monthly = schedules(
        site, definition_id, f"财务日报-{tag}", f"财务周报-{tag}", f"财务月报-{tag}", enabled=True
    )
    page = new_page(browser, "zh")
    sign_in(page, site, then="/console/schedules/")
    for picked in (daily, weekly, monthly):
        page.check(f"#pick-{picked['id']}")
    site.api("DELETE", f"{SCHEDULES}/{monthly['id']}?version={monthly['version']}")  # meanwhile
    page.fill("#bulk-reason", "月末冻结")
    page.get_by_role("button", name="批量停用").click()

    expect(page.locator("#bulk-report")).to_contain_text("2 项已完成，0 项无变化，1 项被拒绝。")
    for done in (daily, weekly):
        expect(report_row(page, done["id"])).to_have_attribute("data-outcome", "DONE")
        expect(report_row(page, done["id"])).to_contain_text("已停用")
    refused = report_row(page, monthly["id"])
    expect(refused).to_have_attribute("data-outcome", "REFUSED")
    expect(refused).to_contain_text(monthly["name"])
    expect(refused).to_contain_text("NOT_FOUND")
    expect(refused).to_contain_text("已不存在（可能已被删除）")
    for done in (daily, weekly):
        assert site.api("GET", f"{SCHEDULES}/{done['id']}")["enabled"] is False
    check_accessible(page)
    page.set_viewport_size(NARROW)
    check_accessible(page)
    fits_narrow(page)
    screenshot(page, "schedules-bulk-report")


def test_a_row_toggle_and_a_bulk_delete_that_asks_first_in_english(
    site: Site, browser: Any, definition_id: str
) -> None:
    tag = uuid4().hex[:6]
    first, second = schedules(site, definition_id, f"old-{tag}", f"older-{tag}")
    page = new_page(browser, "en")
    sign_in(page, site, then="/console/schedules/")
    page.get_by_role("button", name=f"Enable {first['name']}").click()
    expect(page.locator(".notice.good")).to_have_text(f"“{first['name']}” enabled.")
    assert site.api("GET", f"{SCHEDULES}/{first['id']}")["enabled"] is True
    expect(page.get_by_role("button", name=f"Disable {first['name']}")).to_be_visible()
    check_accessible(page)

    for picked in (first, second):
        page.check(f"#pick-{picked['id']}")
    page.get_by_role("button", name="Delete the picked…").click()
    expect(page.locator("h1")).to_have_text("Delete 2 schedule(s)?")
    expect(page.locator("ul.picked")).to_contain_text(first["name"])
    assert site.api("GET", f"{SCHEDULES}/{second['id']}")["name"] == second["name"]  # not yet
    check_accessible(page)
    site.api("POST", f"{SCHEDULES}/{second['id']}/enable", {})  # someone else, meanwhile
    page.fill("#reason", "retired")
    page.get_by_role("button", name="Delete these 2 schedule(s)").click()
    expect(page.locator("#bulk-report")).to_contain_text("1 done, 0 unchanged, 1 refused.")
    expect(report_row(page, first["id"])).to_contain_text("Deleted")
    stale = report_row(page, second["id"])
    expect(stale).to_have_attribute("data-outcome", "REFUSED")
    expect(stale).to_contain_text("VERSION_CONFLICT")
    expect(stale).to_contain_text("Changed by someone else since the page was read")
    expect(page.locator("table.schedules")).not_to_contain_text(first["name"])
    assert site.api("GET", f"{SCHEDULES}/{second['id']}")["enabled"] is True


def test_picked_runs_are_cancelled_after_asking_and_those_that_cannot_be_are_refused(
    site: Site, browser: Any, definition_id: str
) -> None:
    (made,) = schedules(site, definition_id, f"runs-{uuid4().hex[:6]}")
    runs = [
        site.api("POST", f"{SCHEDULES}/{made['id']}/run", {"request_id": str(uuid4())})["id"]
        for _ in range(2)
    ]
    for run_id in runs:
        wait_until(
            lambda run_id=run_id: (
                site.api("GET", f"/api/workflows/runs/{run_id}")["status"] == "SUCCEEDED"
            ),
            f"run {run_id} launched",
            timeout=LIVE_SECONDS,
            interval=0.1,
        )
    page = new_page(browser, "zh")
    sign_in(page, site, then=f"/console/runs/?schedule_id={made['id']}")
    for run_id in runs:
        page.check(f"#pick-{run_id}")
    page.get_by_role("button", name="批量取消…").click()
    expect(page.locator("h1")).to_have_text("取消 2 条执行？")
    check_accessible(page)
    page.get_by_role("button", name="取消这 2 条执行").click()
    for run_id in runs:
        row = report_row(page, run_id)
        expect(row).to_have_attribute("data-outcome", "REFUSED")
        expect(row).to_contain_text("INVALID_STATE")
        expect(row).to_contain_text("当前状态不允许此操作")
    expect(page.locator("h1")).to_contain_text(made["name"])  # the log as it was filtered
    check_accessible(page)
