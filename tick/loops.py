"""Background loops: each runs one unit of work every so often until asked to stop."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from cronledger.health import Health

log = logging.getLogger("cronledger.loops")


@dataclass
class Loop:
    """`work` every `interval` seconds (or sooner, when `pause` returns early); a failure is
    logged and counted and the loop goes on.

    `health` hears a beat after every iteration, each failure, and the loop's end, however it
    ends (after `finish`, which lets the notifier record the messages it was sending).
    """

    name: str
    interval: float
    work: Callable[[], object]
    stop: threading.Event = field(default_factory=threading.Event)
    pause: Callable[[float], object] | None = None  # waits up to `interval`; may return early
    health: Health = field(default_factory=Health)
    on_failure: Callable[[str, Exception], object] | None = None  # told the loop's name, error
    finish: Callable[[], object] | None = None  # run once the loop has ended, however it ended

    def run(self) -> None:
        log.info("loop started", extra={"loop": self.name, "interval": self.interval})
        self.health.register(self.name, self.interval)
        try:
            while not self.stop.is_set():
                self._iterate()
                (self.pause or self.stop.wait)(self.interval)
        finally:
            self._finish()
            self.health.stopped(self.name)
            log.info("loop stopped", extra={"loop": self.name})

    def _iterate(self) -> None:
        try:
            self.work()
        except Exception as error:
            self.health.failed(self.name)
            if self.on_failure is not None:
                self.on_failure(self.name, error)
            log.exception("loop iteration failed", extra={"loop": self.name})
        self.health.beat(self.name)

    def _finish(self) -> None:
        if self.finish is None:
            return
        try:
            self.finish()
        except Exception:
            log.exception("loop's finish failed", extra={"loop": self.name})

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name=self.name, daemon=True)
        thread.start()
        return thread


def stop_on_signals(stop: Callable[[], None]) -> None:
    """SIGTERM and SIGINT ask for a graceful stop instead of killing the process."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop())
