"""Snapshots: every kind of aggregate comes back from its snapshot exactly as from its events."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate

from cronledger.application.cycles import Ticker
from cronledger.persistence.ledger import Ledger
from tests.support import T0, FakeClock, Opener, World


def every_aggregate_id(ledger: Ledger) -> list[UUID]:
    rows = ledger.store.query(f"SELECT DISTINCT originator_id FROM {ledger.events_table}")
    return [row[0] if isinstance(row[0], UUID) else UUID(hex=row[0]) for row in rows]


def from_events(ledger: Ledger, aggregate_id: UUID) -> Any:
    aggregate = None
    for event in ledger.events.get(aggregate_id):
        aggregate = event.mutate(aggregate)
    return aggregate


def fields(aggregate: Aggregate) -> dict[str, Any]:
    return {k: v for k, v in vars(aggregate).items() if k != "_pending_events"}


def test_every_aggregate_kind_round_trips_through_a_snapshot(busy: World) -> None:
    ledger = busy.services.ledger
    kinds = set()
    for aggregate_id in every_aggregate_id(ledger):
        ledger.take_snapshot(aggregate_id)
        restored = ledger.repository.get(aggregate_id)
        assert fields(restored) == fields(from_events(ledger, aggregate_id)), type(restored)
        kinds.add(type(restored).__name__)
    assert kinds == {
        "TenantRegistry",
        "Tenant",
        "Account",
        "ApiToken",
        "Definition",
        "Schedule",
        "Run",
        "ApprovalInstance",
        "Service",
        "WebhookSubscription",
        "WebhookDelivery",
        "CallbackSource",
        "Group",
        "Calendar",
    }


def test_a_schedule_keeps_ticking_past_its_snapshot_interval(open_with: Opener) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock), clock, trigger={"kind": "cron", "expression": "* * * * *"})
    services = world.services
    services.schedules.set_enabled(world.root, world.schedule, True, None)
    for _ in range(60):  # more events than the snapshotting interval (50)
        clock.advance(60)
        Ticker.of(services).scan()
    services.projector.catch_up()
    assert services.store.query("SELECT COUNT(*) FROM runs")[0][0] == 60
    schedule = services.schedules.schedule(world.root.tenant_id, world.schedule)
    assert schedule.version > 50
