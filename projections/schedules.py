"""`schedules`: every schedule's current state, plan and last run."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, NamedTuple, get_args
from uuid import UUID

from cronledger.persistence.ledger import jsonable
from cronledger.persistence.store import Store, as_instant, tenant_scope
from domain.runs import Run
from domain.schedules import Schedule, ScheduleSettings
from domain.triggers import local_or_none
from domain.values import FormData
from projections.engine import EventClass, Handler, Projection, Sql
from projections.keyset import (
    ListSpec,
    Order,
    Row,
    Slice,
    Window,
    count_up_to,
    names_by_id,
    read_slice,
    searched_text,
    searched_where,
    searching,
    walk,
)
from projections.pauses import NOT_PAUSED_TENANT

RunStatusEvent = (
    Run.AttemptStarted
    | Run.AttemptSucceeded
    | Run.AttemptFailed
    | Run.AttemptInterrupted
    | Run.SkippedOverlap
    | Run.Cancelled
    | Run.Retried
)
RUN_STATUS_EVENTS = get_args(RunStatusEvent)


class SchedulesProjection(Projection):
    """Every schedule as it is now, deleted ones included, with its plan and its last run.

    `version` is the API's; `log_version` is the aggregate's event count (the tick checks it).
    """

    name = "schedules"
    tables = ("schedules",)

    def ddl(self, sql: Sql) -> list[str]:
        ts = sql.timestamp_type
        return [
            "CREATE TABLE IF NOT EXISTS schedules ("
            "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, name TEXT NOT NULL, "
            "definition_id TEXT NOT NULL, initiator_id TEXT NOT NULL, trigger_kind TEXT NOT NULL, "
            "trigger TEXT NOT NULL, timezone TEXT NOT NULL, misfire_policy TEXT NOT NULL, "
            f"overlap_policy TEXT NOT NULL, enabled BOOLEAN NOT NULL, next_fire_at {ts}, "
            f"created_at {ts} NOT NULL, updated_at {ts} NOT NULL, updated_by TEXT NOT NULL, "
            f"deleted_at {ts}, last_run_id TEXT, last_run_planned_at {ts}, last_run_status TEXT, "
            "version INTEGER NOT NULL, log_version INTEGER NOT NULL, settings TEXT NOT NULL, "
            "definition_revision INTEGER NOT NULL, search_text TEXT NOT NULL, "
            "job_group TEXT NOT NULL, target_kind TEXT NOT NULL, "
            f"auto_pause_after_failures INTEGER, auto_paused_at {ts}, auto_pause_reason TEXT, "
            "auto_paused_runs TEXT)",
            "CREATE INDEX IF NOT EXISTS schedules_by_tenant "
            "ON schedules (tenant_id, created_at, id)",
            "CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_fire_at)",
            "CREATE INDEX IF NOT EXISTS schedules_by_last_run ON schedules (last_run_id)",
            "CREATE INDEX IF NOT EXISTS schedules_by_overlap_policy "
            "ON schedules (tenant_id, overlap_policy, created_at, id)",
            "CREATE INDEX IF NOT EXISTS schedules_by_name ON schedules (tenant_id, name, id)",
            "CREATE INDEX IF NOT EXISTS schedules_by_group "
            "ON schedules (tenant_id, job_group, created_at, id)",
        ]

    search_columns = (("schedules", "search_text"),)

    def handlers(self) -> dict[EventClass, Handler]:
        return {cls: handler for handlers in self.passes() for cls, handler in handlers.items()}

    def passes(self) -> list[dict[EventClass, Handler]]:
        """The schedule's own events, then its runs' (which only touch the `last_run_` columns)."""
        return [
            {
                Schedule.Created: self.created,
                Schedule.Updated: self.updated,
                Schedule.Enabled: self.switched,
                Schedule.Disabled: self.switched,
                Schedule.PlanAdvanced: self.advanced,
                Schedule.RunRequested: self.log_moved,
                Schedule.CycleFailed: self.log_moved,
                Schedule.FailuresCleared: self.log_moved,
                Schedule.AutoPaused: self.auto_paused,
                Schedule.Deleted: self.deleted,
            },
            {
                Run.Registered: self.run_registered,
                **dict.fromkeys(RUN_STATUS_EVENTS, self.run_changed),
            },
        ]

    @staticmethod
    def created(sql: Sql, event: Schedule.Created, position: int) -> None:
        sql.write(
            "INSERT INTO schedules (id, tenant_id, name, definition_id, initiator_id, "
            "trigger_kind, trigger, timezone, misfire_policy, overlap_policy, job_group, "
            "target_kind, auto_pause_after_failures, enabled, next_fire_at, created_at, "
            "updated_at, updated_by, version, log_version, settings, definition_revision, "
            "search_text) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)",
            (
                str(event.originator_id),
                str(event.tenant_id),
                *_settings(event.settings),
                event.enabled,
                event.next_fire_at,
                event.at,
                event.at,
                event.actor,
                event.originator_version,
                settings_text(event.settings),
                event.definition_revision,
                searched_text(event.settings["name"]),
            ),
        )

    @staticmethod
    def updated(sql: Sql, event: Schedule.Updated, position: int) -> None:
        sql.write(
            "UPDATE schedules SET name = ?, definition_id = ?, initiator_id = ?, "
            "trigger_kind = ?, trigger = ?, timezone = ?, misfire_policy = ?, "
            "overlap_policy = ?, job_group = ?, target_kind = ?, auto_pause_after_failures = ?, "
            "enabled = ?, next_fire_at = ?, updated_at = ?, updated_by = ?, "
            "version = version + 1, log_version = ?, settings = ?, definition_revision = ?, "
            "search_text = ? WHERE id = ?",
            (
                *_settings(event.settings),
                event.enabled,
                event.next_fire_at,
                event.at,
                event.actor,
                event.originator_version,
                settings_text(event.settings),
                event.definition_revision,
                searched_text(event.settings["name"]),
                str(event.originator_id),
            ),
        )
        if event.enabled:
            _unpaused(sql, event)

    @staticmethod
    def switched(sql: Sql, event: Schedule.Enabled | Schedule.Disabled, position: int) -> None:
        """`Schedule.Enabled` or `.Disabled`: the switch and the plan move, the settings stay;
        enabled, a pause by the service is over."""
        sql.write(
            "UPDATE schedules SET enabled = ?, next_fire_at = ?, updated_at = ?, updated_by = ?, "
            "version = version + 1, log_version = ? WHERE id = ?",
            (
                isinstance(event, Schedule.Enabled),
                event.next_fire_at if isinstance(event, Schedule.Enabled) else None,
                event.at,
                event.actor,
                event.originator_version,
                str(event.originator_id),
            ),
        )
        if isinstance(event, Schedule.Enabled):
            _unpaused(sql, event)

    @staticmethod
    def auto_paused(sql: Sql, event: Schedule.AutoPaused, position: int) -> None:
        """Disabled by the service: the version moves, the last save (who, when) stays."""
        sql.write(
            "UPDATE schedules SET enabled = ?, next_fire_at = NULL, auto_paused_at = ?, "
            "auto_pause_reason = ?, auto_paused_runs = ?, version = version + 1, "
            "log_version = ? WHERE id = ?",
            (
                False,
                event.at,
                event.reason,
                json.dumps(event.runs),
                event.originator_version,
                str(event.originator_id),
            ),
        )

    @staticmethod
    def log_moved(
        sql: Sql,
        event: Schedule.RunRequested | Schedule.CycleFailed | Schedule.FailuresCleared,
        position: int,
    ) -> None:
        """A manual run on the schedule's history, or its count of failed cycles moving: only
        the aggregate's version moves."""
        sql.write(
            "UPDATE schedules SET log_version = ? WHERE id = ?",
            (event.originator_version, str(event.originator_id)),
        )

    @staticmethod
    def advanced(sql: Sql, event: Schedule.PlanAdvanced, position: int) -> None:
        sql.write(
            "UPDATE schedules SET next_fire_at = ?, log_version = ? WHERE id = ?",
            (event.next_fire_at, event.originator_version, str(event.originator_id)),
        )

    @staticmethod
    def deleted(sql: Sql, event: Schedule.Deleted, position: int) -> None:
        sql.write(
            "UPDATE schedules SET enabled = ?, next_fire_at = NULL, deleted_at = ?, "
            "updated_at = ?, updated_by = ?, version = version + 1, log_version = ? "
            "WHERE id = ?",
            (
                False,
                event.at,
                event.at,
                event.actor,
                event.originator_version,
                str(event.originator_id),
            ),
        )

    @staticmethod
    def run_registered(sql: Sql, event: Run.Registered, position: int) -> None:
        """The newest planned run is the schedule's last run."""
        sql.write(
            "UPDATE schedules SET last_run_id = ?, last_run_planned_at = ?, last_run_status = ? "
            "WHERE id = ? AND (last_run_planned_at IS NULL OR last_run_planned_at < ? "
            "OR (last_run_planned_at = ? AND last_run_id < ?))",
            (
                str(event.originator_id),
                event.planned_at,
                event.status,
                str(event.schedule_id),
                event.planned_at,
                event.planned_at,
                str(event.originator_id),
            ),
        )

    @staticmethod
    def run_changed(sql: Sql, event: RunStatusEvent, position: int) -> None:
        sql.write(
            "UPDATE schedules SET last_run_status = ? WHERE last_run_id = ?",
            (event.status, str(event.originator_id)),
        )


def _unpaused(sql: Sql, event: Schedule.Updated | Schedule.Enabled) -> None:
    """Enabled: a pause by the service, if there was one, is over."""
    sql.write(
        "UPDATE schedules SET auto_paused_at = NULL, auto_pause_reason = NULL, "
        "auto_paused_runs = NULL WHERE id = ? AND auto_paused_at IS NOT NULL",
        (str(event.originator_id),),
    )


def _settings(settings: dict[str, Any]) -> tuple[Any, ...]:
    """The settings columns, in the order the statements above name them."""
    return (
        settings["name"],
        settings["definition_id"],
        settings["initiator_id"],
        settings["trigger"]["kind"],
        json.dumps(settings["trigger"], ensure_ascii=False, sort_keys=True),
        settings["timezone"],
        settings["misfire_policy"],
        settings["overlap_policy"],
        settings["group"],
        settings["target"]["kind"],
        settings["auto_pause_after_failures"],
    )


def settings_text(settings: Mapping[str, Any]) -> str:
    """The settings as saved, as JSON text: their keys, and the trigger's and the form data's,
    in the order given (as the API answers them)."""
    plain = {**settings, "form_data": dict(settings["form_data"])}
    return json.dumps(plain, ensure_ascii=False, separators=(",", ":"))


class LastRun(NamedTuple):
    """The schedule's newest planned run, as its `schedules` row keeps it."""

    run_id: str
    planned_at: datetime | None
    status: str | None


def due_schedules(store: Store, now: datetime, limit: int) -> list[tuple[UUID, int]]:
    """(schedule id, aggregate version) of the schedules whose next fire has come, oldest first;
    a paused tenant's are not due."""
    rows = store.query(
        f"SELECT id, log_version FROM schedules WHERE next_fire_at <= ? AND {NOT_PAUSED_TENANT} "  # noqa: S608
        "ORDER BY next_fire_at, id LIMIT ?",
        (now, limit),
    )
    return [(UUID(row[0]), int(row[1])) for row in rows]


def due_schedule_backlog(
    store: Store, tenant_id: UUID | None, now: datetime
) -> tuple[int, datetime | None]:
    """How many schedules' next fire has come, and the oldest such fire (one tenant, or all);
    a paused tenant's are not due."""
    scope, params = tenant_scope(tenant_id)
    rows = store.query(
        f"SELECT COUNT(*), MIN(next_fire_at) FROM schedules WHERE {scope} next_fire_at <= ? "  # noqa: S608
        f"AND {NOT_PAUSED_TENANT}",
        (*params, now),
    )
    count, oldest = rows[0]
    return int(count), as_instant(oldest)


def last_run_of(store: Store, schedule_id: UUID) -> LastRun | None:
    """The schedule's newest planned run, if it has any."""
    rows = store.query(
        "SELECT last_run_id, last_run_planned_at, last_run_status FROM schedules "
        "WHERE id = ? AND last_run_id IS NOT NULL",
        (str(schedule_id),),
    )
    if not rows:
        return None
    run_id, planned_at, status = rows[0]
    return LastRun(str(run_id), as_instant(planned_at), status)


@dataclass(frozen=True)
class ScheduleFilter:
    """Which live schedules of a tenant to list, each condition an exact match; None leaves a
    condition out."""

    name: str | None = None
    enabled: bool | None = None
    definition_id: str | None = None
    initiator_id: str | None = None
    overlap_policy: str | None = None
    job_group: str | None = None  # the API's `group`
    name_contains: str | None = None  # not an exact match: a part of the name, in any case

    def where(self, tenant_id: UUID) -> tuple[str, list[Any]]:
        """The SQL condition on the tenant's undeleted schedules, and its parameters."""
        exact = {k: v for k, v in asdict(self).items() if v is not None and k != "name_contains"}
        conditions = ["tenant_id = ?", "deleted_at IS NULL", *(f"{c} = ?" for c in exact)]
        params = [str(tenant_id), *exact.values()]
        if self.name_contains:
            named, named_params = name_holds(self.name_contains)
            conditions.append(named)
            params.extend(named_params)
        return " AND ".join(conditions), params


def name_holds(text: str) -> tuple[str, list[Any]]:
    """The condition that a `schedules` row's name holds `text`, in any case (its
    `search_text` is its name, lower-cased), and its parameters."""
    return searching(("search_text",), text)


# Oldest first; `id` orders schedules created at the same instant.
SCHEDULE_ORDER = Order("schedules", "created_at", tie="id")
SCHEDULE_LISTING = ListSpec(
    SCHEDULE_ORDER,
    "created_at",
    {
        "name": "name",
        "created_at": "created_at",
        "updated_at": "updated_at",
        "next_fire_at": "next_fire_at",
        "enabled": "enabled",
    },
    nullable=frozenset({"next_fire_at"}),
    searched=("search_text",),
)


class ScheduleRow(NamedTuple):
    """A schedule as its `schedules` row keeps it, and as the API answers it, less what is
    computed when asked (its next fire times, its last skip): its settings' fields,
    `next_fire_at_local` and `last_run` are read from its columns."""

    id: str
    settings: ScheduleSettings
    enabled: bool
    version: int
    created_at: datetime
    updated_at: datetime
    updated_by: str
    next_fire_at: datetime | None
    definition_revision: int
    last_run_id: str | None
    last_run_planned_at: datetime | None
    last_run_status: str | None
    auto_paused_at: datetime | None
    auto_pause_reason: str | None
    auto_paused_runs: list[dict[str, str]] | None

    @classmethod
    def of(cls, row: Row) -> ScheduleRow:
        """The row as read: instants as either store gives them, the settings as text."""
        values = dict(zip(cls._fields, row, strict=True))
        for name in ("created_at", "updated_at", "next_fire_at", "last_run_planned_at"):
            values[name] = as_instant(values[name])
        values["auto_paused_at"] = as_instant(values["auto_paused_at"])
        values["settings"] = ScheduleSettings(**json.loads(values["settings"]))
        values["enabled"] = bool(values["enabled"])
        runs = values["auto_paused_runs"]
        values["auto_paused_runs"] = None if runs is None else json.loads(runs)
        return cls(**values)

    @classmethod
    def of_aggregate(cls, schedule: Schedule, last_run: LastRun | None) -> ScheduleRow:
        """The row of a live schedule as saved, with its newest planned run (which its own
        history does not hold)."""
        return cls(
            id=str(schedule.id),
            settings=schedule.settings,
            enabled=schedule.enabled,
            version=schedule.revision,
            created_at=schedule.created_at,
            updated_at=schedule.updated_at,
            updated_by=schedule.updated_by,
            next_fire_at=schedule.next_fire_at,
            definition_revision=schedule.definition_revision,
            last_run_id=last_run.run_id if last_run else None,
            last_run_planned_at=last_run.planned_at if last_run else None,
            last_run_status=last_run.status if last_run else None,
            **_paused_fields(schedule.auto_paused),
        )

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def definition_id(self) -> str:
        return self.settings.definition_id

    @property
    def trigger(self) -> dict[str, Any]:
        return self.settings.trigger

    @property
    def timezone(self) -> str:
        return self.settings.timezone

    @property
    def initiator_id(self) -> str:
        return self.settings.initiator_id

    @property
    def title_template(self) -> str:
        return self.settings.title_template

    @property
    def form_data(self) -> FormData:
        return self.settings.form_data

    @property
    def misfire_policy(self) -> str:
        return self.settings.misfire_policy

    @property
    def overlap_policy(self) -> str:
        return self.settings.overlap_policy

    @property
    def preset_id(self) -> str | None:
        return self.settings.preset_id

    @property
    def calendar(self) -> str | None:
        return self.settings.calendar

    @property
    def calendar_rule(self) -> str | None:
        return self.settings.calendar_rule

    @property
    def group(self) -> str:
        return self.settings.group

    @property
    def target(self) -> dict[str, Any]:
        return self.settings.target

    @property
    def auto_pause_after_failures(self) -> int | None:
        return self.settings.auto_pause_after_failures

    @property
    def next_fire_at_local(self) -> datetime | None:
        return local_or_none(self.next_fire_at, self.settings.timezone)

    @property
    def auto_paused(self) -> dict[str, Any] | None:
        """How the service paused it, while it is so paused: when, why, and the runs (each
        `{"run_id", "error_code"}`) that ended without launching; None otherwise."""
        if self.auto_paused_at is None:
            return None
        return {
            "at": self.auto_paused_at,
            "reason": self.auto_pause_reason,
            "runs": self.auto_paused_runs or [],
        }

    @property
    def last_run(self) -> dict[str, Any] | None:
        """The newest planned run, its instant as ISO 8601 text; None before the first."""
        if self.last_run_id is None:
            return None
        return {
            "run_id": self.last_run_id,
            "planned_at": jsonable(self.last_run_planned_at),
            "status": self.last_run_status,
        }


def _paused_fields(pause: dict[str, Any] | None) -> dict[str, Any]:
    """A schedule's pause by the service, as its row's columns keep it."""
    pause = pause or dict.fromkeys(("at", "reason", "runs"))
    return {
        "auto_paused_at": pause["at"],
        "auto_pause_reason": pause["reason"],
        "auto_paused_runs": pause["runs"],
    }


def live_schedule_page(
    store: Store, tenant_id: UUID, wanted: ScheduleFilter, window: Window
) -> Slice[ScheduleRow]:
    """One page of the tenant's matching undeleted schedules, oldest first, and how many
    match."""
    columns = ", ".join(ScheduleRow._fields)
    found = read_slice(
        store, "schedules", wanted.where(tenant_id), SCHEDULE_LISTING, window, columns
    )
    return found.mapped(ScheduleRow.of)


def live_schedule_count(
    store: Store, tenant_id: UUID, wanted: ScheduleFilter, search: str | None, cap: int
) -> int:
    """How many of the tenant's undeleted schedules match, up to `cap + 1`."""
    where = searched_where(wanted.where(tenant_id), SCHEDULE_LISTING, search)
    return count_up_to(store, "schedules", where, cap)


def live_schedule_batches(
    store: Store, tenant_id: UUID, wanted: ScheduleFilter, search: str | None, limit: int
) -> Iterator[list[ScheduleRow]]:
    """The tenant's matching undeleted schedules, at most `limit`, oldest first, a batch at a
    time (an export's)."""
    where = searched_where(wanted.where(tenant_id), SCHEDULE_LISTING, search)
    columns = ", ".join(ScheduleRow._fields)
    for rows in walk(store, "schedules", where, SCHEDULE_ORDER, columns, limit):
        yield [ScheduleRow.of(row) for row in rows]


def schedule_row(store: Store, tenant_id: UUID, schedule_id: UUID) -> ScheduleRow | None:
    """The tenant's undeleted schedule of that id, if there is one."""
    rows = store.query(
        f"SELECT {', '.join(ScheduleRow._fields)} FROM schedules "  # noqa: S608
        "WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL",
        (str(schedule_id), str(tenant_id)),
    )
    return ScheduleRow.of(rows[0]) if rows else None


def schedule_names(
    store: Store, tenant_id: UUID, ids: Iterable[str]
) -> dict[str, tuple[str, bool]]:
    """The name of each of the tenant's schedules of these ids, and whether it was deleted."""
    rows = names_by_id(store, "schedules", "name, deleted_at", tenant_id, ids)
    return {str(i): (str(name), deleted is not None) for i, name, deleted in rows}
