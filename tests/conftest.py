"""Fixtures: every store-touching test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from flask import Flask
from flask.testing import FlaskClient

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.support import POSTGRES_URL, Api, FakeClock, Opener, fresh_postgres_url
from web import create_app

pytest_plugins = ["tests.log_scan"]  # no secret in any log line of the suite (issue 20, item 8)


def _postgres_problem() -> str | None:
    try:
        with psycopg.connect(POSTGRES_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as error:
        return f"PostgreSQL at {POSTGRES_URL} is unreachable: {error}"
    return None


@pytest.fixture(scope="session")
def postgres_ready() -> None:
    problem = _postgres_problem()
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(problem + " (CI=true: a missing PostgreSQL fails the run)")
    pytest.skip(problem)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty store of each kind."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/cronledger.sqlite"
        return
    request.getfixturevalue("postgres_ready")
    yield from fresh_postgres_url()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def open_with(store_url: str) -> Iterator[Opener]:
    """Services on the test's store, each with its own clock and settings; closed afterwards."""
    opened: list[Services] = []

    def open_one(clock: FakeClock, **settings: Any) -> Services:
        services = open_services(Settings(database_url=store_url, **settings), clock)
        opened.append(services)
        return services

    yield open_one
    for services in opened:
        services.close()


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    opened = open_services(Settings(database_url=store_url), clock)
    yield opened
    opened.close()


@pytest.fixture
def app(services: Services) -> Flask:
    return create_app({"SERVICES": services, "TESTING": True})


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def admin(services: Services, client: FlaskClient) -> Api:
    """The first admin of tenant `acme`."""
    return Api(client, services.directory.bootstrap("acme", "root").token)
