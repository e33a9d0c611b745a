"""The application services, wired to one store and one clock."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from cronledger.application.approvals import Approvals
from cronledger.application.audit import Audit
from cronledger.application.backlog import Backlog
from cronledger.application.calendars import Calendars
from cronledger.application.callback_sources import CallbackSources
from cronledger.application.capacity import TickCounters
from cronledger.application.contacts import Contacts
from cronledger.application.credentials import Credentials
from cronledger.application.directory import Directory
from cronledger.application.evidence import CheckpointPolicy, Evidence
from cronledger.application.exports import Exports
from cronledger.application.groups import Groups
from cronledger.application.mailer import Mailer
from cronledger.application.meters import Meters
from cronledger.application.notifications import Notifications
from cronledger.application.operations import Operations
from cronledger.application.pauses import Pauses
from cronledger.application.reviews import Reviewing
from cronledger.application.runs import Runs
from cronledger.application.schedules import Schedules
from cronledger.application.startup import migrated, rebuild_outdated
from cronledger.application.turns import RegistrationTurn
from cronledger.application.webhooks import Webhooks
from cronledger.clock import Clock, system_clock
from cronledger.config import Settings
from cronledger.health import Health
from cronledger.persistence.connections import Limits
from cronledger.persistence.event_auth import NoEventKeys
from cronledger.persistence.event_keys import event_keys_path, load_event_keys
from cronledger.persistence.ledger import Ledger
from cronledger.persistence.signing_key import load_signing_key, signing_key_path
from cronledger.persistence.store import Store, redacted_url
from cronledger.persistence.wakeup import AppendWakeup
from projections.catalog import all_projections
from projections.engine import Projector

log = logging.getLogger("cronledger.application.services")
# The processes that run until stopped: they start serving while read models are rebuilt.
SERVING_KINDS = frozenset({"serve", "web", "tick", "worker", "sweeper", "projections", "notifier"})


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
    evidence: Evidence
    schedules: Schedules
    runs: Runs
    approvals: Approvals
    operations: Operations
    exports: Exports
    pauses: Pauses
    health: Health
    callback_sources: CallbackSources
    groups: Groups
    calendars: Calendars
    webhooks: Webhooks
    notifications: Notifications
    contacts: Contacts
    credentials: Credentials
    mailer: Mailer
    tick: TickCounters = field(default_factory=TickCounters)  # the tick's totals
    # The tick's saves, which this process's worker and projections wait for (turns.py)
    registration: RegistrationTurn = field(default_factory=RegistrationTurn)
    meters: Meters = field(default_factory=Meters)  # what this process recorded, for /metrics

    def __post_init__(self) -> None:
        self.ledger.after_record = self.meters.recorded

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

    def wakeup(self, stop: threading.Event) -> Callable[[float], object]:
        """How the projections loop waits between passes: up to its interval, ended early by
        each append's NOTIFY on PostgreSQL, or by `stop`."""
        return AppendWakeup(self.ledger, stop).wait

    def close(self) -> None:
        self.ledger.close()
        self.store.close()


def open_services(
    settings: Settings,
    clock: Clock = system_clock,
    health: Health | None = None,
    kind: str = "cli",
) -> Services:
    """Open the store for a process of `kind` (its connections' `application_name` is
    `cronledger-<kind>`), migrating it first if this version never did (safe with many
    processes). Outdated read models are rebuilt before this returns, except in the long-running
    processes (SERVING_KINDS), which rebuild them in the background while they start.
    """
    health = health or Health()
    store = Store.from_url(settings.database_url, Limits.of(settings, kind))
    keys_file = event_keys_path(settings.event_keys_file, store)
    keys = load_event_keys(keys_file)
    ledger, projector = migrated(store, clock, all_projections(settings.timezone), health, keys)
    ledger.take_event_keys_from(keys_file)
    if keys is None and kind in SERVING_KINDS and ledger.authentication_boundary() is not None:
        ledger.close()
        store.close()
        raise NoEventKeys()
    rebuild_outdated(ledger, projector, health, background=kind in SERVING_KINDS)
    ledger.after_save = lambda position: projector.catch_up(until=position)
    directory = Directory(ledger, settings.timezone)
    groups = Groups(ledger, directory)
    runs = Runs(ledger, projector, directory)
    calendars = Calendars(ledger)
    return Services(
        settings=settings,
        ledger=ledger,
        projector=projector,
        directory=directory,
        audit=Audit(ledger, directory, projector, settings.audit_clock_skew_seconds),
        evidence=_evidence(settings, ledger, projector, clock),
        schedules=Schedules(ledger, directory, runs, settings),
        runs=runs,
        approvals=Approvals(ledger, directory, projector, Reviewing(ledger, groups), calendars),
        operations=Operations(ledger),
        exports=Exports(ledger),
        pauses=Pauses(ledger),
        health=health,
        callback_sources=CallbackSources(ledger, settings.secret_key),
        groups=groups,
        calendars=calendars,
        webhooks=Webhooks(ledger, projector, settings),
        notifications=Notifications(ledger),
        contacts=Contacts(ledger, directory),
        credentials=Credentials(ledger, directory),
        mailer=Mailer(ledger, settings),
    )


def _evidence(settings: Settings, ledger: Ledger, projector: Projector, clock: Clock) -> Evidence:
    path = signing_key_path(settings.signing_key_file, ledger.store)
    key = load_signing_key(path)
    policy = CheckpointPolicy(settings.checkpoint_every_events, settings.checkpoint_every_seconds)
    return Evidence(ledger, projector, key, clock, policy)


def open_existing(settings: Settings, clock: Clock = system_clock, kind: str = "cli") -> Services:
    """`open_services` on a store that already holds events; never creates a store or a log."""
    why = _missing_log(Store.from_url(settings.database_url, Limits.of(settings, kind)), clock)
    if why is not None:
        raise NoLog(settings.database_url, why)
    return open_services(settings, clock, kind=kind)


def _missing_log(store: Store, clock: Clock) -> str | None:
    if store.missing_file():
        return "the file does not exist"
    ledger = Ledger(store, clock, create_tables=False)
    try:
        return ledger.missing_log()
    finally:
        ledger.close()
        store.close()
