"""The application services, wired to one store and one clock."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from cronledger.application.approvals import Approvals
from cronledger.application.audit import Audit
from cronledger.application.backlog import Backlog
from cronledger.application.directory import Directory
from cronledger.application.operations import Operations
from cronledger.application.runs import Runs
from cronledger.application.schedules import Schedules
from cronledger.clock import Clock, system_clock
from cronledger.config import Settings
from cronledger.persistence.ledger import Ledger
from cronledger.persistence.store import Store, redacted_url
from projections.catalog import all_projections
from projections.engine import Projector
from projections.maintenance import rebuild

log = logging.getLogger("cronledger.application.services")


class NoLog(Exception):
    """A command that only reads the log found none where the URL points; nothing was created."""

    def __init__(self, url: str, why: str) -> None:
        super().__init__(f"no log to read at {redacted_url(url)}: {why}")


@dataclass
class Services:
    settings: Settings
    ledger: Ledger
    projector: Projector
    directory: Directory
    audit: Audit
    schedules: Schedules
    runs: Runs
    approvals: Approvals
    operations: Operations

    @property
    def store(self) -> Store:
        return self.ledger.store

    def backlog(self, tenant_id: UUID | None) -> Backlog:
        """What operations watch (docs/operations.md), for one tenant or (None) for all."""
        due, oldest_lag = self.schedules.due_backlog(tenant_id)
        figures: dict[str, Any] = {
            **self.runs.backlog(tenant_id),
            **self.approvals.backlog(tenant_id),
        }
        return Backlog(
            due_schedules=due,
            oldest_due_lag_seconds=oldest_lag,
            **figures,
            projection_lag_events=self.projector.lag(),
        )

    def close(self) -> None:
        self.ledger.close()
        self.store.close()


def open_services(settings: Settings, clock: Clock = system_clock) -> Services:
    """Open the store, creating its tables first if needed (safe with many processes)."""
    store = Store.from_url(settings.database_url)
    with store.migration_lock():
        ledger = Ledger(store, clock)
        projector = Projector(ledger, all_projections())
        projector.create_tables()
        _rebuild_outdated(ledger, projector)
    ledger.after_save = lambda position: projector.catch_up(until=position)
    directory = Directory(ledger, settings.timezone)
    runs = Runs(ledger, projector, directory)
    return Services(
        settings=settings,
        ledger=ledger,
        projector=projector,
        directory=directory,
        audit=Audit(ledger, directory, projector),
        schedules=Schedules(ledger, directory, runs, settings),
        runs=runs,
        approvals=Approvals(ledger, directory, projector),
        operations=Operations(ledger),
    )


def open_existing(settings: Settings, clock: Clock = system_clock) -> Services:
    """`open_services` on a store that already holds events; never creates a store or a log."""
    why = _missing_log(Store.from_url(settings.database_url), clock)
    if why is not None:
        raise NoLog(settings.database_url, why)
    return open_services(settings, clock)


def _missing_log(store: Store, clock: Clock) -> str | None:
    if store.missing_file():
        return "the file does not exist"
    ledger = Ledger(store, clock, create_tables=False)
    try:
        return ledger.missing_log()
    finally:
        ledger.close()
        store.close()


def _rebuild_outdated(ledger: Ledger, projector: Projector) -> None:
    """Read models an older version made are rebuilt before anything reads them."""
    outdated = projector.outdated()
    if outdated:
        names = [p.name for p in outdated]
        log.warning("rebuilding read models an older version made", extra={"projections": names})
        rebuild(ledger, outdated, progress=lambda _: None)  # refuses what cannot be rebuilt
