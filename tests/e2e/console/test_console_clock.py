"""The review clock and returns in a real browser (both languages): a reviewer pauses the
clock with a reason and sees since when it stands, resumes it and sees the time it stood; a
reviewer returns an instance with a comment and the applicant sees it returned, with withdraw
offered (docs/approvals.md#pausing-the-clock)."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.console.conftest import Site, check_accessible, new_page, sign_in
from tests.support import DECIDERS

PAUSED_SINCE = {"en": "Paused since", "zh": "起已暂停计时"}
PAUSED_TOTAL = {"en": "min", "zh": "暂停"}
DONE_PAUSED = {"en": "Done: Clock paused", "zh": "已完成：已暂停计时"}
DONE_RESUMED = {"en": "Done: Clock resumed", "zh": "已完成：已恢复计时"}
RETURNED = {"en": "Returned for changes", "zh": "退回待修改"}


@dataclass(frozen=True)
class People:
    definition_id: str
    ivy: str
    olga: str


@pytest.fixture(scope="module")
def people(site: Site) -> People:
    suffix = uuid.uuid4().hex[:8]
    definition = site.api(
        "POST",
        "/api/definitions",
        {
            "key": f"payment-{suffix}",
            "name": "付款审批",
            "external": False,
            "review_window_seconds": 7200,
            "reviewers": DECIDERS,
        },
    )
    site.api("POST", f"/api/definitions/{definition['id']}/publish")
    tokens = {}
    for name, roles in (("ivy", ["requester"]), ("olga", ["operator"])):
        site.api("POST", "/api/accounts", {"id": f"{name}-{suffix}", "name": name, "roles": roles})
        tokens[name] = site.api("POST", f"/api/accounts/{name}-{suffix}/tokens")["token"]
    return People(definition["id"], tokens["ivy"], tokens["olga"])


def submitted(site: Site, people: People) -> dict[str, Any]:
    """A new instance, submitted by ivy."""
    ivy = dataclasses.replace(site, token=people.ivy)
    body = {
        "command_id": uuid.uuid4().hex,
        "definition_id": people.definition_id,
        "title": "付款 P-7",
        "form_data": {},
        "material_version": 1,
    }
    return ivy.api("POST", "/api/approvals", body)  # type: ignore[no-any-return]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_reviewer_pauses_and_resumes_the_clock_and_sees_the_time_it_stood(
    site: Site, browser: Any, people: People, language: str
) -> None:
    from playwright.sync_api import expect

    instance = submitted(site, people)
    page = new_page(browser, language)
    sign_in(page, site, people.olga, then=f"/console/approvals/{instance['id']}")
    page.locator("form.pause-clock textarea").fill("异常款项，等待银行核实")
    page.locator("form.pause-clock button").click()
    expect(page.locator(".outcome.won")).to_contain_text(DONE_PAUSED[language])
    expect(page.locator(".paused-since")).to_contain_text(PAUSED_SINCE[language])
    expect(page.locator("form.pause-clock")).to_have_count(0)
    expect(page.locator("ol.pauses")).to_contain_text("异常款项，等待银行核实")
    if language == "en":
        check_accessible(page)
    page.locator("form.resume-clock textarea").fill("银行已核实")
    page.locator("form.resume-clock button").click()
    expect(page.locator(".outcome.won")).to_contain_text(DONE_RESUMED[language])
    expect(page.locator(".paused-since")).to_have_count(0)
    expect(page.locator(".paused-total")).to_contain_text(PAUSED_TOTAL[language])
    shown = site.api("GET", f"/api/approvals/{instance['id']}")
    assert (shown["paused_since"], len(shown["pauses"])) == (None, 1)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_reviewer_returns_an_instance_and_the_applicant_may_withdraw_it(
    site: Site, browser: Any, people: People, language: str
) -> None:
    from playwright.sync_api import expect

    instance = submitted(site, people)
    detail = f"/console/approvals/{instance['id']}"
    reviewer = new_page(browser, language)
    sign_in(reviewer, site, people.olga, then=detail)
    reviewer.locator("form.return textarea").fill("请补充发票")
    reviewer.locator("form.return button").click()
    expect(reviewer.locator("h1 .state-returned")).to_have_text(RETURNED[language])
    expect(reviewer.locator("form.approve")).to_have_count(0)
    expect(reviewer.locator(".comments")).to_contain_text("请补充发票")
    if language == "en":
        check_accessible(reviewer)
    applicant = new_page(browser, language)
    sign_in(applicant, site, people.ivy, then=detail)
    expect(applicant.locator("form.withdraw button")).to_be_visible()
    listed = f"/console/approvals/?state=RETURNED&q={instance['id']}"
    applicant.goto(site.url + listed)
    expect(applicant.locator("body")).to_contain_text(RETURNED[language])
