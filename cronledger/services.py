"""The application services, wired to one store and one clock."""

from __future__ import annotations

from dataclasses import dataclass

from cronledger.audit import Audit
from cronledger.clock import Clock, system_clock
from cronledger.config import Settings
from cronledger.directory import Directory
from cronledger.ledger import Ledger, open_ledger
from cronledger.schedules import Schedules
from cronledger.store import Store


@dataclass
class Services:
    settings: Settings
    ledger: Ledger
    directory: Directory
    audit: Audit
    schedules: Schedules

    @property
    def store(self) -> Store:
        return self.ledger.store

    def close(self) -> None:
        self.ledger.close()


def open_services(settings: Settings, clock: Clock = system_clock) -> Services:
    ledger = open_ledger(Store.from_url(settings.database_url), clock)
    directory = Directory(ledger, settings.timezone)
    return Services(
        settings=settings,
        ledger=ledger,
        directory=directory,
        audit=Audit(ledger, directory),
        schedules=Schedules(ledger, directory, settings.timezone),
    )
