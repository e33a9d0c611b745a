"""Built-in jobs in a real browser, in Chinese and English, on both stores: the schedule form's
target hides the approval's fields for a job and shows the params its kind takes; a nightly
`audit.verify` saved through it shows its target on its page, and a run now of it shows what it
verified on the run's page, live."""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

import pytest
from playwright.sync_api import expect

from tests.e2e.console.conftest import Site, check_accessible, fits_narrow, new_page, sign_in

SCHEDULE_PAGE = re.compile(r"/console/schedules/[0-9a-f-]{36}$")
RUN_PAGE = re.compile(r"/console/runs/[0-9a-f-]{36}")
LIVE_SECONDS = 20_000  # milliseconds: a worker's poll, a stream's
WORDS = {
    "en": {
        "verify": "Verify the audit log",
        "since": "what was appended since the last verified position",
        "run_now": "Run now",
        "verified": re.compile(r"\d+ events? verified, positions 1 to \d+\."),
        "result": "Result",
    },
    "zh": {
        "verify": "核验审计日志",
        "since": "上次核验位置之后追加的事件",
        "run_now": "立即执行一次",
        "verified": re.compile(r"已核验 \d+ 个事件，位置 1 至 \d+。"),
        "result": "作业结果",
    },
}


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_nightly_audit_verify_is_saved_through_the_form_and_its_run_shows_its_result(
    site: Site, browser: Any, language: str
) -> None:
    words, name = WORDS[language], f"nightly-{language}-{uuid4().hex[:6]}"
    page = new_page(browser, language)
    sign_in(page, site, then="/console/schedules/new")
    expect(page.locator("#definition_id")).to_be_visible()
    expect(page.locator("#target_timeout_seconds")).to_be_hidden()
    page.fill("#name", name)
    page.get_by_label(words["verify"]).check()
    expect(page.locator("#definition_id")).to_be_hidden()
    expect(page.locator("#initiator_id")).to_be_hidden()
    expect(page.locator("#target_full")).to_be_visible()
    expect(page.locator("#target_webhook_id")).to_be_hidden()
    page.get_by_label("Ping a webhook" if language == "en" else "测试 Webhook 连通").check()
    expect(page.locator("#target_full")).to_be_hidden()
    expect(page.locator("#target_webhook_id")).to_be_visible()
    page.get_by_label(words["verify"]).check()
    page.fill("#expression", "0 2 * * *")
    page.fill("#target_timeout_seconds", "8")
    check_accessible(page)
    page.click("#schedule-form button[type=submit]")
    page.wait_for_url(SCHEDULE_PAGE)
    target = page.locator("#schedule-target")
    expect(target).to_contain_text(words["verify"])
    expect(target).to_contain_text(words["since"])
    expect(target).to_contain_text("audit.verify")
    check_accessible(page)

    page.get_by_role("button", name=words["run_now"]).click()
    page.wait_for_url(RUN_PAGE)
    expect(page.locator("#run-result")).to_have_text(words["verified"], timeout=LIVE_SECONDS)
    expect(page.locator("#run-target")).to_contain_text("audit.verify")
    expect(page.locator("#run-panel")).to_contain_text(words["result"])
    check_accessible(page)
    fits_narrow(page)
    page.context.close()
