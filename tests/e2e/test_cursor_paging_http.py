"""Cursor paging over HTTP: every list walked by `next_cursor` and its `Link`, unmoved by
inserts between two reads, with filters, and refusing cursors it never gave (docs/api.md#paging)."""

from __future__ import annotations

import base64
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.e2e.helpers import assert_problem, submit
from tests.support import DECIDERS, REVIEWER, Api, FakeClock

LINK = re.compile(r'<(?P<url>/[^>]*)>; rel="(?P<rel>[a-z]+)"(?:, |$)')  # root-relative
MOST_PAGES = 100  # a walk longer than this goes round in circles
ROUNDS = 5  # items each list gets


@dataclass
class Tenant:
    """A tenant whose every list holds several items, some created at the same instant."""

    admin: Api
    clock: FakeClock
    definition_id: str
    schedule: dict[str, Any]
    schedule_id: str = ""
    other_schedule_id: str = ""
    created: dict[str, list[str]] = field(default_factory=dict)  # ids or keys, by list
    numbers: Iterator[int] = field(default_factory=itertools.count)

    def add(self, kind: str) -> None:
        """One more item in the list `kind` (an operation: a new account)."""
        made = self.created.setdefault(kind, [])
        made.append(ADDERS[kind](self, next(self.numbers), len(made)))

    def path(self, kind: str) -> str:
        return PATHS[kind].format(schedule_id=self.schedule_id)


# Each makes item `i` of a list (`n` is unique across lists) and answers its id or key.
Adder = Callable[[Tenant, int, int], str]


def _created(response: Any) -> None:
    assert response.status_code in (201, 202), response.json


def _account(tenant: Tenant, n: int, i: int) -> str:
    _created(tenant.admin.post("/api/accounts", {"id": f"u{n}", "name": "U", "roles": []}))
    return f"u{n}"


def _definition(tenant: Tenant, n: int, i: int) -> str:
    body = {
        "key": f"d{n}",
        "name": "D",
        "external": False,
        "review_window_seconds": 60,
        "reviewers": DECIDERS,
    }
    _created(tenant.admin.post("/api/definitions", body))
    return f"d{n}"


def _schedule(tenant: Tenant, n: int, i: int) -> str:
    body = {**tenant.schedule, "name": f"s{n}", "enabled": i % 2 == 0}
    _created(tenant.admin.post("/api/workflows/schedules", body))
    return f"s{n}"


def _run_of(schedule_id: str, tenant: Tenant, n: int) -> str:
    path = f"/api/workflows/schedules/{schedule_id}/run"
    _created(tenant.admin.post(path, {"request_id": f"r{n}"}))
    return f"r{n}"


def _main_run(tenant: Tenant, n: int, i: int) -> str:
    return _run_of(tenant.schedule_id, tenant, n)


def _any_run(tenant: Tenant, n: int, i: int) -> str:
    """Runs of the main schedule and, every other one, of the other."""
    return _run_of(tenant.other_schedule_id if i % 2 else tenant.schedule_id, tenant, n)


def _approval(tenant: Tenant, n: int, i: int) -> str:
    definition_id = tenant.schedule["definition_id"] if i % 2 else tenant.definition_id
    _created(submit(tenant.admin, definition_id, f"c{n}"))
    return f"c{n}"


PATHS = {
    "accounts": "/api/accounts",
    "definitions": "/api/definitions",
    "schedules": "/api/workflows/schedules",
    "schedule runs": "/api/workflows/schedules/{schedule_id}/runs",
    "run log": "/api/workflows/runs",
    "approvals": "/api/approvals",
    "operations": "/api/audit/operations",
}
ADDERS: dict[str, Adder] = {
    "accounts": _account,
    "definitions": _definition,
    "schedules": _schedule,
    "schedule runs": _main_run,
    "run log": _any_run,
    "approvals": _approval,
    "operations": _account,
}
OLDEST_FIRST = ("accounts", "definitions", "schedules")


def _instant(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


# How each newest-first list (and schedules) is ordered: its sort key of an item.
ORDER: dict[str, Callable[[dict[str, Any]], Any]] = {
    "schedules": lambda s: (_instant(s["created_at"]), s["id"]),
    "schedule runs": lambda r: (-_instant(r["planned_at"]), r["id"]),
    "run log": lambda r: (-_instant(r["planned_at"]), r["id"]),
    "approvals": lambda a: (-_instant(a["submitted_at"]), a["id"]),
    "operations": lambda o: -o["position"],
}


def key(item: dict[str, Any]) -> Any:
    """An item's id (an operation's log position)."""
    return item.get("id", item.get("position"))


@pytest.fixture
def tenant(admin: Api, body: dict[str, Any], definition_id: str, clock: FakeClock) -> Tenant:
    schedule = {**body, "overlap_policy": "allow"}
    tenant = Tenant(admin, clock, definition_id, schedule)
    main, other = (
        admin.post("/api/workflows/schedules", {**schedule, "name": name}).json["id"]
        for name in ("main", "other")
    )
    tenant.schedule_id, tenant.other_schedule_id = main, other
    for n in range(ROUNDS):
        if n % 2:
            clock.advance(1)  # else the round's items share their instant with the round before
        for kind in ("accounts", "definitions", "schedules", "run log", "approvals"):
            tenant.add(kind)
    return tenant


def everything(api: Api, path: str) -> list[Any]:
    """The ids of a whole list, read as one page."""
    body = api.get(f"{path}{'&' if '?' in path else '?'}page_size=200").json
    assert body["next_cursor"] is None
    assert len(body["items"]) == body["total"]
    return [key(item) for item in body["items"]]


def pages(api: Api, url: str) -> Iterator[dict[str, Any]]:
    """Every page from `url` on, following each page's `Link`, checked against `next_cursor`."""
    for _ in range(MOST_PAGES):
        response = api.get(url)
        assert response.status_code == 200, response.json
        yield response.json
        cursor, link = response.json["next_cursor"], response.headers["Link"]
        if cursor is None:
            assert "next" not in links_of(link)
            return
        url = link_target(link)
        assert dict(parse_qsl(urlsplit(url).query))["cursor"] == cursor
    pytest.fail(f"more than {MOST_PAGES} pages")


def links_of(link: str) -> dict[str, str]:
    """A `Link` header's URLs by relation; the whole header must be links."""
    found = list(LINK.finditer(link))
    assert "".join(match[0] for match in found) == link, link
    return {match["rel"]: match["url"] for match in found}


def link_target(link: str) -> str:
    """Where a `Link` header's `rel="next"` points."""
    return links_of(link)["next"]


def walked(api: Api, url: str) -> list[Any]:
    return [key(item) for page in pages(api, url) for item in page["items"]]


@pytest.mark.parametrize("kind", list(PATHS))
def test_walking_a_list_by_cursor_gives_every_item_once_in_order(tenant: Tenant, kind: str) -> None:
    path = tenant.path(kind)
    whole = everything(tenant.admin, path)
    assert len(whole) > 2
    by_cursor = list(pages(tenant.admin, f"{path}?page_size=2"))
    assert [key(item) for page in by_cursor for item in page["items"]] == whole
    assert [page["page"] for page in by_cursor] == [1] + [None] * (len(by_cursor) - 1)
    assert {(page["page_size"], page["total"]) for page in by_cursor} == {(2, len(whole))}
    if kind in ORDER:
        items = tenant.admin.get(f"{path}?page_size=200").json["items"]
        assert items == sorted(items, key=ORDER[kind])


def test_accounts_and_definitions_come_in_the_order_they_were_created(tenant: Tenant) -> None:
    accounts = walked(tenant.admin, "/api/accounts?page_size=2")
    assert accounts == ["root", REVIEWER, *tenant.created["accounts"]]
    definitions = tenant.admin.get("/api/definitions?page_size=200").json["items"]
    assert [d["key"] for d in definitions][-ROUNDS:] == tenant.created["definitions"]


@pytest.mark.parametrize("kind", list(PATHS))
def test_inserts_between_two_reads_neither_repeat_nor_skip_an_item(
    tenant: Tenant, kind: str
) -> None:
    path = tenant.path(kind)
    before = everything(tenant.admin, path)
    first = tenant.admin.get(f"{path}?page_size=2")
    for _ in range(3):  # each newer than every item: newest-first lists put it before the page
        tenant.clock.advance(1)
        tenant.add(kind)
    rest = walked(tenant.admin, link_target(first.headers["Link"]))
    seen = [key(item) for item in first.json["items"]] + rest
    assert len(seen) == len(set(seen))
    after = everything(tenant.admin, path)
    assert len(after) == len(before) + 3
    assert seen == (after if kind in OLDEST_FIRST else before)


@pytest.mark.parametrize(
    ("kind", "query"),
    [
        ("run log", "schedule_id={other}"),
        ("schedules", "enabled=true"),
        ("operations", "kind=account.registered"),
        ("approvals", "state=WAITING_REVIEW&definition_id={definition}"),
    ],
)
def test_filters_hold_across_pages_read_by_cursor(tenant: Tenant, kind: str, query: str) -> None:
    named = query.format(other=tenant.other_schedule_id, definition=tenant.definition_id)
    path = f"{tenant.path(kind)}?{named}"
    wanted = everything(tenant.admin, path)
    assert 1 < len(wanted) < len(everything(tenant.admin, tenant.path(kind)))
    assert walked(tenant.admin, f"{path}&page_size=1") == wanted


def test_the_link_keeps_the_other_parameters_and_replaces_page_by_cursor(tenant: Tenant) -> None:
    response = tenant.admin.get("/api/workflows/runs?trigger=manual&page=2&page_size=2")
    assert response.json["page"] == 2
    url = link_target(response.headers["Link"])
    assert urlsplit(url).path == "/api/workflows/runs"
    assert parse_qsl(urlsplit(url).query) == [
        ("trigger", "manual"),
        ("page_size", "2"),
        ("cursor", response.json["next_cursor"]),
    ]
    following = tenant.admin.get(url).json
    third = tenant.admin.get("/api/workflows/runs?trigger=manual&page=3&page_size=2").json
    assert following["items"] == third["items"]
    assert following["page"] is None


def test_the_last_page_has_no_next_cursor_and_no_next_link(tenant: Tenant) -> None:
    response = tenant.admin.get("/api/approvals?page_size=200")
    assert response.json["next_cursor"] is None
    assert links_of(response.headers["Link"]) == {"first": "/api/approvals?page_size=200"}
    empty = tenant.admin.get("/api/approvals?page=9&page_size=200")
    assert (empty.json["items"], empty.json["next_cursor"]) == ([], None)
    assert "next" not in links_of(empty.headers["Link"])


def test_a_numbered_page_links_to_the_first_the_previous_and_the_next(tenant: Tenant) -> None:
    response = tenant.admin.get("/api/workflows/runs?trigger=manual&page=2&page_size=2")
    links = links_of(response.headers["Link"])
    assert links["first"] == "/api/workflows/runs?trigger=manual&page_size=2"
    assert links["prev"] == "/api/workflows/runs?trigger=manual&page_size=2&page=1"
    assert parse_qsl(urlsplit(links["next"]).query)[-1] == ("cursor", response.json["next_cursor"])
    first = tenant.admin.get(links["first"]).json
    assert tenant.admin.get(links["prev"]).json["items"] == first["items"]
    assert (first["page"], len(first["items"])) == (1, 2)


def test_a_page_read_by_cursor_has_no_previous_link(tenant: Tenant) -> None:
    first = tenant.admin.get("/api/workflows/runs?page_size=2")
    assert set(links_of(first.headers["Link"])) == {"first", "next"}
    following = tenant.admin.get(link_target(first.headers["Link"]))
    assert set(links_of(following.headers["Link"])) == {"first", "next"}


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _forged(payload: str) -> Callable[[str], str]:
    """A cursor of `payload` (JSON) with a made-up checksum, as one might write by hand."""
    return lambda real: _b64(f"{payload}~000000000000")


def _tampered(cursor: str) -> str:
    middle = len(cursor) // 2
    return cursor[:middle] + ("B" if cursor[middle] != "B" else "C") + cursor[middle + 1 :]


BAD_CURSORS: dict[str, Callable[[str], str]] = {
    "empty": lambda real: "",
    "not base64url": lambda real: "not a cursor!",
    "too long": lambda real: "A" * 600,
    "not text": lambda real: "abc",
    "not json": lambda real: _b64("hello"),
    "forged": _forged('["approvals","2026-10-01T09:00:00+00:00","x"]'),
    "forged bad instant": _forged('["approvals","yesterday","x"]'),
    "forged bad types": _forged('["approvals",1,{}]'),
    "forged too short": _forged('["approvals"]'),
    "forged object": _forged('{"approvals":1}'),
    "tampered": _tampered,
    "cut short": lambda real: real[:-4],
    "lengthened": lambda real: real + "A",
}


@pytest.mark.parametrize("make", BAD_CURSORS.values(), ids=BAD_CURSORS.keys())
def test_a_cursor_the_list_never_gave_is_422(tenant: Tenant, make: Callable[[str], str]) -> None:
    real = tenant.admin.get("/api/approvals?page_size=2").json["next_cursor"]
    response = tenant.admin.get("/api/approvals", query_string={"cursor": make(real)})
    problem = assert_problem(response, 422, "VALIDATION_FAILED")
    assert list(problem["errors"]) == ["cursor"]


@pytest.mark.parametrize("position", ["99999999999999999999999", "-1", "true", "1.5", "1e400"])
def test_a_forged_log_position_is_422(tenant: Tenant, position: str) -> None:
    cursor = _forged(f'["operations",{position}]')("")
    response = tenant.admin.get("/api/audit/operations", query_string={"cursor": cursor})
    assert list(assert_problem(response, 422, "VALIDATION_FAILED")["errors"]) == ["cursor"]


@pytest.mark.parametrize(("mine", "theirs"), [("run log", "approvals"), ("accounts", "operations")])
def test_a_cursor_of_another_list_is_422(tenant: Tenant, mine: str, theirs: str) -> None:
    cursor = tenant.admin.get(f"{tenant.path(mine)}?page_size=1").json["next_cursor"]
    response = tenant.admin.get(tenant.path(theirs), query_string={"cursor": cursor})
    assert list(assert_problem(response, 422, "VALIDATION_FAILED")["errors"]) == ["cursor"]


def test_page_with_cursor_is_422(tenant: Tenant) -> None:
    cursor = tenant.admin.get("/api/accounts?page_size=2").json["next_cursor"]
    response = tenant.admin.get("/api/accounts", query_string={"cursor": cursor, "page": 1})
    assert list(assert_problem(response, 422, "VALIDATION_FAILED")["errors"]) == ["cursor"]
