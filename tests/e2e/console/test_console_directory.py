"""The directory in a real browser: accounts, a token shown once that signs in elsewhere and
stops when revoked, definitions with presets, in Chinese and English."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.error import HTTPError

import pytest

from tests.e2e.console.conftest import (
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    screenshot,
    sign_in,
)

ACCOUNTS = "/console/directory/"
DEFINITIONS = "/console/directory/definitions"
PRESETS = [
    {
        "id": "weekday-morning",
        "title": "早班检查 {{date}}",
        "timezone": "Asia/Shanghai",
        "trigger": {"kind": "cron", "expression": "0 9 * * MON-FRI"},
        "form_data": {"region": "east"},
    }
]


def test_a_new_token_is_shown_once_signs_in_elsewhere_and_ends_its_session_when_revoked(
    site: Site, browser: Any
) -> None:
    from playwright.sync_api import expect

    admin = new_page(browser, "en")
    sign_in(admin, site, then=ACCOUNTS)
    admin.fill("#account-id", "carol")
    admin.fill("#account-name", "Carol")
    admin.check("input[name=roles][value=auditor]")
    admin.click("text=Create the account")
    admin.wait_for_url("**/console/directory/accounts/carol")
    expect(admin.locator(".notice.good")).to_have_text("Account carol created.")
    expect(admin.locator("#account-roles")).to_have_text("Auditor (auditor)")

    admin.click("text=Issue a new token")
    expect(admin.locator("#token-warning")).to_contain_text("shown only this once")
    secret = admin.locator("#new-token").input_value()
    assert re.fullmatch(r"clt_[A-Za-z0-9_-]{20,}", secret)
    token_id = admin.locator("#new-token-id").inner_text()
    check_accessible(admin)
    fits_narrow(admin)
    admin.click("text=Back to the account")
    expect(admin.locator(f"#token-{token_id}")).to_contain_text("Working")
    assert secret not in admin.content()

    carol = new_page(browser, "en")
    sign_in(carol, site, token=secret, then="/console/operations/")
    expect(carol.locator(".who")).to_have_text("carol")
    expect(carol.locator("header nav")).not_to_contain_text("Directory")
    refused = carol.goto(f"{site.url}{ACCOUNTS}")
    assert refused is not None
    assert refused.status == 403

    admin.click(f"#token-{token_id} >> text=Revoke…")
    expect(admin.locator("#question")).to_contain_text("Revoke this token of carol?")
    admin.fill("#reason", "a test of revocation")
    admin.click("button:has-text('Revoke the token')")
    admin.wait_for_url("**/console/directory/accounts/carol")
    expect(admin.locator(f"#token-{token_id}")).to_contain_text("Revoked")

    carol.goto(f"{site.url}/console/operations/")
    expect(carol).to_have_url(re.compile(r"/console/sign-in"))


def test_accounts_are_listed_and_deactivated_after_confirming(site: Site, browser: Any) -> None:
    from playwright.sync_api import expect

    site.api("POST", "/api/accounts", {"id": "dora", "name": "Dora", "roles": ["operator"]})
    page = new_page(browser, "zh")
    sign_in(page, site, then=ACCOUNTS)
    expect(page.locator("h1")).to_have_text("账号")
    expect(page.locator("#account-dora")).to_contain_text("operator")
    expect(page.locator("#account-dora")).to_contain_text("已启用")
    check_accessible(page)
    fits_narrow(page)
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "directory-accounts")

    page.click("#account-dora a")
    page.click("text=停用…")
    expect(page.locator("#question")).to_contain_text("停用 dora？")
    assert site.api("GET", "/api/accounts/dora")["active"] is True  # asking changed nothing
    check_accessible(page)
    page.click("button.danger")
    expect(page.locator("#account-state")).to_have_text("已停用")
    assert site.api("GET", "/api/accounts/dora")["active"] is False


def test_definitions_are_created_with_presets_and_published(site: Site, browser: Any) -> None:
    from playwright.sync_api import expect

    page = new_page(browser, "en")
    sign_in(page, site, then=DEFINITIONS)
    page.fill("#definition-key", "morning")
    page.fill("#definition-name", "Morning check")
    page.fill("#definition-window", "not a number")
    page.fill("#definition-presets", json.dumps(PRESETS, ensure_ascii=False))
    page.click("text=Create the definition")
    expect(page.locator("#review_window_seconds-error")).to_be_visible()
    expect(page.locator("#definition-window")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#definition-key")).to_have_value("morning")  # what was typed stays

    page.fill("#definition-window", "7200")
    page.check("input[name='reviewers.roles'][value=operator]")
    page.click("text=Create the definition")
    card = page.locator("#definition-morning")
    expect(card).to_contain_text("Unpublished")
    preset = page.locator("#preset-morning-weekday-morning")
    for shown in ("早班检查 {{date}}", "0 9 * * MON-FRI", "Asia/Shanghai", '"region": "east"'):
        expect(preset).to_contain_text(shown)
    card.locator("text=Publish morning").click()
    expect(page.locator("#definition-morning")).to_contain_text("Published, revision 1")
    assert site.api("GET", "/api/definitions/by-key/morning")["published"] is True
    check_accessible(page)
    fits_narrow(page)
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "directory-definitions")

    chinese = new_page(browser, "zh")
    sign_in(chinese, site, then=DEFINITIONS)
    expect(chinese.locator("#definition-morning")).to_contain_text("已发布，版本 1")
    expect(chinese.locator("#definition-morning h3")).to_have_text("预设")
    check_accessible(chinese)


REVIEWER_WORDS = {
    "en": {
        "create": "Create the definition",
        "shown": ("group leader", "the members of the groups"),
        "escalation": "after 3600 s waiting; they are told, and the task's priority rises",
    },
    "zh": {
        "create": "创建流程定义",
        "shown": ("申请人所在组的负责人", "用户组的成员"),
        "escalation": "等待 3600 秒后升级给 {boss}；通知对方，并提高任务优先级",
    },
}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_definition_form_names_reviewers_and_the_escalation_mode(
    site: Site, browser: Any, language: str
) -> None:
    from playwright.sync_api import expect

    words, boss, key = REVIEWER_WORDS[language], f"boss-{language}", f"loan-{language}"
    site.api("POST", "/api/accounts", {"id": boss, "name": "Boss", "roles": ["operator"]})
    group = {"key": f"risk-{language}", "name": "风控部", "members": [boss], "leader_id": boss}
    site.api("POST", "/api/groups", group)
    page = new_page(browser, language)
    sign_in(page, site, then=DEFINITIONS)
    page.fill("#definition-key", key)
    page.fill("#definition-name", "贷款审批")
    page.get_by_role("button", name=words["create"]).click()
    expect(page.locator("#reviewers-error")).to_be_visible()  # a new one names its reviewers
    with pytest.raises(HTTPError):  # nothing was created
        site.api("GET", f"/api/definitions/by-key/{key}")
    page.goto(f"{site.url}{DEFINITIONS}")
    page.fill("#definition-key", key)
    page.fill("#definition-name", "贷款审批")
    page.check(f"input[name='reviewers.groups'][value='{group['key']}']")
    page.check("input[name='reviewers.applicant_leader']")
    page.fill("#definition-escalation-after", "3600")
    page.select_option("#definition-escalation-to", boss)
    page.check("input[name='escalation.mode'][value=notify]")
    check_accessible(page)
    fits_narrow(page)
    if language == "en":
        page.evaluate("document.getElementById('new-definition').scrollIntoView()")
        screenshot(page, "definition-reviewers")
    page.get_by_role("button", name=words["create"]).click()
    card = page.locator(f"#definition-{key}")
    for shown in words["shown"]:
        expect(card.locator(".reviewers-shown")).to_contain_text(shown)
    expect(card.locator(".escalation-shown")).to_contain_text(words["escalation"].format(boss=boss))
    made = site.api("GET", f"/api/definitions/by-key/{key}")
    assert made["reviewers"]["groups"] == [group["key"]]
    assert (made["escalation"]["account_id"], made["escalation"]["mode"]) == (boss, "notify")
