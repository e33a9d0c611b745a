"""`calendars`: each tenant's working calendars at their current revision; `working_days`:
every date of the years the tenant's default calendar covers, worked or not and why."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, NamedTuple
from uuid import UUID

from cronledger.persistence.store import Store, as_instant
from domain.calendars import Calendar, working_calendar
from domain.directory import Tenant
from domain.working_time import days_in
from projections.engine import EventClass, Handler, Projection, Sql
from projections.json_columns import json_text, json_value
from projections.keyset import ListSpec, Order, Row, Slice, Window, read_slice


class CalendarsProjection(Projection):
    """One row per calendar: its key, name, region and zone, its current revision, and that
    revision's days and hours (`revision_fields`, JSON as the API answers them); and the working
    days of each tenant's default calendar, kept at its current revision."""

    name = "calendars"
    tables = ("calendars", "working_days")

    def ddl(self, sql: Sql) -> list[str]:
        ts = sql.timestamp_type
        return [
            "CREATE TABLE IF NOT EXISTS calendars ("
            "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, key TEXT NOT NULL, "
            "name TEXT NOT NULL, region TEXT, timezone TEXT NOT NULL, "
            "revision INTEGER NOT NULL, revision_fields TEXT NOT NULL, "
            f"created_at {ts} NOT NULL, updated_at {ts} NOT NULL, "
            "version INTEGER NOT NULL, position BIGINT NOT NULL, "
            "is_default BOOLEAN NOT NULL DEFAULT false)",
            "CREATE INDEX IF NOT EXISTS calendars_in_order ON calendars (tenant_id, position)",
            "CREATE UNIQUE INDEX IF NOT EXISTS calendars_by_key ON calendars (tenant_id, key)",
            "CREATE TABLE IF NOT EXISTS working_days ("
            "tenant_id TEXT NOT NULL, day TEXT NOT NULL, working_day BOOLEAN NOT NULL, "
            "reason TEXT NOT NULL, name TEXT, iso_week INTEGER NOT NULL, "
            "iso_year INTEGER NOT NULL, calendar_key TEXT NOT NULL, "
            "calendar_revision INTEGER NOT NULL, PRIMARY KEY (tenant_id, day))",
        ]

    def handlers(self) -> dict[EventClass, Handler]:
        return {
            Calendar.Created: _created,
            Calendar.Revised: _revised,
            Tenant.DefaultCalendarChosen: _default_chosen,
        }


def _kept(fields: dict[str, Any], revision: int, source: dict[str, Any]) -> str:
    return json_text({**fields, "revision": revision, "source": source})


def _created(sql: Sql, event: Calendar.Created, position: int) -> None:
    sql.write(
        "INSERT INTO calendars (id, tenant_id, key, name, region, timezone, revision, "
        "revision_fields, created_at, updated_at, version, position) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            str(event.originator_id),
            str(event.tenant_id),
            event.key,
            event.fields["name"],
            event.fields["region"],
            event.fields["timezone"],
            1,
            _kept(event.fields, 1, event.source),
            event.at,
            event.at,
            event.originator_version,
            position,
        ),
    )


def _revised(sql: Sql, event: Calendar.Revised, position: int) -> None:
    sql.write(
        "UPDATE calendars SET name = ?, region = ?, timezone = ?, revision = ?, "
        "revision_fields = ?, updated_at = ?, version = ? WHERE id = ?",
        (
            event.fields["name"],
            event.fields["region"],
            event.fields["timezone"],
            event.revision,
            _kept(event.fields, event.revision, event.source),
            event.at,
            event.originator_version,
            str(event.originator_id),
        ),
    )
    _list_working_days(sql, "id = ? AND is_default", str(event.originator_id))


def _default_chosen(sql: Sql, event: Tenant.DefaultCalendarChosen, position: int) -> None:
    tenant_id = str(event.originator_id)
    sql.write("UPDATE calendars SET is_default = false WHERE tenant_id = ?", (tenant_id,))
    sql.write("DELETE FROM working_days WHERE tenant_id = ?", (tenant_id,))
    if event.calendar_key is not None:
        sql.write(
            "UPDATE calendars SET is_default = true WHERE tenant_id = ? AND key = ?",
            (tenant_id, event.calendar_key),
        )
        _list_working_days(sql, "tenant_id = ? AND key = ?", tenant_id, event.calendar_key)


def _list_working_days(sql: Sql, where: str, *params: str) -> None:
    """(Re)write `working_days` for the calendar `where` finds, at its current revision: every
    date of the years it covers (none when it finds nothing)."""
    found = sql.execute(
        f"SELECT tenant_id, key, revision, revision_fields FROM calendars WHERE {where}",  # noqa: S608
        params,
    ).fetchall()
    for tenant_id, key, revision, kept in found:
        working = working_calendar(json_value(str(kept)))
        sql.write("DELETE FROM working_days WHERE tenant_id = ?", (tenant_id,))
        sql.write_rows(
            "INSERT INTO working_days (tenant_id, day, working_day, reason, name, iso_week, "
            "iso_year, calendar_key, calendar_revision) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                (
                    tenant_id,
                    day.date.isoformat(),
                    day.working,
                    day.reason,
                    day.name,
                    day.date.isocalendar().week,
                    day.date.isocalendar().year,
                    key,
                    revision,
                )
                for year in sorted(working.covered_years)
                for day in days_in(working, date(year, 1, 1), date(year, 12, 31))
            ),
        )


CALENDAR_ORDER = Order("calendars", "position")
CALENDAR_LISTING = ListSpec(
    CALENDAR_ORDER,
    "created_at",
    {
        "key": "key",
        "name": "name",
        "region": "region",
        "created_at": "position",
        "updated_at": "updated_at",
    },
    tie="position",
    nullable=frozenset({"region"}),
    searched=("LOWER(key)", "LOWER(name)"),
)
COLUMNS = "id, key, revision_fields, created_at, updated_at, version"


class CalendarRow(NamedTuple):
    """A calendar at its current revision: everything the API answers of it."""

    id: str
    key: str
    name: str
    region: str | None
    timezone: str
    weekend: list[int]
    holidays: list[dict[str, str]]
    workdays: list[dict[str, str]]
    working_hours: list[dict[str, str]]
    years: list[int]
    revision: int
    source: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    version: int

    @classmethod
    def of(cls, row: Row) -> CalendarRow:
        calendar_id, key, kept, created_at, updated_at, version = row
        created, updated = as_instant(created_at), as_instant(updated_at)
        assert created is not None  # NOT NULL columns
        assert updated is not None
        return cls.of_kept(
            str(calendar_id), str(key), json_value(str(kept)), created, updated, int(version)
        )

    @classmethod
    def of_kept(
        cls,
        calendar_id: str,
        key: str,
        kept: dict[str, Any],
        created_at: datetime,
        updated_at: datetime,
        version: int,
    ) -> CalendarRow:
        """A revision as the aggregate or the row keeps it."""
        return cls(
            id=calendar_id,
            key=key,
            name=kept["name"],
            region=kept["region"],
            timezone=kept["timezone"],
            weekend=list(kept["weekend"]),
            holidays=list(kept["holidays"]),
            workdays=list(kept["workdays"]),
            working_hours=list(kept["working_hours"]),
            years=list(kept["years"]),
            revision=int(kept["revision"]),
            source=dict(kept["source"]),
            created_at=created_at,
            updated_at=updated_at,
            version=version,
        )

    @classmethod
    def of_aggregate(cls, calendar: Calendar, revision: int | None = None) -> CalendarRow:
        """The calendar as a command saved it (or one of its earlier revisions)."""
        kept = calendar.revision_of(calendar.revision if revision is None else revision)
        return cls.of_kept(
            str(calendar.id),
            calendar.key,
            kept,
            calendar.created_at,
            kept["at"] if revision is not None else calendar.updated_at,
            calendar.version,
        )


def calendar_page(store: Store, tenant_id: UUID, window: Window) -> Slice[CalendarRow]:
    """One page of the tenant's calendars (oldest first unless sorted), and how many."""
    where = ("tenant_id = ?", [str(tenant_id)])
    found = read_slice(store, "calendars", where, CALENDAR_LISTING, window, COLUMNS)
    rows = [CalendarRow.of(row) for row in found.rows]
    return Slice(rows, found.total, found.next_key, found.capped)


def calendar_row(store: Store, tenant_id: UUID, calendar_id: UUID) -> CalendarRow | None:
    """The tenant's calendar of this id, if it has one."""
    rows = store.query(
        f"SELECT {COLUMNS} FROM calendars WHERE tenant_id = ? AND id = ?",  # noqa: S608
        (str(tenant_id), str(calendar_id)),
    )
    return CalendarRow.of(rows[0]) if rows else None
