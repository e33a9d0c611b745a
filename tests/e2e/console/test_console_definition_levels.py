"""The definition form's review levels in a real browser, in Chinese and English, on both
stores: a definition made with two levels (the applicant's leader, then two of three finance
reviewers: 会签), a cancellation definition, a longest pause and where a return's revise goes
back to; a wrong number of approvals refused next to its level; then edited, its levels moved,
and everything shown on its card."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.console.conftest import (
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    screenshot,
    sign_in,
)

DEFINITIONS = "/console/directory/definitions"
WORDS = {
    "en": {
        "add": "Add another level",
        "create": "Create the definition",
        "save": "Save the definition",
        "too_many": "only 3 accounts are named",
        "at_least_1": "1",
        "up": "Move level 2 up",
        "shown": ["Level 1: Manager", "Level 2: Finance", "countersign: 2 different reviewers"],
        "pause": "600 s",
        "returning": "The level that returned it",
        "edit": "Edit {key}",
        "yes": "yes",
    },
    "zh": {
        "add": "再添加一级",
        "create": "创建流程定义",
        "save": "保存流程定义",
        "too_many": "只指定了 3 个账号",
        "at_least_1": "1",
        "up": "第 2 级上移",
        "shown": ["第 1 级：主管", "第 2 级：财务", "会签：需 2 位不同的审批人通过"],
        "pause": "600 秒",
        "returning": "退回的那一级",
        "edit": "编辑 {key}",
        "yes": "是",
    },
}


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_definition_with_two_levels_is_made_edited_and_shown(
    site: Site, browser: Any, language: str
) -> None:
    from playwright.sync_api import expect

    words, key = WORDS[language], f"expense-{language}"
    finance = [f"fin{n}-{language}" for n in (1, 2, 3)]
    for person in finance:
        site.api("POST", "/api/accounts", {"id": person, "name": person, "roles": ["operator"]})
    refund = site.api(
        "POST",
        "/api/definitions",
        {
            "key": f"refund-{language}",
            "name": "退款",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": {"roles": ["operator"]},
        },
    )
    page = new_page(browser, language)
    sign_in(page, site, then=DEFINITIONS)
    page.fill("#definition-key", key)
    page.fill("#definition-name", "费用报销")
    page.fill("#levels-0-name", "主管" if language == "zh" else "Manager")
    page.check("input[name='levels.0.reviewers.applicant_leader']")
    page.get_by_role("button", name=words["add"]).click()
    expect(page.locator("#levels-1-name")).to_be_visible()
    expect(page.locator("#levels-0-name")).to_have_value("主管" if language == "zh" else "Manager")
    page.fill("#levels-1-name", "财务" if language == "zh" else "Finance")
    for person in finance:
        page.check(f"input[name='levels.1.reviewers.accounts'][value='{person}']")
    page.fill("#levels-1-approvals", "4")
    page.select_option("#definition-cancellation", refund["id"])
    page.fill("#definition-max-pause", "600")
    page.check("input[name=return_to][value=returning]")
    page.check("input[name=restart_deadline_on_revise]")
    page.get_by_role("button", name=words["create"], exact=True).click()
    expect(page.locator("#levels-1-approvals_required-error")).to_contain_text(words["too_many"])
    expect(page.locator("#levels-1-approvals")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#levels-1-approvals")).to_have_value("4")  # what was typed stays
    page.fill("#levels-1-approvals", "0")
    page.get_by_role("button", name=words["create"], exact=True).click()
    expect(page.locator("#levels-1-approvals_required-error")).to_be_visible()
    expect(page.locator("#definition-max-pause")).to_have_value("600")
    page.fill("#levels-1-approvals", "2")
    check_accessible(page)
    fits_narrow(page)
    if language == "en":
        page.evaluate("document.getElementById('levels-1').scrollIntoView()")
        screenshot(page, "definition-levels")
    page.get_by_role("button", name=words["create"], exact=True).click()

    card = page.locator(f"#definition-{key}")
    for shown in words["shown"]:
        expect(card.locator("dd.review-levels-shown")).to_contain_text(shown)
    expect(card.locator(".max-pause-shown")).to_have_text(words["pause"])
    expect(card.locator(".return-to-shown")).to_have_text(words["returning"])
    expect(card.locator(".cancellation-shown")).to_contain_text(f"refund-{language}")
    expect(card.locator(".restart-shown")).to_have_text(words["yes"])
    made = site.api("GET", f"/api/definitions/by-key/{key}")
    assert [level["approvals_required"] for level in made["levels"]] == [1, 2]
    assert made["levels"][1]["reviewers"]["accounts"] == finance
    assert made["levels"][0]["reviewers"]["applicant_leader"] is True
    assert (made["cancellation_definition"], made["max_pause_seconds"], made["return_to"]) == (
        refund["id"],
        600,
        "returning",
    )

    card.get_by_role("link", name=words["edit"].format(key=key)).click()
    expect(page.locator("#levels-1-approvals")).to_have_value("2")
    expect(page.locator("#definition-cancellation")).to_have_value(refund["id"])
    page.get_by_role("button", name=words["up"]).click()
    expect(page.locator("#levels-0-approvals")).to_have_value("2")  # finance first now
    page.fill("#levels-0-approvals", "3")
    page.fill("#definition-max-pause", "")
    check_accessible(page)
    page.get_by_role("button", name=words["save"], exact=True).click()
    page.wait_for_url(f"**{DEFINITIONS}*")
    expect(card.locator(".max-pause-shown")).not_to_have_text(words["pause"])
    edited = site.api("GET", f"/api/definitions/by-key/{key}")
    assert [level["approvals_required"] for level in edited["levels"]] == [3, 1]
    assert edited["max_pause_seconds"] is None
