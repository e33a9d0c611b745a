"""A tenant's default calendar on a store an earlier release wrote: its tenants, and their
snapshots, read as having none until one is chosen; then `working_days` lists its days."""

from __future__ import annotations

from eventsourcing.domain import Snapshot

from cronledger.application.services import Services
from domain.calendars import CalendarFields
from domain.directory import Principal, Tenant, tenant_uuid
from domain.permissions import ROLES
from tests.support import FakeClock, stored_at_version


def test_an_upgraded_stores_tenant_has_no_default_until_one_is_chosen(upgraded: Services) -> None:
    root = Principal(tenant_uuid("acme"), "root", ROLES["admin"])
    assert upgraded.pauses.tenant(root.tenant_id).default_calendar is None
    calendars = upgraded.calendars
    made = calendars.create(root, "cn", CalendarFields("中国大陆", None, "Asia/Shanghai"))
    calendars.import_years(root, made.id, "CN", [2026], None)
    assert calendars.choose_default(root, "cn").default_calendar == "cn"
    upgraded.projector.catch_up()
    rows = upgraded.ledger.store.query(
        "SELECT reason, name FROM working_days WHERE day = ?", ("2026-10-01",)
    )
    assert [tuple(row) for row in rows] == [("HOLIDAY", "国庆节")]
    assert upgraded.audit.replay(lambda _: None) == []


def test_a_tenant_snapshot_from_before_default_calendars_reads_as_having_none() -> None:
    tenant = Tenant(name="acme", at=FakeClock().now, actor="system")
    older = stored_at_version(Snapshot.take(tenant), 3, "default_calendar").mutate(None)
    assert isinstance(older, Tenant)
    assert older.default_calendar is None
    older.choose_default_calendar("cn", FakeClock().now, "root")
    assert older.default_calendar == "cn"
