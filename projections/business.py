"""Business time: where an instant falls in the service's zone (`CRONLEDGER_TIMEZONE`), as the
columns analysts group by: its local date, local hour, ISO week and ISO year.

The zone is fixed when a row is written, so the projections that keep these columns name it in
their layout: when `CRONLEDGER_TIMEZONE` changes, their tables are rebuilt from the log.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

# Each instant's columns, after its prefix (`planned_` gives `planned_local_date`, ...).
SUFFIXES = ("local_date", "local_hour", "iso_week", "iso_year")
BusinessValues = tuple[str | None, int | None, int | None, int | None]


class BusinessTime:
    """One zone's business columns: their DDL, their names, and an instant's values."""

    def __init__(self, zone: str) -> None:
        self.zone = zone
        self._tz = ZoneInfo(zone)

    @staticmethod
    def names(prefix: str = "") -> list[str]:
        return [prefix + suffix for suffix in SUFFIXES]

    @staticmethod
    def ddl(prefix: str = "") -> str:
        """The columns' definitions, comma-separated (nullable: NULL when the instant is)."""
        types = ("TEXT", "INTEGER", "INTEGER", "INTEGER")
        return ", ".join(
            f"{name} {kind}" for name, kind in zip(BusinessTime.names(prefix), types, strict=True)
        )

    def of(self, instant: datetime) -> tuple[str, int, int, int]:
        """`YYYY-MM-DD`, the hour 0-23, the ISO week 1-53 and the ISO year of the instant in
        the zone."""
        local = instant.astimezone(self._tz)
        year, week, _ = local.isocalendar()
        return local.date().isoformat(), local.hour, week, year

    def values(self, instant: datetime | None) -> BusinessValues:
        """`of` the instant; all None for no instant."""
        return (None, None, None, None) if instant is None else self.of(instant)
