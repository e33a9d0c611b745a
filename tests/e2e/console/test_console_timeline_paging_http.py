"""A long timeline through Flask's test client, on both stores: 100 events to a page with page
links, a jump to an instant landing on the page that holds it, the state as it was at an
instant beside its page, and each event read as a sentence with the fields it changed."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from cronledger.application.services import Services
from domain.directory import Principal
from tests.e2e.console.conftest import Console
from tests.support import T0, Api, FakeClock

SCHEDULES = "/api/workflows/schedules"
SWITCHES = 250  # with its creation and one edit: 252 events, three pages
ZH = {"Accept-Language": "zh-CN"}
EN = {"Accept-Language": "en"}


@pytest.fixture
def long_schedule(admin: Api, body: dict[str, Any], services: Services, clock: FakeClock) -> str:
    """A schedule created at T0, renamed a minute later (event 2), then disabled and enabled
    250 times, a minute apart: event N is accepted N - 1 minutes after T0."""
    created = admin.post(SCHEDULES, body).json
    clock.advance(60)
    edited = admin.put(
        f"{SCHEDULES}/{created['id']}",
        {**body, "name": "月度结账", "enabled": True, "version": created["version"]},
    )
    assert edited.status_code == 200, edited.json
    root = services.directory.authenticate(admin.token)
    assert isinstance(root, Principal)
    schedule = services.schedules.schedule(root.tenant_id, created["id"])
    for n in range(SWITCHES):  # saved at once: what 250 edits would have recorded
        at = clock.advance(60)
        assert not schedule.switch(n % 2 == 1, at, "root", services.schedules.policy)
    services.ledger.save(schedule)
    return str(created["id"])


def versions(page: str) -> list[int]:
    """The log versions of the events a page lists, in order."""
    return [
        int(v)
        for v in re.findall(r'<li class="event[^"]*" id="event-\d+"[^>]*data-version="(\d+)"', page)
    ]


def test_a_long_timeline_is_read_a_hundred_events_a_page(
    console: Console, long_schedule: str
) -> None:
    path = f"/console/timelines/schedule/{long_schedule}"
    first = console.page(path, headers=EN)
    assert versions(first) == list(range(1, 101))
    assert "Events 1–100 of 252, oldest first: page 1 of 3." in first
    assert f'href="{path}?page=3"' in first
    third = console.page(f"{path}?page=3", headers=EN)
    assert versions(third) == list(range(201, 253))
    assert '<span class="current" aria-current="page">3</span>' in third
    assert versions(console.page(f"{path}?page=99", headers=EN)) == list(range(201, 253))
    assert versions(console.page(f"{path}?page=nonsense", headers=EN)) == list(range(1, 101))


def test_a_jump_to_an_instant_opens_the_page_holding_the_last_event_by_then(
    console: Console, long_schedule: str
) -> None:
    path = f"/console/timelines/schedule/{long_schedule}"
    # Event 150 was accepted 149 minutes after T0; half a minute later, it is still the last.
    instant = (T0 + timedelta(minutes=149, seconds=30)).isoformat().replace("+00:00", "Z")
    page = console.page(f"{path}?jump={instant}", headers=EN)
    assert versions(page) == list(range(101, 201))
    marked = re.findall(r'<li class="event here" id="event-(\d+)"', page)
    assert marked == ["150"]
    before = console.page(f"{path}?jump=2020-01-01T00:00:00Z", headers=EN)
    assert versions(before) == list(range(1, 101))
    assert "event here" not in before
    refused = console.get(f"{path}?jump=yesterday", headers=EN)
    assert refused.status_code == 422
    assert 'id="jump-error"' in refused.text


def test_the_state_at_an_instant_stands_beside_the_page_that_holds_it(
    console: Console, long_schedule: str
) -> None:
    path = f"/console/timelines/schedule/{long_schedule}"
    instant = (T0 + timedelta(minutes=220, seconds=30)).isoformat().replace("+00:00", "Z")
    page = console.page(f"{path}?at={instant}", headers=EN)
    assert "The events that led to it (221)" in page
    assert "Later events (31)" in page
    led, later = page.split('id="led-heading"')[1].split('id="later-heading"')
    assert versions(led) == list(range(201, 222))
    assert versions(later) == list(range(222, 253))
    state = page.split('data-field="enabled"')[1].split("</tr>")[0]
    assert "false" in state  # event 221, the 219th switch, disabled it


def test_each_event_reads_as_a_sentence_with_its_changes_in_chinese(
    console: Console, long_schedule: str
) -> None:
    page = console.page(f"/console/timelines/schedule/{long_schedule}", headers=ZH)
    edit = page.split('data-version="2"')[1].split("</li>")[0]
    assert "修改定时任务" in edit  # the event's name, its code beside it
    assert "Schedule.Updated" in edit
    assert "root 修改了定时任务。" in edit
    name = edit.split('data-change="name"')[1].split("</tr>")[0]
    assert "名称" in name
    assert "每日检查" in name.split('class="old"')[1].split("</td>")[0]
    assert "月度结账" in name.split('class="new"')[1].split("</td>")[0]
    assert 'data-change="enabled"' in edit
    assert "<summary>事件的 JSON</summary>" in edit
    assert "&#34;changes&#34;" in edit or '"changes"' in edit
    switched = page.split('data-version="3"')[1].split("</li>")[0]
    assert "root 停用了定时任务。" in switched
    english = console.page(f"/console/timelines/schedule/{long_schedule}", headers=EN)
    assert "root edited the schedule." in english
    assert "Schedule edited" in english
