"""The console's notifications: the bell's unread count, the page in Chinese and English, and
marking a notice read; through Flask's test client on both stores, and in a real browser
(axe-core, both languages) against `cronledger serve`."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.e2e.console.conftest import (
    Console,
    Site,
    check_accessible,
    new_page,
    screenshot,
    sign_in,
)
from tests.e2e.helpers import account, submit
from tests.support import DECIDERS, Api

PAGE = "/console/notifications/"


def approved_for_rita(admin: Api, definition_id: str) -> Api:
    """rita's instance, approved by olga: one notice for rita."""
    rita = account(admin, "rita", ["requester"])
    olga = account(admin, "olga", ["operator"])
    instance = submit(rita, definition_id).json
    olga.post(
        f"/api/approvals/{instance['id']}/approve", {"command_id": "ok", "material_version": 2}
    )
    return rita


def test_the_bell_counts_the_unread_and_the_page_marks_one_read(
    admin: Api, client: FlaskClient, definition_id: str
) -> None:
    rita = approved_for_rita(admin, definition_id)
    browser = Console(client)
    browser.sign_in(rita.token)
    page = browser.page(PAGE, headers={"Accept-Language": "zh"})
    assert "通知：1 条未读" in page
    assert "您的申请「Open account」已通过（olga）。" in page
    (notice,) = rita.get("/api/notifications").json["items"]
    marked = browser.post(f"{PAGE}{notice['id']}/read")
    assert marked.status_code == 302
    english = browser.page(PAGE, headers={"Accept-Language": "en"})
    assert "Notifications: 0 unread" in english
    assert "Your application Open account was approved (olga)." in english
    assert "Mark as read" not in english


def test_another_accounts_notice_cannot_be_marked(
    admin: Api, client: FlaskClient, definition_id: str, console: Console
) -> None:
    rita = approved_for_rita(admin, definition_id)
    (notice,) = rita.get("/api/notifications").json["items"]
    assert console.post(f"{PAGE}{notice['id']}/read").status_code == 404
    assert rita.get("/api/notifications").json["unread"] == 1


def arranged(site: Site, suffix: str) -> str:
    """On the served site: rita's instance approved by the admin; rita's token (each of the
    definition's and rita's ids ending in `suffix`)."""
    body = {
        "key": f"notices-{suffix}",
        "name": "Notices",
        "external": False,
        "review_window_seconds": 3600,
        "reviewers": DECIDERS,
    }
    created = site.api("POST", "/api/definitions", body)
    site.api("POST", f"/api/definitions/{created['id']}/publish")
    rita = f"rita-{suffix}"
    site.api("POST", "/api/accounts", {"id": rita, "name": "rita", "roles": ["requester"]})
    token = str(site.api("POST", f"/api/accounts/{rita}/tokens")["token"])
    submission = {"command_id": "s-1", "definition_id": created["id"], "title": "Open account"}
    as_rita = Site(site.url, token, site.store_url)
    instance = as_rita.api("POST", "/api/approvals", {**submission, "material_version": 1})
    approval = {"command_id": "ok", "material_version": 1}
    site.api("POST", f"/api/approvals/{instance['id']}/approve", approval)
    return token


DECIDED = {
    "en": "Your application Open account was approved (admin).",
    "zh": "您的申请「Open account」已通过（admin）。",
}
BELL = {"en": "Notifications: {n} unread", "zh": "通知：{n} 条未读"}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_in_a_browser_the_bell_leads_to_the_notice_which_is_marked_read(
    site: Site, browser: Any, language: str
) -> None:
    from playwright.sync_api import expect

    token = arranged(site, language)
    page = new_page(browser, language)
    sign_in(page, site, token, then="/console/approvals/")
    bell = page.locator("#bell")
    expect(bell).to_have_attribute("aria-label", BELL[language].format(n=1))
    expect(bell.locator(".unread")).to_have_text("1")
    bell.click()
    page.wait_for_url(f"**{PAGE}")
    expect(page.locator("#notices")).to_contain_text(DECIDED[language])
    check_accessible(page)
    if language == "zh":
        screenshot(page, "notifications")
    page.click("#notices button[type=submit]")
    page.wait_for_url(f"**{PAGE}")
    expect(bell.locator(".unread")).to_have_text("0")
    expect(bell).to_have_attribute("aria-label", BELL[language].format(n=0))
    expect(page.locator("#notices button[type=submit]")).to_have_count(0)
    check_accessible(page)
