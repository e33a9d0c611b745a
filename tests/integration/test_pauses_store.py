"""Pauses on a store an earlier release wrote: its tenants, and their snapshots, read as never
paused; pausing one holds its schedules from the tick while the other tenant carries on."""

from __future__ import annotations

from eventsourcing.domain import Snapshot

from cronledger.application.cycles import Ticker
from cronledger.application.services import Services
from domain.directory import Principal, Tenant, tenant_uuid
from tests.support import FakeClock, stored_by_an_older_release


def test_an_upgraded_stores_tenant_pauses_alone(upgraded: Services) -> None:
    clock = upgraded.ledger.clock
    assert isinstance(clock, FakeClock)
    acme = Principal(tenant_uuid("acme"), "root", frozenset())
    assert upgraded.pauses.tenant(acme.tenant_id).schedules_paused is None
    ticker = Ticker.of(upgraded)
    assert ticker.scan().registered == 0

    upgraded.pauses.pause_tenant(acme, "INC-1")
    clock.advance(60)
    assert ticker.scan().registered == 1  # globex's cycle; acme's is held
    upgraded.pauses.resume_tenant(acme, "INC-1 closed")
    assert ticker.scan().registered == 1  # acme's held cycle, by its misfire policy
    assert upgraded.audit.replay(lambda _: None) == []


def test_a_tenant_snapshot_from_before_pauses_reads_as_never_paused() -> None:
    tenant = Tenant(name="acme", at=FakeClock().now, actor="system")
    older = stored_by_an_older_release(Snapshot.take(tenant), "schedules_pause").mutate(None)
    assert isinstance(older, Tenant)
    assert older.schedules_pause is None
    older.pause_schedules(FakeClock().now, "root", "INC-2")
    assert older.schedules_pause == {"at": FakeClock().now, "actor": "root", "reason": "INC-2"}
