"""Background loops: each runs one unit of work every so often until asked to stop."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("cronledger.loops")


@dataclass
class Loop:
    """`work` every `interval` seconds (or sooner, when `pause` returns early); a failure is
    logged and the loop goes on."""

    name: str
    interval: float
    work: Callable[[], object]
    stop: threading.Event = field(default_factory=threading.Event)
    pause: Callable[[float], object] | None = None  # waits up to `interval`; may return early

    def run(self) -> None:
        log.info("loop started", extra={"loop": self.name, "interval": self.interval})
        while not self.stop.is_set():
            try:
                self.work()
            except Exception:
                log.exception("loop iteration failed", extra={"loop": self.name})
            (self.pause or self.stop.wait)(self.interval)
        log.info("loop stopped", extra={"loop": self.name})

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name=self.name, daemon=True)
        thread.start()
        return thread


def stop_on_signals(stop: Callable[[], None]) -> None:
    """SIGTERM and SIGINT ask for a graceful stop instead of killing the process."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop())
