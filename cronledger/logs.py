"""Structured log lines: one JSON object a line on standard error."""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime

from pythonjsonlogger.json import JsonFormatter


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


def configure_logging(level: str = "INFO") -> None:
    """Every logger of the process to standard error, from `level` (CRONLEDGER_LOG_LEVEL) up."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(json_formatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
