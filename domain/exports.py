"""Exports: a list taken out of the service as a file (docs/api.md#exports).

What may be exported, in which formats, and how much: a file holds at most MAX_EXPORT_ROWS
rows, and an export that would hold more is refused (the caller narrows the filters) rather
than cut short, so that every file holds exactly the rows its list shows. Each export is
recorded on its tenant (`Tenant.Exported`), before the file is written.
"""

from __future__ import annotations

from domain.errors import DomainError
from domain.messages import Message

RUNS, SCHEDULES, OPERATIONS = "runs", "schedules", "operations"
LISTINGS = (RUNS, SCHEDULES, OPERATIONS)  # the lists that may be exported
CSV, XLSX = "csv", "xlsx"
FORMATS = (CSV, XLSX)
MAX_EXPORT_ROWS = 100_000
LIMIT_TEXT = f"{MAX_EXPORT_ROWS:,}"  # as the refusal says it


class TooManyRows(DomainError):
    """More rows match an export's filters than a file may hold: nothing is exported."""

    code = "TOO_MANY_ROWS"

    def __init__(self) -> None:
        super().__init__(
            Message(
                "more than {limit} rows match: narrow the filters (a shorter time window, a "
                "status, a search) and export again",
                limit=LIMIT_TEXT,
            )
        )


def check_export(listing: str, file_format: str, rows: int) -> None:
    """An export of `rows` rows of `listing` as `file_format`: TooManyRows beyond the cap."""
    if listing not in LISTINGS or file_format not in FORMATS:
        raise ValueError(f"no export of {listing} as {file_format}")
    if rows > MAX_EXPORT_ROWS:
        raise TooManyRows()
