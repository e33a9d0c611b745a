"""The schedules pages (定时任务) in a real browser, on each store: the live preview with its
daylight-saving shift marked, errors beside their fields, a preset confirmed and created
disabled, enable, run now, the list with its filters, and forms refused without their CSRF
token or from another origin."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from uuid import uuid4

import pytest
from playwright.sync_api import expect

from tests.e2e.console.conftest import (
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    pick,
    screenshot,
    sign_in,
)
from tests.support import DECIDERS

SCHEDULES = "/api/workflows/schedules"
SCHEDULE_PAGE = re.compile(r"/console/schedules/[0-9a-f-]{36}$")
RUN_PAGE = re.compile(r"/console/runs/[0-9a-f-]{36}")
LIVE_MS = 20_000  # how long a launch may take to show: a tick, a worker poll, a stream poll
PRESET = {
    "id": "weekday-morning",
    "title": "Morning check {{date}}",
    "timezone": "Europe/London",
    "form_data": {"shift": "early"},
    "trigger": {"kind": "cron", "expression": "0 8 * * MON-FRI"},
}


@pytest.fixture(scope="module")
def published(site: Site) -> dict[str, Any]:
    """A published definition with a schedule preset, as the API answers it."""
    created = site.api(
        "POST",
        "/api/definitions",
        {
            "key": "daily",
            "name": "Daily",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
            "schedule_presets": [PRESET],
        },
    )
    return site.api("POST", f"/api/definitions/{created['id']}/publish")  # type: ignore[no-any-return]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid4().hex[:8]}"


def schedule(site: Site, definition: dict[str, Any], name: str, **fields: Any) -> dict[str, Any]:
    """A schedule made through the API, disabled unless `enabled` is given."""
    body = {
        "name": name,
        "definition_id": definition["id"],
        "trigger": {"kind": "cron", "expression": "0 9 * * *"},
        "timezone": "Asia/Shanghai",
        "initiator_id": "admin",
        **fields,
    }
    return site.api("POST", SCHEDULES, body)  # type: ignore[no-any-return]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_preview_marks_a_daylight_saving_shift_while_the_user_types(
    site: Site, browser: Any, published: dict[str, Any], language: str
) -> None:
    page = new_page(browser, language)
    sign_in(page, site, then="/console/schedules/new")
    name = unique("berlin")
    page.fill("#name", name)
    pick(page, "#definition_id", "Dai", published["name"])
    page.fill("#timezone", "Europe/Berlin")
    page.fill("#preview_after", "2027-03-26T12:00")
    page.fill("#expression", "30 2 * * *")
    shifted = page.locator("#preview li.dst-shift")
    expect(shifted).to_have_count(1)  # 02:30 does not exist on 28 March: 03:00 CEST instead
    expect(shifted).to_contain_text("2027-03-28 03:00:00")
    expect(shifted).to_contain_text("夏令时" if language == "zh" else "Daylight saving")
    expect(shifted).to_contain_text("UTC+02:00")
    expect(page.locator("#preview li")).to_have_count(5)
    if language == "en":
        check_accessible(page)
        fits_narrow(page)
        screenshot(page, "schedules-form")

    page.click("#schedule-form button[type=submit]")
    page.wait_for_url(SCHEDULE_PAGE)
    expect(page.locator("h1")).to_contain_text(name)
    saved = site.api("GET", f"{SCHEDULES}/{page.url.rsplit('/', 1)[1]}")
    assert (saved["trigger"]["expression"], saved["timezone"]) == ("30 2 * * *", "Europe/Berlin")
    assert saved["enabled"] is False
    if language == "en":
        check_accessible(page)
        fits_narrow(page)
        screenshot(page, "schedules-detail")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_each_validation_error_is_shown_next_to_its_field_with_the_input_kept(
    site: Site, browser: Any, published: dict[str, Any], language: str
) -> None:
    page = new_page(browser, language)
    sign_in(page, site, then="/console/schedules/new")
    name = unique("broken")
    page.fill("#name", name)
    pick(page, "#definition_id", published["name"])
    page.fill("#expression", "61 * * * *")
    page.fill("#timezone", "Mars/Olympus_Mons")
    page.fill("#form_data", "[1, 2]")
    page.click("#schedule-form button[type=submit]")
    for field in ("expression", "timezone", "form_data"):
        expect(page.locator(f"#{field}-error")).to_be_visible()
        expect(page.locator(f"#{field}")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#form-errors")).to_contain_text(
        "未保存" if language == "zh" else "Nothing was saved"
    )
    expect(page.locator("#expression")).to_have_value("61 * * * *")
    expect(page.locator("#name")).to_have_value(name)
    check_accessible(page)
    listed = site.api("GET", f"{SCHEDULES}?name={name}")
    assert listed["total"] == 0


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_preset_is_shown_confirmed_and_created_disabled_then_enabled_and_run_now(
    site: Site, browser: Any, published: dict[str, Any], language: str
) -> None:
    zh = language == "zh"
    page = new_page(browser, language)
    sign_in(page, site, then="/console/schedules/from-preset")
    pick(page, "#definition_id", published["name"])
    page.click("form.filters button[type=submit]")
    card = page.locator("article.preset", has_text="Morning check")
    expect(card).to_contain_text("0 8 * * MON-FRI")
    expect(card).to_contain_text("每周一至周五 08:00" if zh else "Every Monday to Friday at 08:00")
    expect(card).to_contain_text("Europe/London")
    expect(card.locator(".fires li")).to_have_count(5)
    check_accessible(page)
    fits_narrow(page)

    card.get_by_role("link").click()
    name = unique("preset")
    page.fill("#name", name)
    check_accessible(page)
    page.click("form.confirm-preset button[type=submit]")
    page.wait_for_url(SCHEDULE_PAGE)
    schedule_id = page.url.rsplit("/", 1)[1]
    created = site.api("GET", f"{SCHEDULES}/{schedule_id}")
    assert (created["enabled"], created["preset_id"], created["name"]) == (
        False,
        "weekday-morning",
        name,
    )
    assert created["form_data"] == {"shift": "early"}

    page.click("form.switch button[type=submit]")
    expect(page.locator("h1 .state")).to_have_text("已启用" if zh else "Enabled")
    assert site.api("GET", f"{SCHEDULES}/{schedule_id}")["enabled"] is True

    page.click("form.run-now button[type=submit]")
    page.wait_for_url(RUN_PAGE)
    assert page.url.endswith("?done=queued")
    page.evaluate("window.notReloaded = true")
    run_status = page.locator("#run-panel [data-status]").first
    expect(run_status).to_have_attribute("data-status", "SUCCEEDED", timeout=LIVE_MS)
    expect(page.locator("#run-done")).to_have_count(0)  # "queued" (已加入执行队列) has passed
    assert page.evaluate("window.notReloaded") is True  # the page changed live, not reloaded
    run_id = RUN_PAGE.search(page.url)[0].rsplit("/", 1)[1]  # type: ignore[index]
    run = site.api("GET", f"/api/workflows/runs/{run_id}")
    assert (run["schedule_id"], run["trigger"]) == (schedule_id, "manual")


def test_the_list_shows_each_schedule_and_filters_it(
    site: Site, browser: Any, published: dict[str, Any]
) -> None:
    prefix = unique("list")
    on = schedule(site, published, f"{prefix}-on", enabled=True)
    off = schedule(
        site,
        published,
        f"{prefix}-off",
        trigger={
            "kind": "window-interval",
            "weekdays": [1, 2, 3, 4, 5],
            "windows": [{"start": "09:00", "end": "12:00"}],
            "interval_minutes": 30,
        },
        timezone="Europe/Berlin",
    )
    page = new_page(browser, "en")
    sign_in(page, site, then="/console/schedules/")
    row = page.locator("table.schedules tbody tr", has_text=on["name"])
    expect(row).to_contain_text("Every day at 09:00")
    expect(row).to_contain_text("0 9 * * *")
    expect(row).to_contain_text("Asia/Shanghai")
    expect(row).to_contain_text("admin")
    expect(row).to_contain_text("Enabled")
    expect(row).to_contain_text("Beijing time")  # the next fire, in the schedule's zone
    expect(row.locator("time")).to_have_attribute("title", re.compile(r" UTC$"))  # on hover
    expect(row).to_contain_text(on["next_fire_at"][:10])
    other = page.locator("table.schedules tbody tr", has_text=off["name"])
    expect(other).to_contain_text("every 30 minutes from 09:00 to 12:00")
    expect(other).to_contain_text("Disabled")
    check_accessible(page)
    fits_narrow(page)
    screenshot(page, "schedules-list")

    page.fill("form.filters #q", on["name"][-6:].upper())
    page.click("form.filters button[type=submit]")
    expect(page.locator("table.schedules tbody tr")).to_have_count(1)
    expect(page.locator(".list-total")).to_contain_text("1 in all")
    page.goto(f"{site.url}/console/schedules/?enabled=false&initiator_id=admin")
    expect(page.locator("table.schedules tbody tr", has_text=off["name"])).to_have_count(1)
    expect(page.locator("table.schedules tbody tr", has_text=on["name"])).to_have_count(0)


class Attacker(BaseHTTPRequestHandler):
    """Another site: its page posts a form to the console as soon as it opens."""

    target = ""

    def do_GET(self) -> None:
        page = (
            f'<!doctype html><form id="f" method="post" action="{self.target}">'
            '<input name="version" value="1"></form>'
            '<script>document.getElementById("f").submit()</script>'
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def attacker() -> Iterator[tuple[str, type[Attacker]]]:
    """Another origin on this machine (another port): its address and its page's handler."""
    handler = type("Page", (Attacker,), {})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/", handler
    server.shutdown()
    server.server_close()
    thread.join()


def test_the_enable_form_is_refused_without_its_token_and_from_another_origin(
    site: Site,
    browser: Any,
    published: dict[str, Any],
    attacker: tuple[str, type[Attacker]],
) -> None:
    made = schedule(site, published, unique("guarded"))
    page = new_page(browser, "en")
    sign_in(page, site, then=f"/console/schedules/{made['id']}")

    page.locator("form.switch input[name=csrf_token]").evaluate("input => input.remove()")
    with page.expect_response(lambda answer: answer.request.method == "POST") as posted:
        page.click("form.switch button[type=submit]")
    assert posted.value.status == 400
    assert site.api("GET", f"{SCHEDULES}/{made['id']}")["enabled"] is False

    address, handler = attacker
    handler.target = f"{site.url}/console/schedules/{made['id']}/enable"
    with page.expect_response(lambda answer: answer.url == handler.target) as posted:
        page.goto(address)
    assert posted.value.status == 403
    assert site.api("GET", f"{SCHEDULES}/{made['id']}")["enabled"] is False

    page.goto(f"{site.url}/console/schedules/{made['id']}")  # the page's own form still works
    page.click("form.switch button[type=submit]")
    expect(page.locator("h1 .state")).to_have_text("Enabled")
    assert site.api("GET", f"{SCHEDULES}/{made['id']}")["enabled"] is True
