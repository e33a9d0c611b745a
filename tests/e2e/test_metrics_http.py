"""`/metrics` in Prometheus text: backlogs, attempts by outcome, lags, dead letters."""

from __future__ import annotations

from cronledger.application.launches import Worker
from tests.e2e.helpers import samples
from tests.support import T0, FakeClock, Opener, World
from web import create_app


def test_metrics_count_what_operations_watch(open_with: Opener) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock, max_attempts=2, retry_base_seconds=1), clock)
    services = world.services
    world.run_now("ok")
    Worker.of(services).drain()
    world.run_now("doomed")
    world.set_ann_active(False)
    for _ in range(2):
        Worker.of(services).drain()
        clock.advance(1)
    client = create_app({"SERVICES": services, "TESTING": True}).test_client()

    response = client.get("/metrics")

    assert response.status_code == 200
    assert response.content_type.startswith("text/plain")
    found = samples(response.get_data(as_text=True))
    assert found[("cronledger_dead_letter_runs", ())] == 1
    assert found[("cronledger_pending_runs", ())] == 0
    succeeded = (("error_code", ""), ("outcome", "SUCCEEDED"))
    failed = (("error_code", "INITIATOR_INACTIVE"), ("outcome", "FAILED"))
    assert found[("cronledger_attempts_total", succeeded)] == 1
    assert found[("cronledger_attempts_total", failed)] == 2
    assert found[("cronledger_registration_lag_seconds_count", ())] == 2
    assert found[("cronledger_registration_lag_seconds_bucket", (("le", "0.1"),))] == 2
    assert found[("cronledger_projection_lag_events", (("projection", "runs"),))] == 0
    assert found[("cronledger_expired_unswept_approvals", ())] == 0
    clock.advance(3600)  # the launched instance's review window (1 hour) has passed
    later = samples(client.get("/metrics").get_data(as_text=True))
    assert later[("cronledger_expired_unswept_approvals", ())] == 1
    assert later[("cronledger_oldest_expired_unswept_lag_seconds", ())] >= 2
