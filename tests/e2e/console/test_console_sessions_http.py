"""The console's sessions, cookies, CSRF checks, languages and error pages, through Flask's test
client on both stores (no browser)."""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from cronledger.application.services import Services
from domain.directory import Principal, token_uuid
from domain.errors import InvalidState, ValidationFailed
from domain.sessions import session_uuid
from tests.e2e.console.conftest import CSRF_META, Console
from tests.support import Api, FakeClock, Opener
from web import create_app
from web.console.access import signed_in

COOKIE = "cronledger_session"
PROBE = "/console/probe"  # a page for any signed-in account: it shows who is signed in
FOREIGN = "https://evil.example"


def with_test_pages(app: Flask) -> Flask:
    """Pages of the console's blueprint that only tests have (added before any request)."""

    @signed_in()
    def probe(principal: Principal) -> str:
        return f"signed in as {principal.account_id}"

    @signed_in("directory:manage")
    def managers_only(principal: Principal) -> str:
        return "managers"

    def boom() -> str:
        raise RuntimeError("a bug")

    def invalid() -> str:
        raise ValidationFailed({"name": ["use at most 200 characters"]})

    def lost() -> str:
        raise InvalidState("the schedule was deleted meanwhile")

    for name, view in {
        "probe": probe,
        "managers-only": managers_only,
        "boom": boom,
        "invalid": invalid,
        "lost": lost,
    }.items():
        app.add_url_rule(f"/console/{name}", f"console.{name}", view)
    return app


@pytest.fixture
def app(services: Services) -> Flask:
    return with_test_pages(create_app({"SERVICES": services, "TESTING": True}))


def text(answer: TestResponse) -> str:
    return answer.get_data(as_text=True)


def cookie_of(answer: TestResponse, name: str) -> str:
    (header,) = (h for h in answer.headers.getlist("Set-Cookie") if h.startswith(f"{name}="))
    return header


def session_secret(app: Flask, client: FlaskClient) -> str:
    cookie = client.get_cookie(COOKIE)
    assert cookie is not None
    content = app.session_interface.get_signing_serializer(app).loads(cookie.value)  # type: ignore[attr-defined]
    return str(content["sid"])


def signed_out(answer: TestResponse) -> bool:
    return answer.status_code == 302 and "/console/sign-in" in answer.headers["Location"]


def account_token(admin: Api, account_id: str, roles: list[str]) -> dict[str, str]:
    admin.post("/api/accounts", {"id": account_id, "name": account_id, "roles": roles})
    return admin.post(f"/api/accounts/{account_id}/tokens").json  # type: ignore[no-any-return]


# -- signing in and out -----------------------------------------------------------------


def test_signing_in_starts_a_session_on_the_log_whose_cookie_holds_no_token(
    app: Flask, client: FlaskClient, admin: Api, services: Services
) -> None:
    browser = Console(client)
    answer = browser.sign_in(admin.token)
    assert (answer.status_code, answer.headers["Location"]) == (302, "/console/")
    header = cookie_of(answer, COOKIE)
    assert "HttpOnly" in header
    assert "SameSite=Lax" in header
    assert "Secure" not in header
    assert admin.token not in header
    assert str(token_uuid(admin.token)) not in header

    secret = session_secret(app, client)
    assert secret.startswith("cls_")
    (started,) = services.ledger.timeline(session_uuid(secret))
    assert (started.type, started.actor) == ("ConsoleSession.Started", "root")
    assert started.data["token_id"] == str(token_uuid(admin.token))
    assert text(browser.get(PROBE)) == "signed in as root"


def test_sign_in_goes_to_the_page_asked_for_and_never_to_another_site(
    client: FlaskClient, admin: Api
) -> None:
    for wanted, landed in [
        ("/console/runs/?status=FAILED", "/console/runs/?status=FAILED"),
        ("//evil.example/x", "/console/"),
        ("https://evil.example/console/", "/console/"),
        ("/console/\\evil.example", "/console/"),
        ("/console//evil.example", "/console/"),
    ]:
        browser = Console(client)
        answer = browser.post("/console/sign-in", {"token": admin.token, "next": wanted})
        assert answer.headers["Location"] == landed, wanted


def test_a_wrong_or_missing_token_is_refused_on_the_sign_in_page(
    client: FlaskClient, admin: Api
) -> None:
    browser = Console(client)
    wrong = browser.post("/console/sign-in", {"token": "clt_nope"})
    assert wrong.status_code == 401
    assert 'id="token-error"' in text(wrong)
    assert "该令牌不存在" in text(wrong)
    english = browser.post(
        "/console/sign-in", {"token": " "}, headers={"Accept-Language": "en-US,en;q=0.9"}
    )
    assert english.status_code == 401
    assert "Paste your account token." in text(english)
    assert signed_out(client.get(PROBE))


def test_signing_out_ends_the_session_so_a_copied_cookie_stops_working(
    app: Flask, client: FlaskClient, console: Console, services: Services
) -> None:
    secret = session_secret(app, client)
    copied = client.get_cookie(COOKIE)
    assert copied is not None
    assert signed_out(console.post("/console/sign-out"))

    thief = app.test_client()
    thief.set_cookie(COOKIE, copied.value)
    assert signed_out(thief.get(PROBE))
    assert signed_out(client.get(PROBE))
    types = [entry.type for entry in services.ledger.timeline(session_uuid(secret))]
    assert types == ["ConsoleSession.Started", "ConsoleSession.Ended"]


def test_a_revoked_token_ends_its_sessions_at_the_next_page(app: Flask, admin: Api) -> None:
    issued = account_token(admin, "ops", ["admin"])
    browser = Console(app.test_client())
    browser.sign_in(issued["token"])
    assert text(browser.get(PROBE)) == "signed in as ops"
    admin.delete(f"/api/accounts/ops/tokens/{issued['token_id']}")
    assert signed_out(browser.get(PROBE))


def test_a_deactivated_account_ends_its_sessions_and_a_new_role_shows_at_once(
    app: Flask, admin: Api
) -> None:
    issued = account_token(admin, "ops", ["admin"])
    browser = Console(app.test_client())
    browser.sign_in(issued["token"])
    assert browser.get("/console/managers-only").status_code == 200
    version = admin.get("/api/accounts/ops").json["version"]
    admin.put("/api/accounts/ops", {"name": "ops", "roles": ["operator"], "version": version})
    refused = browser.get("/console/managers-only")
    assert refused.status_code == 403
    assert "directory:manage" in text(refused)
    admin.post("/api/accounts/ops/deactivate")
    assert signed_out(browser.get(PROBE))


def test_a_session_ends_after_its_lifetime(
    console: Console, clock: FakeClock, services: Services
) -> None:
    clock.advance(12 * 3600 - 60)
    assert console.get(PROBE).status_code == 200
    services.directory.recent.forget()  # a second later, as far as this process remembers
    clock.advance(60)
    assert signed_out(console.get(PROBE))


def test_an_htmx_request_without_a_session_sends_its_page_to_sign_in(client: FlaskClient) -> None:
    page = "http://localhost/console/runs/?status=FAILED"
    answer = client.get(PROBE, headers={"HX-Request": "true", "HX-Current-URL": page})
    assert answer.status_code == 401
    target = urlsplit(answer.headers["HX-Redirect"])
    assert target.path == "/console/sign-in"
    assert parse_qs(target.query) == {"next": ["/console/runs/?status=FAILED"]}
    assert signed_out(client.get(PROBE))  # a page (not htmx) is redirected


# -- cookies over HTTPS -------------------------------------------------------------------


def test_over_https_every_cookie_is_secure(client: FlaskClient, admin: Api) -> None:
    https = {"base_url": "https://localhost", "headers": {"Referer": "https://localhost/console/"}}
    page = client.get("/console/sign-in", **https)
    assert "Secure" in cookie_of(page, COOKIE)
    found = CSRF_META.search(text(page))
    assert found is not None
    token = found.group(1)
    form = {"csrf_token": token, "token": admin.token}
    signed_in_ = client.post("/console/sign-in", data=form, **https)
    assert signed_in_.status_code == 302
    assert "Secure" in cookie_of(signed_in_, COOKIE)
    assert "HttpOnly" in cookie_of(signed_in_, COOKIE)
    renewed = CSRF_META.search(text(client.get("/console/sign-in", **https)))  # a new session's
    assert renewed is not None
    assert renewed.group(1) != token
    form = {"csrf_token": renewed.group(1), "language": "en"}
    chosen = client.post("/console/language", data=form, **https)
    assert "Secure" in cookie_of(chosen, "cronledger_lang")


# -- CSRF -----------------------------------------------------------------------------------


def test_a_form_posted_without_its_csrf_token_is_refused_and_changes_nothing(
    app: Flask, client: FlaskClient, console: Console, services: Services
) -> None:
    refused = client.post("/console/sign-out")
    assert (refused.status_code, refused.mimetype) == (400, "text/html")
    assert "安全令牌缺失或已过期" in text(refused)
    language = client.post("/console/language", data={"language": "en"})
    assert language.status_code == 400
    assert client.get_cookie("cronledger_lang") is None
    assert text(console.get(PROBE)) == "signed in as root"
    secret = session_secret(app, client)
    assert [e.type for e in services.ledger.timeline(session_uuid(secret))] == [
        "ConsoleSession.Started"
    ]


def test_a_form_posted_from_another_site_is_refused_and_changes_nothing(
    client: FlaskClient, console: Console
) -> None:
    english = {"Accept-Language": "en"}
    for headers in ({"Origin": FOREIGN}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
        refused = console.post("/console/sign-out", headers={**headers, **english})
        assert refused.status_code == 403, headers
        assert "sent from another site" in text(refused)
    assert text(console.get(PROBE)) == "signed in as root"
    same_site = {"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"}
    assert signed_out(console.post("/console/sign-out", headers=same_site))


def test_htmx_sends_the_csrf_token_in_a_header(client: FlaskClient, console: Console) -> None:
    headers = {"X-CSRFToken": console.csrf_token(), "HX-Request": "true"}
    assert client.post("/console/sign-out", headers=headers).status_code == 302
    assert signed_out(client.get(PROBE))


# -- languages ----------------------------------------------------------------------------


def test_chinese_first_then_the_browsers_language_then_the_one_picked(
    client: FlaskClient, console: Console
) -> None:
    assert '<html lang="zh-CN">' in text(client.get("/console/sign-in"))
    english = {"Accept-Language": "en-US,en;q=0.9"}
    assert '<html lang="en">' in text(client.get("/console/sign-in", headers=english))
    chinese = {"Accept-Language": "zh-CN,zh;q=0.9"}
    picked = console.post("/console/language", {"language": "en", "next": PROBE}, headers=chinese)
    assert picked.headers["Location"] == PROBE
    assert "Max-Age=31536000" in cookie_of(picked, "cronledger_lang")
    page = text(client.get("/console/sign-in", headers=chinese))
    assert '<html lang="en">' in page
    assert "Sign out" in page
    elsewhere = console.post("/console/language", {"language": "zh", "next": "https://x.example"})
    assert elsewhere.headers["Location"] == "/console/"
    assert "退出登录" in text(client.get("/console/sign-in", headers=english))


# -- error pages --------------------------------------------------------------------------


def test_an_unknown_console_path_is_a_page_and_an_unknown_api_path_a_problem(
    client: FlaskClient,
) -> None:
    missing = client.get("/console/no/such/page")
    assert (missing.status_code, missing.mimetype) == (404, "text/html")
    assert "页面不存在" in text(missing)
    assert "/console/no/such/page" in text(missing)
    english = client.get("/console/nowhere", headers={"Accept-Language": "en"})
    assert "Page not found" in text(english)
    assert client.get("/api/nowhere").mimetype == "application/problem+json"
    assert client.get("/console/static/no-such.css").mimetype == "text/html"
    assert client.get("/").headers["Location"] == "/console/"


def test_an_unexpected_error_is_a_500_page_naming_the_request_id(
    client: FlaskClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="cronledger.web"):
        answer = client.get("/console/boom", headers={"X-Request-ID": "req-42"})
    assert (answer.status_code, answer.mimetype) == (500, "text/html")
    assert '<code class="request-id">req-42</code>' in text(answer)
    assert "a bug" not in text(answer)
    assert any(record.getMessage() == "unhandled error" for record in caplog.records)


def test_a_domain_error_is_a_page_with_its_message_and_status(client: FlaskClient) -> None:
    invalid = client.get("/console/invalid")
    assert invalid.status_code == 422
    assert "<code>name</code>: use at most 200 characters" in text(invalid)
    lost = client.get("/console/lost", headers={"Accept-Language": "en"})
    assert lost.status_code == 409
    assert "the schedule was deleted meanwhile" in text(lost)
    assert "This could not be done" in text(lost)


def test_too_many_refused_sign_ins_are_a_429_page(clock: FakeClock, open_with: Opener) -> None:
    app = create_app({"SERVICES": open_with(clock, refusals_per_minute=2), "TESTING": True})
    browser = Console(app.test_client())
    token = browser.csrf_token()
    statuses = [
        browser.client.post("/console/sign-in", data={"csrf_token": token, "token": "clt_x"})
        for _ in range(3)
    ]
    assert [s.status_code for s in statuses] == [401, 401, 429]
    assert statuses[-1].mimetype == "text/html"
    assert "Retry-After" in statuses[-1].headers
    assert "被拒绝的请求过多" in text(statuses[-1])


# -- the secret key -----------------------------------------------------------------------


def test_the_secret_key_setting_signs_the_cookies_else_a_random_key_with_a_warning(
    clock: FakeClock, open_with: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    key = "k" * 32

    def warnings() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "cronledger.web"]

    with caplog.at_level(logging.WARNING, logger="cronledger.web"):
        assert create_app({"SERVICES": open_with(clock, secret_key=key)}).secret_key == key
        assert warnings() == []
        first = create_app({"SERVICES": open_with(clock)}).secret_key
    (warning,) = warnings()
    assert "CRONLEDGER_SECRET_KEY is unset" in warning
    assert first
    assert first != create_app({"SERVICES": open_with(clock)}).secret_key
