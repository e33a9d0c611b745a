"""`/metrics` an on-call alerts on (issue 16): scrapes without side effects, and every figure
deploy/alerts.yml uses."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import psycopg
import pytest
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from cronledger.application.cycles import Ticker
from cronledger.application.services import Services
from cronledger.version import installed_version
from tests.e2e.helpers import samples
from tests.support import T0, WAIT_SECONDS, Api, FakeClock, Opener, World
from tests.two_commits import TwoCommitWorker
from tests.unit.test_alert_rules import rules
from tick.loops import Loop
from web import create_app

EVERY_MINUTE = {"kind": "cron", "expression": "* * * * *"}
METRIC = re.compile(r"\b(?:cronledger|process|python)_[a-z0-9_]+\b")
BUCKET = re.compile(r'\b([a-z0-9_]+)_bucket\{le=~"([^"]+)"\}')
SUFFIXES = ("_bucket", "_count", "_sum", "_total", "_created", "_info")


def scrape(client: FlaskClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    return samples(response.get_data(as_text=True))


def lag_of(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], projection: str) -> float:
    return found[("cronledger_projection_lag_events", (("projection", projection),))]


@contextmanager
def projector_held(services: Services) -> Iterator[None]:
    """Another thread holds the projector as a catch-up does: its lock, and the positions' row
    lock in an open transaction (PostgreSQL `FOR UPDATE`, SQLite `BEGIN IMMEDIATE`)."""
    projector = services.projector
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with projector._lock, projector._sql() as sql, sql.transaction():
            projector._positions(sql, lock=True)
            held.set()
            release.wait()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(WAIT_SECONDS), "the projector's lock was never taken"
    try:
        yield
    finally:
        release.set()
        holder.join()


def test_a_scrape_answers_at_once_while_the_projector_is_held_and_shows_the_true_lag(
    open_with: Opener,
) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock), clock)
    services = world.services
    client = create_app({"SERVICES": services, "TESTING": True}).test_client()
    assert lag_of(scrape(client), "runs") == 0
    applied = services.projector.positions()["runs"]
    with services.ledger.projections_deferred():  # written, not projected
        world.run_now("r1")
        world.run_now("r2")
    head = services.ledger.recorder.max_notification_id()
    assert head is not None
    clock.advance(services.settings.metrics_cache_seconds)

    with projector_held(services), ThreadPoolExecutor(1) as pool:
        # A scrape that waited for the projector would never answer while it is held.
        found = pool.submit(scrape, client).result(timeout=WAIT_SECONDS)

    assert lag_of(found, "runs") == head - applied > 0
    assert services.projector.positions()["runs"] == applied  # the scrape projected nothing


def test_requests_are_counted_by_route_template_never_by_raw_path(
    services: Services, client: FlaskClient, admin: Api
) -> None:
    assert admin.get("/api/accounts/root").status_code == 200
    assert admin.get("/api/accounts/nobody").status_code == 404
    assert client.get("/no/such/path").status_code == 404

    found = scrape(client)

    route = "/api/accounts/<account_id>"
    counted = {
        (dict(labels)["route"], dict(labels)["status"]): value
        for (name, labels), value in found.items()
        if name == "cronledger_http_requests_total" and dict(labels)["method"] == "GET"
    }
    assert counted[(route, "200")] == counted[(route, "404")] == 1
    assert counted[("unmatched", "404")] == 1
    assert not any("root" in r or "nobody" in r or "no/such" in r for r, _ in counted)
    timed = (
        "cronledger_http_request_duration_seconds_count",
        (("method", "GET"), ("route", route)),
    )
    assert found[timed] == 2


def test_the_build_and_the_process_are_described(client: FlaskClient) -> None:
    found = scrape(client)

    assert found[("cronledger_build_info", (("version", installed_version()),))] == 1
    names = {name for name, _ in found}
    assert {"process_cpu_seconds_total", "python_info", "python_gc_collections_total"} <= names
    assert found[("cronledger_ready", ())] == 1


def test_a_loop_that_failed_on_the_store_shows_its_failure_and_its_end(
    services: Services, client: FlaskClient
) -> None:
    loop = Loop(
        "tick",
        60.0,
        lambda: None,
        health=services.health,
        on_failure=services.meters.database_error,
    )

    def fail_once() -> None:
        loop.stop.set()  # one iteration, then the loop ends
        raise psycopg.OperationalError("the server closed the connection")

    loop.work = fail_once
    loop.run()

    found = scrape(client)
    assert found[("cronledger_loop_failures_total", (("loop", "tick"),))] == 1
    assert found[("cronledger_database_errors_total", (("source", "tick"),))] == 1
    assert found[("cronledger_loop_up", (("loop", "tick"),))] == 0
    assert ("cronledger_loop_heartbeat_age_seconds", (("loop", "tick"),)) in found


def test_a_request_that_met_a_store_error_counts_it(
    services: Services, client: FlaskClient, admin: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    def store_away(*args: object, **kwargs: object) -> None:
        raise psycopg.OperationalError("connection refused")

    monkeypatch.setattr(services.directory, "account", store_away)
    assert admin.get("/api/accounts/root").status_code >= 500
    monkeypatch.undo()

    found = scrape(client)
    assert found[("cronledger_database_errors_total", (("source", "api"),))] == 1


def test_runs_held_by_expired_leases_and_the_oldest_waiting_run(open_with: Opener) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock, lease_seconds=30), clock)
    services = world.services
    client = create_app({"SERVICES": services, "TESTING": True}).test_client()
    world.run_now("r1")
    clock.advance(10)
    waiting = scrape(client)
    assert waiting[("cronledger_pending_runs", ())] == 1
    assert waiting[("cronledger_oldest_pending_run_age_seconds", ())] == 10
    gone = TwoCommitWorker.of(services, "w1")
    assert len(gone.claim()) == 1  # claimed, never launched: w1 is gone

    clock.advance(30 + 5)  # the lease ran out 5 s ago
    held = scrape(client)

    assert held[("cronledger_expired_lease_runs", ())] == 1
    assert held[("cronledger_pending_runs", ())] == 0
    assert held[("cronledger_oldest_pending_run_age_seconds", ())] == 5


def test_cycles_skipped_as_missed_are_counted(open_with: Opener) -> None:
    clock = FakeClock(T0)
    world = World(
        open_with(clock),
        clock,
        trigger=EVERY_MINUTE,
        misfire_policy="skip",
        overlap_policy="skip_while_open",
    )
    services = world.services
    services.schedules.set_enabled(world.root, world.schedule, True, None)
    client = create_app({"SERVICES": services, "TESTING": True}).test_client()
    before = scrape(client)
    clock.advance(600.5)  # 09:01 … 09:09 missed, 09:10 on time

    Ticker.of(services).scan()

    after = scrape(client)
    assert before[("cronledger_skipped_missed_cycles_total", ())] == 0
    assert after[("cronledger_skipped_missed_cycles_total", ())] == 9
    assert after[("cronledger_tick_scans_total", ())] == 1


def test_pools_are_shown_on_postgresql(services: Services, client: FlaskClient) -> None:
    found = scrape(client)

    pools = {
        dict(labels)["pool"]: value
        for (name, labels), value in found.items()
        if name == "cronledger_db_pool_max_connections"
    }
    if services.store.kind == "sqlite":
        assert pools == {}  # SQLite opens a connection per use: no pool
    else:
        assert set(pools) == {"events", "read_models"}
        assert all(size > 0 for size in pools.values())


def test_every_metric_an_alert_uses_is_on_metrics(client: FlaskClient, admin: Api) -> None:
    assert admin.get("/api/accounts").status_code == 200  # the HTTP metrics have samples
    families = list(text_string_to_metric_families(client.get("/metrics").get_data(as_text=True)))
    exported = {f.name for f in families} | {s.name for f in families for s in f.samples}

    used = {name for rule in rules() for name in METRIC.findall(rule["expr"])}

    assert used, "no alert names a metric"
    missing = {name for name in used if name not in exported and _family(name) not in exported}
    assert missing == set()


def test_every_bucket_an_objective_counts_from_is_exported(client: FlaskClient) -> None:
    """The objectives' rules count a histogram's observations up to one bound (`le=~"5|5.0"`):
    the histogram must have that bucket, or the share of late ones is never measured."""
    exported = scrape(client)
    used = {(name, matcher) for rule in rules() for name, matcher in BUCKET.findall(rule["expr"])}

    assert {name for name, _ in used} >= {"cronledger_registration_lag_seconds"}
    for name, matcher in used:
        bounds = {dict(labels)["le"] for sample, labels in exported if sample == f"{name}_bucket"}
        assert any(re.fullmatch(matcher, bound) for bound in bounds), (name, matcher, bounds)


def _family(sample: str) -> str:
    return next((sample.removesuffix(s) for s in SUFFIXES if sample.endswith(s)), sample)
