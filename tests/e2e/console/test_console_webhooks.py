"""The console's webhook pages: through Flask's test client on both stores, and in a real browser
over `cronledger serve` with its notifier, a receiver on loopback, axe-core, 390 px and the
README's screenshots."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask

from cronledger.application.notifier import Notifier
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
from tests.support import Api, FakeClock, Opener
from tests.webhook_receiver import Receiver, receiving
from web import create_app

WEBHOOKS = "/console/webhooks/"
ENGLISH = {"Accept-Language": "en"}
SECRET_KEY = "a test key that is at least thirty-two characters long"
SECRET = re.compile(r"whsec_[A-Za-z0-9+/=]{40,}")
SERVED = {
    "CRONLEDGER_SECRET_KEY": SECRET_KEY,
    "CRONLEDGER_WEBHOOK_ALLOW_PRIVATE": "true",
    "CRONLEDGER_WEBHOOK_ALLOW_HTTP": "true",
    "CRONLEDGER_WEBHOOK_MAX_ATTEMPTS": "1",  # a message the receiver refuses is given up at once
}


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    settings = Settings(
        database_url=store_url,
        secret_key=SECRET_KEY,
        webhook_allow_private=True,
        webhook_allow_http=True,
        webhook_max_attempts=1,
    )
    opened = open_services(settings, clock)
    yield opened
    opened.close()


def form(url: str, *types: str, **more: str) -> dict[str, Any]:
    return {"url": url, "event_types": list(types), "description": "on call", **more}


def test_only_directory_managers_see_webhooks(app: Flask, admin: Api, console: Console) -> None:
    assert f'href="{WEBHOOKS}"' in console.page(WEBHOOKS)
    operator = Console(app.test_client())
    operator.sign_in(account(admin, "olga", ["operator"]).token)
    refused = operator.get(WEBHOOKS)
    assert refused.status_code == 403
    assert f'href="{WEBHOOKS}"' not in refused.get_data(as_text=True)
    assert operator.post(WEBHOOKS, form("http://127.0.0.1:9/h", "ping")).status_code == 403
    assert admin.get("/api/webhooks").json["total"] == 0


def test_the_secret_is_shown_once_and_the_url_is_checked(console: Console, admin: Api) -> None:
    refused = console.post(WEBHOOKS, form("ftp://nowhere", "ping"), headers=ENGLISH)
    assert refused.status_code == 422
    page = refused.get_data(as_text=True)
    assert 'id="url-error"' in page
    assert "must use https or http" in page
    none = console.post(WEBHOOKS, form("http://127.0.0.1:9/h"), headers=ENGLISH)
    assert 'id="event_types-error"' in none.get_data(as_text=True)

    created = console.post(WEBHOOKS, form("http://127.0.0.1:9/h", "ping", enabled="on"))
    assert created.status_code == 200
    (secret,) = SECRET.findall(created.get_data(as_text=True))
    (webhook,) = admin.get("/api/webhooks").json["items"]
    assert (webhook["url"], webhook["enabled"]) == ("http://127.0.0.1:9/h", True)
    detail = console.page(f"{WEBHOOKS}{webhook['id']}", headers=ENGLISH)
    assert secret not in detail
    assert secret not in console.page(WEBHOOKS)

    rotated = console.post(f"{WEBHOOKS}{webhook['id']}/rotate", {"version": "1"})
    (new,) = SECRET.findall(rotated.get_data(as_text=True))
    assert new != secret
    assert admin.get(f"/api/webhooks/{webhook['id']}").json["generation"] == 2


def test_a_webhook_beyond_the_tenant_s_cap_is_refused_on_the_form(
    open_with: Opener, clock: FakeClock
) -> None:
    services = open_with(
        clock,
        secret_key=SECRET_KEY,
        webhook_allow_private=True,
        webhook_allow_http=True,
        webhooks_per_tenant=1,
    )
    console = Console(create_app({"SERVICES": services, "TESTING": True}).test_client())
    console.sign_in(services.directory.bootstrap("acme", "root").token)
    assert console.post(WEBHOOKS, form("http://127.0.0.1:9/h", "ping")).status_code == 200
    refused = console.post(WEBHOOKS, form("http://127.0.0.1:9/other", "ping"))
    assert refused.status_code == 409
    page = refused.get_data(as_text=True)
    assert "该租户已有 1 个 Webhook 订阅，最多只能有 1 个" in page
    assert 'value="http://127.0.0.1:9/other"' in page  # the form keeps what was typed
    english = console.post(WEBHOOKS, form("http://127.0.0.1:9/other", "ping"), headers=ENGLISH)
    assert "the tenant has 1 webhook subscriptions and may have 1 at most" in english.get_data(
        as_text=True
    )


def test_a_webhook_is_edited_pinged_redelivered_and_deleted(
    console: Console, admin: Api, services: Services
) -> None:
    with receiving() as receiver:
        receiver.answer(500)
        console.post(WEBHOOKS, form(receiver.url, "ping", enabled="on"))
        (webhook,) = admin.get("/api/webhooks").json["items"]
        detail = f"{WEBHOOKS}{webhook['id']}"
        stale = console.post(detail, {**form(receiver.url, "ping"), "version": "9"})
        assert stale.status_code == 409
        saved = console.post(detail, {**form(receiver.url, "ping", "run.failed", enabled="on")})
        assert saved.status_code == 302
        assert admin.get(detail.replace("/console/", "/api/")).json["event_types"] == [
            "run.failed",
            "ping",
        ]
        assert console.post(f"{detail}/ping").status_code == 302
        Notifier.of(services).work()
        page = console.page(detail, headers=ENGLISH)
        (delivery,) = admin.get(f"/api/webhooks/{webhook['id']}/deliveries").json["items"]
        row = page.split(f'id="delivery-{delivery["id"]}"', 1)[1].split("</tr>", 1)[0]
        assert "Failed (given up)" in row
        assert "the receiver answered 500" in row
        assert "Send again" in row

        redeliver = f"{detail}/deliveries/{delivery['id']}/redeliver"
        assert console.post(redeliver).status_code == 302
        Notifier.of(services).work()
        row = console.page(detail, headers=ENGLISH).split(f'id="delivery-{delivery["id"]}"')[1]
        assert "Delivered" in row.split("</tr>", 1)[0]
        assert len({r.message_id for r in receiver.received}) == 1

    asked = console.page(f"{detail}/delete", headers=ENGLISH)
    assert "Delete this webhook?" in asked
    assert console.post(f"{detail}/delete", {"reason": "moved"}).status_code == 302
    assert admin.get("/api/webhooks").json["total"] == 0
    assert console.get(detail).status_code == 404


# -- in a browser ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def receiver(console_store: str) -> Iterator[Receiver]:
    """A receiver for each store's served notifier."""
    with receiving() as listening:
        yield listening


@pytest.fixture(scope="module")
def hooked_site(console_store: str, chromium_ready: None) -> Iterator[Site]:
    """`cronledger serve` whose notifier may sign and send to loopback over http."""
    booted = run_cli(console_store, "bootstrap", "--tenant", "demo", "--admin", "admin")
    assert booted.returncode == 0, booted.stderr
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with started(console_store, "serve", "--port", str(port), **SERVED) as child:
        child.wait_for(lambda: answers(f"{base}/healthz"), "answering /healthz")
        yield Site(base, booted.stdout.strip().splitlines()[-1], console_store)


def test_webhooks_in_a_browser(hooked_site: Site, receiver: Receiver, browser: Any) -> None:
    from playwright.sync_api import expect

    site = hooked_site
    page = new_page(browser, "en")
    sign_in(page, site, then=WEBHOOKS)
    expect(page.locator("h1")).to_have_text("Webhooks")
    page.fill("#webhook-url", receiver.url)
    page.check("input[name=event_types][value='ping']")
    page.check("input[name=event_types][value='run.dead_lettered']")
    page.fill("#webhook-description", "On-call alerts")
    page.check("input[name=enabled]")
    page.click("text=Create the webhook")
    expect(page.locator("#secret-warning")).to_contain_text("shown only this once")
    secret = page.locator("#new-secret").input_value()
    assert SECRET.fullmatch(secret)
    check_accessible(page)
    fits_narrow(page)

    page.click("text=Back to the webhook")
    assert secret not in page.content()
    receiver.answer(503)  # the first test message is refused, then given up
    page.click("text=Send a test message")
    expect(page.locator(".notice.good")).to_contain_text("A test message was queued")
    _reload_until(page, "#deliveries tr.delivery.failed")
    page.locator("#deliveries tr.delivery.failed button").click()
    expect(page.locator(".notice.good")).to_contain_text("sent again")
    page.click("text=Send a test message")
    _reload_until(page, "#deliveries tr.delivery.delivered >> nth=1")
    expect(page.locator("#deliveries tr.delivery")).to_have_count(2)
    messages = [r.verified(secret) for r in list(receiver.received)]
    assert [m["type"] for m in messages] == ["ping", "ping", "ping"]
    check_accessible(page)
    fits_narrow(page)
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "webhook-deliveries")

    page.click("text=Rotate the secret…")
    expect(page.locator("#question")).to_contain_text("Rotate the signing secret")
    check_accessible(page)
    page.click("button.danger")
    rotated = page.locator("#new-secret").input_value()
    assert SECRET.fullmatch(rotated)
    assert rotated != secret

    page.goto(f"{site.url}{WEBHOOKS}")
    expect(page.locator("#webhooks")).to_contain_text("On-call alerts")
    check_accessible(page)
    fits_narrow(page)
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "webhooks")


def test_webhooks_in_chinese(hooked_site: Site, receiver: Receiver, browser: Any) -> None:
    from playwright.sync_api import expect

    site = hooked_site
    created = site.api(
        "POST", "/api/webhooks", {"url": receiver.url, "event_types": ["ping"], "enabled": False}
    )
    page = new_page(browser, "zh")
    sign_in(page, site, then=f"{WEBHOOKS}{created['id']}")
    expect(page.locator("#webhook-state")).to_have_text("已停用")
    expect(page.locator("#no-deliveries")).to_have_text("尚无消息。")
    check_accessible(page)
    page.click("text=删除…")
    expect(page.locator("#question")).to_contain_text("删除此 Webhook？")
    page.click("button.danger")
    expect(page.locator(".notice.good")).to_have_text("Webhook 已删除。")
    assert created["id"] not in {w["id"] for w in site.api("GET", "/api/webhooks")["items"]}


def _reload_until(page: Any, selector: str) -> None:
    """Reload the page until `selector` is on it: the served notifier sends each second."""
    from playwright.sync_api import expect

    for _ in range(30):
        if page.locator(selector).count():
            return
        page.wait_for_timeout(500)
        page.reload()
    expect(page.locator(selector)).to_be_visible()
