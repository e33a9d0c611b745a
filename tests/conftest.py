"""Fixtures: every store-touching test runs on SQLite and on PostgreSQL. And the suite's own
rules: the `postgresql` and `slow` markers, set here so that `make check` can leave them out,
and on CI no skip but those `SKIPS_ALLOWED_ON_CI` names."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest
from flask import Flask
from flask.testing import FlaskClient

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.support import (
    POSTGRES_URL,
    Api,
    FakeClock,
    Opener,
    SchemaPool,
    add_reviewer,
    fresh_postgres_url,
    needed,
    on_ci,
)
from web import create_app

# No secret in any log line of the suite (issue 20, item 8); the heaviest modules first.
pytest_plugins = ["tests.log_scan", "tests.scheduling"]

# Tests that start processes, servers or browsers, the fault suite and the capacity checks:
# minutes, not seconds. `make check` leaves them out; `make test` runs them.
SLOW_FIXTURES = frozenset({"site", "browser", "chromium_ready", "server", "served", "cluster"})
SLOW_FOLDERS = ("faults",)
POOLS = {"pool_size": 1}  # the tests' services, as their processes (tests.processes.TEST_POOLS)
# A skip on CI hides a missing tool or a test that proves nothing: none is allowed but these,
# each with the reason it may skip there (a part of the reason the skip gives).
SKIPS_ALLOWED_ON_CI: dict[str, str] = {}


def _postgres_problem() -> str | None:
    try:
        with psycopg.connect(POSTGRES_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as error:
        return f"PostgreSQL at {POSTGRES_URL} is unreachable: {error}"
    return None


@pytest.fixture(scope="session")
def postgres_ready() -> None:
    needed(_postgres_problem())


@pytest.fixture(scope="session")
def postgres_schemas(postgres_ready: None) -> Iterator[SchemaPool]:
    pool = SchemaPool(lambda url: open_services(Settings(database_url=url), FakeClock()).close())
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite store as `postgres_schemas` hands out a schema: the tables a migration makes,
    every row deleted. Made once per process; a copy costs a tenth of migrating a new file."""
    path = tmp_path_factory.mktemp("template") / "cronledger.sqlite"
    open_services(Settings(database_url=f"sqlite:///{path}"), FakeClock()).close()
    with closing(sqlite3.connect(path)) as conn, conn:
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        for (table,) in tables:
            conn.execute(f'DELETE FROM "{table}"')  # sqlite_sequence too: ids start again
    leftovers = [suffix for suffix in ("-wal", "-journal") if Path(f"{path}{suffix}").exists()]
    assert not leftovers, f"the template store is not whole without its {leftovers} file"
    return path


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty store of each kind, its tables already made (on PostgreSQL, perhaps not yet):
    on SQLite a copy of `sqlite_template`, on PostgreSQL a schema of `postgres_schemas`."""
    if request.param == "sqlite":
        path = tmp_path / "cronledger.sqlite"
        shutil.copy2(request.getfixturevalue("sqlite_template"), path)  # its mode (0600) too
        yield f"sqlite:///{path}"
        return
    yield from request.getfixturevalue("postgres_schemas").url()


@pytest.fixture(params=["sqlite", "postgresql"])
def bare_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store of each kind nothing has touched: no file, no tables."""
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
        services = open_services(Settings(database_url=store_url, **{**POOLS, **settings}), clock)
        opened.append(services)
        return services

    yield open_one
    for services in opened:
        services.close()


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    opened = open_services(Settings(database_url=store_url, **POOLS), clock)
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


@pytest.fixture
def token(store_url: str) -> str:
    """The admin token `cronledger bootstrap` printed for tenant `demo` (with an operator to
    review what the admin submits and schedules)."""
    from tests.processes import run_cli  # imported after the log scan plugin rewrites asserts

    result = run_cli(store_url, "bootstrap", "--tenant", "demo", "--admin", "admin")
    assert result.returncode == 0, result.stderr
    token = result.stdout.strip().splitlines()[-1]
    add_reviewer(store_url, token)
    return token


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test that runs on PostgreSQL `postgresql`, and each slow one `slow`."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        fixtures = set(getattr(item, "fixturenames", ()))
        if "postgresql" in params.values() or "postgres_ready" in fixtures:
            item.add_marker(pytest.mark.postgresql)
        folder = item.path.parent.name
        if fixtures & SLOW_FIXTURES or folder in SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)


class CiSkips:
    """On CI, every skip that `SKIPS_ALLOWED_ON_CI` does not name fails the session."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.skipped or hasattr(report, "wasxfail"):
            return
        reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
        if not any(allowed in reason for allowed in SKIPS_ALLOWED_ON_CI):
            self.found.append(f"{report.nodeid}: {reason}")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.found:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.found:
            terminalreporter.write_line(
                f"{len(self.found)} test(s) skipped on CI (tests/conftest.py SKIPS_ALLOWED_ON_CI "
                "names the only skips allowed there):",
                red=True,
            )
            for line in self.found:
                terminalreporter.write_line(f"  {line}", red=True)


def pytest_configure(config: pytest.Config) -> None:
    if on_ci() and not hasattr(config, "workerinput"):  # judged where every report arrives
        config.pluginmanager.register(CiSkips(), "ci-skips")
