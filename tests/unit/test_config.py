"""Configuration and store URLs are checked before anything starts."""

from __future__ import annotations

import pytest

from cronledger.config import ConfigError, Settings
from cronledger.persistence.store import Store
from web.api import flatten


def test_defaults_follow_the_contract() -> None:
    settings = Settings.from_env({})
    assert settings.database_url == "sqlite:///var/cronledger.sqlite"
    assert (settings.retry_base_seconds, settings.max_attempts) == (30.0, 5)
    assert (settings.catchup_per_schedule, settings.catchup_per_scan) == (20, 100)


def test_variables_override_defaults() -> None:
    settings = Settings.from_env({"CRONLEDGER_MAX_ATTEMPTS": "3", "CRONLEDGER_TICK_SECONDS": "0.5"})
    assert (settings.max_attempts, settings.tick_seconds) == (3, 0.5)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("CRONLEDGER_MAX_ATTEMPTS", "many"),
        ("CRONLEDGER_MAX_ATTEMPTS", "0"),
        ("CRONLEDGER_TICK_SECONDS", "-1"),
    ],
)
def test_bad_values_are_refused_by_name(variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        Settings.from_env({variable: value})


def test_sqlite_urls_relative_and_absolute() -> None:
    assert Store.from_url("sqlite:///var/x.sqlite").sqlite_path == "var/x.sqlite"
    assert Store.from_url("sqlite:////tmp/x.sqlite").sqlite_path == "/tmp/x.sqlite"
    env = Store.from_url("sqlite:///var/x.sqlite").eventsourcing_env()
    assert env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite"


def test_postgres_url_maps_onto_the_recorder() -> None:
    store = Store.from_url("postgresql://app:s%40cret@db.internal:6543/ledger?schema=prod")
    env = store.eventsourcing_env()
    assert env["PERSISTENCE_MODULE"] == "eventsourcing.postgres"
    assert (env["POSTGRES_HOST"], env["POSTGRES_PORT"], env["POSTGRES_DBNAME"]) == (
        "db.internal",
        "6543",
        "ledger",
    )
    assert (env["POSTGRES_USER"], env["POSTGRES_PASSWORD"], env["POSTGRES_SCHEMA"]) == (
        "app",
        "s@cret",
        "prod",
    )


@pytest.mark.parametrize(
    "url", ["", "memory://", "sqlite://", "sqlite:///", "mysql://x/y", "postgresql://host"]
)
def test_unusable_urls_are_refused(url: str) -> None:
    with pytest.raises(ConfigError, match="CRONLEDGER_DATABASE_URL"):
        Store.from_url(url)


def test_nested_field_errors_are_flattened_to_paths() -> None:
    nested = {"roles": {0: ["Must be one of: admin."]}, "name": ["Missing data."]}
    assert flatten(nested) == {"roles.0": ["Must be one of: admin."], "name": ["Missing data."]}
