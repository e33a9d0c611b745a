"""Timelines in a real browser: an instance's events, its state as it was at an instant the
auditor types (before the approve: waiting) or picks from an event, and the printable view."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from tests.e2e.console.conftest import (
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    screenshot,
    sign_in,
)
from tests.e2e.console.test_console_approvals import Review, as_account, launch, review

__all__ = ["review"]  # the fixture, shared with the approvals tests


def typed_between(first: datetime, then: datetime, zone: ZoneInfo) -> str:
    """An instant in [first, then) as a datetime-local field takes it: its wall time in
    `zone`, to the millisecond (one that does not end in 0, which the field would shorten)."""
    moment = first.replace(microsecond=first.microsecond // 1000 * 1000)
    while moment < first or moment.microsecond // 1000 % 10 == 0:
        moment += timedelta(milliseconds=1)
    assert moment < then, "the approve came too soon after the submission to type between"
    return moment.astimezone(zone).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


def test_the_timeline_the_state_before_the_approve_and_the_printable_view(
    site: Site, browser: Any, review: Review
) -> None:
    from playwright.sync_api import expect

    instance = launch(site, review)
    path = f"/console/timelines/approval/{instance['id']}"
    page = new_page(browser, "en")
    sign_in(page, site, then=path)
    command_id = f"olga-{uuid.uuid4().hex}"
    as_account(site, review.olga).api(
        "POST",
        f"/api/approvals/{instance['id']}/approve",
        {"command_id": command_id, "material_version": instance["material_version"]},
    )
    page.reload()
    approved = page.locator('li.event[data-type="ApprovalInstance.Approved"]')
    for shown in (command_id, "APPROVED", "olga-", "UTC", "approved before the deadline"):
        expect(approved).to_contain_text(shown)
    check_accessible(page)
    fits_narrow(page)

    items = site.api("GET", f"/api/approvals/{instance['id']}/timeline")["items"]
    at = {item["type"]: datetime.fromisoformat(item["at"]) for item in items}
    zone = ZoneInfo(page.locator("#at").get_attribute("data-zone"))  # the viewer's, as shown
    assert zone.key == "Europe/Berlin"  # the browser's (new_page's)
    typed = typed_between(at["ApprovalInstance.Submitted"], at["ApprovalInstance.Approved"], zone)
    page.fill("#at", typed)
    page.click("form.as-of button[type=submit]")
    expect(page.locator('.past-state tr[data-field="state"]')).to_contain_text("WAITING_REVIEW")
    expect(page.locator(".led")).to_contain_text("ApprovalInstance.Submitted")
    expect(page.locator(".led")).not_to_contain_text("ApprovalInstance.Approved")
    expect(page.locator(".later")).to_contain_text("ApprovalInstance.Approved")
    check_accessible(page)
    fits_narrow(page)
    screenshot(page, "timeline")

    page.locator(".later li.event").last.locator("a.as-of-link").click()
    expect(page.locator('.past-state tr[data-field="state"]')).to_contain_text("APPROVED")

    page.click("a.print-link")
    expect(page.locator(".printable h1")).to_contain_text(instance["id"])
    expect(page.locator(".printable .past-state")).to_contain_text("APPROVED")
    page.emulate_media(media="print")
    expect(page.locator("header.top")).to_be_hidden()
    check_accessible(page)
    page.emulate_media(media="screen")

    chinese = new_page(browser, "zh")
    sign_in(chinese, site, then=path)
    expect(chinese.locator("h1")).to_contain_text("时间线")
    expect(chinese.locator("label[for=at]")).to_contain_text("查看某一时刻的状态")
