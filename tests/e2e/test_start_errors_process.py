"""A long-running process that cannot start says why in its log's format (issue 32, item 10):
one JSON line a record on standard error, the reason at ERROR, and exit status 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.processes import environment, run_cli, run_in
from tests.support import POSTGRES_URL

# A store no process can open: PostgreSQL on a port nothing listens on; a SQLite file in a
# directory that cannot be made.
UNREACHABLE = {
    "postgresql": POSTGRES_URL.replace("127.0.0.1:5432", "127.0.0.1:1"),
    "sqlite": "sqlite:////proc/no-such-process/cronledger.sqlite",
}


def logged(stderr: str) -> list[dict[str, Any]]:
    """Every line of standard error, each of which must be a JSON object."""
    return [json.loads(line) for line in stderr.splitlines()]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
@pytest.mark.parametrize("command", ["worker", "serve"])
def test_a_store_that_cannot_be_opened_is_a_json_error_line(kind: str, command: str) -> None:
    done = run_cli(UNREACHABLE[kind], command)
    assert done.returncode == 1, done.stderr
    (error,) = [line for line in logged(done.stderr) if line["level"] == "ERROR"]
    assert error["message"].startswith("cannot start"), error
    assert error["exit_code"] == 1


def test_a_setting_that_is_wrong_is_a_json_error_line(tmp_path: Path) -> None:
    env = {**environment(f"sqlite:///{tmp_path}/cronledger.sqlite"), "CRONLEDGER_TICK_SECONDS": "x"}
    for command in (["tick"], ["web", "--workers", "2"]):
        done = run_in(env, None, *command)
        assert done.returncode == 1, done.stderr
        (error,) = logged(done.stderr)
        assert error["level"] == "ERROR"
        assert error["message"].startswith("cannot start: CRONLEDGER_TICK_SECONDS='x' is invalid")
