"""A caller refused too often is slowed down, so losing commands cannot grow the log without end."""

from __future__ import annotations

import random
import re
import string
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.e2e.helpers import account, assert_problem
from tests.support import Api, FakeClock
from web.metrics import KNOWN_METHODS

BUDGET = 3
SCRAPER = {"REMOTE_ADDR": "192.0.2.9"}  # the operator's scrapes: another caller
DOUBLED_SLASH = {"PATH_INFO": "//api/definitions"}  # a route's path, never answered


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    """CRONLEDGER_REFUSALS_PER_MINUTE=3."""
    opened = open_services(Settings(database_url=store_url, refusals_per_minute=BUDGET), clock)
    yield opened
    opened.close()


def test_losing_commands_spend_the_budget_then_every_request_waits(
    admin: Api, services: Services
) -> None:
    requester = account(admin, "rita", ["requester"])
    log_end = services.ledger.recorder.max_notification_id
    for n in range(BUDGET):
        refused = requester.post("/api/accounts", {"id": f"x{n}", "name": "x", "roles": []})
        assert_problem(refused, 403, "FORBIDDEN")
    before = log_end()
    throttled = requester.get("/api/approvals")
    assert_problem(throttled, 429, "TOO_MANY_REQUESTS")
    assert 1 <= int(throttled.headers["Retry-After"]) <= 60
    assert_problem(requester.post("/api/approvals", {}), 429, "TOO_MANY_REQUESTS")
    assert log_end() == before
    assert admin.get("/api/approvals").status_code == 200  # other callers are not affected


def test_a_refused_caller_is_told_what_is_left_of_its_budget(admin: Api) -> None:
    requester = account(admin, "rita", ["requester"])
    quota = f'"refusals";q={BUDGET};w=60'
    for left in range(BUDGET - 1, -1, -1):
        refused = requester.post("/api/accounts", {"id": "x", "name": "x", "roles": []})
        assert_problem(refused, 403, "FORBIDDEN")
        assert refused.headers["RateLimit-Policy"] == quota
        remaining = re.fullmatch(r'"refusals";r=(\d+);t=(\d+)', refused.headers["RateLimit"])
        assert remaining is not None, refused.headers["RateLimit"]
        assert int(remaining[1]) == left
        assert 0 <= int(remaining[2]) <= 60
    throttled = requester.get("/api/approvals")
    assert_problem(throttled, 429, "TOO_MANY_REQUESTS")
    assert throttled.headers["RateLimit-Policy"] == quota
    assert throttled.headers["RateLimit"].startswith('"refusals";r=0;t=')
    served = admin.get("/api/accounts")
    assert "RateLimit" not in served.headers  # an answer that costs nothing says nothing


def test_answers_that_succeed_cost_nothing(admin: Api) -> None:
    for _ in range(BUDGET * 3):
        assert admin.get("/api/accounts").status_code == 200


def test_callers_without_a_token_spend_their_addresss_budget(client: FlaskClient) -> None:
    for _ in range(BUDGET):
        assert_problem(client.get("/api/accounts"), 401, "UNAUTHENTICATED")
    assert_problem(client.get("/api/accounts"), 429, "TOO_MANY_REQUESTS")


def made_up_methods(count: int) -> list[str]:
    """`count` methods no one defined, from 3 to 4,000 letters long."""
    rng = random.Random(32)
    made_up = (
        "".join(rng.choices(string.ascii_uppercase, k=rng.choice((3, 9, 150, 4000))))
        for _ in range(count * 2)
    )
    return [method for method in made_up if method not in KNOWN_METHODS][:count]


def series(client: FlaskClient) -> set[str]:
    """Every series `/metrics` shows: its name and labels."""
    scraped = client.get("/metrics", environ_base=SCRAPER)
    assert scraped.status_code == 200
    samples = (line for line in scraped.text.splitlines() if line and not line.startswith("#"))
    return {sample.rpartition(" ")[0] for sample in samples}


def test_made_up_methods_and_paths_spend_the_budget_and_add_no_series(
    client: FlaskClient,
) -> None:
    series(client)  # its own series are shown from the next scrape on
    assert client.open("/api/x", method="BREW").status_code == 404
    assert client.open("/api/definitions", method="BREW").status_code == 405
    assert client.get("/", environ_overrides=DOUBLED_SLASH).status_code == 404
    assert_problem(client.open("/api/x", method="BREW"), 429, "TOO_MANY_REQUESTS")
    throttled = client.get("/", environ_overrides=DOUBLED_SLASH)  # its `instance` is a URL
    assert (throttled.status_code, throttled.json["code"]) == (429, "TOO_MANY_REQUESTS")  # type: ignore[index]
    before = series(client)
    assert 'method="OTHER"' in "".join(before)

    for method in made_up_methods(500):
        assert_problem(client.open("/api/x", method=method), 429, "TOO_MANY_REQUESTS")
    assert series(client) == before
