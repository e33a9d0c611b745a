"""Pausing the tick: for every schedule of one tenant, or for the whole service (incidents)."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from cronledger.persistence.ledger import Ledger, TimelineEntry
from domain.directory import SYSTEM_ACTOR, Principal, Tenant
from domain.service import Service
from projections.pauses import TICK_SCOPE, Pause, pause_of


@dataclass(frozen=True)
class TenantView:
    """A tenant, whether the tick holds its schedules (`schedules_paused`: since when, by
    whom and why; None when they run), and the key of its default working calendar."""

    id: str
    name: str
    schedules_paused: Pause | None
    default_calendar: str | None

    @classmethod
    def of(cls, tenant: Tenant) -> TenantView:
        pause = tenant.schedules_pause
        return cls(
            str(tenant.id), tenant.name, Pause(**pause) if pause else None, tenant.default_calendar
        )


class Pauses:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def tenant(self, tenant_id: UUID) -> TenantView:
        return TenantView.of(self.ledger.find(Tenant, tenant_id, "tenant", tenant_id))

    def pause_tenant(self, actor: Principal, reason: str) -> TenantView:
        """`Tenant.SchedulesPaused`: the tick registers none of its cycles until resumed."""
        return self._switch_tenant(actor, reason, pausing=True)

    def resume_tenant(self, actor: Principal, reason: str) -> TenantView:
        """`Tenant.SchedulesResumed`: the next scan registers what came due, per misfire policy."""
        return self._switch_tenant(actor, reason, pausing=False)

    def _switch_tenant(self, actor: Principal, reason: str, pausing: bool) -> TenantView:
        def switch() -> TenantView:
            tenant = self.ledger.find(Tenant, actor.tenant_id, "tenant", actor.tenant_id)
            at = self.ledger.clock()
            flip = tenant.pause_schedules if pausing else tenant.resume_schedules
            flip(at=at, actor=actor.account_id, reason=reason)
            self.ledger.save(tenant)
            return self.tenant(tenant.id)

        return self.ledger.retrying(switch)

    def pause_tick(self, actor: str, reason: str) -> Pause | None:
        """`Service.TickPaused`: no tick of any process registers cycles until resumed."""
        return self._switch_tick(actor, reason, pausing=True)

    def resume_tick(self, actor: str, reason: str) -> Pause | None:
        """`Service.TickResumed`: the ticks register what came due, per misfire policy."""
        return self._switch_tick(actor, reason, pausing=False)

    def _switch_tick(self, actor: str, reason: str, pausing: bool) -> Pause | None:
        def switch() -> Pause | None:
            service = self._service()
            at = self.ledger.clock()
            flip = service.pause_tick if pausing else service.resume_tick
            flip(at=at, actor=actor, reason=reason)
            self.ledger.save(service)
            return Pause(**service.tick_pause) if service.tick_pause else None

        return self.ledger.retrying(switch)

    def tick_pause(self) -> Pause | None:
        """The service-wide pause in force, as the read model has it (what the ticks obey)."""
        return pause_of(self.ledger.store, TICK_SCOPE)

    def tick_timeline(self) -> list[TimelineEntry]:
        """Every pause and resume of the service's tick, oldest first."""
        return self.ledger.timeline(Service.create_id())

    def _service(self) -> Service:
        service_id = Service.create_id()
        if self.ledger.exists(service_id):
            return self.ledger.find(Service, service_id, "service", "service")
        return Service(at=self.ledger.clock(), actor=SYSTEM_ACTOR)
