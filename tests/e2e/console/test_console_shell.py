"""Signing in and out of the console, in Chinese and English, in a real browser."""

from __future__ import annotations

from typing import Any

from tests.e2e.console.conftest import (
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    screenshot,
    sign_in,
)


def new_account(site: Site, account_id: str) -> dict[str, str]:
    """An admin account of the site's tenant with a token of its own (the API's answer)."""
    site.api("POST", "/api/accounts", {"id": account_id, "name": account_id, "roles": ["admin"]})
    return site.api("POST", f"/api/accounts/{account_id}/tokens")  # type: ignore[no-any-return]


def sent_to_sign_in(page: Any, site: Site, path: str) -> bool:
    page.goto(f"{site.url}{path}")
    return "/console/sign-in" in page.url


def test_sign_in_in_english_lands_on_the_page_asked_for_and_sign_out_ends_it(
    site: Site, browser: Any
) -> None:
    page = new_page(browser, "en")
    assert sent_to_sign_in(page, site, "/console/runs/")
    assert page.locator("h1").inner_text() == "Sign in"
    check_accessible(page)
    fits_narrow(page)
    screenshot(page, "sign-in")
    sign_in(page, site, then="/console/runs/")
    assert page.locator(".who").inner_text() == "admin"
    page.click("text=Sign out")
    page.wait_for_url("**/console/sign-in*")
    assert sent_to_sign_in(page, site, "/console/runs/")


def test_sign_in_in_chinese_and_the_language_picked_is_remembered(site: Site, browser: Any) -> None:
    page = new_page(browser, "zh")
    assert sent_to_sign_in(page, site, "/console/")
    assert page.locator("h1").inner_text() == "登录"
    check_accessible(page)
    fits_narrow(page)
    sign_in(page, site, then="/console/runs/")
    assert page.get_by_role("button", name="退出登录").is_visible()
    assert page.get_by_role("link", name="定时任务").is_visible()

    page.get_by_role("button", name="English").click()
    page.wait_for_selector("html[lang=en]")
    assert "/console/runs/" in page.url
    page.get_by_role("link", name="Approvals").click()
    page.wait_for_url("**/console/approvals/*")
    assert page.locator("html").get_attribute("lang") == "en"
    later = page.context.new_page()  # the same browser: its choice stays
    later.goto(f"{site.url}/console/timelines/")
    assert later.get_by_role("button", name="Sign out").is_visible()
    later.get_by_role("button", name="中文").click()
    later.wait_for_selector("html[lang=zh-CN]")


def test_a_wrong_token_is_refused_next_to_its_field(site: Site, browser: Any) -> None:
    page = new_page(browser, "en")
    page.goto(f"{site.url}/console/sign-in")
    page.fill("#token", "clt_not-a-token")
    page.click("form.sign-in button[type=submit]")
    assert page.locator("#token-error").is_visible()
    assert page.locator("#token").get_attribute("aria-invalid") == "true"
    check_accessible(page)


def test_a_revoked_token_ends_the_session_at_the_next_page(site: Site, browser: Any) -> None:
    issued = new_account(site, "revoked-ops")
    page = new_page(browser, "en")
    sign_in(page, site, token=issued["token"], then="/console/runs/")
    assert page.locator(".who").inner_text() == "revoked-ops"
    site.api("DELETE", f"/api/accounts/revoked-ops/tokens/{issued['token_id']}")
    assert sent_to_sign_in(page, site, "/console/approvals/")


def test_a_deactivated_account_ends_the_session_at_the_next_page(site: Site, browser: Any) -> None:
    issued = new_account(site, "leaving-ops")
    page = new_page(browser, "zh")
    sign_in(page, site, token=issued["token"], then="/console/runs/")
    site.api("POST", "/api/accounts/leaving-ops/deactivate", {})
    assert sent_to_sign_in(page, site, "/console/runs/")


def test_an_unknown_page_is_a_page_of_the_console(site: Site, browser: Any) -> None:
    page = new_page(browser, "zh")
    sign_in(page, site, then="/console/runs/")
    answer = page.goto(f"{site.url}/console/no-such-page")
    assert answer is not None
    assert answer.status == 404
    assert page.locator("h1").inner_text().startswith("页面不存在")
    check_accessible(page)
    fits_narrow(page)
