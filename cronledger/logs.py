"""Structured log lines: one JSON object a line on standard error."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO

from pythonjsonlogger.json import JsonFormatter

from cronledger.tracing import TraceFields


class _Formatter(JsonFormatter):
    """Times in ISO 8601 with their offset, to the millisecond: 2026-11-30T22:40:01.123+00:00."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


def json_formatter() -> logging.Formatter:
    """What makes a record one JSON line: time, level, logger, message and the record's extras."""
    return _Formatter(
        "%(asctime)s %(levelname)s %(name)s %(message)s",
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
    )


def json_handler(stream: IO[str]) -> logging.Handler:
    """One JSON line a record on `stream`; a line written in a trace names it (`trace_id`,
    `span_id`)."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(json_formatter())
    handler.addFilter(TraceFields())
    return handler


def configure_logging(level: str = "INFO") -> None:
    """Every logger of the process to standard error, from `level` (CRONLEDGER_LOG_LEVEL) up."""
    handler = json_handler(sys.stderr)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


@dataclass
class Outage:
    """Failures of one thing in a row (a loop's iterations, a connection's attempts), logged as
    one: the first with its error's trace, then nothing until it works again, which is logged
    with how many failed (`failures`), how many were not logged (`suppressed`) and for how long
    (`outage_seconds`). Not thread-safe: one per thread that tries.
    """

    log: logging.Logger
    began_message: str  # the first failure's line
    ended_message: str  # the line once it works again
    fields: Mapping[str, object] = field(default_factory=dict)
    monotonic: Callable[[], float] = time.monotonic
    failures: int = 0
    started: float = 0.0

    @property
    def ongoing(self) -> bool:
        return self.failures > 0

    def failed(self, level: int = logging.ERROR) -> None:
        """Call from the `except` block: the first failure of an outage is logged with it."""
        self.failures += 1
        if self.failures == 1:
            self.started = self.monotonic()
            self.log.log(level, self.began_message, exc_info=True, extra={**self.fields})

    def succeeded(self) -> None:
        """It works (again): the end of an outage, if one was going on, is logged."""
        self.ended(self.ended_message)

    def ended(self, message: str) -> None:
        """The outage ends (the thing works again, or stops being tried): one line, `message`."""
        if not self.failures:
            return
        self.log.warning(
            message,
            extra={
                **self.fields,
                "failures": self.failures,
                "suppressed": self.failures - 1,
                "outage_seconds": round(self.monotonic() - self.started, 3),
            },
        )
        self.failures = 0
