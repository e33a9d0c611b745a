"""The console script as a user runs it: bootstrap, serve, audit timeline."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CLI = str(Path(sys.executable).parent / "cronledger")


def run_cli(store_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CRONLEDGER_DATABASE_URL": store_url}
    return subprocess.run(
        [CLI, *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def killed_mid_work(store_url: str, command: str, seconds: float, **env: str) -> None:
    """Start `cronledger COMMAND`, let its loop work for `seconds`, then SIGKILL it."""
    environ = {**os.environ, "CRONLEDGER_DATABASE_URL": store_url, **env}
    process = subprocess.Popen([CLI, command], env=environ, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    while "loop started" not in process.stderr.readline():
        pass
    time.sleep(seconds)
    process.send_signal(signal.SIGKILL)
    process.wait(10)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def request(url: str, token: str | None = None, body: Any = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture
def token(store_url: str) -> str:
    result = run_cli(store_url, "bootstrap", "--tenant", "demo", "--admin", "admin")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


@pytest.fixture
def server(store_url: str, token: str) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "CRONLEDGER_DATABASE_URL": store_url}
    process = subprocess.Popen(
        [CLI, "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                request(f"{base}/healthz")
                break
            except OSError:
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(10)


def test_served_api_answers_with_the_bootstrap_token(server: str, token: str) -> None:
    status, body = request(f"{server}/api/accounts", token)
    assert status == 200
    assert [a["id"] for a in body["items"]] == ["admin"]
    assert request(f"{server}/api/accounts")[0] == 401
    status, created = request(
        f"{server}/api/accounts", token, {"id": "ann", "name": "Ann", "roles": ["operator"]}
    )
    assert (status, created["version"]) == (201, 1)


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
        {"key": "k", "name": "K", "external": False, "review_window_seconds": 1},
    )
    request(f"{server}/api/definitions/{definition['id']}/publish", token, {})
    status, instance = request(
        f"{server}/api/approvals",
        token,
        {"command_id": "c", "definition_id": definition["id"], "title": "T", "material_version": 1},
    )
    assert status == 201
    state = instance["state"]
    for _ in range(100):
        state = request(f"{server}/api/approvals/{instance['id']}", token)[1]["state"]
        if state == "EXPIRED":
            break
        time.sleep(0.1)
    assert state == "EXPIRED"


def test_serve_registers_and_launches_cycles_by_itself(server: str, token: str) -> None:
    _, definition = request(
        f"{server}/api/definitions",
        token,
        {"key": "k", "name": "K", "external": False, "review_window_seconds": 600},
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
    runs: list[Any] = []
    for _ in range(100):
        runs = request(f"{server}/api/workflows/schedules/{schedule['id']}/runs", token)[1]["items"]
        if any(run["status"] == "SUCCEEDED" for run in runs):
            break
        time.sleep(0.1)
    launched = next(run for run in runs if run["status"] == "SUCCEEDED")
    _, instance = request(f"{server}/api/approvals/{launched['instance_id']}", token)
    assert (instance["applicant_id"], instance["origin"]["run_id"]) == ("admin", launched["id"])


@pytest.mark.parametrize("command", ["serve", "worker", "sweeper", "projections"])
def test_sigterm_stops_gracefully(store_url: str, command: str) -> None:
    env = {**os.environ, "CRONLEDGER_DATABASE_URL": store_url}
    arguments = ["--port", str(free_port())] if command == "serve" else []
    process = subprocess.Popen(
        [CLI, command, *arguments], env=env, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 30
    assert process.stderr is not None
    while time.monotonic() < deadline and "loop started" not in process.stderr.readline():
        pass
    process.terminate()
    assert process.wait(15) == 0
