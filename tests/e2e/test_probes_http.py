"""`/livez`, `/readyz` and `/healthz`: what they tell an orchestrator, on both stores."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from flask.testing import FlaskClient

from cronledger.application.services import Services
from cronledger.health import (
    DRAINING,
    MIGRATING,
    READY,
    REBUILDING,
    STARTING,
    STOPPED,
    Health,
)
from domain.directory import account_uuid
from tests.e2e.helpers import assert_problem
from tests.support import POSTGRES_URL, Api, principal_of, wait_until
from tick.loops import Loop


class Fatal(BaseException):
    """What no loop catches: its thread ends."""


@contextmanager
def store_away(services: Services) -> Iterator[None]:
    """The store unreachable (its file moved, or its schema renamed), then back."""
    store = services.store
    if store.kind == "sqlite":
        os.rename(store.sqlite_path, store.sqlite_path + ".away")
        try:
            yield
        finally:
            os.rename(store.sqlite_path + ".away", store.sqlite_path)
        return
    rename = 'ALTER SCHEMA "{}" RENAME TO "{}"'
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(rename.format(store.schema, store.schema + "_away"))
        try:
            yield
        finally:
            conn.execute(rename.format(store.schema + "_away", store.schema))


def test_liveness_lists_the_loops_beating(client: FlaskClient, services: Services) -> None:
    loop = Loop("sweeper", 0.05, lambda: None, health=services.health)
    thread = loop.start()
    try:
        wait_until(lambda: services.health.loop_names() == ["sweeper"], "the loop registered")
        assert client.get("/livez").json == {"status": "ok", "phase": "ready", "loops": ["sweeper"]}
    finally:
        loop.stop.set()
        thread.join()


def test_liveness_is_503_naming_a_loop_that_died(client: FlaskClient, services: Services) -> None:
    def explode() -> None:
        raise Fatal("the loop's thread ends")

    healthy = Loop("sweeper", 0.05, lambda: None, health=services.health)
    doomed = Loop("worker", 0.05, explode, health=services.health)
    healthy_thread = healthy.start()
    threading.excepthook, hook = (lambda args: None), threading.excepthook  # no trace printed
    try:
        doomed_thread = doomed.start()
        wait_until(lambda: not doomed_thread.is_alive(), "the worker loop ended")
        body = assert_problem(client.get("/livez"), 503, "UNAVAILABLE")
        assert "worker" in body["detail"]
        assert "sweeper" not in body["detail"]
    finally:
        threading.excepthook = hook
        healthy.stop.set()
        healthy_thread.join()


def test_a_failing_iteration_is_counted_and_the_loop_lives_on(services: Services) -> None:
    def fail() -> None:
        raise RuntimeError("the store went away")

    loop = Loop("tick", 0.01, fail, health=services.health)
    thread = loop.start()
    try:
        wait_until(lambda: failures(services, "tick") >= 2, "two failures counted")
        assert services.health.dead_loops() == []
    finally:
        loop.stop.set()
        thread.join()


def failures(services: Services, name: str) -> int:
    """The loop's failures so far; 0 before its thread has registered it."""
    state = services.health.loops.get(name)
    return 0 if state is None else state.failures


def test_a_loop_that_misses_its_heartbeat_is_dead() -> None:
    now = [0.0]
    health = Health(monotonic=lambda: now[0])
    health.register("projections", 1.0)
    now[0] = 59.0
    assert health.dead_loops() == []
    now[0] = 61.0  # a minute without a beat (and more than three intervals)
    assert health.dead_loops() == ["projections"]
    health.beat("projections")
    assert health.dead_loops() == []


def test_readiness_is_503_while_the_store_is_away_and_200_after(
    client: FlaskClient, services: Services
) -> None:
    assert client.get("/readyz").status_code == 200
    with store_away(services):
        for path in ("/readyz", "/healthz"):
            body = assert_problem(client.get(path), 503, "UNAVAILABLE")
            assert f"the {services.store.kind} store is unreachable" in body["detail"]
        assert client.get("/livez").status_code == 200  # liveness never asks the store
    assert client.get("/readyz").json == client.get("/healthz").json
    assert client.get("/readyz").json["status"] == "ok"


def test_readiness_waits_at_most_a_second_for_a_store_that_hangs(
    client: FlaskClient, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = threading.Event()
    monkeypatch.setattr(services.store, "ping", lambda *args: answer.wait(30))
    try:
        body = assert_problem(client.get("/readyz"), 503, "UNAVAILABLE")
        assert body["detail"] == f"the {services.store.kind} store did not answer within 1 s"
        assert_problem(client.get("/readyz"), 503, "UNAVAILABLE")  # the same query, still
    finally:
        answer.set()
    wait_until(lambda: client.get("/readyz").status_code == 200, "ready again")


@pytest.mark.parametrize(
    ("phase", "detail", "said"),
    [
        (MIGRATING, "waiting for the migration lock", "migrating: waiting for the migration lock"),
        (REBUILDING, "runs: 40%", "rebuilding: runs: 40%"),
        (DRAINING, "shutting down", "draining: shutting down"),
        (
            STOPPED,
            "the loops and the server have stopped; exiting",
            "stopped: the loops and the server have stopped; exiting",
        ),
    ],
)
def test_readiness_says_what_the_process_waits_for(
    client: FlaskClient, services: Services, phase: str, detail: str, said: str
) -> None:
    services.health.enter(phase, detail)
    body = assert_problem(client.get("/readyz"), 503, "UNAVAILABLE")
    assert body["detail"] == f"not ready: {said}"
    assert client.get("/livez").status_code == 200
    services.health.enter(READY)
    assert client.get("/readyz").status_code == 200


def test_a_probe_server_says_each_phase_of_a_process_from_its_start_to_its_exit(
    services: Services,
) -> None:
    """What `--metrics-port` answers: starting while the store opens, starting still once it
    is open but nothing serves yet (never "not ready: ready"), ready, draining, stopped; and
    alive all along."""
    from cronledger.application.metrics import registry_for
    from web.probes import attach_probes, probe_app

    health = services.health  # as `running` shares it with the services it opens
    probes = probe_app(health).test_client()
    asked = []
    for phase, detail, attach in (
        (STARTING, "opening the store", False),  # a process just started
        (READY, "", False),  # the store open, the server or loop not started yet
        (READY, "", True),  # serving
        (DRAINING, "shutting down", True),
        (STOPPED, "the loops and the server have stopped; exiting", True),
    ):
        health.enter(phase, detail)
        if attach:
            attach_probes(probes.application, services, registry_for(services))
        ready, live = probes.get("/readyz"), probes.get("/livez")
        assert live.status_code == 200
        asked.append((ready.status_code, ready.json.get("detail"), live.json["phase"]))
    assert asked == [
        (503, "not ready: starting: opening the store", "starting"),
        (503, "not ready: starting: the store is open; the process does not serve yet", "starting"),
        (200, None, "ready"),
        (503, "not ready: draining: shutting down", "draining"),
        (503, "not ready: stopped: the loops and the server have stopped; exiting", "stopped"),
    ]


def test_a_stopping_process_is_alive_whatever_its_loops(
    client: FlaskClient, services: Services
) -> None:
    """A loop that ends because the process stops is no death: liveness stays 200 (an
    orchestrator must not restart a process that is exiting by itself)."""
    loop = Loop("worker", 0.05, lambda: None, health=services.health)
    thread = loop.start()
    wait_until(lambda: services.health.loop_names() == ["worker"], "the loop registered")
    services.health.enter(DRAINING, "shutting down")
    loop.stop.set()
    thread.join()
    services.health.enter(STOPPED, "the loops and the server have stopped; exiting")
    assert client.get("/livez").json == {"status": "ok", "phase": "stopped", "loops": ["worker"]}


def test_lists_and_single_reads_wait_out_a_rebuild_of_the_read_models(
    services: Services, admin: Api
) -> None:
    """Both read the read models: while an upgrade rebuilds them, 503 rather than a read of
    tables the rebuild has not swapped in yet; the log's own timelines still answer."""
    services.health.enter(REBUILDING, "rebuilding runs: 40%")
    for path in ("/api/accounts", "/api/accounts/root"):
        assert_problem(admin.get(path), 503, "UNAVAILABLE")
    tenant_id = principal_of(services, admin).tenant_id
    timeline = admin.get(f"/api/audit/timeline/{account_uuid(tenant_id, 'root')}")
    assert timeline.status_code == 200
    services.health.enter(READY)
    assert admin.get("/api/accounts/root").status_code == 200
