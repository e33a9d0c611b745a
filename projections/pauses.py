"""`pauses`: what the tick holds: a tenant's schedules, or (scope `tick`) every tick."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from cronledger.persistence.store import Store, as_instant
from domain.directory import Tenant
from domain.service import Service
from projections.engine import EventClass, Handler, Projection, Sql

TICK_SCOPE = "tick"  # the service-wide pause; any other scope is a tenant's id
NOT_PAUSED_TENANT = "tenant_id NOT IN (SELECT scope FROM pauses)"  # for `schedules` queries


@dataclass(frozen=True)
class Pause:
    """A pause in force: since when, by whom and why."""

    at: datetime
    actor: str
    reason: str


class PausesProjection(Projection):
    """One row per pause in force, removed when it is resumed."""

    name = "pauses"
    tables = ("pauses",)

    def ddl(self, sql: Sql) -> list[str]:
        return [
            "CREATE TABLE IF NOT EXISTS pauses ("
            f"scope TEXT PRIMARY KEY, paused_at {sql.timestamp_type} NOT NULL, "
            "actor TEXT NOT NULL, reason TEXT NOT NULL)"
        ]

    def handlers(self) -> dict[EventClass, Handler]:
        return {
            Tenant.SchedulesPaused: _paused(lambda event: str(event.originator_id)),
            Tenant.SchedulesResumed: _resumed(lambda event: str(event.originator_id)),
            Service.TickPaused: _paused(lambda _: TICK_SCOPE),
            Service.TickResumed: _resumed(lambda _: TICK_SCOPE),
        }


Paused = Tenant.SchedulesPaused | Service.TickPaused
Resumed = Tenant.SchedulesResumed | Service.TickResumed


def _paused(scope_of: Callable[[Paused], str]) -> Handler:
    def handler(sql: Sql, event: Paused, position: int) -> None:
        sql.write(
            "INSERT INTO pauses (scope, paused_at, actor, reason) VALUES (?, ?, ?, ?)",
            (scope_of(event), event.at, event.actor, event.reason),
        )

    return handler


def _resumed(scope_of: Callable[[Resumed], str]) -> Handler:
    def handler(sql: Sql, event: Resumed, position: int) -> None:
        sql.write("DELETE FROM pauses WHERE scope = ?", (scope_of(event),))

    return handler


def pause_of(store: Store, scope: str) -> Pause | None:
    """The pause in force for `scope` (a tenant's id, or TICK_SCOPE), if any."""
    rows = store.query("SELECT paused_at, actor, reason FROM pauses WHERE scope = ?", (scope,))
    if not rows:
        return None
    paused_at, actor, reason = rows[0]
    instant = as_instant(paused_at)
    assert instant is not None
    return Pause(instant, actor, reason)
