"""Every list of the API searched (`q`: any part of a name or title, in any case, Chinese too),
sorted (`sort`: a closed set of fields, `-` for descending, numbered pages only) and counted up
to a cap (`total`, `total_capped`), on both stores (docs/api.md#searching-and-sorting)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import projections.keyset
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.e2e.helpers import account, assert_problem, submit
from tests.support import Api, FakeClock

SECRET_KEY = "a key for the lists' tests, 32 characters or more"

# Three items of every list, by the text each is searched by: two share 财务, one holds
# "Finance" in another case than the searches, and one holds the LIKE wildcards `%` and `_`.
LABELS = ("财务对账 Finance", "Daily check", "季度财务 100%_done")


@dataclass
class Tenant:
    admin: Api
    reviewer: Api
    definition_id: str
    schedule: dict[str, Any]


@dataclass(frozen=True)
class Listed:
    """A list: its path, who reads it, the field its items show the searched text in (None
    when it is not shown as it is), and a field it sorts by, with the item's field holding it."""

    path: str
    make: Callable[[Tenant, str, int], None]
    shown: Callable[[dict[str, Any]], str]
    sort: str
    sorted_by: Callable[[dict[str, Any]], Any]
    as_reviewer: bool = False


def _created(response: Any) -> None:
    assert response.status_code in (201, 202), response.json


def _schedule(tenant: Tenant, label: str, n: int) -> None:
    body = {**tenant.schedule, "name": label, "title_template": label}
    _created(tenant.admin.post("/api/workflows/schedules", body))


def _run(tenant: Tenant, label: str, n: int) -> None:
    body = {**tenant.schedule, "name": f"s{n}", "title_template": label}
    created = tenant.admin.post("/api/workflows/schedules", body).json
    path = f"/api/workflows/schedules/{created['id']}/run"
    _created(tenant.admin.post(path, {"request_id": f"r{n}"}))


def _approval(tenant: Tenant, label: str, n: int) -> None:
    _created(submit(tenant.admin, tenant.definition_id, f"c{n}", title=label))


def _account(tenant: Tenant, label: str, n: int) -> None:
    _created(tenant.admin.post("/api/accounts", {"id": f"u{n}", "name": label, "roles": []}))


def _definition(tenant: Tenant, label: str, n: int) -> None:
    body = {"key": f"d{n}", "name": label, "external": False, "review_window_seconds": 60}
    _created(tenant.admin.post("/api/definitions", {**body, "reviewers": {"roles": ["admin"]}}))


def _group(tenant: Tenant, label: str, n: int) -> None:
    _created(tenant.admin.post("/api/groups", {"key": f"g{n}", "name": label}))


def _source(tenant: Tenant, label: str, n: int) -> None:
    body = {"name": f"source-{n}", "description": label}
    _created(tenant.admin.post("/api/callback-sources", body))


def _webhook(tenant: Tenant, label: str, n: int) -> None:
    body = {"url": f"http://127.0.0.1:9/{n}", "event_types": ["ping"], "description": label}
    _created(tenant.admin.post("/api/webhooks", body))


LISTS = {
    "schedules": Listed(
        "/api/workflows/schedules", _schedule, lambda s: s["name"], "name", lambda s: s["name"]
    ),
    "run log": Listed(
        "/api/workflows/runs", _run, lambda r: r["title"], "title", lambda r: r["title"]
    ),
    "approvals": Listed(
        "/api/approvals", _approval, lambda a: a["title"], "title", lambda a: a["title"]
    ),
    "tasks": Listed(
        "/api/tasks?scope=claimable",
        _approval,
        lambda t: t["title"],
        "title",
        lambda t: t["title"],
        as_reviewer=True,
    ),
    "notifications": Listed(
        "/api/notifications",
        _approval,
        lambda n: n["params"]["title"],
        "created_at",
        lambda n: n["created_at"],
        as_reviewer=True,
    ),
    "accounts": Listed("/api/accounts", _account, lambda a: a["name"], "name", lambda a: a["name"]),
    "definitions": Listed(
        "/api/definitions", _definition, lambda d: d["name"], "name", lambda d: d["name"]
    ),
    "groups": Listed("/api/groups", _group, lambda g: g["name"], "name", lambda g: g["name"]),
    "callback sources": Listed(
        "/api/callback-sources",
        _source,
        lambda s: s["description"],
        "name",
        lambda s: s["name"],
    ),
    "webhooks": Listed(
        "/api/webhooks", _webhook, lambda w: w["description"], "url", lambda w: w["url"]
    ),
    "operations": Listed(
        "/api/audit/operations",
        _schedule,
        lambda o: o["summary"],
        "actor",
        lambda o: o["actor"],
    ),
}


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    """Services with a secret key (callback sources and webhooks sign with it), whose
    webhooks may go to this host (where nothing listens)."""
    settings = Settings(
        database_url=store_url,
        secret_key=SECRET_KEY,
        webhook_allow_private=True,
        webhook_allow_http=True,
    )
    opened = open_services(settings, clock)
    yield opened
    opened.close()


@pytest.fixture
def tenant(admin: Api, body: dict[str, Any], definition_id: str) -> Tenant:
    reviewer = account(admin, "rita", ["operator"])
    return Tenant(admin, reviewer, definition_id, {**body, "overlap_policy": "allow"})


def listed_with(tenant: Tenant, kind: str) -> tuple[Listed, Api]:
    """The list `kind` holding one item for each of LABELS, and who reads it."""
    wanted = LISTS[kind]
    for n, label in enumerate(LABELS):
        wanted.make(tenant, label, n)
    return wanted, tenant.reviewer if wanted.as_reviewer else tenant.admin


def read(api: Api, path: str, **query: Any) -> dict[str, Any]:
    joined = "&".join(f"{name}={value}" for name, value in query.items())
    response = api.get(f"{path}{'&' if '?' in path else '?'}{joined}")
    assert response.status_code == 200, response.json
    return response.json  # type: ignore[no-any-return]


def texts(body: dict[str, Any], listed: Listed) -> list[str]:
    return [listed.shown(item) for item in body["items"]]


@pytest.mark.parametrize("kind", list(LISTS))
def test_q_finds_any_part_of_a_name_or_title_in_any_case(tenant: Tenant, kind: str) -> None:
    listed, api = listed_with(tenant, kind)
    chinese = read(api, listed.path, q="财务", page_size=50)
    found = texts(chinese, listed)
    assert sorted(LABELS[0] in t for t in found) == [False, True]
    assert sorted(LABELS[2] in t for t in found) == [False, True]
    assert chinese["total"] == 2
    assert chinese["total_capped"] is False
    upper = read(api, listed.path, q="fINANCE")
    assert [LABELS[0] in t for t in texts(upper, listed)] == [True]
    wildcard = read(api, listed.path, q="0%_")
    assert [LABELS[2] in t for t in texts(wildcard, listed)] == [True]
    assert read(api, listed.path, q="%")["total"] == 1  # `%` is itself, not "anything"
    assert read(api, listed.path, q="财务 不在")["items"] == []


@pytest.mark.parametrize("kind", list(LISTS))
def test_sort_orders_every_page_both_ways_and_pages_by_number(tenant: Tenant, kind: str) -> None:
    listed, api = listed_with(tenant, kind)
    for sort, backwards in ((listed.sort, False), (f"-{listed.sort}", True)):
        whole = read(api, listed.path, sort=sort, page_size=100)["items"]
        keys = [listed.sorted_by(item) for item in whole]
        assert keys == sorted(keys, reverse=backwards)
        first = read(api, listed.path, sort=sort, page_size=2)
        second = read(api, listed.path, sort=sort, page_size=2, page=2)
        assert first["items"] + second["items"] == whole[:4]
        if sort != DEFAULT_SORTS.get(kind):
            assert first["next_cursor"] is None
            assert first["total"] == len(whole)


DEFAULT_SORTS = {"notifications": "-created_at"}  # the sorts tested that are a list's default


def test_a_cursor_pages_the_default_order_only(tenant: Tenant) -> None:
    listed, api = listed_with(tenant, "schedules")
    cursor = read(api, listed.path, page_size=1)["next_cursor"]
    assert cursor is not None
    sorted_by_cursor = api.get(f"{listed.path}?sort=name&cursor={cursor}")
    assert_problem(sorted_by_cursor, 422, "VALIDATION_FAILED")
    assert "cursor" in sorted_by_cursor.json["errors"]
    explicit_default = read(api, listed.path, sort="created_at", page_size=1)
    assert explicit_default["next_cursor"] == cursor


@pytest.mark.parametrize("path", ["/api/workflows/schedules", "/api/accounts", "/api/groups"])
def test_a_sort_not_offered_is_refused_by_name(tenant: Tenant, path: str) -> None:
    refused = tenant.admin.get(f"{path}?sort=secret")
    assert_problem(refused, 422, "VALIDATION_FAILED")
    assert list(refused.json["errors"]) == ["sort"]


@pytest.mark.parametrize("kind", ["schedules", "run log", "approvals", "accounts", "operations"])
def test_the_total_is_counted_up_to_the_cap_and_says_when_more_match(
    tenant: Tenant, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed, api = listed_with(tenant, kind)
    exact = read(api, listed.path, q="财务")
    assert (exact["total"], exact["total_capped"]) == (2, False)
    monkeypatch.setattr(projections.keyset, "COUNT_CAP", 2)
    at_cap = read(api, listed.path, q="财务")
    assert (at_cap["total"], at_cap["total_capped"]) == (2, False)
    beyond = read(api, listed.path, page_size=1)
    assert (beyond["total"], beyond["total_capped"]) == (2, True)
    assert beyond["next_cursor"] is not None


def test_the_exact_name_filter_still_matches_whole_names_only(tenant: Tenant) -> None:
    listed, api = listed_with(tenant, "schedules")
    assert read(api, listed.path, name="财务")["items"] == []
    exact = read(api, listed.path, name=LABELS[0])
    assert [item["name"] for item in exact["items"]] == [LABELS[0]]
    both = read(api, listed.path, name=LABELS[0], q="daily")
    assert both["items"] == []


def test_a_search_keeps_to_the_schedules_runs_and_the_link_keeps_it(tenant: Tenant) -> None:
    schedule = tenant.admin.post(
        "/api/workflows/schedules", {**tenant.schedule, "title_template": "财务 {{date}}"}
    ).json
    path = f"/api/workflows/schedules/{schedule['id']}/run"
    for n in range(3):
        _created(tenant.admin.post(path, {"request_id": f"own{n}"}))
    _run(tenant, "财务 elsewhere", 9)
    runs = f"/api/workflows/schedules/{schedule['id']}/runs"
    first = tenant.admin.get(f"{runs}?q=%E8%B4%A2%E5%8A%A1&page_size=2")
    assert first.json["total"] == 3
    assert "q=%E8%B4%A2%E5%8A%A1" in first.headers["Link"]


def test_q_over_two_hundred_characters_is_refused(tenant: Tenant) -> None:
    refused = tenant.admin.get(f"/api/approvals?q={'x' * 201}")
    assert_problem(refused, 422, "VALIDATION_FAILED")
    assert list(refused.json["errors"]) == ["q"]


def test_the_reviewer_sees_only_their_own_notices_when_searching(tenant: Tenant) -> None:
    listed, api = listed_with(tenant, "notifications")
    assert read(api, listed.path, q="财务")["total"] == 2
    assert read(tenant.admin, listed.path, q="财务")["total"] == 0
