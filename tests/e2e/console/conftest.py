"""The console in a real browser: `cronledger serve` on each store, Debian's chromium driven by
Playwright, axe-core's accessibility checks, and a screenshot of each page for the README.

And without a browser: `console`, Flask's test client signed in to the console (`Console`).
"""

from __future__ import annotations

import json
import re
import shutil
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from tests.e2e.helpers import answers
from tests.processes import free_port, run_cli, started
from tests.support import Api, add_reviewer, fresh_postgres_url, needed

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# What a sandboxed, offline machine needs: no background fetches of Google's services.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).parents[3] / "docs" / "screenshots"
WIDE = {"width": 1280, "height": 800}
NARROW = {"width": 390, "height": 844}
LOCALES = {"zh": "zh-CN", "en": "en-US"}
CSRF_META = re.compile(r'<meta name="csrf-token" content="([^"]+)">')


@dataclass(frozen=True)
class Site:
    """`cronledger serve` for the console's tests: its address and its admin's token."""

    url: str
    token: str
    store_url: str

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """Call the HTTP API as the admin (to arrange what a test needs); the answer's JSON."""
        data = None if body is None else json.dumps(body).encode()
        call = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(call, timeout=10) as answer:
            text = answer.read()
        return json.loads(text) if text else None


@pytest.fixture(scope="module")
def chromium_ready() -> None:
    if not Path(CHROMIUM).exists():
        needed(
            "Debian's chromium is missing: install it with `apt-get install chromium`"
            " (make test does, when run as root)"
        )


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def console_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('console')}/cronledger.sqlite"
        return
    request.getfixturevalue("postgres_ready")
    yield from fresh_postgres_url()


@pytest.fixture(scope="module")
def site(console_store: str, chromium_ready: None) -> Iterator[Site]:
    """`cronledger serve` with its loops, quick retries, and a tenant `demo` with admin `admin`
    (and the operator who reviews what the admin submits and schedules)."""
    booted = run_cli(console_store, "bootstrap", "--tenant", "demo", "--admin", "admin")
    assert booted.returncode == 0, booted.stderr
    token = booted.stdout.strip().splitlines()[-1]
    add_reviewer(console_store, token)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    quick = {
        "CRONLEDGER_TICK_SECONDS": "0.2",
        "CRONLEDGER_RETRY_BASE_SECONDS": "1",
        "CRONLEDGER_MAX_ATTEMPTS": "2",  # a run that keeps failing is dead-lettered in ~1 s
    }
    with started(console_store, "serve", "--port", str(port), **quick) as child:
        child.wait_for(lambda: answers(f"{base}/healthz"), "answering /healthz")
        yield Site(base, token, console_store)


@pytest.fixture(scope="module")
def browser(chromium_ready: None) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield launched
        launched.close()


def new_page(browser: Any, language: str = "en", viewport: dict[str, int] = WIDE) -> Any:
    """A page in a fresh browser context (no cookies) whose browser prefers `language`."""
    context = browser.new_context(
        locale=LOCALES[language], viewport=viewport, timezone_id="Europe/Berlin"
    )
    context.set_default_timeout(15_000)
    return context.new_page()


def sign_in(page: Any, site: Site, token: str | None = None, then: str = "/console/") -> None:
    """Sign in through the sign-in form, then open `then`."""
    page.goto(f"{site.url}/console/sign-in?next={then}")
    page.fill("#token", token or site.token)
    page.click("form.sign-in button[type=submit]")
    page.wait_for_url(f"**{then}*")


def pick(page: Any, field: str, typed: str, option: str | None = None) -> None:
    """Type into a type-ahead picker (`field` is its input's selector) and pick the first
    option it offers that shows what was typed and `option`."""
    page.fill(field, "")
    page.locator(field).press_sequentially(typed)
    offered = page.get_by_role("option").filter(has_text=typed)
    offered.filter(has_text=option or typed).first.click()


def check_accessible(page: Any) -> None:
    """axe-core finds no serious or critical violation on the page as it is now."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    bad = [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert not bad, f"{page.url}: " + "; ".join(bad)


def screenshot(page: Any, name: str) -> None:
    """The page at 1280×800 into docs/screenshots/NAME.png (the README shows them)."""
    page.set_viewport_size(WIDE)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def fits_narrow(page: Any) -> None:
    """At 390 px wide, nothing makes the page scroll sideways."""
    page.set_viewport_size(NARROW)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    page.set_viewport_size(WIDE)
    assert overflow <= 1, f"{page.url} scrolls sideways by {overflow} px at 390 px wide"


@dataclass(frozen=True)
class Console:
    """Flask's test client as a browser of the console: pages, and forms posted with their CSRF
    token (as a page's hidden field would send it). The client keeps the session cookie."""

    client: FlaskClient

    def get(self, path: str, **kwargs: Any) -> TestResponse:
        return self.client.get(path, **kwargs)

    def csrf_token(self) -> str:
        """The token a page of this browser's session carries (from the sign-in page)."""
        page = self.client.get("/console/sign-in").get_data(as_text=True)
        found = CSRF_META.search(page)
        assert found, "the sign-in page has no csrf-token meta tag"
        return found.group(1)

    def post(self, path: str, data: dict[str, Any] | None = None, **kwargs: Any) -> TestResponse:
        """A form posted with this session's CSRF token."""
        return self.client.post(
            path, data={"csrf_token": self.csrf_token(), **(data or {})}, **kwargs
        )

    def sign_in(self, token: str) -> TestResponse:
        return self.post("/console/sign-in", {"token": token})

    def page(self, path: str, **kwargs: Any) -> str:
        """A page's HTML, which must answer 200."""
        answer = self.get(path, **kwargs)
        assert answer.status_code == 200, (answer.status_code, answer.get_data(as_text=True))
        return answer.get_data(as_text=True)


@pytest.fixture
def console(client: FlaskClient, admin: Api) -> Console:
    """The test client signed in to the console as `admin` (tenant `acme`'s admin `root`), on
    each store; `admin` still calls the JSON API with its token."""
    signed_in = Console(client)
    answer = signed_in.sign_in(admin.token)
    assert answer.status_code == 302, answer.get_data(as_text=True)
    return signed_in
