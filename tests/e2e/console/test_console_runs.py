"""The console's runs pages in a real browser: the execution log and its filters, a run's page
updating live, retry with its refusals, and the dead letters' bulk retry.

Runs are made to fail by deactivating the account that saved their schedule (`SAVER_INACTIVE`
is retried, and run now does not check it): with the site's quick retries and two attempts a
round, such a run is dead-lettered in about a second.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

import pytest
from playwright.sync_api import expect

from tests.e2e.console.conftest import (
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    screenshot,
    sign_in,
)
from tests.support import DECIDERS, wait_until

NEVER_SOON = {"kind": "cron", "expression": "0 0 1 1 *"}  # the tick registers nothing here
LIVE_SECONDS = 20_000  # milliseconds a live change may take: a worker's tick, a stream's poll


@dataclass(frozen=True)
class World:
    """A published definition, and two initiators (`ann`, `bob`) holding the submit right."""

    definition_id: str


@pytest.fixture(scope="module")
def world(site: Site) -> World:
    definition = site.api(
        "POST",
        "/api/definitions",
        {
            "key": "runs-page",
            "name": "Runs page",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
    )
    site.api("POST", f"/api/definitions/{definition['id']}/publish", {})
    for account_id in ("ann", "bob"):
        site.api(
            "POST", "/api/accounts", {"id": account_id, "name": account_id, "roles": ["requester"]}
        )
    return World(definition["id"])


def saver(site: Site, account_id: str) -> Site:
    """A new operator, as a site whose API calls are its own."""
    site.api("POST", "/api/accounts", {"id": account_id, "name": account_id, "roles": ["operator"]})
    token = site.api("POST", f"/api/accounts/{account_id}/tokens")["token"]
    return Site(site.url, token, site.store_url)


def schedule(
    by: Site, world: World, name: str, initiator: str = "ann", **fields: Any
) -> dict[str, Any]:
    body = {
        "name": name,
        "definition_id": world.definition_id,
        "trigger": NEVER_SOON,
        "timezone": "Asia/Shanghai",
        "initiator_id": initiator,
        "title_template": f"{name} {{{{date}}}}",
        "form_data": {"region": "east", "checks": 3},
        "enabled": True,
        "overlap_policy": "allow",
        **fields,
    }
    created: dict[str, Any] = by.api("POST", "/api/workflows/schedules", body)
    return created


def run_now(site: Site, schedule_id: str) -> str:
    run = site.api(
        "POST", f"/api/workflows/schedules/{schedule_id}/run", {"request_id": str(uuid4())}
    )
    return str(run["id"])


def set_active(site: Site, account_id: str, active: bool) -> None:
    site.api("POST", f"/api/accounts/{account_id}/{'activate' if active else 'deactivate'}", {})


def status_becomes(site: Site, run_id: str, status: str) -> None:
    wait_until(
        lambda: site.api("GET", f"/api/workflows/runs/{run_id}")["status"] == status,
        f"run {run_id} {status}",
        timeout=LIVE_SECONDS / 1000,
        interval=0.1,
    )


def dead_letter(site: Site, world: World, name: str, initiator: str = "ann") -> tuple[str, str]:
    """A schedule whose saver was deactivated, and its run now, dead-lettered; the saver is
    active again (`name` is also the saver's id)."""
    operator = saver(site, name)
    created = schedule(operator, world, name, initiator)
    set_active(site, name, False)
    run_id = run_now(site, created["id"])
    status_becomes(site, run_id, "DEAD_LETTER")
    set_active(site, name, True)
    return created["id"], run_id


def status_of(page: Any) -> Any:
    return page.locator("#run-panel [data-status]").first


def test_a_run_started_now_succeeds_on_its_page_without_reloading(
    site: Site, browser: Any, world: World
) -> None:
    created = schedule(site, world, "Live check")
    run_id = run_now(site, created["id"])
    page = new_page(browser, "en")
    sign_in(page, site, then=f"/console/runs/{run_id}")
    page.evaluate("window.notReloaded = true")
    expect(status_of(page)).to_have_attribute("data-status", "SUCCEEDED", timeout=LIVE_SECONDS)
    assert page.evaluate("window.notReloaded") is True
    attempt = page.locator("table.attempts tbody tr")
    expect(attempt).to_have_count(1)
    expect(attempt.locator("[data-outcome]")).to_have_attribute("data-outcome", "SUCCEEDED")
    expect(page.locator("h1")).to_have_text(
        site.api("GET", f"/api/workflows/runs/{run_id}")["title"]
    )
    expect(page.locator("#frozen")).to_contain_text("Asia/Shanghai")
    page.context.close()


def test_a_dead_letter_retried_elsewhere_succeeds_live_in_chinese(
    site: Site, browser: Any, world: World
) -> None:
    _schedule_id, run_id = dead_letter(site, world, "saver-live")
    page = new_page(browser, "zh")
    sign_in(page, site, then=f"/console/runs/{run_id}")
    expect(status_of(page)).to_have_text("死信")
    attempts = page.locator("table.attempts tbody tr")
    expect(attempts).to_have_count(2)
    expect(attempts.first).to_contain_text("SAVER_INACTIVE")
    expect(attempts.first).to_contain_text("最后保存该定时任务的账号已停用")
    expect(page.get_by_role("button", name="补发")).to_be_visible()
    page.evaluate("window.notReloaded = true")
    retry_by_api(site, run_id)
    expect(status_of(page)).to_have_attribute("data-status", "SUCCEEDED", timeout=LIVE_SECONDS)
    expect(status_of(page)).to_have_text("成功")
    expect(attempts).to_have_count(3)
    expect(attempts.last.locator("[data-outcome]")).to_have_attribute("data-outcome", "SUCCEEDED")
    expect(page.get_by_role("button", name="补发")).to_have_count(0)
    assert page.evaluate("window.notReloaded") is True
    check_accessible(page)
    fits_narrow(page)
    screenshot(page, "run-detail")
    page.context.close()


def retry_by_api(site: Site, run_id: str) -> None:
    run = site.api("GET", f"/api/workflows/runs/{run_id}")
    site.api("POST", f"/api/workflows/schedules/{run['schedule_id']}/runs/{run_id}/retry", {})


def test_retry_on_the_run_page_is_refused_next_to_its_cause_then_accepted(
    site: Site, browser: Any, world: World
) -> None:
    _schedule_id, run_id = dead_letter(site, world, "saver-page", initiator="bob")
    set_active(site, "bob", False)
    page = new_page(browser, "en")
    sign_in(page, site, then=f"/console/runs/{run_id}")
    page.fill("#retry-reason", "the saver is back")
    page.get_by_role("button", name="Retry", exact=True).click()
    expect(page.locator("#initiator_id-error")).to_contain_text("bob")
    expect(page.locator("#run-refused")).to_contain_text("Refused: initiator_id")
    expect(status_of(page)).to_have_attribute("data-status", "DEAD_LETTER")
    check_accessible(page)
    set_active(site, "bob", True)
    page.get_by_role("button", name="Retry", exact=True).click()
    page.wait_for_url(re.compile(r"done=retried"))
    expect(status_of(page)).to_have_attribute("data-status", "SUCCEEDED", timeout=LIVE_SECONDS)
    expect(page.locator("#run-done")).to_have_count(0)  # "Retry accepted" is no news once done
    page.context.close()


def test_dead_letters_are_retried_in_bulk_each_reported(
    site: Site, browser: Any, world: World
) -> None:
    _first, launches = dead_letter(site, world, "saver-bulk-ann")
    _second, refused = dead_letter(site, world, "saver-bulk-bob", initiator="bob")
    set_active(site, "bob", False)  # bob's run is refused, ann's retried
    page = new_page(browser, "en")
    sign_in(page, site, then="/console/runs/dead-letters")
    for run_id in (launches, refused):
        page.check(f"#pick-{run_id}")
    page.fill("#bulk-reason", "saver reactivated")
    check_accessible(page)
    fits_narrow(page)
    screenshot(page, "dead-letters")
    page.get_by_role("button", name="Retry the runs picked").click()
    report = page.locator("#bulk-report")
    expect(report.locator(f'tr[data-item="{launches}"]')).to_have_attribute("data-outcome", "DONE")
    refusal = report.locator(f'tr[data-item="{refused}"]')
    expect(refusal).to_have_attribute("data-outcome", "REFUSED")
    expect(refusal).to_contain_text("VALIDATION_FAILED")
    expect(refusal).to_contain_text("initiator_id")
    expect(page.locator(f'#dead-rows tr[data-run="{launches}"]')).to_have_count(
        0, timeout=LIVE_SECONDS
    )
    expect(page.locator(f'#dead-rows tr[data-run="{refused}"]')).to_have_count(1)
    status_becomes(site, launches, "SUCCEEDED")
    set_active(site, "bob", True)
    page.get_by_role("button", name="Retry the runs picked").click()  # nothing picked
    expect(page.locator("#run_id-error")).to_have_text("Pick at least one run.")
    expect(page.locator("#bulk-report")).to_have_count(0)
    page.context.close()


def test_the_execution_log_filters_and_shows_a_new_run_live(
    site: Site, browser: Any, world: World
) -> None:
    created = schedule(site, world, "Filtered")
    first, second = run_now(site, created["id"]), run_now(site, created["id"])
    for run_id in (first, second):
        status_becomes(site, run_id, "SUCCEEDED")
    page = new_page(browser, "en")
    sign_in(page, site, then="/console/runs/")
    expect(page.locator("h1")).to_have_text("Execution log")
    rows = page.locator("#run-rows tbody tr")
    page.locator("#schedule_id").press_sequentially("Filt")
    page.get_by_role("option", name="Filtered").click()
    page.get_by_role("button", name="Filter", exact=True).click()
    expect(page.locator("h1")).to_have_text("Runs of Filtered")
    assert f"schedule_id={created['id']}" in page.url
    expect(page.locator("#schedule_id")).to_have_value("Filtered")
    expect(rows).to_have_count(2)
    page.select_option("#status", "DEAD_LETTER")
    page.get_by_role("button", name="Filter", exact=True).click()
    expect(page.locator("#run-rows")).to_contain_text("No run matches.")
    page.select_option("#status", "")
    page.select_option("#trigger", "schedule")
    page.get_by_role("button", name="Filter", exact=True).click()
    expect(page.locator("#run-rows")).to_contain_text("No run matches.")
    page.select_option("#trigger", "manual")
    page.fill("#planned_from", "2030-01-01T00:00")
    page.fill("#planned_to", "2020-01-01T00:00")
    page.get_by_role("button", name="Filter", exact=True).click()
    expect(page.locator("#planned_to-error")).to_contain_text("planned_from")
    expect(page.locator("#planned_to")).to_have_attribute("aria-invalid", "true")
    page.fill("#planned_from", "2020-01-01T00:00")
    page.fill("#planned_to", "2999-01-01T00:00")
    page.get_by_role("button", name="Filter", exact=True).click()
    expect(rows).to_have_count(2)
    page.evaluate("window.notReloaded = true")
    third = run_now(site, created["id"])
    expect(page.locator(f'#run-rows tr[data-run="{third}"]')).to_have_count(1, timeout=LIVE_SECONDS)
    expect(page.locator(f'#run-rows tr[data-run="{third}"] [data-status]')).to_have_attribute(
        "data-status", "SUCCEEDED", timeout=LIVE_SECONDS
    )
    assert page.evaluate("window.notReloaded") is True
    page.goto(f"{site.url}/console/runs/")
    expect(page.locator(f'#run-rows tr[data-run="{third}"]')).to_have_count(1)
    check_accessible(page)
    fits_narrow(page)
    screenshot(page, "runs-list")
    page.context.close()


def test_the_per_schedule_view_is_reachable_from_a_run_in_chinese(
    site: Site, browser: Any, world: World
) -> None:
    created = schedule(site, world, "每日核对")
    run_id = run_now(site, created["id"])
    page = new_page(browser, "zh")
    sign_in(page, site, then=f"/console/runs/{run_id}")
    page.get_by_role("link", name="每日核对 的执行日志").click()
    expect(page.locator("h1")).to_have_text("每日核对 的执行日志")
    expect(page.locator(f'#run-rows tr[data-run="{run_id}"]')).to_have_count(1)
    assert f"schedule_id={created['id']}" in page.url
    check_accessible(page)
    page.context.close()


def test_the_schedule_picker_offers_what_is_typed_and_is_worked_by_keyboard_in_chinese(
    site: Site, browser: Any, world: World
) -> None:
    tag = uuid4().hex[:6]
    first, second = (schedule(site, world, f"财务月结 {tag} {n}") for n in ("A", "B"))
    schedule(site, world, f"人事 {tag}")
    run_id = run_now(site, second["id"])
    run_now(site, first["id"])
    page = new_page(browser, "zh")
    sign_in(page, site, then="/console/runs/")
    picker = page.locator("#schedule_id")
    expect(picker).to_have_attribute("role", "combobox")
    picker.press_sequentially(f"财务月结 {tag}")
    options = page.locator("#schedule_id-options [role=option]")
    expect(options).to_have_text([f"财务月结 {tag} A", f"财务月结 {tag} B"])
    expect(picker).to_have_attribute("aria-expanded", "true")
    check_accessible(page)  # the combobox with its list open
    picker.press("ArrowDown")
    picker.press("ArrowDown")
    expect(picker).to_have_attribute("aria-activedescendant", "schedule_id-option-1")
    picker.press("Enter")  # picks the option: the form is not sent yet
    expect(picker).to_have_value(f"财务月结 {tag} B")
    expect(picker).to_have_attribute("aria-expanded", "false")
    page.get_by_role("button", name="筛选", exact=True).click()
    expect(page.locator("h1")).to_have_text(f"财务月结 {tag} B 的执行日志")
    expect(page.locator("#run-rows tbody tr")).to_have_count(1)
    expect(page.locator(f'#run-rows tr[data-run="{run_id}"]')).to_have_count(1)
    assert f"schedule_id={second['id']}" in page.url
    page.context.close()
