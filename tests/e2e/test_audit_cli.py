"""The auditor's commands on a store the served service produced, and a killed projector."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cronledger.application.cycles import Ticker
from cronledger.application.services import open_services
from cronledger.config import Settings
from cronledger.persistence.ledger import Ledger
from cronledger.persistence.store import Store
from domain.schedules import Schedule
from projections.catalog import all_projections
from projections.maintenance import replay
from tests.e2e.helpers import request
from tests.processes import killed_mid_work, run_cli
from tests.support import DECIDERS, FakeClock, wait_until

EVERY_SECOND = {"kind": "cron", "expression": "* * * * * *"}


def served_activity(base: str, bearer: str) -> str:
    """Schedules firing every second, launched by the served worker; a run id once one exists."""
    _, definition = request(
        f"{base}/api/definitions",
        bearer,
        {
            "key": "k",
            "name": "K",
            "external": False,
            "review_window_seconds": 600,
            "reviewers": DECIDERS,
        },
    )
    request(f"{base}/api/definitions/{definition['id']}/publish", bearer, {})
    body = {
        "definition_id": definition["id"],
        "trigger": EVERY_SECOND,
        "initiator_id": "admin",
        "overlap_policy": "allow",  # every cycle launches, while the earlier ones wait for review
    }
    _, schedule = request(
        f"{base}/api/workflows/schedules", bearer, {**body, "name": "s", "enabled": True}
    )

    def two_succeeded() -> list[Any]:
        runs = request(f"{base}/api/workflows/schedules/{schedule['id']}/runs", bearer)[1]
        done = [r for r in runs["items"] if r["status"] == "SUCCEEDED"]
        return done if len(done) >= 2 else []

    return str(wait_until(two_succeeded, "two cycles launched by the served worker")[0]["id"])


def execute(store: Store, statement: str, params: tuple[Any, ...]) -> None:
    if store.kind == "postgresql":
        statement = statement.replace("?", "%s")
    with store.connect() as conn:
        conn.execute(statement, params)


def events_table(store: Store) -> str:
    """The events table, as the store's eventsourcing recorder names it."""
    ledger = Ledger(store, FakeClock())
    try:
        return ledger.events_table
    finally:
        ledger.close()


def test_replay_verify_rebuild_and_state_on_a_served_store(
    store_url: str, server: str, token: str
) -> None:
    run_id = served_activity(server, token)
    store = Store.from_url(store_url)

    clean = run_cli(store_url, "audit", "replay", "--json")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert json.loads(clean.stdout) == {"differences": []}
    assert run_cli(store_url, "audit", "verify").returncode == 0

    execute(store, "UPDATE runs SET title = ? WHERE id = ?", ("forged", run_id))
    altered = run_cli(store_url, "audit", "replay")
    assert altered.returncode == 1
    assert "runs: only in the live table" in altered.stdout
    assert "forged" in altered.stdout

    rebuilt = run_cli(store_url, "projections", "rebuild", "runs")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "events" in rebuilt.stderr  # the progress bar
    assert run_cli(store_url, "audit", "replay").returncode == 0

    events = events_table(store)
    position = store.query(f"SELECT MIN({store.position_column}) FROM {events}")[0][0]
    execute(
        store,
        f"UPDATE {events} SET topic = ? WHERE {store.position_column} = ?",
        ("domain.directory:Tenant.Forged", position),
    )
    broken = run_cli(store_url, "audit", "verify", "--json")
    assert broken.returncode == 1
    assert json.loads(broken.stdout)["break"]["position"] == position

    at = (datetime.now(UTC) + timedelta(seconds=5)).isoformat()
    state = run_cli(store_url, "audit", "state", run_id, "--at", at, "--json")
    assert state.returncode == 0, state.stderr
    assert json.loads(state.stdout)["state"]["status"] == "SUCCEEDED"
    naive = run_cli(store_url, "audit", "state", run_id, "--at", "2026-10-01T10:00:00")
    assert naive.returncode == 2
    assert "needs an offset" in naive.stderr
    store.close()


@pytest.mark.slow
def test_a_killed_projector_resumes_to_what_a_rebuild_gives(store_url: str) -> None:
    clock = FakeClock(datetime(2026, 10, 1, tzinfo=UTC))
    services = open_services(Settings(database_url=store_url, catchup_per_scan=100_000), clock)
    root = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    assert root is not None
    body = {
        "name": "every minute",
        "definition_id": "none",
        "trigger": {"kind": "cron", "expression": "* * * * *"},
        "timezone": "UTC",
        "initiator_id": "root",
    }
    with services.ledger.projections_deferred():
        schedules = [services.schedules.settings_from({**body, "name": f"s{n}"}) for n in range(20)]
        for settings in schedules:
            services.ledger.save(Schedule.create(root.tenant_id, settings, True, clock.now, "root"))
        clock.advance(6 * 3600)
        while Ticker.of(services).scan().registered:
            pass
    with services.store.connect() as conn:  # the read models start again from zero
        for table in (t for p in all_projections("UTC") for t in p.tables):
            conn.execute(f"DELETE FROM {table}")
        conn.execute("UPDATE projection_positions SET position = 0")
    killed_mid_work(
        store_url,
        "projections",
        lambda: max(services.projector.positions().values()) > 0,
        "it projected a first batch",
    )
    assert services.projector.lag() > 0, "the projector finished before it was killed"
    assert max(services.projector.positions().values()) > 0, "it was killed before it began"
    services.projector.catch_up()
    assert replay(services.ledger, all_projections("UTC"), lambda _: None) == []
    assert services.store.query("SELECT COUNT(*) FROM runs")[0][0] == 20 * 360
    services.close()
