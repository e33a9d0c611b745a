"""Auto-pause (docs/api.md#auto-pause): the worker counts each schedule's cycles that end
without launching, in the commit that ends them, and the count pauses the schedule.

A run that ends in this commit moves its schedule's count: dead-lettered (`DEAD_LETTER`) or
failed for good (`FAILED`), it is one more failed cycle; launched (`SUCCEEDED`), the count
starts again. The schedule is saved with the runs only when its count moved, so a launch on a
schedule with no failed cycle costs a read and writes nothing to it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from cronledger.persistence.ledger import Ledger
from domain.runs import DEAD_LETTER, FAILED, SUCCEEDED, Run
from domain.schedules import Schedule

log = logging.getLogger("tick.worker")
WITHOUT_LAUNCH = frozenset({DEAD_LETTER, FAILED})
ENDINGS = WITHOUT_LAUNCH | {SUCCEEDED}


@dataclass(frozen=True)
class CyclesCounted:
    """The schedules whose count moved (to save with the runs), and those it paused."""

    schedules: list[Schedule]
    paused: list[Schedule]

    def log_paused(self) -> None:
        """Once committed: a WARNING for each schedule the count paused."""
        for schedule in self.paused:
            pause = schedule.auto_paused or {}
            log.warning(
                "schedule auto-paused",
                extra={
                    "schedule_id": str(schedule.id),
                    "tenant_id": str(schedule.tenant_id),
                    "runs": pause.get("runs"),
                },
            )


def cycles_counted(ledger: Ledger, runs: Sequence[Run], at: datetime) -> CyclesCounted:
    """Count the cycles of `runs` that end in this commit (they hold the events that end them)
    on their schedules, in the order given."""
    ended = [run for run in runs if run.status in ENDINGS and run.pending_events]
    if not ended:
        return CyclesCounted([], [])
    found = ledger.get_many([run.schedule_id for run in ended])
    for run in ended:
        schedule = found.get(run.schedule_id)
        if not isinstance(schedule, Schedule) or schedule.tenant_id != run.tenant_id:
            continue
        if run.status == SUCCEEDED:
            schedule.cycle_launched(str(run.id), at)
        else:
            schedule.cycle_failed(str(run.id), run.error_code or run.status, at)
    moved = [s for s in found.values() if isinstance(s, Schedule) and s.pending_events]
    paused = [s for s in moved if any(isinstance(e, Schedule.AutoPaused) for e in s.pending_events)]
    return CyclesCounted(moved, paused)
