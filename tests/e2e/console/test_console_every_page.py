"""Every console page an admin reaches from the navigation, in a real browser at 1280 and 390 px
wide: axe-core finds no serious or critical violation, and nothing scrolls sideways at 390 px.

The pages are found by following the console's own links from the dashboard, one page of each
kind (ids and numbers in a path count as one kind), so a page added later is checked without
being listed here."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.e2e.console.conftest import (
    NARROW,
    WIDE,
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    sign_in,
)
from tests.support import DECIDERS, REVIEWER, wait_until

pytestmark = pytest.mark.slow
LANGUAGE_OF_STORE = {"sqlite": "zh", "postgresql": "en"}
MOST_PAGES = 80  # more kinds of page than the console has: a crawl that goes round stops here
NOT_PAGES = re.compile(r"/sign-out|/static/|\.(csv|xlsx|json|png)$|/export|/events$")
# One kind of page: a path whose ids (UUIDs, numbers, tokens) are written as one placeholder.
IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f-]{27}|\b\d+\b|(?<=/accounts/)[^/]+")


@pytest.fixture(scope="module")
def seeded(site: Site) -> Site:
    """One of each thing the console lists: a definition, a schedule and its run, the approval
    it launched, an account, a group and a calendar with a year imported."""
    suffix = uuid.uuid4().hex[:8]
    definition = site.api(
        "POST",
        "/api/definitions",
        {
            "key": f"every-{suffix}",
            "name": "费用报销",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
    )
    site.api("POST", f"/api/definitions/{definition['id']}/publish")
    site.api(
        "POST", "/api/accounts", {"id": f"ivy-{suffix}", "name": "Ivy", "roles": ["requester"]}
    )
    schedule = site.api(
        "POST",
        "/api/workflows/schedules",
        {
            "name": "每日报销",
            "definition_id": definition["id"],
            "trigger": {"kind": "cron", "expression": "0 9 * * *"},
            "timezone": "Asia/Shanghai",
            "initiator_id": f"ivy-{suffix}",
            "title_template": "报销 {{date}}",
            "form_data": {},
        },
    )
    run = site.api("POST", f"/api/workflows/schedules/{schedule['id']}/run", {"request_id": suffix})
    wait_until(
        lambda: site.api("GET", f"/api/workflows/runs/{run['id']}")["instance_id"],
        "the run's approval launched",
        interval=0.2,
    )
    site.api(
        "POST", "/api/groups", {"key": f"finance-{suffix}", "name": "财务部", "members": [REVIEWER]}
    )
    calendar = site.api(
        "POST",
        "/api/calendars",
        {"key": f"cn-{suffix}", "name": "中国大陆", "timezone": "Asia/Shanghai", "region": "CN"},
    )
    site.api("POST", f"/api/calendars/{calendar['id']}/import", {"region": "CN", "years": [2026]})
    return site


def kind_of(path: str) -> str:
    return IDS.sub("{id}", path)


def console_links(page: Any, origin: str) -> list[str]:
    """The console paths the page links to, without query or fragment."""
    hrefs = page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")
    paths = []
    for href in hrefs:
        parts = urlsplit(href)
        if f"{parts.scheme}://{parts.netloc}" == origin and parts.path.startswith("/console/"):
            paths.append(parts.path)
    return [p for p in paths if not NOT_PAGES.search(p)]


def every_page(page: Any, origin: str) -> Iterator[str]:
    """Each kind of console page reachable from the dashboard, opened in `page` in turn."""
    queue, kinds = ["/console/"], {kind_of("/console/")}
    while queue:
        path = queue.pop(0)
        answer = page.goto(origin + path)
        assert answer is not None
        assert answer.status == 200, f"{path} answered {answer.status}"
        yield path
        for link in console_links(page, origin):
            if kind_of(link) not in kinds:
                kinds.add(kind_of(link))
                queue.append(link)
        assert len(kinds) <= MOST_PAGES, sorted(kinds)


def test_every_page_is_accessible_wide_and_narrow(seeded: Site, browser: Any) -> None:
    """Each store's console is crawled in one of the two languages: both stores and both
    languages are crawled, at half the cost of every pair (the pages' markup does not depend
    on the store; other console tests read each store in each language)."""
    page = new_page(browser, LANGUAGE_OF_STORE[seeded.store_url.partition(":")[0]])
    sign_in(page, seeded, then="/console/schedules/")  # where /console/ leads
    visited, problems = [], []
    for path in every_page(page, seeded.url):
        visited.append(path)
        for width, check in (
            (WIDE, check_accessible),
            (NARROW, check_accessible),
            (WIDE, fits_narrow),
        ):
            page.set_viewport_size(width)
            try:
                check(page)
            except AssertionError as problem:
                problems.append(f"{width['width']} px: {str(problem).splitlines()[0]}")
    assert problems == [], "\n".join(problems)
    kinds = {kind_of(path).split("/")[2] for path in visited}
    assert {"schedules", "runs", "approvals", "directory", "tasks", "calendars"} <= kinds, visited
