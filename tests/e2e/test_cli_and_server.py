"""The console script as a user runs it: bootstrap, serve, audit timeline."""

from __future__ import annotations

import json
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import request
from tests.processes import CLI, free_port, run_cli, started
from tests.support import DECIDERS, REVIEWER, wait_until

ROOT = Path(__file__).resolve().parents[2]


def test_served_api_answers_with_the_bootstrap_token(server: str, token: str) -> None:
    status, body = request(f"{server}/api/accounts", token)
    assert status == 200
    assert [a["id"] for a in body["items"]] == ["admin", REVIEWER]  # and the suite's reviewer
    assert request(f"{server}/api/accounts")[0] == 401
    status, created = request(
        f"{server}/api/accounts", token, {"id": "ann", "name": "Ann", "roles": ["operator"]}
    )
    assert (status, created["version"]) == (201, 1)


def test_version_is_the_installed_release_of_pyproject() -> None:
    result = subprocess.run(
        [CLI, "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"cronledger {metadata.version('cronledger')}"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert metadata.version("cronledger") == project["version"], "reinstall: make install"


def test_health_names_the_store_and_the_release(server: str, store_url: str) -> None:
    status, body = request(f"{server}/healthz")
    kind = store_url.split(":", 1)[0]
    assert (status, body) == (
        200,
        {"status": "ok", "store": kind, "version": metadata.version("cronledger")},
    )


def test_bootstrap_prints_the_token_alone_on_the_last_line(token: str) -> None:
    assert token.startswith("clt_")
    assert " " not in token


def test_bootstrap_refuses_an_existing_tenant(store_url: str, token: str) -> None:
    again = run_cli(store_url, "bootstrap", "--tenant", "demo", "--admin", "admin")
    assert again.returncode == 1
    assert "tenant demo already exists" in again.stderr


def test_audit_timeline_shows_changes_with_actor_and_time(
    server: str, token: str, store_url: str
) -> None:
    request(f"{server}/api/accounts", token, {"id": "ann", "name": "Ann", "roles": ["operator"]})
    request(f"{server}/api/accounts/ann/deactivate", token, {})
    text = run_cli(store_url, "audit", "timeline", "ann")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert ["Account.Registered" in lines[0], "Account.Deactivated" in lines[1]] == [True, True]
    assert all("by admin" in line for line in lines)
    as_json = json.loads(run_cli(store_url, "audit", "timeline", "ann", "--json").stdout)
    entries = as_json["items"]
    assert [e["type"] for e in entries] == ["Account.Registered", "Account.Deactivated"]
    assert all(e["actor"] == "admin" and e["at"].endswith("Z") for e in entries)
    assert entries[0]["position"] < entries[1]["position"]


def test_audit_timeline_of_an_unknown_id_fails_clearly(store_url: str, token: str) -> None:
    result = run_cli(store_url, "audit", "timeline", "nobody")
    assert result.returncode == 1
    assert "nobody was not found" in result.stderr


def test_a_bad_database_url_is_refused_by_name() -> None:
    result = run_cli("mysql://nowhere/db", "migrate")
    assert result.returncode == 1
    assert "CRONLEDGER_DATABASE_URL" in result.stderr


def test_serve_sweeps_deadlines_by_itself(server: str, token: str) -> None:
    _, definition = request(
        f"{server}/api/definitions",
        token,
        {
            "key": "k",
            "name": "K",
            "external": False,
            "review_window_seconds": 1,
            "reviewers": DECIDERS,
        },
    )
    request(f"{server}/api/definitions/{definition['id']}/publish", token, {})
    status, instance = request(
        f"{server}/api/approvals",
        token,
        {"command_id": "c", "definition_id": definition["id"], "title": "T", "material_version": 1},
    )
    assert status == 201
    wait_until(
        lambda: request(f"{server}/api/approvals/{instance['id']}", token)[1]["state"] == "EXPIRED",
        "expired by the served sweeper",
    )


def test_serve_registers_and_launches_cycles_by_itself(server: str, token: str) -> None:
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

    def succeeded() -> list[Any]:
        runs = request(f"{server}/api/workflows/schedules/{schedule['id']}/runs", token)[1]
        return [run for run in runs["items"] if run["status"] == "SUCCEEDED"]

    launched = wait_until(succeeded, "a cycle launched by the served worker")[0]
    _, instance = request(f"{server}/api/approvals/{launched['instance_id']}", token)
    assert (instance["applicant_id"], instance["origin"]["run_id"]) == ("admin", launched["id"])


@pytest.mark.parametrize("command", ["serve", "worker", "sweeper", "projections"])
def test_sigterm_stops_gracefully(store_url: str, command: str) -> None:
    arguments = ["--port", str(free_port())] if command == "serve" else []
    with started(store_url, command, *arguments) as child:
        child.wait_for(lambda: child.logged("loop started"), "its loop started")
        assert child.stop() == 0, child.describe()
