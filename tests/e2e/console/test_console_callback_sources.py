"""The console's callback sources: registered with the secret shown once, rotated and deleted
after confirming; through Flask's test client on both stores, and in a real browser (axe-core,
390 px, the README's screenshot) in Chinese and English."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask

from cronledger.application.secrets import derived_secret
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.e2e.console.conftest import (
    Console,
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    screenshot,
    sign_in,
)
from tests.e2e.helpers import account, answers
from tests.processes import free_port, run_cli, started
from tests.support import Api, FakeClock

SECRET_KEY = "console-callback-sources-key-of-32-characters"
SOURCES = "/console/callback-sources/"
ENGLISH = {"Accept-Language": "en"}
SECRET = re.compile(r'id="new-secret" type="text" value="(whsec_[A-Za-z0-9+/=]+)"')


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    opened = open_services(Settings(database_url=store_url, secret_key=SECRET_KEY), clock)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def site(console_store: str, chromium_ready: None) -> Iterator[Site]:
    """`cronledger serve` with a secret key, and a tenant `demo` with admin `admin`."""
    booted = run_cli(console_store, "bootstrap", "--tenant", "demo", "--admin", "admin")
    assert booted.returncode == 0, booted.stderr
    token = booted.stdout.strip().splitlines()[-1]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with started(
        console_store, "serve", "--port", str(port), CRONLEDGER_SECRET_KEY=SECRET_KEY
    ) as child:
        child.wait_for(lambda: answers(f"{base}/healthz"), "answering /healthz")
        yield Site(base, token, console_store)


def shown_secret(page: str) -> str:
    found = SECRET.search(page)
    assert found, "the page shows no secret"
    return found.group(1)


def test_only_directory_managers_see_and_change_callback_sources(
    app: Flask, admin: Api, console: Console
) -> None:
    assert 'href="/console/callback-sources/"' in console.page(SOURCES)
    operator = Console(app.test_client())
    operator.sign_in(account(admin, "olga", ["operator", "integration"]).token)
    refused = operator.get(SOURCES)
    assert refused.status_code == 403
    assert 'href="/console/callback-sources/"' not in refused.get_data(as_text=True)
    assert operator.post(SOURCES, {"name": "esign"}).status_code == 403
    source = admin.post("/api/callback-sources", {"name": "esign"}).json
    for action in ("rotate", "delete"):
        assert operator.post(f"{SOURCES}{source['id']}/{action}").status_code == 403
    assert admin.get(f"/api/callback-sources/{source['id']}").json["generation"] == 1


def test_a_source_is_registered_and_its_secret_shown_once(console: Console, admin: Api) -> None:
    made = console.post(SOURCES, {"name": "esign", "description": "E-signature"}, headers=ENGLISH)
    assert made.status_code == 200
    page = made.get_data(as_text=True)
    source = admin.get("/api/callback-sources").json["items"][0]
    assert shown_secret(page) == derived_secret(SECRET_KEY, "callback-source", source["id"], 1)
    assert "shown only this once" in page
    listed = console.page(SOURCES, headers=ENGLISH)
    assert shown_secret(page) not in listed
    assert 'id="source-esign"' in listed
    assert "E-signature" in listed

    taken = console.post(SOURCES, {"name": "esign"}, headers=ENGLISH)
    assert taken.status_code == 422
    assert 'id="name-error"' in taken.get_data(as_text=True)
    bad = console.post(SOURCES, {"name": "e sign", "description": "kept"}, headers=ENGLISH)
    assert bad.status_code == 422
    assert 'value="kept"' in bad.get_data(as_text=True)  # what was typed stays
    assert admin.get("/api/callback-sources").json["total"] == 1


def test_a_secret_is_rotated_and_a_source_deleted_after_confirming(
    console: Console, admin: Api
) -> None:
    source = admin.post("/api/callback-sources", {"name": "esign"}).json
    rotate = f"{SOURCES}{source['id']}/rotate"
    asked = console.page(rotate, headers=ENGLISH)
    assert "The current one stops working at once" in asked
    assert admin.get(f"/api/callback-sources/{source['id']}").json["generation"] == 1
    rotated = console.post(rotate, {"reason": "leaked", "version": "1"}, headers=ENGLISH)
    assert rotated.status_code == 200
    assert shown_secret(rotated.get_data(as_text=True)) == derived_secret(
        SECRET_KEY, "callback-source", source["id"], 2
    )
    stale = console.post(rotate, {"version": "1"}, headers=ENGLISH)
    assert stale.status_code == 422
    assert "version" in stale.get_data(as_text=True)

    delete = f"{SOURCES}{source['id']}/delete"
    assert "Its callbacks are refused from then on" in console.page(delete, headers=ENGLISH)
    deleted = console.post(delete, {"reason": "replaced"}, headers=ENGLISH)
    assert deleted.status_code == 302
    assert "Callback source esign deleted." in console.page(SOURCES, headers=ENGLISH)
    assert admin.get(f"/api/callback-sources/{source['id']}").status_code == 404
    assert console.get(delete).status_code == 404


def test_callback_sources_in_a_browser(site: Site, browser: Any) -> None:
    from playwright.sync_api import expect

    page = new_page(browser, "en")
    sign_in(page, site, then=SOURCES)
    page.fill("#source-name", "esign")
    page.fill("#source-description", "The e-signature system")
    page.click("text=Register the source")
    expect(page.locator("#secret-warning")).to_contain_text("shown only this once")
    secret = page.locator("#new-secret").input_value()
    assert re.fullmatch(r"whsec_[A-Za-z0-9+/=]{40,}", secret)
    check_accessible(page)
    fits_narrow(page)
    page.click("text=Back to the callback sources")
    expect(page.locator("#source-esign")).to_contain_text("generation 1")
    assert secret not in page.content()

    site.api("POST", "/api/callback-sources", {"name": "contracts", "description": "合同系统"})
    chinese = new_page(browser, "zh")
    sign_in(chinese, site, then=SOURCES)
    expect(chinese.locator("h1")).to_have_text("回调来源")
    expect(chinese.locator("#source-contracts")).to_contain_text("合同系统")
    check_accessible(chinese)
    fits_narrow(chinese)
    chinese.evaluate("window.scrollTo(0, 0)")
    screenshot(chinese, "callback-sources")

    chinese.click("#source-esign >> text=轮换密钥…")
    expect(chinese.locator("#question")).to_contain_text("当前密钥立即失效")
    check_accessible(chinese)
    chinese.click("button.danger")
    rotated = chinese.locator("#new-secret").input_value()
    assert rotated not in (secret, "")
    chinese.click("text=返回回调来源")
    chinese.click("#source-contracts >> text=删除…")
    chinese.fill("#reason", "不再使用")
    chinese.click("button.danger")
    expect(chinese.locator(".notice.good")).to_have_text("已删除回调来源 contracts。")
    expect(chinese.locator("#source-contracts")).to_have_count(0)
    names = [s["name"] for s in site.api("GET", "/api/callback-sources")["items"]]
    assert names == ["esign"]
