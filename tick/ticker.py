"""The tick: every due cycle registered once, in bounded, fair rounds, in batched writes."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from uuid import UUID

from cronledger.application.services import Services
from cronledger.config import Settings
from cronledger.persistence.ledger import Ledger
from domain.policy import RunPolicy
from domain.runs import Run
from domain.schedules import Schedule
from projections.engine import Projector
from projections.schedules import due_schedules

log = logging.getLogger("cronledger.tick")
EVENTS_PER_TRANSACTION = 1000  # appends of many thousands stalled psycopg (pipeline mode)
DUE_PER_SCAN_READ = 10_000
KNOWN_SCHEDULES_KEPT = 200_000

Planned = tuple[Schedule, list[Run], int]  # a schedule, its new runs, the limit used
Batch = list[Planned]


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
        self.policy = RunPolicy.from_settings(settings)
        self.timer = timer
        self._turn = 0
        self._known: dict[UUID, Schedule] = {}  # schedules as last saved by this tick

    def scan(self) -> ScanReport:
        """Register what is due now: at most N per schedule and M per scan, within a budget."""
        self.projector.catch_up()
        now = self.ledger.clock()
        due = self._fair_order(due_schedules(self.ledger.store, now, DUE_PER_SCAN_READ))
        batch = self._plan(due, now)
        with self.ledger.projections_deferred():  # the next scan, or the projections loop
            registered = self._save(batch)
        if registered:
            log.info("registered cycles", extra={"cycles": registered, "schedules": len(batch)})
        return ScanReport(registered, len(batch), len(due) - len(batch))

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
        return sum(
            sum(self.ledger.save_batch_or_each(partial(self._save_chunk, chunk), chunk, self._redo))
            for chunk in _chunks(batch)
        )

    def _save_chunk(self, chunk: Batch) -> list[int]:
        """Save the chunk's schedules and runs in one transaction; the runs of each."""
        for schedule, _, _ in chunk:
            self._known.pop(schedule.id, None)  # unless it is saved, what was saved is unknown
        self.ledger.save(*(a for schedule, runs, _ in chunk for a in (schedule, *runs)))
        self._known.update((schedule.id, schedule) for schedule, _, _ in chunk)
        return [len(runs) for _, runs, _ in chunk]

    def _redo(self, planned: Planned) -> int:
        """Load, register and save one schedule; what another tick registered counts nothing."""
        schedule_id, limit = planned[0].id, planned[2]
        schedule = self.ledger.find(Schedule, schedule_id, "schedule", schedule_id)
        runs = schedule.register_due(self.ledger.clock(), limit, self.policy)
        if schedule.pending_events:
            self.ledger.save(schedule, *runs)
        return len(runs)


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
