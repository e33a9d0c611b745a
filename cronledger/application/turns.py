"""Registration before launching, within one process.

On SQLite every commit takes the one write lock: a tick saving a spike's cycles in chunks would
queue each chunk behind the worker's launch commits, and cycles due right after the spike would
be registered late (past the misfire grace, skipped). So while this process's tick saves a
scan, its worker waits before its next commit, for at most a scan's budget.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class RegistrationTurn:
    def __init__(self) -> None:
        self._idle = threading.Event()
        self._idle.set()

    @contextmanager
    def registering(self) -> Iterator[None]:
        """While the tick saves a scan's cycles."""
        self._idle.clear()
        try:
            yield
        finally:
            self._idle.set()

    def wait(self, timeout: float) -> None:
        """Until no scan is being saved, or `timeout` seconds."""
        self._idle.wait(timeout)
