"""`cronledger backup PATH` while the service runs under load (issue 20, item 9).

SQLite: the online backup API, taken while `serve` registers and launches a cycle every second
and a thread writes over HTTP; the copy, moved elsewhere, passes `audit verify` and `audit
replay` and holds every command answered before the backup started. PostgreSQL: the command
says to use pg_dump and prints the documented command (exit code 2); that command is run under
the same load, its dump restored with pg_restore and checked the same way. A replay that
cannot reach the store (a server out of connections, say) raises the store's error: it never
reports that as an event it cannot apply.
"""

from __future__ import annotations

import shlex
import sqlite3
import stat
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from cronledger.application.services import Services, open_existing, open_services
from cronledger.config import Settings
from cronledger.persistence.connections import store_unavailable
from domain.errors import DomainError
from tests.e2e.helpers import answers, request
from tests.processes import Child, free_port, run_cli, started
from tests.support import DECIDERS, POSTGRES_URL, FakeClock, wait_until

ROOT = Path(__file__).resolve().parents[2]


class Writer:
    """Creates accounts over HTTP until stopped; `acknowledged` are those answered 201."""

    def __init__(self, server: str, token: str) -> None:
        self.server, self.token = server, token
        self.acknowledged: list[str] = []
        self.refused: list[tuple[int, Any]] = []
        self.unanswered: list[str] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._write, daemon=True)

    def _write(self) -> None:
        number = 0
        while not self.stopping.is_set():
            number += 1
            account_id = f"user-{number}"
            body = {"id": account_id, "name": f"User {number}", "roles": ["requester"]}
            try:
                status, answer = request(f"{self.server}/api/accounts", self.token, body)
            except OSError as error:  # no answer in time on a busy machine: not acknowledged
                self.unanswered.append(str(error))
                continue
            if status == 201:
                self.acknowledged.append(account_id)
            else:
                self.refused.append((status, answer))

    def __enter__(self) -> Writer:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopping.set()
        self.thread.join(30)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/live/cronledger.sqlite"


@pytest.fixture
def served(store_url: str, token: str) -> Iterator[tuple[str, Child]]:
    """`cronledger serve` on the store: its URL, and the process (to stop it early)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with started(store_url, "serve", "--port", str(port)) as child:
        child.wait_for(lambda: answers(f"{base}/healthz"), "answering /healthz")
        yield base, child


@contextmanager
def restored_elsewhere(store_url: str, target: Path, tmp_path: Path) -> Iterator[str]:
    """The URL of the backup at `target` restored somewhere else: the file moved to another
    folder, or the dump restored into a new database (dropped afterwards)."""
    if store_url.startswith("sqlite"):
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        yield f"sqlite:///{target.rename(elsewhere / 'restored.sqlite')}"
        return
    parts = urlsplit(store_url)
    database = f"clt_restored_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    try:
        restored_url = urlunsplit(parts._replace(path=f"/{database}"))
        target_url = urlunsplit(parts._replace(path=f"/{database}", query=""))
        with psycopg.connect(target_url, autocommit=True) as conn:  # as docs/operations.md says
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public")
        restore = subprocess.run(
            [
                "pg_restore",
                "--no-owner",
                f"--dbname={target_url}",
                str(target),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert restore.returncode == 0, restore.stderr
        yield restored_url
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def take_backup(store_url: str, target: Path) -> None:
    """`cronledger backup TARGET`; on PostgreSQL, the pg_dump command it prints, run."""
    answered = run_cli(store_url, "backup", str(target))
    if store_url.startswith("sqlite"):
        assert answered.returncode == 0, answered.stderr
        assert f"backup written to {target}" in answered.stdout
        return
    assert answered.returncode == 2, answered.stderr
    target.parent.mkdir(mode=0o700)
    dumped = subprocess.run(
        shlex.split(answered.stdout.strip()),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert dumped.returncode == 0, dumped.stderr


def every_second(server: str, token: str) -> str:
    """A published definition and a schedule firing every second; the schedule's id."""
    _, definition = request(
        f"{server}/api/definitions",
        token,
        {
            "key": "k",
            "name": "K",
            "external": False,
            "review_window_seconds": 600,
            "reviewers": DECIDERS,
        },
    )
    request(f"{server}/api/definitions/{definition['id']}/publish", token, {})
    status, schedule = request(
        f"{server}/api/workflows/schedules",
        token,
        {
            "name": "every second",
            "definition_id": definition["id"],
            "trigger": {"kind": "cron", "expression": "* * * * * *"},
            "initiator_id": "admin",
            "enabled": True,
        },
    )
    assert status == 201, schedule
    return str(schedule["id"])


def test_a_backup_taken_under_load_is_whole_and_verifies(
    store_url: str, served: tuple[str, Child], token: str, tmp_path: Path
) -> None:
    server, child = served
    schedule_id = every_second(server, token)

    def launched() -> list[Any]:
        runs = request(f"{server}/api/workflows/schedules/{schedule_id}/runs", token)[1]
        return [run for run in runs["items"] if run["status"] == "SUCCEEDED"]

    target = tmp_path / "backups" / "copy.backup"
    with Writer(server, token) as writer:
        wait_until(lambda: len(writer.acknowledged) >= 5, "accounts written over HTTP")
        wait_until(launched, "a cycle launched by the served worker")
        before = list(writer.acknowledged)  # answered 201 before the backup started
        take_backup(store_url, target)
        wait_until(
            lambda: len(writer.acknowledged) > len(before) + 2, "writes going on after the backup"
        )
    assert not writer.refused, writer.refused[:3]
    # Its work is done: its connections go back to a PostgreSQL server that other suites share
    # (max_connections), before the copy is restored and checked.
    assert child.stop() == 0, child.describe()
    if store_url.startswith("sqlite"):
        assert stat.S_IMODE(target.stat().st_mode) == 0o600
        assert [p.name for p in target.parent.iterdir()] == ["copy.backup"]  # nothing beside

    with restored_elsewhere(store_url, target, tmp_path) as restored_url:
        verified = run_cli(restored_url, "audit", "verify")
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert "the log matches its hash chain" in verified.stdout
        replayed = run_cli(restored_url, "audit", "replay")
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert "no difference" in replayed.stdout
        assert missing_accounts(restored_url, before) == []


def missing_accounts(url: str, account_ids: list[str]) -> list[str]:
    """Those of `account_ids` that tenant `demo` of the store at `url` does not have."""
    services = open_existing(Settings(database_url=url), FakeClock())
    try:
        tenant = services.directory.tenants()["demo"]
        missing = []
        for account_id in account_ids:
            try:
                services.directory.account(tenant, account_id)
            except DomainError:
                missing.append(account_id)
        return missing
    finally:
        services.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def unreachable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Unreachable]:
    """Services whose store stops answering when `take_away` is called (SQLite: another
    writer holds the file; PostgreSQL: the proxy refuses and cuts every connection)."""
    path = tmp_path / "cronledger.sqlite"
    sqlite = request.param == "sqlite"
    proxied = None if sqlite else request.getfixturevalue("proxied")
    url = f"sqlite:///{path}" if proxied is None else proxied.url
    services = open_services(Settings(database_url=url, sqlite_busy_timeout_seconds=1), FakeClock())
    holder = sqlite3.connect(path, isolation_level=None) if sqlite else None

    def take_away() -> None:
        if holder is not None:
            holder.execute("BEGIN EXCLUSIVE")
        if proxied is not None:
            proxied.proxy.refuse()
            proxied.proxy.cut()

    try:
        yield Unreachable(services, take_away)
    finally:
        if holder is not None:
            holder.close()
        services.close()


@dataclass(frozen=True)
class Unreachable:
    """Services on a store, and what takes the store away from them."""

    services: Services
    take_away: Callable[[], None]


def test_a_replay_that_cannot_reach_the_store_does_not_call_the_log_damaged(
    unreachable: Unreachable,
) -> None:
    services = unreachable.services
    services.directory.bootstrap("acme", "root")
    with services.ledger.projections_deferred():  # so the replay has read models to bring up
        services.directory.bootstrap("globex", "boss")
    unreachable.take_away()
    error = raised_by(lambda: services.audit.replay(lambda _: None))
    assert store_unavailable(error), error


def raised_by(action: Callable[[], object]) -> Exception:
    """What `action` raised; the test fails if it answered instead."""
    try:
        answered = action()
    except Exception as error:  # whatever the store raised: the caller checks it
        return error
    pytest.fail(f"it answered {answered!r}, where the store did not answer")


def test_a_backup_never_replaces_a_file(sqlite_url: str, tmp_path: Path) -> None:
    assert run_cli(sqlite_url, "migrate").returncode == 0
    target = tmp_path / "taken.sqlite"
    target.write_text("keep me")
    refused = run_cli(sqlite_url, "backup", str(target))
    assert refused.returncode == 2
    assert "exists already" in refused.stderr
    assert target.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live", "taken.sqlite"]


def test_a_backup_of_no_store_is_refused(tmp_path: Path) -> None:
    refused = run_cli(f"sqlite:///{tmp_path}/none.sqlite", "backup", str(tmp_path / "b.sqlite"))
    assert refused.returncode == 2
    assert "no SQLite store" in refused.stderr
    assert list(tmp_path.iterdir()) == []


def test_postgresql_is_backed_up_with_the_documented_pg_dump_command(tmp_path: Path) -> None:
    url = "postgresql://bob:s3cret-pw@db.example:6543/ledger?schema=tenant_a"
    answered = run_cli(url, "backup", str(tmp_path / "cronledger.dump"))  # connects nowhere
    assert answered.returncode == 2
    assert "backed up with pg_dump" in answered.stderr
    assert answered.stdout.strip() == (
        f"pg_dump --format=custom --file={tmp_path / 'cronledger.dump'} --host=db.example "
        "--port=6543 --username=bob --schema=tenant_a ledger"
    )
    assert "s3cret-pw" not in answered.stdout + answered.stderr
    assert list(tmp_path.iterdir()) == []
    public = run_cli("postgresql://bob@db.example/ledger", "backup", "x.dump")
    assert "--schema" not in public.stdout
    operations = (ROOT / "docs" / "operations.md").read_text()
    assert "`pg_dump --format=custom --file=cronledger.dump --host=" in operations
    assert "`cronledger backup PATH`" in operations
