"""What this process's tick has done since it started: the facts behind its capacity warnings
and metrics (docs/operations.md, sizing)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class TickCounters:
    """Running totals, written by the tick after each scan and read by `/metrics`; thread-safe."""

    scans: int = 0
    registered: int = 0  # runs registered, SKIPPED_MISSED summaries included
    skipped_missed: int = 0  # cycles recorded as skipped because they were missed
    budget_stops: int = 0  # scans stopped by a limit while schedules were still due
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count_scan(self, registered: int, skipped_missed: int, stopped_at_budget: bool) -> None:
        with self._lock:
            self.scans += 1
            self.registered += registered
            self.skipped_missed += skipped_missed
            self.budget_stops += stopped_at_budget
