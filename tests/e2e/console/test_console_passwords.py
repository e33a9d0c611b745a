"""Signing in with a password in a real browser, in Chinese: a one-time password an admin gave,
changed before anything else, then the account's own; and the wait after failures."""

from __future__ import annotations

from typing import Any

from tests.e2e.console.conftest import (
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    screenshot,
)
from tests.log_scan import note_secret

ONE_TIME = "olga-first-day-2026"
OWN = "a long walk by the river"


def with_one_time_password(site: Site, account_id: str) -> None:
    note_secret("password", ONE_TIME)
    note_secret("password", OWN)
    site.api("POST", "/api/accounts", {"id": account_id, "name": "Olga", "roles": ["operator"]})
    body = {"password": ONE_TIME, "must_change": True}
    site.api("POST", f"/api/accounts/{account_id}/password", body)


def password_sign_in(page: Any, site: Site, account: str, password: str) -> None:
    page.goto(f"{site.url}/console/sign-in")
    page.fill("#tenant", "demo")
    page.fill("#account", account)
    page.fill("#password", password)
    page.click("form.password-sign-in button[type=submit]")


def test_a_one_time_password_signs_in_and_is_changed_first_in_chinese(
    site: Site, browser: Any
) -> None:
    with_one_time_password(site, "pw-olga")
    page = new_page(browser, "zh")
    password_sign_in(page, site, "pw-olga", ONE_TIME)
    page.wait_for_url("**/console/password**")
    assert page.locator("h1").inner_text() == "修改密码"
    assert "一次性密码" in page.locator("#must-change").inner_text()
    check_accessible(page)
    fits_narrow(page)
    screenshot(page, "password-change")
    page.goto(f"{site.url}/console/runs/")  # nothing else opens first
    page.wait_for_url("**/console/password**")

    page.fill("#current_password", ONE_TIME)
    page.fill("#password", OWN)
    page.fill("#password_again", OWN)
    page.get_by_role("button", name="修改密码").click()
    page.wait_for_url("**/console/runs/*")
    assert page.locator(".who").inner_text() == "pw-olga"
    page.get_by_role("button", name="退出登录").click()
    page.wait_for_url("**/console/sign-in*")

    password_sign_in(page, site, "Olga", OWN)  # by name too
    page.wait_for_url("**/console/schedules/*")
    assert page.locator(".who").inner_text() == "pw-olga"


def test_wrong_passwords_make_the_account_wait_and_the_page_says_so(
    site: Site, browser: Any
) -> None:
    with_one_time_password(site, "pw-waits")
    page = new_page(browser, "zh")
    for _ in range(5):
        password_sign_in(page, site, "pw-waits", "not-the-password")
        assert "租户、账号或密码错误。" in page.locator("#password-error").inner_text()
    assert page.locator("#tenant").input_value() == "demo"
    password_sign_in(page, site, "pw-waits", ONE_TIME)
    warning = page.locator("#password-error").inner_text()
    assert warning.startswith("登录失败次数过多。请在 ")
    assert "秒后重试" in warning
    assert page.locator("#password").get_attribute("aria-invalid") == "true"
    check_accessible(page)
