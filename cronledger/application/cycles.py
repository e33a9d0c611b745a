"""The tick: every due cycle registered once, in bounded, fair rounds, in batched writes."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from cronledger.application.capacity import TickCounters
from cronledger.application.cycle_calendars import cycle_calendar, cycle_calendars
from cronledger.application.services import Services
from cronledger.application.turns import RegistrationTurn
from cronledger.config import Settings
from cronledger.persistence.ledger import Ledger
from domain.calendar_cycles import CycleCalendar
from domain.policy import RunPolicy
from domain.runs import SKIPPED_MISSED, Run
from domain.schedules import Schedule
from projections.engine import Projector
from projections.pauses import TICK_SCOPE, Pause, pause_of
from projections.schedules import due_schedules

log = logging.getLogger("cronledger.tick")
EVENTS_PER_TRANSACTION = 1000  # appends of many thousands stalled psycopg (pipeline mode)
DUE_PER_SCAN_READ = 10_000  # due schedules one scan reads, or CRONLEDGER_CATCHUP_PER_SCAN if more
KNOWN_SCHEDULES_KEPT = 200_000
LOADED_AT_ONCE = 500  # due schedules read from the log together (Ledger.get_many's batch)
MISSED_NAMED_IN_LOG = 20  # schedules named in one skipped-missed warning, most late first
SCAN_PAST_INSTANT = 0.01  # seconds a scan starts after its instant: a wait may end early
READ_AHEAD = timedelta(seconds=5)  # a scan reads the schedules due this soon, for the next ones

Planned = tuple[Schedule, list[Run], int]  # a schedule, its new runs, the limit used
Batch = list[Planned]


@dataclass(frozen=True)
class Missed:
    """One schedule's cycles recorded as SKIPPED_MISSED by a scan."""

    schedule_id: UUID
    cycles: int
    first_planned_at: datetime
    late_seconds: float  # how late the first of them was when the scan recorded it


@dataclass(frozen=True)
class BudgetStop:
    """A scan that stopped at a limit with due schedules it did not reach."""

    limit: str  # the variable of the limit reached
    schedules_left: int  # due schedules not reached (each with at least one cycle due)


@dataclass(frozen=True)
class ScanReport:
    registered: int
    schedules: int
    still_due: int
    missed: tuple[Missed, ...] = ()
    stopped: BudgetStop | None = None

    @property
    def skipped_missed(self) -> int:
        """Cycles this scan recorded as skipped because they were missed."""
        return sum(m.cycles for m in self.missed)


class Ticker:
    @classmethod
    def of(cls, services: Services) -> Ticker:
        return cls(
            services.ledger,
            services.projector,
            services.settings,
            counters=services.tick,
            registration=services.registration,
        )

    def __init__(
        self,
        ledger: Ledger,
        projector: Projector,
        settings: Settings,
        timer: Callable[[], float] = time.monotonic,
        counters: TickCounters | None = None,
        registration: RegistrationTurn | None = None,
    ) -> None:
        self.ledger = ledger
        self.projector = projector
        self.settings = settings
        self.policy = RunPolicy.from_settings(settings)
        self.timer = timer
        self.counters = counters or TickCounters()
        # this process's worker and projections wait while it saves; it wakes the worker
        self.registration = registration or RegistrationTurn()
        self._turn = 0
        self._known: dict[UUID, Schedule] = {}  # schedules as last saved by this tick
        self._pause_seen: Pause | None = None  # the service's pause as the last scan saw it

    def scan(self) -> ScanReport:
        """Register what is due now: at most N per schedule and M per scan, within a budget;
        nothing while the service's tick is paused."""
        self.projector.catch_up()
        if self._paused():
            return ScanReport(0, 0, 0)
        now = self.ledger.clock()
        read = max(DUE_PER_SCAN_READ, self.settings.catchup_per_scan)
        due = self._fair_order(due_schedules(self.ledger.store, now, read))
        batch, stopped = self._plan(due, now)
        with self.registration.registering(), self.ledger.projections_deferred():
            saved = self._save(batch)  # read models: the next scan, or the projections loop
        if any(saved):
            self.registration.registered()
        report = ScanReport(
            registered=sum(len(runs) for runs in saved),
            schedules=len(batch),
            still_due=len(due) - len(batch),
            missed=tuple(m for runs in saved for m in _missed(runs)),
            stopped=stopped,
        )
        self.counters.count_scan(report.registered, report.skipped_missed, stopped is not None)
        _log(report)
        if not report.still_due:
            self._read_ahead(now)
        return report

    def until_next_scan(self) -> float:
        """Seconds until just past the next whole multiple of CRONLEDGER_TICK_SECONDS on the
        clock: a cycle due on a whole second is registered right at its instant, not up to an
        interval later, however long the last scan took."""
        interval = self.settings.tick_seconds
        return interval - self.ledger.clock().timestamp() % interval + SCAN_PAST_INSTANT

    def _read_ahead(self, now: datetime) -> None:
        """Read the schedules due within READ_AHEAD from the log now, so that the scan at
        their instant only registers and saves them: a spike of cycles due at one instant is
        registered sooner by a tick that was running before it."""
        soon = due_schedules(self.ledger.store, now + READ_AHEAD, DUE_PER_SCAN_READ)
        for start in range(0, len(soon), LOADED_AT_ONCE):
            self._load(soon[start : start + LOADED_AT_ONCE])

    def _paused(self) -> bool:
        """Whether `cronledger tick pause` is in force; said in the log when that changes."""
        pause = pause_of(self.ledger.store, TICK_SCOPE)
        if pause != self._pause_seen:
            if pause is None:
                log.warning("the tick is resumed: due cycles are registered again")
            else:
                log.warning(
                    "the tick is paused: no cycle is registered until it is resumed",
                    extra={
                        "since": pause.at.isoformat(),
                        "by": pause.actor,
                        "reason": pause.reason,
                    },
                )
            self._pause_seen = pause
        return pause is not None

    def _load(self, due: Sequence[tuple[UUID, int]]) -> dict[UUID, Schedule]:
        """The due schedules: this tick's own copy when still current (or newer than the read
        model, which has not yet caught up with this tick's save), else from the log."""
        stale = [i for i, version in due if getattr(self._known.get(i), "version", 0) < version]
        for schedule in self.ledger.get_many(stale).values():
            if isinstance(schedule, Schedule):
                self._known[schedule.id] = schedule
        return {i: self._known[i] for i, _ in due if i in self._known}

    def _forget_all_but(self, due: Sequence[tuple[UUID, int]]) -> None:
        """Past KNOWN_SCHEDULES_KEPT, keep only the copies of schedules due now."""
        if len(self._known) > KNOWN_SCHEDULES_KEPT:
            self._known = {i: self._known[i] for i, _ in due if i in self._known}

    def _fair_order(self, due: list[tuple[UUID, int]]) -> list[tuple[UUID, int]]:
        """Round-robin: each scan starts where the last one stopped serving."""
        if not due:
            return due
        start = self._turn % len(due)
        return due[start:] + due[:start]

    def _plan(
        self, due: Sequence[tuple[UUID, int]], now: object
    ) -> tuple[Batch, BudgetStop | None]:
        """The schedules to save and their runs; and the limit that stopped planning, if any."""
        settings = self.settings
        deadline = self.timer() + settings.scan_budget_seconds
        self._forget_all_but(due)
        loaded: dict[UUID, Schedule] = {}
        calendars: dict[UUID, CycleCalendar] = {}
        batch: Batch = []
        room = settings.catchup_per_scan
        stop = None
        for reached, (schedule_id, _) in enumerate(due):
            stop = _limit_reached(room, self.timer() > deadline, len(due) - reached)
            if stop:
                break
            if reached % LOADED_AT_ONCE == 0:  # the first are planned before the rest are read
                loaded = self._load(due[reached : reached + LOADED_AT_ONCE])
                calendars = cycle_calendars(self.ledger, loaded.values())
            schedule = loaded.get(schedule_id)
            if not isinstance(schedule, Schedule) or schedule.deleted:
                continue
            limit = min(settings.catchup_per_schedule, room)
            runs = schedule.register_due(
                self.ledger.clock(), limit, self.policy, calendar=calendars.get(schedule_id)
            )
            if schedule.pending_events:
                batch.append((schedule, runs, limit))
                room -= len(runs)
        self._turn += len(batch)
        return batch, stop

    def _save(self, batch: Batch) -> list[list[Run]]:
        """Many schedules per transaction. The runs saved, per schedule."""
        return [runs for chunk in _chunks(batch) for runs in self._save_or_replan(chunk)]

    def _save_or_replan(self, chunk: Batch) -> list[list[Run]]:
        """The chunk in one transaction; if another writer won any of its schedules, the chunk
        again from one fresh read of them all (another tick mostly registered the same cycles:
        nothing is left to save); if that loses too, one schedule at a time."""
        try:
            return self._save_chunk(chunk)
        except IntegrityError:
            replanned = self._replanned(chunk)
        return self.ledger.save_batch_or_each(
            partial(self._save_chunk, replanned), chunk, self._redo
        )

    def _replanned(self, chunk: Batch) -> Batch:
        """The chunk's schedules as the log has them now, each with the cycles still due."""
        found = self.ledger.get_many([schedule.id for schedule, _, _ in chunk])
        now = self.ledger.clock()
        schedules = [s for s in found.values() if isinstance(s, Schedule)]
        calendars = cycle_calendars(self.ledger, schedules)
        replanned: Batch = []
        for stale, _, limit in chunk:
            schedule = found.get(stale.id)
            if isinstance(schedule, Schedule):
                calendar = calendars.get(schedule.id)
                runs = schedule.register_due(now, limit, self.policy, calendar=calendar)
                replanned.append((schedule, runs, limit))
        return replanned

    def _save_chunk(self, chunk: Batch) -> list[list[Run]]:
        """Save the chunk's schedules and runs in one transaction; the runs of each."""
        for schedule, _, _ in chunk:
            self._known.pop(schedule.id, None)  # unless it is saved, what was saved is unknown
        self.ledger.save(*(a for schedule, runs, _ in chunk for a in (schedule, *runs)))
        self._known.update((schedule.id, schedule) for schedule, _, _ in chunk)
        return [runs for _, runs, _ in chunk]

    def _redo(self, planned: Planned) -> list[Run]:
        """Load, register and save one schedule; what another tick registered is not counted."""
        schedule_id, limit = planned[0].id, planned[2]
        schedule = self.ledger.find(Schedule, schedule_id, "schedule", schedule_id)
        calendar = cycle_calendar(self.ledger, schedule)
        runs = schedule.register_due(self.ledger.clock(), limit, self.policy, calendar=calendar)
        if schedule.pending_events:
            self.ledger.save(schedule, *runs)
        return runs


def _limit_reached(room: int, out_of_time: bool, left: int) -> BudgetStop | None:
    """Which limit stops a scan with `left` due schedules not reached, if one does."""
    if room <= 0:
        return BudgetStop("CRONLEDGER_CATCHUP_PER_SCAN", left)
    if out_of_time:
        return BudgetStop("CRONLEDGER_SCAN_BUDGET_SECONDS", left)
    return None


def _missed(runs: list[Run]) -> Iterator[Missed]:
    """The SKIPPED_MISSED summaries among one schedule's new runs."""
    for run in runs:
        if run.status == SKIPPED_MISSED:
            late = (run.registered_at - run.planned_at).total_seconds()
            yield Missed(run.schedule_id, run.skipped_count, run.planned_at, late)


def _log(report: ScanReport) -> None:
    """The scan's figures at INFO; cycles skipped as missed, or a scan cut short, at WARNING."""
    if report.registered:
        log.info(
            "registered cycles", extra={"cycles": report.registered, "schedules": report.schedules}
        )
    if report.missed:
        worst = sorted(report.missed, key=lambda m: -m.late_seconds)[:MISSED_NAMED_IN_LOG]
        log.warning(
            "cycles skipped as missed: registered more than CRONLEDGER_MISFIRE_GRACE_SECONDS "
            "after their planned instant (docs/operations.md, sizing)",
            extra={
                "cycles": report.skipped_missed,
                "schedules": len(report.missed),
                "missed": [
                    {
                        "schedule_id": str(m.schedule_id),
                        "cycles": m.cycles,
                        "first_planned_at": m.first_planned_at.isoformat(),
                        "late_seconds": round(m.late_seconds, 3),
                    }
                    for m in worst
                ],
            },
        )
    if report.stopped:
        log.warning(
            f"scan stopped at {report.stopped.limit} with schedules still due; they wait for "
            "the next scan (docs/operations.md, sizing)",
            extra={
                "limit": report.stopped.limit,
                "schedules_left": report.stopped.schedules_left,
                "registered": report.registered,
            },
        )


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
