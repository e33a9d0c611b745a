"""What a process knows of its own health: its loops' heartbeats and the phase it is in.

One `Health` per process, shared by its loops (which beat), its start-up (which says what it
waits for), its shutdown, its probes (`/livez`, `/readyz`) and its metrics. Times are monotonic
seconds. The phases, in order (docs/operations.md#health): starting, migrating, rebuilding,
ready, draining, stopped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

STARTING = "starting"  # opening the store, or open and not serving yet
MIGRATING = "migrating"  # waiting for, or holding, the migration lock
REBUILDING = "rebuilding"  # read models being rebuilt after an upgrade
READY = "ready"
DRAINING = "draining"  # asked to stop: still serving, no longer ready
STOPPED = "stopped"  # its loops and server have stopped: the process is about to exit
STOPPING = frozenset({DRAINING, STOPPED})
PHASES = (STARTING, MIGRATING, REBUILDING, READY, DRAINING, STOPPED)
MISSED_BEATS = 3  # a loop is dead once it has missed this many of its intervals...
STALL_SECONDS = 60.0  # ...and gone this long without a beat: a long catch-up is not a death


@dataclass
class LoopBeat:
    """A loop's last heartbeat, failure count and whether it still runs."""

    interval: float
    last_beat: float
    failures: int = 0
    last_failure: float | None = None
    stopped: bool = False


@dataclass
class Health:
    """The process's loops and phase; thread-safe."""

    monotonic: Callable[[], float] = time.monotonic
    phase: str = STARTING
    detail: str = "opening the store"  # what the phase waits for or how far it got
    loops: dict[str, LoopBeat] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def enter(self, phase: str, detail: str = "") -> None:
        with self._lock:
            self.phase, self.detail = phase, detail

    def register(self, loop: str, interval: float) -> None:
        with self._lock:
            self.loops[loop] = LoopBeat(interval, self.monotonic())

    def beat(self, loop: str) -> None:
        with self._lock:
            self.loops[loop].last_beat = self.monotonic()

    def failed(self, loop: str) -> None:
        with self._lock:
            beat = self.loops[loop]
            beat.failures += 1
            beat.last_failure = self.monotonic()

    def stopped(self, loop: str) -> None:
        with self._lock:
            self.loops[loop].stopped = True

    def loop_names(self) -> list[str]:
        with self._lock:
            return sorted(self.loops)

    def dead_loops(self) -> list[str]:
        """The loops that stopped, or missed their heartbeat, while the process is not stopping."""
        now = self.monotonic()
        with self._lock:
            if self.phase in STOPPING:
                return []
            return sorted(
                name
                for name, beat in self.loops.items()
                if beat.stopped
                or now - beat.last_beat > max(STALL_SECONDS, MISSED_BEATS * beat.interval)
            )

    @property
    def ready(self) -> bool:
        return self.phase == READY

    @property
    def draining(self) -> bool:
        """Asked to stop (draining, or stopped already)."""
        return self.phase in STOPPING

    def why_not_ready(self) -> str:
        """The phase and what it waits for, e.g. `rebuilding: runs 40%`."""
        with self._lock:
            return f"{self.phase}: {self.detail}" if self.detail else self.phase
