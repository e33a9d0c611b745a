"""A process's start on its store: the migration once per schema version, then the rebuild of
read models an older version made, beside the live tables (docs/operations.md#upgrading).

A start on an up-to-date store reads one row and runs no DDL. Otherwise one process migrates
under the migration lock (the others wait, and say so every few seconds in the log and in
`Health`). Outdated read models are rebuilt under a lock of their own, never the migration
lock: other processes start meanwhile, and the live projector leaves those read models alone
until the rebuilt tables are swapped in.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cronledger.clock import Clock
from cronledger.health import MIGRATING, READY, REBUILDING, Health
from cronledger.persistence.event_keys import EventKeys
from cronledger.persistence.ledger import Ledger
from cronledger.persistence.store import Store
from projections.engine import Projection, Projector, schema_current, schema_version
from projections.maintenance import rebuild

log = logging.getLogger("cronledger.application.startup")
PROGRESS_REPORT_SECONDS = 5.0


def migrated(
    store: Store,
    clock: Clock,
    projections: Sequence[Projection],
    health: Health,
    event_keys: EventKeys | None = None,
) -> tuple[Ledger, Projector]:
    """The ledger and its projector on a store holding this version's tables; a migration with
    `event_keys` starts authenticating events, if the store did not yet."""
    if schema_current(store, projections):
        ledger = Ledger(store, clock, create_tables=False, event_keys=event_keys)
        return ledger, Projector(ledger, projections)

    def waiting(why: str) -> None:
        log.warning("waiting for another process's migration", extra={"why": why})
        health.enter(MIGRATING, why)

    health.enter(MIGRATING, "waiting for the migration lock")
    with store.migration_lock(waiting):
        version = schema_version(store.kind, projections)
        health.enter(MIGRATING, f"migrating the store to schema version {version}")
        ledger = Ledger(store, clock, event_keys=event_keys)
        projector = Projector(ledger, projections)
        if not schema_current(store, projections):
            log.info("migrating the store", extra={"schema_version": version})
            projector.migrate()
            ledger.start_authentication()
    return ledger, projector


def rebuild_outdated(
    ledger: Ledger, projector: Projector, health: Health, background: bool
) -> None:
    """Rebuild the read models an older version made, in this thread or in one of its own.

    Until they are swapped in, the projector leaves them alone and `health` is REBUILDING with
    the progress ("rebuilding runs: 40%"); then READY.
    """
    outdated = projector.outdated()
    if not outdated:
        health.enter(READY)
        return
    projector.hold(outdated)
    rebuilding = Rebuilding(ledger, projector, outdated, health)
    health.enter(REBUILDING, rebuilding.progress.detail())
    if background:
        threading.Thread(target=rebuilding.run_logged, name="rebuild", daemon=True).start()
    else:
        rebuilding.run()


class Rebuilding:
    """One process's rebuild of outdated read models, under the rebuild lock."""

    def __init__(
        self, ledger: Ledger, projector: Projector, outdated: list[Projection], health: Health
    ) -> None:
        self.ledger = ledger
        self.projector = projector
        self.outdated = outdated
        self.health = health
        self.progress = RebuildProgress([p.name for p in outdated], health)

    def run(self) -> None:
        with self.ledger.store.advisory_lock("rebuild", self._waiting):
            still = {p.name for p in self.projector.outdated()}  # another process may have
            chosen = [p for p in self.outdated if p.name in still]
            if chosen:
                self.progress.start(self.ledger.recorder.max_notification_id() or 0)
                rebuild(self.ledger, chosen, self.progress.advance)  # refuses the unrebuildable
                self.progress.finish()
        self.projector.release(self.outdated)
        if self.health.phase == REBUILDING:  # not while draining
            self.health.enter(READY)

    def run_logged(self) -> None:
        """`run` in its own thread: a failure is logged and stays visible in `health`."""
        try:
            self.run()
        except Exception as error:
            log.exception("the rebuild of read models failed; restart the process to retry")
            self.health.enter(REBUILDING, f"the rebuild failed ({type(error).__name__}); restart")

    def _waiting(self, why: str) -> None:
        log.info("waiting for another process's rebuild", extra={"why": why})
        self.health.enter(REBUILDING, f"{self.progress.detail()}; {why}")


@dataclass
class RebuildProgress:
    """Events applied of the log's length at the start, told to the log every few seconds
    and to `health` at every batch."""

    names: list[str]
    health: Health
    monotonic: Callable[[], float] = time.monotonic
    total: int = 0
    done: int = 0
    _told: float = field(default=float("-inf"))

    def start(self, total: int) -> None:
        self.total = total
        log.warning(
            "rebuilding read models an older version made",
            extra={"projections": self.names, "events_total": total},
        )
        self.health.enter(REBUILDING, self.detail())

    def advance(self, count: int) -> None:
        self.done += count
        self.health.enter(REBUILDING, self.detail())
        now = self.monotonic()
        if now - self._told >= PROGRESS_REPORT_SECONDS:
            self._told = now
            log.info(
                "rebuilding read models",
                extra={
                    "projections": self.names,
                    "events_applied": self.done,
                    "events_total": self.total,
                    "percent": self.percent,
                },
            )

    def finish(self) -> None:
        log.info("read models rebuilt", extra={"projections": self.names, "events": self.done})

    @property
    def percent(self) -> int:
        """How far, of the log as long as it was at the start (events appended since count
        until the end, so it stays below 100 until then)."""
        return min(99, self.done * 100 // self.total) if self.total else 0

    def detail(self) -> str:
        return f"rebuilding {', '.join(self.names)}: {self.percent}%"
