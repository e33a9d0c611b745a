"""Background loops: each runs one unit of work every so often until asked to stop."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from cronledger.health import Health
from cronledger.logs import Outage
from cronledger.tracing import tracer

log = logging.getLogger("cronledger.loops")


@dataclass
class Loop:
    """`work` every `interval` seconds (or sooner, when `pause` returns early); a failure is
    counted and the loop goes on. Failures in a row are one outage, logged with its first
    error's trace and again, with their count, when the loop works again: not a line per
    iteration.

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
    outage: Outage = field(init=False)

    def __post_init__(self) -> None:
        self.outage = Outage(
            log,
            "loop iteration failed",
            "loop recovered",
            {"loop": self.name},
            monotonic=self.health.monotonic,
        )

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
            self.outage.ended("loop stopped while failing")
            log.info("loop stopped", extra={"loop": self.name})

    def _iterate(self) -> None:
        try:
            with tracer().start_as_current_span(f"{self.name} iteration"):  # its store calls'
                self.work()
        except Exception as error:
            self.health.failed(self.name)
            if self.on_failure is not None:
                self.on_failure(self.name, error)
            self.outage.failed()
        else:
            self.outage.succeeded()
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
