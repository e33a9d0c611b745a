"""Signing in to the console with a password, on both stores (no browser): the session it
starts, the back-off after failures, a one-time password changed before anything else, an
admin's page that gives one, and sessions that end when the password is set again."""

from __future__ import annotations

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from cronledger.application.services import Services
from domain.sessions import session_uuid
from tests.e2e.console.conftest import Console
from tests.e2e.console.test_console_sessions_http import (
    PROBE,
    session_secret,
    signed_out,
    text,
    with_test_pages,
)
from tests.log_scan import note_secret
from tests.support import Api, FakeClock
from web import create_app

ONE_TIME = "olga-first-day-2026"
OWN = "a long walk by the river"
ENGLISH = {"Accept-Language": "en"}


@pytest.fixture
def app(services: Services) -> Flask:
    return with_test_pages(create_app({"SERVICES": services, "TESTING": True}))


def with_password(admin: Api, must_change: bool = True, password: str = ONE_TIME) -> None:
    """Operator `olga`, who has a password an admin gave her."""
    note_secret("password", password)
    admin.post("/api/accounts", {"id": "olga", "name": "Olga", "roles": ["operator"]})
    given = admin.post(
        "/api/accounts/olga/password", {"password": password, "must_change": must_change}
    )
    assert given.status_code == 200, given.json


def sign_in(
    browser: Console, password: str, account: str = "olga", **kwargs: object
) -> TestResponse:
    form = {"tenant": "acme", "account": account, "password": password, "next": PROBE}
    return browser.post("/console/sign-in/password", form, **kwargs)


def test_a_password_signs_in_and_starts_a_session_on_the_log_naming_no_token(
    app: Flask, client: FlaskClient, services: Services, admin: Api
) -> None:
    with_password(admin, must_change=False)
    browser = Console(client)
    answer = sign_in(browser, ONE_TIME, account="Olga")  # by name, as well as by id
    assert (answer.status_code, answer.headers["Location"]) == (302, PROBE)
    assert text(browser.get(PROBE)) == "signed in as olga"
    (started,) = services.ledger.timeline(session_uuid(session_secret(app, client)))
    assert (started.type, started.actor, started.data["token_id"]) == (
        "ConsoleSession.Started",
        "olga",
        None,
    )
    assert ONE_TIME not in repr(started)


def test_a_wrong_password_is_refused_on_the_sign_in_page_keeping_what_was_typed(
    client: FlaskClient, admin: Api
) -> None:
    with_password(admin, must_change=False)
    browser = Console(client)
    wrong = sign_in(browser, "not-the-password")
    assert wrong.status_code == 401
    page = text(wrong)
    assert 'id="password-error"' in page
    assert "租户、账号或密码错误。" in page
    assert 'value="olga"' in page
    assert "not-the-password" not in page
    nobody = sign_in(browser, ONE_TIME, account="nobody", headers=ENGLISH)
    assert "The tenant, the account or the password is wrong." in text(nobody)
    empty = browser.post("/console/sign-in/password", {"tenant": "acme"}, headers=ENGLISH)
    assert "Give the tenant, the account and its password." in text(empty)
    assert signed_out(client.get(PROBE))


def test_after_five_failures_the_account_waits_and_the_page_says_how_long(
    client: FlaskClient, admin: Api, clock: FakeClock
) -> None:
    with_password(admin, must_change=False)
    browser = Console(client)
    statuses = [sign_in(browser, "not-the-password").status_code for _ in range(5)]
    assert statuses == [401] * 5
    waiting = sign_in(browser, ONE_TIME)
    assert (waiting.status_code, waiting.headers["Retry-After"]) == (429, "30")
    assert "登录失败次数过多。请在 30 秒后重试" in text(waiting)
    english = sign_in(browser, ONE_TIME, headers=ENGLISH)
    assert "Too many failed sign-ins. Try again in 30 s" in text(english)
    clock.advance(30)
    assert sign_in(browser, ONE_TIME).status_code == 302


def test_a_one_time_password_opens_only_the_page_that_changes_it(
    app: Flask, client: FlaskClient, services: Services, admin: Api
) -> None:
    with_password(admin)
    browser = Console(client)
    answer = sign_in(browser, ONE_TIME)
    assert answer.headers["Location"] == "/console/password?next=/console/probe"
    for path in (PROBE, "/console/", "/console/schedules/"):
        sent = browser.get(path)
        assert sent.status_code == 302, path
        assert sent.headers["Location"].startswith("/console/password?next="), path
    page = browser.page("/console/password")
    assert "您使用一次性密码登录" in page
    assert 'id="current_password"' in page

    differ = {"current_password": ONE_TIME, "password": OWN, "password_again": OWN + "!"}
    refused = browser.post("/console/password?next=/console/probe", differ)
    assert refused.status_code == 422
    assert "两次输入的新密码不一致。" in text(refused)
    short = {"current_password": ONE_TIME, "password": "short", "password_again": "short"}
    assert "请至少使用 10 个字符。" in text(browser.post("/console/password", short))
    wrong = {"current_password": "not-the-one-1", "password": OWN, "password_again": OWN}
    assert "这不是您的当前密码。" in text(browser.post("/console/password", wrong))

    old_secret = session_secret(app, client)
    right = {"current_password": ONE_TIME, "password": OWN, "password_again": OWN}
    changed = browser.post("/console/password?next=/console/probe", right)
    assert (changed.status_code, changed.headers["Location"]) == (302, PROBE)
    assert text(browser.get(PROBE)) == "signed in as olga"
    assert session_secret(app, client) != old_secret
    ended = [e.type for e in services.ledger.timeline(session_uuid(old_secret))]
    assert ended == ["ConsoleSession.Started", "ConsoleSession.Ended"]
    timeline = admin.get("/api/accounts/olga/timeline").json["items"]
    kinds = [(e["actor"], e["data"]) for e in timeline if e["type"] == "Account.PasswordSet"]
    assert kinds == [
        ("root", {"kind": "set", "must_change": True}),
        ("olga", {"kind": "changed", "must_change": False}),
    ]


def test_a_reset_ends_the_accounts_password_sessions(
    client: FlaskClient, admin: Api, clock: FakeClock
) -> None:
    with_password(admin, must_change=False)
    browser = Console(client)
    sign_in(browser, ONE_TIME)
    assert text(browser.get(PROBE)) == "signed in as olga"
    clock.advance(60)
    admin.post(
        "/api/accounts/olga/password", {"password": "a-new-one-time-pw", "must_change": True}
    )
    assert signed_out(browser.get(PROBE))
    assert sign_in(browser, ONE_TIME).status_code == 401


def test_an_admin_gives_a_one_time_password_on_the_accounts_page(
    console: Console, admin: Api, services: Services
) -> None:
    admin.post("/api/accounts", {"id": "olga", "name": "Olga", "roles": ["operator"]})
    account = console.page("/console/directory/accounts/olga")
    assert 'id="account-password">无' in account
    assert "设置密码…" in account
    form = console.page("/console/directory/accounts/olga/password")
    assert 'name="must_change" value="1" checked' in form
    note_secret("password", ONE_TIME)
    differ = {"password": ONE_TIME, "password_again": "something-else", "must_change": "1"}
    assert console.post("/console/directory/accounts/olga/password", differ).status_code == 422
    given = {"password": ONE_TIME, "password_again": ONE_TIME, "must_change": "1"}
    done = console.post("/console/directory/accounts/olga/password", given)
    assert done.headers["Location"] == "/console/directory/accounts/olga"
    account = console.page("/console/directory/accounts/olga")
    assert "已为 olga 设置密码。" in account
    assert "一次性密码：下次登录时修改" in account
    assert "重置密码…" in account
    signed_in = services.credentials.sign_in("acme", "olga", ONE_TIME, None)
    assert signed_in.must_change
    own = console.get("/console/directory/accounts/root/password")
    assert own.headers["Location"] == "/console/password"
