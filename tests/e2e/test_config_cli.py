"""`cronledger config`, and settings checked before any command starts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.processes import CLI, RUN_SECONDS, free_port

PASSWORD_URL = "postgresql://app:hunter2@db.internal:5432/ledger?schema=prod"


def cronledger(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command with these variables (and none of the caller's CRONLEDGER_* settings)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("CRONLEDGER_")}
    return subprocess.run(
        [CLI, *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        check=False,
    )


def test_config_prints_each_setting_its_value_and_source_with_the_password_hidden() -> None:
    done = cronledger("config", CRONLEDGER_DATABASE_URL=PASSWORD_URL, CRONLEDGER_MAX_ATTEMPTS="3")
    assert done.returncode == 0, done.stderr
    assert "hunter2" not in done.stdout + done.stderr
    lines = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()}
    assert lines["CRONLEDGER_DATABASE_URL"] == [
        "postgresql://app:***@db.internal:5432/ledger?schema=prod",
        "(environment)",
    ]
    assert lines["CRONLEDGER_MAX_ATTEMPTS"] == ["3", "(environment)"]
    assert lines["CRONLEDGER_TIMEZONE"] == ["UTC", "(default)"]


def test_config_json_names_unknown_variables_and_their_closest_setting() -> None:
    done = cronledger(
        "config", "--json", CRONLEDGER_DATABASE_URL=PASSWORD_URL, CRONLEDGER_LEASE_SECOND="90"
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    settings = {row["variable"]: row for row in document["settings"]}
    assert settings["CRONLEDGER_DATABASE_URL"]["value"] == (
        "postgresql://app:***@db.internal:5432/ledger?schema=prod"
    )
    assert settings["CRONLEDGER_LEASE_SECONDS"] == {
        "name": "lease_seconds",
        "variable": "CRONLEDGER_LEASE_SECONDS",
        "value": 60.0,
        "source": "default",
    }
    assert document["unknown"] == [
        {"variable": "CRONLEDGER_LEASE_SECOND", "suggestion": "CRONLEDGER_LEASE_SECONDS"}
    ]
    warning = json.loads(done.stderr.splitlines()[0])
    assert (warning["level"], warning["suggestion"]) == ("WARNING", "CRONLEDGER_LEASE_SECONDS")
    assert "hunter2" not in done.stdout + done.stderr


def test_serve_with_an_unknown_zone_refuses_to_start(tmp_path: Path) -> None:
    done = cronledger(
        "serve",
        "--port",
        str(free_port()),
        CRONLEDGER_DATABASE_URL=f"sqlite:///{tmp_path}/never.sqlite",
        CRONLEDGER_TIMEZONE="Mars/Olympus",
    )
    assert done.returncode == 1
    assert "CRONLEDGER_TIMEZONE='Mars/Olympus' is invalid: expected an IANA time zone" in (
        done.stderr
    )
    assert not (tmp_path / "never.sqlite").exists()  # refused before the store was opened


def test_config_refuses_an_out_of_range_setting() -> None:
    done = cronledger("config", CRONLEDGER_WORKER_CONCURRENCY="100000")
    assert done.returncode == 1
    assert "CRONLEDGER_WORKER_CONCURRENCY='100000' is invalid" in done.stderr
