"""Exports (docs/api.md#exports): the execution log, the schedules and the operations audit as
files, with the filters and search of their lists, at most MAX_EXPORT_ROWS rows.

An export counts its rows first (up to one more than the cap: more is refused, nothing
recorded), records itself on the tenant (`Tenant.Exported`: who, which list, which filters,
which format, how many rows), and only then reads its rows, from the read models, a batch at
a time in the list's default order (keyset paging, as the lists' cursors page): never all at
once. The web layer writes them as CSV or XLSX (web/exports.py).

Each column is a stable key, a header said in the reader's language (a `Message`) and the
cell of a row: text, a number or nothing. Instants are ISO 8601 text in UTC as the API writes
them; codes (a status, a kind) stay codes, as the lists answer them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, NamedTuple, TypeVar
from uuid import UUID

from cronledger.persistence.ledger import Ledger
from domain.directory import Principal, Tenant
from domain.exports import MAX_EXPORT_ROWS, OPERATIONS, RUNS, SCHEDULES
from domain.messages import Message
from projections.operations import (
    Operation,
    OperationFilter,
    operation_batches,
    operation_count,
)
from projections.runs import RunFilter, RunRow, run_log_batches, run_log_count
from projections.schedules import (
    ScheduleFilter,
    ScheduleRow,
    live_schedule_batches,
    live_schedule_count,
    schedule_names,
)

Cell = str | int | float | None
T = TypeVar("T")


@dataclass(frozen=True)
class Column(Generic[T]):
    """One column of a file: its stable key, its header, and its cell in a row."""

    key: str
    header: Message
    cell: Callable[[T], Cell]


@dataclass(frozen=True)
class Asked:
    """An export as its request asks for it: the format, the search (`q`), and every filter
    given (the search too), by the name the request gave it, as text: what is recorded."""

    format: str
    search: str | None
    filters: Mapping[str, str]


@dataclass(frozen=True)
class Export:
    """A file to write: its list, format and columns, how many rows matched when it was
    recorded (`rows`), when that was, and its rows, read a batch at a time as they are
    asked for."""

    listing: str
    format: str
    columns: tuple[Column[Any], ...]
    rows: int
    at: datetime
    batches: Iterator[list[Any]]

    @property
    def headers(self) -> list[Message]:
        return [column.header for column in self.columns]

    def lines(self) -> Iterator[list[Cell]]:
        """Each row's cells, in the columns' order."""
        for batch in self.batches:
            for item in batch:
                yield [column.cell(item) for column in self.columns]


def utc_text(value: datetime | None) -> str | None:
    """An instant as the API answers it: ISO 8601 in UTC with `Z`, seconds' fraction if any."""
    if value is None:
        return None
    fraction = f".{value.microsecond:06d}".rstrip("0") if value.microsecond else ""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


def local_text(value: datetime | None) -> str | None:
    """An instant at its local offset, as the API answers `..._local`."""
    return None if value is None else value.isoformat()


def json_cell(value: Any) -> str | None:
    """A JSON value (a trigger, a calendar finding) as compact JSON text, its words as UTF-8."""
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class NamedRun(NamedTuple):
    """A run, with the name its schedule has now (a deleted schedule's too)."""

    run: RunRow
    schedule_name: str | None


RUN_COLUMNS: tuple[Column[NamedRun], ...] = (
    Column("id", Message("Run id"), lambda r: r.run.id),
    Column("schedule_id", Message("Schedule id"), lambda r: r.run.schedule_id),
    Column("schedule_name", Message("Schedule name"), lambda r: r.schedule_name),
    Column("title", Message("Title"), lambda r: r.run.title),
    Column("status", Message("Status"), lambda r: r.run.status),
    Column("trigger", Message("Trigger (scheduled or manual)"), lambda r: r.run.trigger),
    Column("triggered_by", Message("Triggered by"), lambda r: r.run.triggered_by),
    Column("planned_at", Message("Planned at (UTC)"), lambda r: utc_text(r.run.planned_at)),
    Column(
        "planned_at_local",
        Message("Planned at (local time)"),
        lambda r: local_text(r.run.planned_at_local),
    ),
    Column("started_at", Message("Started at (UTC)"), lambda r: utc_text(r.run.started_at)),
    Column("finished_at", Message("Finished at (UTC)"), lambda r: utc_text(r.run.finished_at)),
    Column("duration_seconds", Message("Duration (s)"), lambda r: r.run.duration_seconds),
    Column("attempt_count", Message("Attempts"), lambda r: r.run.attempt_count),
    Column("error_code", Message("Error code"), lambda r: r.run.error_code),
    Column("error_message", Message("Error message"), lambda r: r.run.last_error_message),
    Column("instance_id", Message("Approval instance id"), lambda r: r.run.instance_id),
    Column("target", Message("Target"), lambda r: r.run.target_kind),
    Column("result", Message("Job result"), lambda r: json_cell(r.run.result)),
    Column("initiator_id", Message("Initiator"), lambda r: r.run.initiator_id),
    Column("trace_id", Message("Trace id"), lambda r: r.run.trace_id),
)
SCHEDULE_COLUMNS: tuple[Column[ScheduleRow], ...] = (
    Column("id", Message("Schedule id"), lambda s: s.id),
    Column("name", Message("Name"), lambda s: s.name),
    Column("group", Message("Job group"), lambda s: s.group),
    Column("target", Message("Target"), lambda s: s.target["kind"]),
    Column("enabled", Message("Enabled"), lambda s: "true" if s.enabled else "false"),
    Column("trigger", Message("Trigger"), lambda s: json_cell(s.trigger)),
    Column("timezone", Message("Time zone"), lambda s: s.timezone),
    Column("definition_id", Message("Definition id"), lambda s: s.definition_id),
    Column("initiator_id", Message("Initiator"), lambda s: s.initiator_id),
    Column("misfire_policy", Message("Misfire policy"), lambda s: s.misfire_policy),
    Column("overlap_policy", Message("Overlap policy"), lambda s: s.overlap_policy),
    Column("calendar", Message("Calendar"), lambda s: s.calendar),
    Column("calendar_rule", Message("Calendar rule"), lambda s: s.calendar_rule),
    Column(
        "auto_pause_after_failures",
        Message("Pause after failed cycles in a row"),
        lambda s: s.auto_pause_after_failures,
    ),
    Column("next_fire_at", Message("Next fire (UTC)"), lambda s: utc_text(s.next_fire_at)),
    Column("last_run_status", Message("Last run status"), lambda s: s.last_run_status),
    Column("created_at", Message("Created at (UTC)"), lambda s: utc_text(s.created_at)),
    Column("updated_at", Message("Updated at (UTC)"), lambda s: utc_text(s.updated_at)),
    Column("updated_by", Message("Updated by"), lambda s: s.updated_by),
    Column("version", Message("Version"), lambda s: s.version),
)
OPERATION_COLUMNS: tuple[Column[Operation], ...] = (
    Column("position", Message("Log position"), lambda o: o.position),
    Column("at", Message("At (UTC)"), lambda o: utc_text(o.at)),
    Column("actor", Message("Who"), lambda o: o.actor),
    Column("kind", Message("Kind"), lambda o: o.kind),
    Column("aggregate_type", Message("Done to"), lambda o: o.aggregate_type),
    Column("aggregate_id", Message("Aggregate id"), lambda o: o.aggregate_id),
    Column("schedule_id", Message("Schedule id"), lambda o: o.schedule_id),
    Column("summary", Message("Summary"), lambda o: o.summary),
)


class Exports:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def runs(self, principal: Principal, run_filter: RunFilter, asked: Asked) -> Export:
        """The execution log's runs the filter and search match, newest planned first."""
        store, tenant_id = self.ledger.store, principal.tenant_id
        count = run_log_count(store, tenant_id, run_filter, asked.search, MAX_EXPORT_ROWS)
        at = self._record(principal, RUNS, asked, count)
        found = run_log_batches(store, tenant_id, run_filter, asked.search, MAX_EXPORT_ROWS)
        return Export(RUNS, asked.format, RUN_COLUMNS, count, at, self._named(tenant_id, found))

    def schedules(self, principal: Principal, wanted: ScheduleFilter, asked: Asked) -> Export:
        """The live schedules the filter and search match, oldest created first."""
        store, tenant_id = self.ledger.store, principal.tenant_id
        count = live_schedule_count(store, tenant_id, wanted, asked.search, MAX_EXPORT_ROWS)
        at = self._record(principal, SCHEDULES, asked, count)
        found = live_schedule_batches(store, tenant_id, wanted, asked.search, MAX_EXPORT_ROWS)
        return Export(SCHEDULES, asked.format, SCHEDULE_COLUMNS, count, at, found)

    def operations(self, principal: Principal, wanted: OperationFilter, asked: Asked) -> Export:
        """The operations the filter (of the principal's tenant) and search match, newest
        first."""
        store = self.ledger.store
        count = operation_count(store, wanted, asked.search, MAX_EXPORT_ROWS)
        at = self._record(principal, OPERATIONS, asked, count)
        found = operation_batches(store, wanted, asked.search, MAX_EXPORT_ROWS)
        return Export(OPERATIONS, asked.format, OPERATION_COLUMNS, count, at, found)

    def _record(self, principal: Principal, listing: str, asked: Asked, rows: int) -> datetime:
        """`Tenant.Exported`, saved before any row is read (TooManyRows instead, beyond the
        cap); when it was recorded."""

        def record() -> datetime:
            tenant_id = principal.tenant_id
            tenant = self.ledger.find(Tenant, tenant_id, "tenant", tenant_id)
            at = self.ledger.clock()
            tenant.record_export(
                listing, asked.filters, asked.format, rows, at, principal.account_id
            )
            self.ledger.save(tenant)
            return at

        return self.ledger.retrying(record, one_at_a_time=principal.tenant_id)

    def _named(self, tenant_id: UUID, batches: Iterable[list[RunRow]]) -> Iterator[list[NamedRun]]:
        """Each batch of runs with their schedules' names, read for the batch at once."""
        for runs in batches:
            names = schedule_names(self.ledger.store, tenant_id, {run.schedule_id for run in runs})
            yield [NamedRun(run, names.get(run.schedule_id, (None, False))[0]) for run in runs]
