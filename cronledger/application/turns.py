"""Registration before launching, within one process.

On SQLite every commit takes the one write lock: a tick saving a spike's cycles in chunks would
queue each chunk behind the worker's launch commits, and cycles due right after the spike would
be registered late (past the misfire grace, skipped). So while this process's tick saves a
scan, its worker and its projections loop wait before their next commit, for at most a scan's
budget.

Once the scan has saved cycles, the worker is woken: it launches them at once instead of at its
next poll, up to its interval later.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SEEN_WITHIN = 0.1  # seconds a stop may wait for a worker waiting for registered cycles


class RegistrationTurn:
    def __init__(self) -> None:
        self._idle = threading.Event()
        self._idle.set()
        self._registered = threading.Event()

    @contextmanager
    def registering(self) -> Iterator[None]:
        """While the tick saves a scan's cycles."""
        self._idle.clear()
        try:
            yield
        finally:
            self._idle.set()

    def registered(self) -> None:
        """The tick has committed new cycles: a worker waiting for them polls now."""
        self._registered.set()

    def wait(self, timeout: float) -> None:
        """Until no scan is being saved, or `timeout` seconds."""
        self._idle.wait(timeout)

    def wait_for_cycles(self, timeout: float, stop: threading.Event) -> None:
        """Up to `timeout` seconds; less once the tick has registered cycles, or `stop` is set."""
        deadline = time.monotonic() + timeout
        while not stop.is_set() and (left := deadline - time.monotonic()) > 0:
            if self._registered.wait(min(left, STOP_SEEN_WITHIN)):
                self._registered.clear()
                return
