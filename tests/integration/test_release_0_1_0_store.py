"""A store that release 0.1.0 wrote in use opens with this release, and everything carries on.

`tests/fixtures/release-0.1.0-working.sqlite` (see the script beside it): two tenants, 90
minutes of every-minute schedules, launches, retries, dead letters, decisions, refusals,
expiries and schedule snapshots.
"""

from __future__ import annotations

from uuid import UUID

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services
from tests.release_stores import facts
from tests.support import Api, FakeClock
from web import create_app

FACTS = facts("release-0.1.0-working")


def every_aggregate(services: Services) -> list[UUID]:
    end = services.ledger.recorder.max_notification_id() or 0
    notifications = services.ledger.recorder.select_notifications(start=1, limit=end)
    return list(dict.fromkeys(UUID(str(n.originator_id)) for n in notifications))


def test_every_timeline_reads_and_the_audit_is_clean(upgraded: Services) -> None:
    aggregates = every_aggregate(upgraded)
    assert len(aggregates) > 300
    for aggregate_id in aggregates:
        types = {entry.type for entry in upgraded.ledger.timeline(aggregate_id)}
        assert "Undecodable" not in types, aggregate_id
    assert upgraded.audit.verify(lambda _: None).found is None
    assert upgraded.audit.replay(lambda _: None) == []


def test_the_tick_the_worker_and_the_sweeper_carry_on(upgraded: Services) -> None:
    clock = upgraded.ledger.clock
    assert isinstance(clock, FakeClock)
    ticker, worker = Ticker.of(upgraded), Worker.of(upgraded)
    assert ticker.scan().registered == 0  # nothing due twice
    clock.advance(60)
    assert ticker.scan().registered == 2  # one cycle of each tenant's schedule
    assert worker.poll().succeeded == 2
    clock.advance(3600)
    assert upgraded.approvals.sweep() > 0
    assert upgraded.projector.lag() == 0


def test_old_instances_and_runs_answer_over_http(upgraded: Services) -> None:
    client = create_app({"SERVICES": upgraded, "TESTING": True}).test_client()
    acme = Api(client, FACTS["tokens"]["acme"])
    states = {
        name: acme.get(f"/api/approvals/{instance_id}").json["state"]
        for name, instance_id in FACTS["instances"].items()
    }
    assert states == {
        "approved": "APPROVED",
        "withdrawn": "WITHDRAWN",
        "extended": "WAITING_REVIEW",
        "expired": "EXPIRED",
    }
    path = f"/api/workflows/schedules/{FACTS['schedules']['acme']}"
    assert acme.get(path).json["form_data"] == {"region": "east"}
    dead = acme.get(f"{path}/runs?status=DEAD_LETTER").json["items"]
    assert dead
    retried = acme.post(f"{path}/runs/{dead[0]['id']}/retry")
    assert (retried.status_code, retried.json["status"]) == (202, "PENDING")
    assert Worker.of(upgraded).poll().succeeded == 1
    timeline = acme.get(f"/api/approvals/{FACTS['instances']['approved']}/timeline").json
    assert [e["type"] for e in timeline["items"]][:2] == [
        "ApprovalInstance.Submitted",
        "ApprovalInstance.CommandRejected",
    ]
