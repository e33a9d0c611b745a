"""GET /api/docs in a real browser: Debian's chromium, driven by Playwright, renders the
document's operations with nothing refused by the page's Content-Security-Policy and nothing
asked of another origin."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from werkzeug.serving import make_server

from cronledger.application.services import open_services
from cronledger.config import Settings
from tests.support import needed
from web import create_app

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# The flags a sandboxed, offline machine needs: no background fetches of Google's services.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser_ready() -> None:
    if not Path(CHROMIUM).exists():
        needed("Debian's chromium is not installed (make test installs it when run as root)")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app on a SQLite store, served over HTTP on a free local port."""
    store = tmp_path_factory.mktemp("docs") / "cronledger.sqlite"
    services = open_services(Settings(database_url=f"sqlite:///{store}"))
    server = make_server("127.0.0.1", 0, create_app({"SERVICES": services}), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join()
    services.close()


def test_the_reference_renders_every_operation_in_chromium(
    browser_ready: None, served: str
) -> None:
    from playwright.sync_api import sync_playwright

    complaints: list[str] = []
    origins: set[str] = set()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.on("console", lambda m: complaints.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: complaints.append(str(error)))
        page.on(
            "request", lambda r: origins.add(urlsplit(r.url)._replace(path="", query="").geturl())
        )
        page.goto(f"{served}/api/docs")
        page.wait_for_selector(".opblock-summary-operation-id >> text=create_schedule")
        title = page.locator(".info .title").inner_text()
        shown = page.locator(".opblock-summary-operation-id").all_inner_texts()
        browser.close()

    assert title.startswith("cronledger")
    assert {"create_schedule", "approve", "list_run_log", "get_health"} <= set(shown)
    assert complaints == []  # a script or style the policy refused would be an error here
    assert {origin for origin in origins if not origin.startswith("data:")} == {served}
