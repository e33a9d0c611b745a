"""The console's lists as a person finds things in them: a search for 财务, a run of a schedule
far down the list named, sortable heads, page numbers with the total, the page size kept, and
the pickers' type-ahead answers and typed names (docs/console/README.md#lists)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from html.parser import HTMLParser
from typing import Any

import pytest
from markupsafe import escape

import projections.keyset
from cronledger.application.services import Services
from domain.directory import Principal
from tests.e2e.console.conftest import Console
from tests.e2e.helpers import account
from tests.support import Api, principal_of

ENGLISH = {"Accept-Language": "en"}
SCHEDULES = "/console/schedules/"
RUNS = "/console/runs/"
ROW = re.compile(r"<tr[ >]")


def made(services: Services, who: Principal, body: dict[str, Any], names: list[str]) -> list[str]:
    """Schedules of these names, made through the service (quicker than HTTP); their ids."""
    settings = services.schedules.settings_from(body)
    return [str(services.schedules.create(who, replace(settings, name=n), False).id) for n in names]


def rows(page: str) -> int:
    """The body rows of the page's table (the head's row left out)."""
    return len(ROW.findall(page)) - 1


def test_searching_finds_every_schedule_holding_the_text(
    console: Console, admin: Api, services: Services, body: dict[str, Any]
) -> None:
    finance = [f"财务{n:03d} 月结" for n in range(1, 26)]
    made(services, principal_of(services, admin), body, [*finance, "人事 月结", "Finance weekly"])
    found = console.page(f"{SCHEDULES}?q=财务&page_size=50", headers=ENGLISH)
    assert "25 in all" in found
    assert all(name in found for name in finance)
    assert "人事 月结" not in found
    assert rows(found) == 25
    english = console.page(f"{SCHEDULES}?q=FINANCE", headers=ENGLISH)
    assert "Finance weekly" in english
    assert "1 in all" in english


def test_a_run_of_a_schedule_far_down_the_list_shows_its_name(
    console: Console, admin: Api, services: Services, body: dict[str, Any]
) -> None:
    ids = made(
        services, principal_of(services, admin), body, [f"日结 {n:03d}" for n in range(1, 206)]
    )
    last = ids[-1]
    ran = admin.post(f"/api/workflows/schedules/{last}/run", {"request_id": "far"})
    assert ran.status_code == 202, ran.json
    log = console.page(RUNS, headers=ENGLISH)
    assert f'href="/console/schedules/{last}" translate="no">日结 205</a>' in log
    assert last[:8] + "…" not in log
    filtered = console.page(f"{RUNS}?schedule_id={last}", headers=ENGLISH)
    assert "Runs of 日结 205" in filtered
    assert f'data-value="{last}"' in filtered  # the picker holds the id, shows the name
    assert 'value="日结 205"' in filtered


def test_a_schedule_typed_by_name_filters_the_runs_and_an_unclear_one_is_refused(
    console: Console, admin: Api, services: Services, body: dict[str, Any]
) -> None:
    who = principal_of(services, admin)
    first, _twin, _other = made(services, who, body, ["财务 日结", "重名", "重名"])
    assert (
        admin.post(f"/api/workflows/schedules/{first}/run", {"request_id": "a"}).status_code == 202
    )
    typed = console.page(f"{RUNS}?schedule_id=财务 日结", headers=ENGLISH)
    assert "Runs of 财务 日结" in typed
    unclear = console.get(f"{RUNS}?schedule_id=重名", headers=ENGLISH).get_data(as_text=True)
    assert "Several have the name 重名: pick one from the list." in unclear
    unknown = console.get(f"{RUNS}?schedule_id=nowhere", headers=ENGLISH).get_data(as_text=True)
    assert "Nothing of that name or id" in unknown


def test_the_pickers_answer_what_holds_the_text_and_only_to_whoever_may_see_it(
    console: Console, admin: Api, services: Services, body: dict[str, Any], client: Any
) -> None:
    made(services, principal_of(services, admin), body, ["财务 A", "财务 B", "人事"])
    answer = console.get("/console/pick/schedules?q=财务")
    assert answer.status_code == 200
    assert [item["label"] for item in json.loads(answer.get_data())["items"]] == [
        "财务 A",
        "财务 B",
    ]
    accounts = json.loads(console.get("/console/pick/accounts?q=ROO").get_data())["items"]
    assert [item["value"] for item in accounts] == ["root"]
    assert console.get("/console/pick/calendars?q=x").status_code == 404
    requester = account(admin, "rex", ["requester"])
    reader = Console(client)
    reader.sign_in(requester.token)
    assert reader.get("/console/pick/schedules?q=财务").status_code == 404  # may not list them
    assert reader.get("/console/pick/accounts?q=r").status_code == 200


def test_heads_sort_pages_are_numbered_and_the_size_is_kept(
    console: Console, admin: Api, services: Services, body: dict[str, Any]
) -> None:
    made(services, principal_of(services, admin), body, [f"s{n:02d}" for n in range(60)])
    page = console.page(f"{SCHEDULES}?sort=-name&page_size=50&page=2", headers=ENGLISH)
    assert rows(page) == 10
    assert page.index(">s09<") < page.index(">s00<")  # the last ten, by name descending
    toggled = str(escape("/console/schedules/?sort=name&page_size=50"))
    assert f'aria-sort="descending"><a class="sort" href="{toggled}">' in page
    assert str(escape("/console/schedules/?sort=-name&page_size=50")) in page  # page 1's link
    assert 'aria-current="page">2</a>' in page
    assert "60 in all · page 2 of 2" in page
    assert '<option value="50" selected>50</option>' in page


def test_a_count_beyond_the_cap_is_shown_as_such(
    console: Console,
    admin: Api,
    services: Services,
    body: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made(services, principal_of(services, admin), body, [f"s{n}" for n in range(5)])
    monkeypatch.setattr(projections.keyset, "COUNT_CAP", 3)
    page = console.page(f"{SCHEDULES}?page_size=2", headers=ENGLISH)
    assert "3+ in all · page 1 of 2+" in page
    assert 'rel="next"' in page


class FormNesting(HTMLParser):
    """Whether a page opens a form inside another (browsers drop the inner one, and its end
    tag ends the outer form early)."""

    def __init__(self) -> None:
        super().__init__()
        self.depth, self.nested = 0, False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "form":
            self.nested = self.nested or self.depth > 0
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.depth -= 1


def test_every_list_page_has_a_search_box_and_a_pager_and_no_form_in_a_form(
    console: Console, admin: Api, services: Services, body: dict[str, Any]
) -> None:
    (schedule_id,) = made(services, principal_of(services, admin), body, ["财务 日结"])
    assert admin.post(f"/api/workflows/schedules/{schedule_id}/run", {"request_id": "a"}).json
    for path in (
        SCHEDULES,
        RUNS,
        "/console/runs/dead-letters",
        "/console/approvals/",
        "/console/tasks/",
        "/console/directory/",
        "/console/directory/definitions",
        "/console/directory/groups/",
        "/console/notifications/",
        "/console/operations/audit",
        "/console/callback-sources/",
    ):
        page = console.page(path, headers=ENGLISH)
        assert 'name="q"' in page, path
        assert 'class="list-pager"' in page or "No " in page, path
        nesting = FormNesting()
        nesting.feed(page)
        assert not nesting.nested, path
