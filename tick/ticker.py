"""The tick: every due cycle registered once, in bounded, fair rounds, in batched writes."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from cronledger.application.schedules import run_policy
from cronledger.application.services import Services
from cronledger.config import Settings
from cronledger.persistence.ledger import Ledger
from domain.runs import Run
from domain.schedules import Schedule
from projections.engine import Projector

log = logging.getLogger("cronledger.tick")
EVENTS_PER_TRANSACTION = 1000  # appends of many thousands stalled psycopg (pipeline mode)
DUE_PER_SCAN_READ = 10_000
KNOWN_SCHEDULES_KEPT = 200_000

Batch = list[tuple[Schedule, list[Run], int]]  # a schedule, its new runs, the limit used


@dataclass(frozen=True)
class ScanReport:
    registered: int
    schedules: int
    still_due: int


class Ticker:
    @classmethod
    def of(cls, services: Services) -> Ticker:
        return cls(services.ledger, services.projector, services.settings)

    def __init__(
        self,
        ledger: Ledger,
        projector: Projector,
        settings: Settings,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ledger = ledger
        self.projector = projector
        self.settings = settings
        self.policy = run_policy(settings)
        self.timer = timer
        self._turn = 0
        self._known: dict[UUID, Schedule] = {}  # schedules as last saved by this tick

    def scan(self) -> ScanReport:
        """Register what is due now: at most N per schedule and M per scan, within a budget."""
        self.projector.catch_up()
        now = self.ledger.clock()
        due = self._fair_order(self._due_ids(now))
        batch = self._plan(due, now)
        with self.ledger.projections_deferred():  # the next scan, or the projections loop
            registered = self._save(batch)
        if registered:
            log.info("registered cycles", extra={"cycles": registered, "schedules": len(batch)})
        return ScanReport(registered, len(batch), len(due) - len(batch))

    def _due_ids(self, now: object) -> list[tuple[UUID, int]]:
        rows = self.ledger.store.query(
            "SELECT schedule_id, version FROM schedules WHERE next_fire_at <= ? "
            "ORDER BY next_fire_at, schedule_id LIMIT ?",
            (now, DUE_PER_SCAN_READ),
        )
        return [(UUID(row[0]), int(row[1])) for row in rows]

    def _load(self, due: Sequence[tuple[UUID, int]]) -> dict[UUID, Schedule]:
        """The due schedules: this tick's own copy when still current, else from the log."""
        stale = [i for i, version in due if getattr(self._known.get(i), "version", 0) != version]
        for schedule in self.ledger.get_many(stale).values():
            if isinstance(schedule, Schedule):
                self._known[schedule.id] = schedule
        if len(self._known) > KNOWN_SCHEDULES_KEPT:
            self._known = {i: self._known[i] for i, _ in due if i in self._known}
        return {i: self._known[i] for i, _ in due if i in self._known}

    def _fair_order(self, due: list[tuple[UUID, int]]) -> list[tuple[UUID, int]]:
        """Round-robin: each scan starts where the last one stopped serving."""
        if not due:
            return due
        start = self._turn % len(due)
        return due[start:] + due[:start]

    def _plan(self, due: Sequence[tuple[UUID, int]], now: object) -> Batch:
        settings = self.settings
        deadline = self.timer() + settings.scan_budget_seconds
        loaded = self._load(due)
        batch: Batch = []
        room = settings.catchup_per_scan
        for schedule_id, _ in due:
            schedule = loaded.get(schedule_id)
            if room <= 0 or self.timer() > deadline:
                break
            if not isinstance(schedule, Schedule) or schedule.deleted:
                continue
            limit = min(settings.catchup_per_schedule, room)
            runs = schedule.register_due(self.ledger.clock(), limit, self.policy)
            if schedule.pending_events:
                batch.append((schedule, runs, limit))
                room -= len(runs)
        self._turn += len(batch)
        return batch

    def _save(self, batch: Batch) -> int:
        """Many schedules per transaction; if another writer won any of them, one at a time."""
        registered = 0
        for chunk in _chunks(batch):
            try:
                self.ledger.save(*(a for schedule, runs, _ in chunk for a in (schedule, *runs)))
                registered += sum(len(runs) for _, runs, _ in chunk)
            except IntegrityError:
                for schedule, _, _ in chunk:
                    self._known.pop(schedule.id, None)  # what was saved is unknown: reload
                registered += sum(self._register_one(s.id, limit) for s, _, limit in chunk)
        return registered

    def _register_one(self, schedule_id: UUID, limit: int) -> int:
        """Load, register and save one schedule; what another tick registered counts nothing."""

        def attempt() -> int:
            schedule = self.ledger.find(Schedule, schedule_id, "schedule", schedule_id)
            runs = schedule.register_due(self.ledger.clock(), limit, self.policy)
            if schedule.pending_events:
                self.ledger.save(schedule, *runs)
            return len(runs)

        return self.ledger.retrying(attempt)


def _chunks(batch: Batch) -> Iterator[Batch]:
    """Consecutive parts of the batch of about EVENTS_PER_TRANSACTION events each."""
    chunk: Batch = []
    size = 0
    for entry in batch:
        chunk.append(entry)
        size += 1 + len(entry[1])
        if size >= EVENTS_PER_TRANSACTION:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk
