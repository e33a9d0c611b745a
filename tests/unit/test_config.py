"""Configuration and store URLs are checked before anything starts."""

from __future__ import annotations

import io
import json
import logging
import re
import sys
from collections.abc import Iterator
from dataclasses import fields

import pytest
from psycopg.conninfo import conninfo_to_dict

from cronledger.config import ConfigError, Settings, effective
from cronledger.logs import configure_logging
from cronledger.persistence.connections import Limits
from cronledger.persistence.store import Store
from web.api import flatten


def test_defaults_follow_the_contract() -> None:
    settings = Settings.from_env({})
    assert settings.database_url == "sqlite:///var/cronledger.sqlite"
    assert (settings.retry_base_seconds, settings.max_attempts) == (30.0, 5)
    assert (settings.catchup_per_schedule, settings.catchup_per_scan) == (20, 10_000)


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


def test_streams_allow_hundreds_per_process_by_setting_and_none_at_zero() -> None:
    defaults = Settings.from_env({})
    limits = (defaults.streams_per_account, defaults.streams_per_tenant)
    assert (*limits, defaults.streams_per_process, defaults.web_workers) == (10, 50, 100, 1)
    many = {f"CRONLEDGER_STREAMS_PER_{of}": "500" for of in ("ACCOUNT", "TENANT", "PROCESS")}
    settings = Settings.from_env(many)
    assert (settings.streams_per_account, settings.streams_per_process) == (500, 500)
    assert Settings.from_env({"CRONLEDGER_STREAMS_PER_PROCESS": "0"}).streams_per_process == 0


def test_sqlite_urls_relative_and_absolute() -> None:
    assert Store.from_url("sqlite:///var/x.sqlite").sqlite_path == "var/x.sqlite"
    assert Store.from_url("sqlite:////tmp/x.sqlite").sqlite_path == "/tmp/x.sqlite"
    env = Store.from_url("sqlite:///var/x.sqlite").eventsourcing_env()
    assert env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite"


def test_postgres_url_maps_onto_the_recorder() -> None:
    limits = Limits.of(Settings(pool_size=3, pool_overflow=1, lock_timeout_seconds=2.5), "tick")
    store = Store.from_url("postgresql://app:s%40cret@db.internal:6543/ledger?schema=prod", limits)
    env = store.eventsourcing_env()
    assert env["PERSISTENCE_MODULE"] == "cronledger.persistence.connections:NamedPostgresFactory"
    assert (env["POSTGRES_POOL_SIZE"], env["POSTGRES_MAX_OVERFLOW"]) == ("3", "1")
    assert (env["POSTGRES_CONNECT_TIMEOUT"], env["POSTGRES_LOCK_TIMEOUT"]) == ("2", "3")
    conninfo = conninfo_to_dict(env["POSTGRES_CONNINFO"])
    assert conninfo["application_name"] == "cronledger-tick"
    assert conninfo["options"] == (
        "-c statement_timeout=30000 -c lock_timeout=2500 "
        "-c idle_in_transaction_session_timeout=10000"
    )
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


@pytest.mark.parametrize(
    ("variable", "value", "rule"),
    [
        ("CRONLEDGER_TIMEZONE", "Mars/Olympus", "an IANA time zone name"),
        ("CRONLEDGER_LEASE_SECONDS", "0.001", "from 1 to 86,400"),
        ("CRONLEDGER_SCAN_BUDGET_SECONDS", "inf", "above 0 and at most 3,600"),
        ("CRONLEDGER_TICK_SECONDS", "nan", "from 0.05 to 3,600"),
        ("CRONLEDGER_WORKER_CONCURRENCY", "100000", "from 1 to 1,000"),
        ("CRONLEDGER_STREAMS_PER_PROCESS", "-1", "from 0 to 5,000"),
        ("CRONLEDGER_STREAMS_PER_PROCESS", "5001", "from 0 to 5,000"),
        ("CRONLEDGER_WEB_WORKERS", "0", "from 1 to 64"),
        ("CRONLEDGER_LOG_LEVEL", "loud", "one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
    ],
)
def test_out_of_range_values_are_refused_naming_the_variable_and_the_rule(
    variable: str, value: str, rule: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({variable: value})
    assert str(refused.value).startswith(f"{variable}={value!r} is invalid: expected ")
    assert rule in str(refused.value)


def test_a_database_url_that_does_not_parse_is_refused_without_its_password() -> None:
    url = "postgresql://app:hunter2@db.internal:99999/ledger"
    with pytest.raises(ConfigError, match="CRONLEDGER_DATABASE_URL") as refused:
        Settings.from_env({"CRONLEDGER_DATABASE_URL": url})
    assert "hunter2" not in str(refused.value)


def test_log_level_is_read_in_any_case() -> None:
    assert Settings.from_env({"CRONLEDGER_LOG_LEVEL": "debug"}).log_level == "DEBUG"


def test_an_unknown_variable_is_warned_of_with_the_closest_setting(
    caplog: pytest.LogCaptureFixture,
) -> None:
    environ = {
        "CRONLEDGER_TIMEZOEN": "Asia/Shanghai",
        "CRONLEDGER_TEST_POSTGRES_URL": "postgresql://postgres@127.0.0.1/test",
        "CRONLEDGER_WHATEVER": "1",
    }
    with caplog.at_level(logging.WARNING, logger="cronledger.config"):
        settings = Settings.from_env(environ)
    assert settings.timezone == "UTC"
    assert [r.getMessage() for r in caplog.records] == [
        "unknown variable CRONLEDGER_TIMEZOEN ignored; did you mean CRONLEDGER_TIMEZONE?",
        "unknown variable CRONLEDGER_WHATEVER ignored",
    ]


def test_the_effective_configuration_says_where_each_value_came_from_and_hides_secrets() -> None:
    environ = {
        "CRONLEDGER_DATABASE_URL": "postgresql://app:hunter2@db.internal/ledger",
        "CRONLEDGER_MAX_ATTEMPTS": "3",
    }
    rows = {row.variable: row for row in effective(Settings.from_env(environ), environ)}
    assert len(rows) == len(fields(Settings))
    assert (rows["CRONLEDGER_DATABASE_URL"].value, rows["CRONLEDGER_DATABASE_URL"].source) == (
        "postgresql://app:***@db.internal/ledger",
        "environment",
    )
    assert (rows["CRONLEDGER_MAX_ATTEMPTS"].value, rows["CRONLEDGER_MAX_ATTEMPTS"].source) == (
        3,
        "environment",
    )
    assert (rows["CRONLEDGER_TIMEZONE"].value, rows["CRONLEDGER_TIMEZONE"].source) == (
        "UTC",
        "default",
    )


@pytest.fixture
def root_logging() -> Iterator[None]:
    """The root logger's handlers and level, given back after the test reconfigures them."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:], root.level = handlers, level


def test_log_lines_carry_an_iso_time_with_its_offset_and_the_level_setting_holds(
    root_logging: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = io.StringIO()
    monkeypatch.setattr(sys, "stderr", written)
    configure_logging("WARNING")
    logging.getLogger("cronledger.test").info("below the level")
    logging.getLogger("cronledger.test").warning("at the level")
    [line] = [json.loads(text) for text in written.getvalue().splitlines()]
    assert (line["level"], line["message"]) == ("WARNING", "at the level")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", line["time"])


@pytest.mark.parametrize(
    "url",
    ["http://mail.example.com", "smtp://", "smtp://mail.example.com:70000", "smtp://h?tls=1"],
)
def test_a_bad_smtp_url_is_refused_naming_the_forms_it_takes(url: str) -> None:
    with pytest.raises(ConfigError, match=r"CRONLEDGER_SMTP_URL.*smtps://"):
        Settings.from_env({"CRONLEDGER_SMTP_URL": url})


def test_the_smtp_password_is_never_shown() -> None:
    url = "smtp://mailer:hunter2-pass@mail.example.com:587?starttls=true"
    settings = Settings.from_env({"CRONLEDGER_SMTP_URL": url})
    shown = {e.name: e.value for e in effective(settings, {"CRONLEDGER_SMTP_URL": url})}
    assert shown["smtp_url"] == "smtp://mailer:***@mail.example.com:587?starttls=true"
    assert "hunter2" not in repr(settings)
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({"CRONLEDGER_SMTP_URL": "smtp://mailer:hunter2-pass@h:99999"})
    assert "hunter2" not in str(refused.value)
