"""Commands that only read the log refuse a store that holds none, and never create one."""

from __future__ import annotations

from pathlib import Path

from cronledger.persistence.store import Store, redacted_url
from tests.processes import run_cli

READ_ONLY = (
    ("audit", "verify"),
    ("audit", "replay"),
    ("audit", "timeline", "root"),
    ("audit", "state", "root", "--at", "2026-10-01T10:00:00Z"),
    ("projections", "rebuild"),
)


def refused(store_url: str, why: str) -> None:
    for command in READ_ONLY:
        result = run_cli(store_url, *command)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert f"no log to read at {redacted_url(store_url)}: {why}" in result.stderr, command
        assert "Traceback" not in result.stderr


def holds_anything(store_url: str) -> bool:
    """Whether the store exists: its SQLite file, or its PostgreSQL schema."""
    store = Store.from_url(store_url)
    if store.kind == "sqlite":
        return Path(store.sqlite_path).exists()
    found = store.query(
        "SELECT 1 FROM information_schema.schemata WHERE schema_name = ?", (store.schema,)
    )
    store.close()
    return bool(found)


def test_a_missing_store_is_refused_and_not_created(bare_store_url: str) -> None:
    sqlite = bare_store_url.startswith("sqlite")
    refused(bare_store_url, "the file does not exist" if sqlite else "it has no events table")
    assert not holds_anything(bare_store_url)


def test_a_missing_sqlite_folder_is_not_created(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/var/cronledger.sqlite"
    refused(url, "the file does not exist")
    assert not (tmp_path / "var").exists()


def test_a_store_without_events_is_refused(store_url: str) -> None:
    assert run_cli(store_url, "migrate").returncode == 0
    refused(store_url, "its log has no events")
