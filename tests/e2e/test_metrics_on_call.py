"""`/metrics` for an on-call (issue 32, item 10): counters at 0 before anything happened (so
that `increase()` sees the first error), how late runs launch, and projection lag in seconds."""

from __future__ import annotations

from flask.testing import FlaskClient

from cronledger.application.launches import Worker
from cronledger.application.meters import ATTEMPT_LABELS, DATABASE_ERROR_SOURCES
from tests.e2e.helpers import samples
from tests.support import T0, FakeClock, Opener, World
from tick.processes import every_loop, notifier_loop
from web import create_app

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
LAG = "cronledger_run_launch_lag_seconds"


def scrape(client: FlaskClient) -> Samples:
    response = client.get("/metrics")
    assert response.status_code == 200
    return samples(response.get_data(as_text=True))


def lag_bucket(found: Samples, bound: str) -> float:
    return found[(f"{LAG}_bucket", (("le", bound),))]


def test_every_counter_shows_0_before_anything_happened(client: FlaskClient) -> None:
    found = scrape(client)
    for source in DATABASE_ERROR_SOURCES:
        assert found[("cronledger_database_errors_total", (("source", source),))] == 0
    for outcome, code in ATTEMPT_LABELS:
        labels = (("error_code", code), ("outcome", outcome))
        assert found[("cronledger_attempts_total", labels)] == 0
    for outcome in ("delivered", "failed", "interrupted"):
        assert found[("cronledger_webhook_attempts_total", (("outcome", outcome),))] == 0
    for reason in ("version_conflict", "unreadable", "error"):
        assert found[("cronledger_sweep_failures_total", (("reason", reason),))] == 0
    assert found[(f"{LAG}_count", ())] == 0
    assert lag_bucket(found, "+Inf") == 0
    assert found[("cronledger_projection_lag_seconds", (("projection", "runs"),))] == 0


def test_every_loop_is_a_source_of_database_errors_known_in_advance(open_with: Opener) -> None:
    services = open_with(FakeClock(T0))
    loops = {loop.name for loop in [*every_loop(services), notifier_loop(services, 1.0)]}
    assert loops <= set(DATABASE_ERROR_SOURCES)


def test_the_launch_lag_histogram_records_how_late_each_run_launched(open_with: Opener) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock, retry_base_seconds=1), clock)
    client = create_app({"SERVICES": world.services, "TESTING": True}).test_client()
    world.run_now("on-time")
    clock.advance(7)
    Worker.of(world.services).drain()  # launched 7 s after its planned instant
    world.run_now("retried")
    world.set_ann_active(False)
    Worker.of(world.services).drain()  # fails: no launch, no lag
    failed = scrape(client)
    assert failed[(f"{LAG}_count", ())] == 1
    assert failed[(f"{LAG}_sum", ())] == 7
    assert (lag_bucket(failed, "5.0"), lag_bucket(failed, "10.0")) == (0, 1)

    world.set_ann_active(True)
    clock.advance(100)
    Worker.of(world.services).drain()  # the retry launches it, 100 s after it was planned
    found = scrape(client)
    assert found[(f"{LAG}_count", ())] == 2
    assert found[(f"{LAG}_sum", ())] == 107
    assert (lag_bucket(found, "60.0"), lag_bucket(found, "120.0")) == (1, 2)


def test_projection_lag_is_told_in_seconds_as_well_as_in_events(open_with: Opener) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock), clock)
    services = world.services
    client = create_app({"SERVICES": services, "TESTING": True}).test_client()
    with services.ledger.projections_deferred():  # written, not projected
        world.run_now("r1")
    clock.advance(30)
    behind = scrape(client)
    assert behind[("cronledger_projection_lag_events", (("projection", "runs"),))] > 0
    assert behind[("cronledger_projection_lag_seconds", (("projection", "runs"),))] == 30

    services.projector.catch_up()
    clock.advance(services.settings.metrics_cache_seconds)
    caught_up = scrape(client)
    assert caught_up[("cronledger_projection_lag_seconds", (("projection", "runs"),))] == 0
