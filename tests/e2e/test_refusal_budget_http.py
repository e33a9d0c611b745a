"""A caller refused too often is slowed down, so losing commands cannot grow the log without end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.e2e.helpers import account, assert_problem
from tests.support import Api, FakeClock

BUDGET = 3


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


def test_answers_that_succeed_cost_nothing(admin: Api) -> None:
    for _ in range(BUDGET * 3):
        assert admin.get("/api/accounts").status_code == 200


def test_callers_without_a_token_spend_their_addresss_budget(client: FlaskClient) -> None:
    for _ in range(BUDGET):
        assert_problem(client.get("/api/accounts"), 401, "UNAUTHENTICATED")
    assert_problem(client.get("/api/accounts"), 429, "TOO_MANY_REQUESTS")
