"""A schedule the service paused (自动暂停) in a real browser, in Chinese and English, on both
stores: the badge on the schedules list and on its page, the page naming the failed run and its
error code, and the normal enable button taking the badge away."""

from __future__ import annotations

import json
import re
import urllib.request
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

SCHEDULES = "/api/workflows/schedules"
WORDS = {
    "en": {
        "badge": "Auto-paused",
        "paused_by": "Paused by the service",
        "in_a_row": "1 cycle in a row ended without launching:",
        "enable": "Enable",
        "enabled": "Enabled",
    },
    "zh": {
        "badge": "已自动暂停",
        "paused_by": "系统已于",
        "in_a_row": "连续 1 个周期未能发起实例：",
        "enable": "启用",
        "enabled": "已启用",
    },
}


@pytest.fixture(scope="module")
def definition_id(site: Site) -> str:
    body = {
        "key": "paused",
        "name": "Paused",
        "external": False,
        "review_window_seconds": 3600,
        "reviewers": DECIDERS,
    }
    created = site.api("POST", "/api/definitions", body)
    site.api("POST", f"/api/definitions/{created['id']}/publish")
    return str(created["id"])


def as_account(site: Site, token: str, path: str, body: Any) -> Any:
    """POST as another account than the admin; the answer's JSON."""
    call = urllib.request.Request(
        site.url + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(call, timeout=10) as answer:
        return json.loads(answer.read())


def auto_paused(site: Site, definition_id: str, name: str) -> dict[str, Any]:
    """A schedule saved by an operator who is then deactivated, pausing after one failure: a
    run of it fails (SAVER_INACTIVE), is dead-lettered, and the service pauses it."""
    saver = f"saver-{uuid4().hex[:8]}"
    site.api("POST", "/api/accounts", {"id": saver, "name": saver, "roles": ["operator"]})
    token = site.api("POST", f"/api/accounts/{saver}/tokens")["token"]
    fields = {
        "name": name,
        "definition_id": definition_id,
        "trigger": {"kind": "cron", "expression": "0 9 1 1 *"},
        "timezone": "Asia/Shanghai",
        "initiator_id": "admin",
        "enabled": True,
        "auto_pause_after_failures": 1,
    }
    made = as_account(site, token, SCHEDULES, fields)
    site.api("POST", f"/api/accounts/{saver}/deactivate")
    site.api("POST", f"{SCHEDULES}/{made['id']}/run", {"request_id": uuid4().hex})
    path = f"{SCHEDULES}/{made['id']}"
    return wait_until(  # type: ignore[no-any-return]
        lambda: (found := site.api("GET", path))["auto_paused"] and found, "auto-paused"
    )


@pytest.mark.parametrize("language", ["zh", "en"])
def test_an_auto_paused_schedule_is_marked_and_enabled_again_as_usual(
    site: Site, browser: Any, definition_id: str, language: str
) -> None:
    words, name = WORDS[language], f"自动暂停 {language} {uuid4().hex[:6]}"
    paused = auto_paused(site, definition_id, name)
    (failed,) = paused["auto_paused"]["runs"]
    assert failed["error_code"] == "SAVER_INACTIVE"
    page = new_page(browser, language)
    sign_in(page, site, then=f"/console/schedules/?q={name.split()[-1]}")

    row = page.get_by_role("row").filter(has=page.get_by_role("link", name=name, exact=True))
    expect(row.locator(".state.paused")).to_have_text(words["badge"])
    expect(row.locator(".state.paused")).to_have_attribute("title", re.compile(failed["run_id"]))
    check_accessible(page)
    fits_narrow(page)
    row.get_by_role("link", name=name, exact=True).click()
    expect(page.locator("h1 .state.paused")).to_have_text(words["badge"])
    notice = page.locator("#auto-paused")
    expect(notice.locator("h2")).to_contain_text(words["paused_by"])
    expect(notice).to_contain_text(words["in_a_row"])
    expect(notice.get_by_role("link", name=failed["run_id"])).to_be_visible()
    expect(notice).to_contain_text("SAVER_INACTIVE")
    check_accessible(page)
    fits_narrow(page)
    if language == "zh":
        screenshot(page, "schedule-auto-paused")

    page.locator("form.switch").get_by_role("button", name=words["enable"]).click()

    expect(page.locator("h1 .state.on")).to_have_text(words["enabled"])
    expect(page.locator(".state.paused")).to_have_count(0)
    expect(page.locator("#auto-paused")).to_have_count(0)
