"""`runs` (one row per cycle) and `attempts` (one row per attempt of a run)."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from eventsourcing.persistence import Notification

from cronledger.persistence.ledger import jsonable
from cronledger.persistence.store import Store, as_instant, tenant_scope
from domain.approvals import WAITING_REVIEW
from domain.jobs import APPROVAL
from domain.overlap import SKIP_WHILE_OPEN, Blocker
from domain.runs import (
    ATTEMPT_FAILED,
    ATTEMPT_SUCCEEDED,
    DEAD_LETTER,
    INTERRUPTED,
    PENDING,
    RETRY_WAIT,
    RUNNING,
    SKIP_CALENDAR,
    SKIP_MISSED,
    SKIP_OVERLAP,
    SKIPPED_AT_REGISTRATION,
    SKIPPED_AT_REGISTRATION_CODES,
    SKIPPED_CALENDAR,
    SKIPPED_MISSED,
    SKIPPED_OVERLAP,
    SUCCEEDED,
    UNFINISHED,
    Run,
    run_trace_id,
    skip_reason_of,
)
from domain.triggers import local_or_none
from projections.business import BusinessTime
from projections.engine import EventClass, Handler, Projection, Sql, Stamped
from projections.json_columns import json_text, json_value
from projections.keyset import (
    ListSpec,
    Order,
    Row,
    Slice,
    Window,
    count_up_to,
    read_slice,
    searched_text,
    searched_where,
    walk,
)
from projections.schedules import name_holds


class RunsProjection(Projection):
    """One row per cycle, and one per attempt.

    `runs.due_at` is when a worker may next claim the run: its next attempt, or when the
    lease of its running attempt runs out. `started_at` is its first attempt's start, and
    `duration_seconds` runs from there to `finished_at`.
    """

    name = "runs"
    tables = ("runs", "attempts")
    business: BusinessTime

    def __init__(self, zone: str) -> None:
        self.business = BusinessTime(zone)

    def ddl(self, sql: Sql) -> list[str]:
        ts, seconds = sql.timestamp_type, sql.seconds_type
        return [
            "CREATE TABLE IF NOT EXISTS runs ("
            "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, schedule_id TEXT NOT NULL, "
            f"planned_at {ts} NOT NULL, trigger TEXT NOT NULL, status TEXT NOT NULL, "
            "title TEXT NOT NULL, initiator_id TEXT NOT NULL, definition_id TEXT NOT NULL, "
            "attempt_count INTEGER NOT NULL, max_attempts INTEGER NOT NULL, instance_id TEXT, "
            f"next_attempt_at {ts}, lease_expires_at {ts}, due_at {ts}, last_error_code TEXT, "
            f"registered_at {ts} NOT NULL, finished_at {ts}, skipped_count INTEGER NOT NULL, "
            f"registration_lag_seconds {seconds} NOT NULL, version INTEGER NOT NULL, "
            "skip_reason TEXT, blocking_run_id TEXT, schedule_version INTEGER NOT NULL, "
            "triggered_by TEXT NOT NULL, request_id TEXT, trace_id TEXT NOT NULL, "
            f"started_at {ts}, duration_seconds {seconds}, last_error_message TEXT, "
            "definition_revision INTEGER NOT NULL, timezone TEXT, form_data TEXT NOT NULL, "
            f"missed_until {ts}, blocking_status TEXT, blocking_instance_id TEXT, "
            "last_error_params TEXT, search_text TEXT NOT NULL, "
            f"moved_to {ts}, calendar TEXT, target_kind TEXT NOT NULL, result TEXT, "
            f"{BusinessTime.ddl('planned_')})",
            "CREATE INDEX IF NOT EXISTS runs_by_schedule "
            "ON runs (schedule_id, planned_at DESC, id)",
            "CREATE INDEX IF NOT EXISTS runs_by_status ON runs (tenant_id, status)",
            "CREATE INDEX IF NOT EXISTS runs_by_tenant ON runs (tenant_id, planned_at DESC, id)",
            "CREATE INDEX IF NOT EXISTS runs_due ON runs (due_at, planned_at, id)",
            "CREATE INDEX IF NOT EXISTS runs_skips ON runs (schedule_id, finished_at) "
            "WHERE skip_reason IS NOT NULL",
            "CREATE TABLE IF NOT EXISTS attempts ("
            "run_id TEXT NOT NULL, number INTEGER NOT NULL, tenant_id TEXT NOT NULL, "
            f"schedule_id TEXT NOT NULL, worker TEXT NOT NULL, started_at {ts} NOT NULL, "
            f"lease_expires_at {ts} NOT NULL, finished_at {ts}, outcome TEXT, error_code TEXT, "
            "error_message TEXT, instance_id TEXT, error_params TEXT, result TEXT, "
            f"{BusinessTime.ddl('started_')}, PRIMARY KEY (run_id, number))",
            "CREATE INDEX IF NOT EXISTS attempts_by_tenant ON attempts (tenant_id, started_at)",
        ]

    search_columns = (("runs", "search_text"),)

    def handlers(self) -> dict[EventClass, Handler]:
        """What each event does to its `runs` row (`passes` adds the `attempts` rows)."""
        return {
            Run.Registered: self.registered,
            Run.AttemptStarted: self.attempt_started,
            Launch: self.launched,
            Run.AttemptSucceeded: self.attempt_succeeded,
            Run.AttemptFailed: self.attempt_ended(ATTEMPT_FAILED),
            Run.AttemptInterrupted: self.attempt_ended(INTERRUPTED),
            Run.SkippedOverlap: self.skipped_overlap,
            Run.Cancelled: self.stopped,
            Run.Retried: self.retried,
            Run.OutcomeRejected: self.outcome_rejected,
        }

    def passes(self) -> list[dict[EventClass, Handler]]:
        """The `runs` rows, then the `attempts` rows (which copy their run's tenant and
        schedule), so that a batch of launches writes each table with one statement."""
        return [
            self.handlers(),
            {
                Run.AttemptStarted: self.attempt_row,
                Launch: self.launch_row,
                Run.AttemptSucceeded: _attempt_ended(ATTEMPT_SUCCEEDED),
                Run.AttemptFailed: _attempt_ended(ATTEMPT_FAILED),
                Run.AttemptInterrupted: _attempt_ended(INTERRUPTED),
            },
        ]

    def apply(self, sql: Sql, batch: Sequence[tuple[Notification, Any]]) -> None:
        """`Projection.apply`, with each attempt that started and then succeeded next on the
        log (a worker's launch) applied as one `Launch`."""
        super().apply(sql, _launches_paired(batch))

    def registered(self, sql: Sql, event: Run.Registered, position: int) -> None:
        frozen = event.frozen
        due = (event.moved_to or event.at) if event.status == PENDING else None
        sql.write(
            "INSERT INTO runs (id, tenant_id, schedule_id, planned_at, trigger, status, title, "
            "initiator_id, definition_id, attempt_count, max_attempts, next_attempt_at, due_at, "
            "registered_at, finished_at, skipped_count, registration_lag_seconds, version, "
            "skip_reason, schedule_version, triggered_by, request_id, trace_id, "
            "definition_revision, timezone, form_data, missed_until, search_text, moved_to, "
            "calendar, target_kind, planned_local_date, planned_local_hour, planned_iso_week, "
            "planned_iso_year) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                str(event.originator_id),
                str(event.tenant_id),
                str(event.schedule_id),
                event.planned_at,
                event.trigger,
                event.status,
                frozen["title"],
                frozen["initiator_id"],
                frozen["definition_id"],
                event.max_attempts,
                due,
                due,
                event.at,
                event.at if event.status in SKIPPED_AT_REGISTRATION else None,
                event.skipped_count,
                sql.seconds(event.at - event.planned_at),
                event.originator_version,
                SKIPPED_AT_REGISTRATION_CODES.get(event.status),
                frozen["schedule_revision"],
                event.actor,
                event.request_id,
                run_trace_id(event.originator_id, event.traceparent),
                frozen["definition_revision"],
                frozen.get("timezone"),
                json_text(frozen["form_data"]),
                event.missed_until,
                searched_text(frozen["title"], frozen.get("schedule_name")),
                event.moved_to,
                None if event.calendar is None else json_text(event.calendar),
                frozen["target"]["kind"],
                *self.business.values(event.planned_at),
            ),
        )

    def attempt_row(self, sql: Sql, event: Run.AttemptStarted, position: int) -> None:
        """An attempt's `attempts` row, as it starts."""
        sql.write(
            "INSERT INTO attempts (run_id, number, tenant_id, schedule_id, worker, started_at, "
            "lease_expires_at, started_local_date, started_local_hour, started_iso_week, "
            "started_iso_year) SELECT id, ?, tenant_id, schedule_id, ?, ?, ?, ?, ?, ?, ? "
            "FROM runs WHERE id = ?",
            (
                event.number,
                event.worker,
                event.at,
                event.lease_expires_at,
                *self.business.values(event.at),
                str(event.originator_id),
            ),
        )

    def launch_row(self, sql: Sql, launch: Launch, position: int) -> None:
        """A launch's `attempts` row: started and succeeded at once."""
        started, succeeded = launch.started, launch.succeeded
        sql.write(
            "INSERT INTO attempts (run_id, number, tenant_id, schedule_id, worker, started_at, "
            "lease_expires_at, finished_at, outcome, instance_id, result, started_local_date, "
            "started_local_hour, started_iso_week, started_iso_year) "
            "SELECT id, ?, tenant_id, schedule_id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM runs "
            "WHERE id = ?",
            (
                started.number,
                started.worker,
                started.at,
                started.lease_expires_at,
                succeeded.at,
                ATTEMPT_SUCCEEDED,
                succeeded.instance_id,
                _result_text(succeeded),
                *self.business.values(started.at),
                str(started.originator_id),
            ),
        )

    @staticmethod
    def attempt_started(sql: Sql, event: Run.AttemptStarted, position: int) -> None:
        _update(
            sql,
            event,
            status=event.status,
            attempt_count=event.number,
            next_attempt_at=None,
            lease_expires_at=event.lease_expires_at,
            due_at=event.lease_expires_at,
            started_at=_first_start(event.at),
        )

    @staticmethod
    def attempt_succeeded(sql: Sql, event: Run.AttemptSucceeded, position: int) -> None:
        _update(sql, event, **_succeeded(sql, event, STARTED_AT))

    @staticmethod
    def launched(sql: Sql, launch: Launch, position: int) -> None:
        """An attempt that started and succeeded: both events' changes at once."""
        started, succeeded = launch.started, launch.succeeded
        first_start = _first_start(started.at)
        _update(
            sql,
            succeeded,
            attempt_count=started.number,
            next_attempt_at=None,
            started_at=first_start,
            **_succeeded(sql, succeeded, first_start),
        )

    @staticmethod
    def attempt_ended(outcome: str) -> Handler:
        """A failed or interrupted attempt: the run waits to retry, or is finished."""

        def handler(
            sql: Sql, event: Run.AttemptFailed | Run.AttemptInterrupted, position: int
        ) -> None:
            finished = {"finished_at": None} if event.next_attempt_at else _finished(sql, event)
            _update(
                sql,
                event,
                status=event.status,
                next_attempt_at=event.next_attempt_at,
                lease_expires_at=None,
                due_at=event.next_attempt_at,
                last_error_code=event.code,
                last_error_message=event.message,
                last_error_params=_params_text(event),
                **finished,
            )

        return handler

    @staticmethod
    def stopped(sql: Sql, event: Run.Cancelled, position: int) -> None:
        _update(
            sql,
            event,
            status=event.status,
            next_attempt_at=None,
            due_at=None,
            **_finished(sql, event),
        )

    @staticmethod
    def skipped_overlap(sql: Sql, event: Run.SkippedOverlap, position: int) -> None:
        _update(
            sql,
            event,
            status=event.status,
            next_attempt_at=None,
            due_at=None,
            finished_at=event.at,
            skip_reason=SKIP_OVERLAP,
            blocking_run_id=event.earlier_run_id,
            blocking_status=event.blocking_status,
            blocking_instance_id=event.blocking_instance_id,
        )

    @staticmethod
    def outcome_rejected(sql: Sql, event: Run.OutcomeRejected, position: int) -> None:
        """A lost worker's report: recorded on the run's history, its state unchanged."""
        _update(sql, event)

    @staticmethod
    def retried(sql: Sql, event: Run.Retried, position: int) -> None:
        _update(
            sql,
            event,
            status=event.status,
            next_attempt_at=event.at,
            due_at=event.at,
            finished_at=None,
            duration_seconds=None,
        )


@dataclass(frozen=True)
class Computed:
    """A column's new value as SQL, with its parameters; columns in it read the row as it was."""

    text: str
    params: tuple[Any, ...] = ()


STARTED_AT = Computed("started_at")


def _update(sql: Sql, event: Stamped, **columns: Any) -> None:
    """Set these columns of the event's run (a value, or `Computed`), and its version."""
    assignments: list[str] = []
    params: list[Any] = []
    for name, value in columns.items():
        computed = value if isinstance(value, Computed) else Computed("?", (value,))
        assignments.append(f"{name} = {computed.text}, ")
        params.extend(computed.params)
    sql.write(
        f"UPDATE runs SET {''.join(assignments)}version = ? WHERE id = ?",  # noqa: S608
        (*params, event.originator_version, str(event.originator_id)),
    )


def _first_start(at: datetime) -> Computed:
    """The run's first attempt's start: the one it has, else `at`."""
    return Computed("COALESCE(started_at, ?)", (at,))


def _seconds_since(sql: Sql, start: Computed, at: datetime) -> Computed:
    """The seconds from `start` to `at`."""
    if sql.kind == "postgresql":
        text = f"EXTRACT(EPOCH FROM (CAST(? AS TIMESTAMPTZ) - {start.text}))"
    else:
        text = f"ROUND((julianday(?) - julianday({start.text})) * 86400, 3)"
    return Computed(text, (at, *start.params))


def _succeeded(sql: Sql, event: Run.AttemptSucceeded, first_start: Computed) -> dict[str, Any]:
    """What an attempt's success sets on its run; its duration runs from `first_start`."""
    return {
        "status": event.status,
        "instance_id": event.instance_id,
        "result": _result_text(event),
        "lease_expires_at": None,
        "due_at": None,
        "last_error_code": None,
        "last_error_message": None,
        "last_error_params": None,
        **_finished(sql, event, first_start),
    }


@dataclass(frozen=True)
class Launch:
    """An attempt's `AttemptStarted` and its `AttemptSucceeded`, next to each other on the log."""

    started: Run.AttemptStarted
    succeeded: Run.AttemptSucceeded


def _launches_paired(
    batch: Sequence[tuple[Notification, Any]],
) -> list[tuple[Notification, Any]]:
    """The batch with each launch's two events as one `Launch` (at the second's position)."""
    paired: list[tuple[Notification, Any]] = []
    for notification, event in batch:
        if paired and _launch_of(paired[-1][1], event):
            paired[-1] = (notification, Launch(paired[-1][1], event))
        else:
            paired.append((notification, event))
    return paired


def _launch_of(before: object, event: object) -> bool:
    return (
        isinstance(before, Run.AttemptStarted)
        and isinstance(event, Run.AttemptSucceeded)
        and before.originator_id == event.originator_id
        and before.number == event.number
    )


AttemptEnd = Run.AttemptSucceeded | Run.AttemptFailed | Run.AttemptInterrupted


def _attempt_ended(outcome: str) -> Handler:
    """An attempt's end on its `attempts` row: how it ended, and its error or instance."""

    def handler(sql: Sql, event: AttemptEnd, position: int) -> None:
        if isinstance(event, Run.AttemptSucceeded):
            _end_attempt(sql, event, outcome, None, event.instance_id, _result_text(event))
        else:
            error = (event.code, event.message, _params_text(event))
            _end_attempt(sql, event, outcome, error, None)

    return handler


def _result_text(event: Run.AttemptSucceeded) -> str | None:
    """A job's result summary as JSON text; None for an approval's launch."""
    return None if event.result is None else json_text(event.result)


def _finished(sql: Sql, event: Stamped, first_start: Computed = STARTED_AT) -> dict[str, Any]:
    """The run finished by this event: when, and its duration from its first attempt's start."""
    return {"finished_at": event.at, "duration_seconds": _seconds_since(sql, first_start, event.at)}


def _params_text(event: Run.AttemptFailed | Run.AttemptInterrupted) -> str | None:
    """The values the error's code names, as JSON text: none for an interruption, and None
    for a failure recorded before they were kept."""
    if isinstance(event, Run.AttemptInterrupted):
        return json_text({})
    return None if event.reason_params is None else json_text(event.reason_params)


def _end_attempt(
    sql: Sql,
    event: AttemptEnd,
    outcome: str,
    error: tuple[str, str, str | None] | None,
    instance_id: str | None,
    result: str | None = None,
) -> None:
    """Record how the attempt ended: its outcome, and its error (code, message, params as
    JSON text), or its instance or its job's result (JSON text)."""
    code, message, params = error or (None, None, None)
    sql.write(
        "UPDATE attempts SET finished_at = ?, outcome = ?, error_code = ?, error_message = ?, "
        "error_params = ?, instance_id = ?, result = ? WHERE run_id = ? AND number = ?",
        (
            event.at,
            outcome,
            code,
            message,
            params,
            instance_id,
            result,
            str(event.originator_id),
            event.number,
        ),
    )


class LagHistogram(NamedTuple):
    """Runs registered within each bound (cumulative), all runs, and their summed lag."""

    at_most: list[int]
    total: int
    sum_seconds: float


def due_runs(store: Store, now: datetime, limit: int) -> list[tuple[str, str]]:
    """(run id, schedule id) of the runs a worker may claim now, oldest due first."""
    rows = store.query(
        "SELECT id, schedule_id FROM runs WHERE due_at <= ? ORDER BY due_at, planned_at, id "
        "LIMIT ?",
        (now, limit),
    )
    return [(str(run_id), str(schedule_id)) for run_id, schedule_id in rows]


def running_per_schedule(
    store: Store, schedule_ids: Collection[str], now: datetime
) -> dict[str, int]:
    """Attempts still held (lease not run out) per schedule: an abandoned one counts none."""
    if not schedule_ids:
        return {}
    marks = ", ".join("?" for _ in schedule_ids)
    rows = store.query(
        f"SELECT schedule_id, COUNT(*) FROM runs WHERE status = ? "  # noqa: S608
        f"AND lease_expires_at > ? AND schedule_id IN ({marks}) GROUP BY schedule_id",
        (RUNNING, now, *schedule_ids),
    )
    return {str(schedule_id): int(count) for schedule_id, count in rows}


class Cycle(NamedTuple):
    """A run as `blocking_runs` asks about it, with its overlap policy."""

    id: UUID
    schedule_id: UUID
    planned_at: datetime
    registered_at: datetime
    overlap_policy: str


def blocking_runs(store: Store, runs: Sequence[Cycle], now: datetime) -> dict[UUID, Blocker]:
    """For each of these runs that an earlier cycle of its schedule blocks, the first such
    cycle: one still being launched (pending, running or waiting to retry), or, for
    `skip_while_open`, one whose instance is still in review before its deadline (one past its
    deadline counts as closed before the sweeper records the expiry). One query for them all.

    Cycles planned at the same instant (a manual run and a scheduled one) come in the order they
    were registered, then by id, so the first blocks the other and never the other way round.
    """
    if not runs:
        return {}
    instant = "CAST(? AS TIMESTAMPTZ)" if store.kind == "postgresql" else "?"
    wanted = ", ".join(
        [f"(CAST(? AS TEXT), CAST(? AS TEXT), {instant}, {instant}, CAST(? AS INTEGER))"]
        * len(runs)
    )
    marks = ", ".join("?" for _ in UNFINISHED)
    rows = store.query(
        f"WITH wanted(id, schedule_id, planned_at, registered_at, while_open) AS (VALUES {wanted}) "  # noqa: S608
        "SELECT w.id, b.id, b.status, b.instance_id FROM wanted w JOIN runs b ON b.id = "
        "(SELECT r.id FROM runs r LEFT JOIN approvals a ON a.id = r.instance_id "
        "WHERE r.schedule_id = w.schedule_id AND (r.planned_at < w.planned_at OR "
        "(r.planned_at = w.planned_at AND (r.registered_at < w.registered_at OR "
        "(r.registered_at = w.registered_at AND r.id < w.id)))) "
        f"AND (r.status IN ({marks}) OR (w.while_open = 1 AND a.state = ? "
        f"AND a.review_deadline_at > {instant})) "
        "ORDER BY r.planned_at, r.registered_at, r.id LIMIT 1)",
        (
            *(
                value
                for run in runs
                for value in (
                    str(run.id),
                    str(run.schedule_id),
                    run.planned_at,
                    run.registered_at,
                    int(run.overlap_policy == SKIP_WHILE_OPEN),
                )
            ),
            *sorted(UNFINISHED),
            WAITING_REVIEW,
            now,
        ),
    )
    return {
        UUID(str(run_id)): Blocker(
            str(blocker), str(status), None if status in UNFINISHED else instance_id
        )
        for run_id, blocker, status, instance_id in rows
    }


class LastSkip(NamedTuple):
    """The schedule's most recently skipped run, and why."""

    run_id: str
    planned_at: datetime | None
    skipped_at: datetime | None
    skip_reason: str
    blocker: Blocker | None
    skipped_count: int
    calendar: dict[str, Any] | None = None


def last_skips_of(store: Store, schedule_ids: Sequence[str]) -> dict[str, LastSkip]:
    """The run skipped last (an overlap, or a summary of missed cycles) of each of these
    schedules that has one, by schedule id: one query."""
    if not schedule_ids:
        return {}
    marks = ", ".join("?" for _ in schedule_ids)
    rows = store.query(
        "SELECT schedule_id, id, planned_at, finished_at, skip_reason, blocking_run_id, "  # noqa: S608
        "blocking_status, blocking_instance_id, skipped_count, calendar FROM (SELECT "
        "schedule_id, id, planned_at, finished_at, skip_reason, blocking_run_id, blocking_status, "
        "blocking_instance_id, skipped_count, calendar, ROW_NUMBER() OVER (PARTITION BY "
        "schedule_id ORDER BY finished_at DESC, planned_at DESC, id DESC) AS newest FROM runs "
        f"WHERE schedule_id IN ({marks}) AND skip_reason IS NOT NULL) skips WHERE newest = 1",
        list(schedule_ids),
    )
    return {
        str(schedule_id): LastSkip(
            str(run_id),
            as_instant(planned_at),
            as_instant(skipped_at),
            str(reason),
            blocker_of(blocking_run_id, blocking_status, blocking_instance_id),
            int(count),
            json_value(calendar),
        )
        for (
            schedule_id,
            run_id,
            planned_at,
            skipped_at,
            reason,
            blocking_run_id,
            blocking_status,
            blocking_instance_id,
            count,
            calendar,
        ) in rows
    }


def blocker_of(run_id: str | None, status: str | None, instance_id: str | None) -> Blocker | None:
    """What a row keeps of the run that blocked a skipped one, if one did."""
    return None if run_id is None else Blocker(run_id, status, instance_id)


def unfinished_count(store: Store, schedule_id: UUID) -> int:
    """Runs of the schedule not yet finished."""
    marks = ", ".join("?" for _ in UNFINISHED)
    rows = store.query(
        f"SELECT COUNT(*) FROM runs WHERE schedule_id = ? AND status IN ({marks})",  # noqa: S608
        (str(schedule_id), *sorted(UNFINISHED)),
    )
    return int(rows[0][0])


@dataclass(frozen=True)
class RunFilter:
    """Which runs of a tenant to list; None leaves a condition out. `planned_from` is
    inclusive, `planned_to` exclusive."""

    schedule_id: UUID | None = None
    status: str | None = None
    trigger: str | None = None
    planned_from: datetime | None = None
    planned_to: datetime | None = None
    group: str | None = None  # its schedule's job group, as the schedule is now
    schedule_name: str | None = None  # a part of its schedule's name now, in any case

    def where(self, tenant_id: UUID) -> tuple[str, list[Any]]:
        """The SQL condition (fixed text, values as parameters) and its parameters.

        One schedule's runs are read by its index (`runs_by_schedule`): the tenant condition is
        then written so that no store reads the tenant's whole range instead (SQLite, which
        keeps no statistics here, would).
        """
        tenant = "tenant_id = ?" if self.schedule_id is None else "tenant_id || '' = ?"
        conditions: list[str] = [tenant]
        params: list[Any] = [str(tenant_id)]
        for condition, value in (
            ("schedule_id = ?", str(self.schedule_id) if self.schedule_id else None),
            ("status = ?", self.status),
            ("trigger = ?", self.trigger),
            ("planned_at >= ?", self.planned_from),
            ("planned_at < ?", self.planned_to),
            (
                "schedule_id IN (SELECT s.id FROM schedules s "
                "WHERE s.tenant_id = runs.tenant_id AND s.job_group = ?)",
                self.group,
            ),
        ):
            if value is not None:
                conditions.append(condition)
                params.append(value)
        if self.schedule_name:
            named, named_params = name_holds(self.schedule_name)
            within = f"SELECT id FROM schedules WHERE tenant_id = ? AND {named}"  # noqa: S608
            conditions.append(f"schedule_id IN ({within})")
            params.extend([str(tenant_id), *named_params])
        return " AND ".join(conditions), params


# Newest planned first; `id` orders runs planned for the same instant.
RUN_ORDER = Order("runs", "planned_at", descending=True, tie="id")
RUN_LISTING = ListSpec(
    RUN_ORDER,
    "-planned_at",
    {
        "planned_at": "planned_at",
        "title": "title",
        "status": "status",
        "attempt_count": "attempt_count",
        "finished_at": "finished_at",
    },
    nullable=frozenset({"finished_at"}),
    searched=("search_text",),
)


class RunRow(NamedTuple):
    """A run as its `runs` row keeps it, and as the API lists it: its answer's other fields
    (`planned_at_local`, `last_error`, `duration_seconds`, `error_code`, `skip_reason`) are
    read from its columns."""

    id: str
    schedule_id: str
    schedule_version: int
    definition_revision: int
    planned_at: datetime
    timezone: str | None
    trigger: str
    triggered_by: str | None
    request_id: str | None
    status: str
    title: str
    form_data: dict[str, Any]
    initiator_id: str
    attempt_count: int
    max_attempts: int
    next_attempt_at: datetime | None
    last_error_code: str | None
    last_error_message: str | None
    instance_id: str | None
    registered_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    trace_id: str
    skipped_count: int
    missed_until: datetime | None
    blocking_run_id: str | None
    blocking_status: str | None
    blocking_instance_id: str | None
    last_error_params: dict[str, Any] | None
    version: int
    moved_to: datetime | None
    calendar: dict[str, Any] | None
    target_kind: str
    result: dict[str, Any] | None

    @classmethod
    def of(cls, row: Row) -> RunRow:
        """The row as read (instants as either store gives them, form data as text)."""
        values = dict(zip(cls._fields, row, strict=True))
        for name in INSTANT_COLUMNS:
            values[name] = as_instant(values[name])
        values["form_data"] = json.loads(values["form_data"])
        values["last_error_params"] = json_value(values["last_error_params"])
        values["calendar"] = json_value(values["calendar"])
        values["result"] = json_value(values["result"])
        return cls(**values)

    @classmethod
    def of_aggregate(cls, run: Run) -> RunRow:
        """The row of the run as saved."""
        error = run.last_error or {}
        blocker = run.blocker
        return cls(
            id=str(run.id),
            schedule_id=str(run.schedule_id),
            schedule_version=run.schedule_version,
            definition_revision=run.definition_revision,
            planned_at=run.planned_at,
            timezone=run.frozen.get("timezone"),
            trigger=run.trigger,
            triggered_by=run.triggered_by,
            request_id=run.request_id,
            status=run.status,
            title=run.frozen["title"],
            form_data=dict(run.frozen["form_data"]),
            initiator_id=run.initiator_id,
            attempt_count=len(run.attempts),
            max_attempts=run.max_attempts,
            next_attempt_at=run.next_attempt_at,
            last_error_code=error.get("code"),
            last_error_message=error.get("message"),
            instance_id=run.instance_id,
            registered_at=run.registered_at,
            started_at=run.started_at,
            finished_at=run.finished_at,
            trace_id=run.trace_id,
            skipped_count=run.skipped_count,
            missed_until=run.missed_until,
            blocking_run_id=blocker.run_id if blocker else None,
            blocking_status=blocker.status if blocker else None,
            blocking_instance_id=blocker.instance_id if blocker else None,
            last_error_params=error.get("params"),
            version=run.version,
            moved_to=run.moved_to,
            calendar=run.calendar,
            target_kind=str(run.target["kind"]),
            result=run.result,
        )

    @property
    def is_job(self) -> bool:
        return self.target_kind != APPROVAL

    @property
    def shown_initiator_id(self) -> str | None:
        """The initiator, as answers show it: None for a built-in job's run (it has none)."""
        return None if self.is_job else self.initiator_id

    @property
    def shown_definition_revision(self) -> int | None:
        """The definition's revision it launches; None for a built-in job's run."""
        return None if self.is_job else self.definition_revision

    @property
    def planned_at_local(self) -> datetime | None:
        """`planned_at` in the zone frozen with the run (None for runs frozen without one)."""
        return local_or_none(self.planned_at, self.timezone)

    @property
    def last_error(self) -> dict[str, Any] | None:
        """The last failed or interrupted attempt's error, unless the run succeeded since."""
        return _error(self.last_error_code, self.last_error_message, self.last_error_params)

    @property
    def error_code(self) -> str | None:
        return self.last_error_code

    @property
    def duration_seconds(self) -> float | None:
        """From the first attempt's start to the finish, as `Run.duration_seconds` counts."""
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    @property
    def skip_reason(self) -> dict[str, Any] | None:
        """Why the run was skipped, as `Run.skip_reason` tells it; None if it was not."""
        if self.status == SKIPPED_OVERLAP:
            blocker = blocker_of(
                self.blocking_run_id, self.blocking_status, self.blocking_instance_id
            )
            return skip_reason_of(SKIP_OVERLAP, blocker, 0)
        if self.status == SKIPPED_MISSED:
            return skip_reason_of(SKIP_MISSED, None, self.skipped_count)
        if self.status == SKIPPED_CALENDAR:
            return skip_reason_of(SKIP_CALENDAR, None, 1, self.calendar)
        return None

    @property
    def moved_to_local(self) -> datetime | None:
        """`moved_to` in the zone frozen with the run."""
        return local_or_none(self.moved_to, self.timezone)


INSTANT_COLUMNS = (
    "moved_to",
    "planned_at",
    "next_attempt_at",
    "registered_at",
    "started_at",
    "finished_at",
    "missed_until",
)


class AttemptRow(NamedTuple):
    """An attempt as its `attempts` row keeps it, and as a run's answer shows it (with its
    `error`); its instants as ISO 8601 text in UTC, as the run's history writes them."""

    number: int
    started_at: str
    finished_at: str | None
    outcome: str | None
    error_code: str | None
    error_message: str | None
    instance_id: str | None
    worker: str
    error_params: dict[str, Any] | None
    result: dict[str, Any] | None

    @classmethod
    def of(cls, row: Row) -> AttemptRow:
        values = dict(zip(cls._fields, row, strict=True))
        for name in ("started_at", "finished_at"):
            values[name] = jsonable(as_instant(values[name]))
        values["error_params"] = json_value(values["error_params"])
        values["result"] = json_value(values["result"])
        return cls(**values)

    @classmethod
    def of_attempt(cls, attempt: Mapping[str, Any]) -> AttemptRow:
        """The row of one of `Run.attempts`."""
        error = attempt["error"] or {}
        return cls(
            number=attempt["number"],
            started_at=jsonable(attempt["started_at"]),
            finished_at=jsonable(attempt["finished_at"]),
            outcome=attempt["outcome"],
            error_code=error.get("code"),
            error_message=error.get("message"),
            instance_id=attempt["instance_id"],
            worker=attempt["worker"],
            error_params=error.get("params"),
            result=attempt["result"],
        )

    @property
    def error(self) -> dict[str, Any] | None:
        """Why a failed or interrupted attempt ended."""
        return _error(self.error_code, self.error_message, self.error_params)


def _error(
    code: str | None, message: str | None, params: dict[str, Any] | None
) -> dict[str, Any] | None:
    """An error as answers show it: its code, its words, and the values the code names."""
    if code is None or message is None:
        return None
    return {"code": code, "message": message, "params": params}


@dataclass(frozen=True)
class RunDetail:
    """A run as reading it alone answers: its row (whose fields and properties are read
    through), and its attempts, oldest first."""

    row: RunRow
    attempts: list[AttemptRow]

    @classmethod
    def of_aggregate(cls, run: Run) -> RunDetail:
        """The run as saved, with its attempts."""
        return cls(RunRow.of_aggregate(run), [AttemptRow.of_attempt(a) for a in run.attempts])

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy and pickle ask before the fields are set
            raise AttributeError(name)
        return getattr(self.row, name)


def run_log_page(
    store: Store, tenant_id: UUID, run_filter: RunFilter, window: Window
) -> Slice[RunRow]:
    """One page of the tenant's matching runs, newest planned first, and how many match
    (requirement 002: scheduled tasks, the execution log by task and status, paged)."""
    found = read_slice(
        store, "runs", run_filter.where(tenant_id), RUN_LISTING, window, ", ".join(RunRow._fields)
    )
    return found.mapped(RunRow.of)


def run_log_count(
    store: Store, tenant_id: UUID, run_filter: RunFilter, search: str | None, cap: int
) -> int:
    """How many of the tenant's runs match the filter and the search, up to `cap + 1`."""
    where = searched_where(run_filter.where(tenant_id), RUN_LISTING, search)
    return count_up_to(store, "runs", where, cap)


def run_log_batches(
    store: Store, tenant_id: UUID, run_filter: RunFilter, search: str | None, limit: int
) -> Iterator[list[RunRow]]:
    """The tenant's matching runs, at most `limit`, newest planned first, a batch at a time
    (an export's: the execution log's rows, never all read at once)."""
    where = searched_where(run_filter.where(tenant_id), RUN_LISTING, search)
    columns = ", ".join(RunRow._fields)
    for rows in walk(store, "runs", where, RUN_ORDER, columns, limit):
        yield [RunRow.of(row) for row in rows]


def run_row(store: Store, tenant_id: UUID, run_id: UUID) -> RunRow | None:
    """The tenant's run of that id, if there is one."""
    rows = store.query(
        f"SELECT {', '.join(RunRow._fields)} FROM runs WHERE id = ? AND tenant_id = ?",  # noqa: S608
        (str(run_id), str(tenant_id)),
    )
    return RunRow.of(rows[0]) if rows else None


def run_attempts(store: Store, run_id: str) -> list[AttemptRow]:
    """The run's attempts, oldest first."""
    rows = store.query(
        f"SELECT {', '.join(AttemptRow._fields)} FROM attempts WHERE run_id = ? "  # noqa: S608
        "ORDER BY number",
        (run_id,),
    )
    return [AttemptRow.of(row) for row in rows]


def last_job_result(store: Store, schedule_id: UUID, kind: str) -> dict[str, Any] | None:
    """The result of the schedule's newest planned run of the job `kind` that succeeded."""
    rows = store.query(
        "SELECT result FROM runs WHERE schedule_id = ? AND status = ? AND target_kind = ? "
        "ORDER BY planned_at DESC, id DESC LIMIT 1",
        (str(schedule_id), SUCCEEDED, kind),
    )
    return json_value(rows[0][0]) if rows else None


def backlog_by_status(store: Store, tenant_id: UUID | None) -> dict[str, int]:
    """How many runs are PENDING, RETRY_WAIT and DEAD_LETTER (one tenant, or all)."""
    scope, params = tenant_scope(tenant_id)
    rows = store.query(
        f"SELECT status, COUNT(*) FROM runs WHERE {scope} status IN (?, ?, ?) "  # noqa: S608
        "GROUP BY status",
        (*params, PENDING, RETRY_WAIT, DEAD_LETTER),
    )
    counts = {str(status): int(count) for status, count in rows}
    return {status: counts.get(status, 0) for status in (PENDING, RETRY_WAIT, DEAD_LETTER)}


class RunQueue(NamedTuple):
    """The runs that wait for a worker, or for someone, across every tenant."""

    pending: int
    retry_wait: int
    dead_letter: int
    expired_leases: int  # RUNNING runs whose lease ran out: their worker is gone
    oldest_due_at: datetime | None  # when the run waiting longest became claimable


def run_queue(store: Store, now: datetime) -> RunQueue:
    """Index ranges only: one `runs_by_status` range per tenant and status, and the `runs_due`
    index (finished runs have no `due_at`). The cost follows the queue and the tenants, not how
    many runs ever finished."""
    rows = store.query(
        "SELECT r.status, COUNT(*) FROM tenants t JOIN runs r "
        "ON r.tenant_id = t.id AND r.status IN (?, ?, ?) GROUP BY r.status",
        (PENDING, RETRY_WAIT, DEAD_LETTER),
    )
    counts = {str(status): int(count) for status, count in rows}
    expired = store.query(
        "SELECT COUNT(*) FROM runs WHERE due_at <= ? AND status = ?", (now, RUNNING)
    )[0][0]
    oldest = store.query("SELECT MIN(due_at) FROM runs WHERE due_at IS NOT NULL")[0][0]
    return RunQueue(
        pending=counts.get(PENDING, 0),
        retry_wait=counts.get(RETRY_WAIT, 0),
        dead_letter=counts.get(DEAD_LETTER, 0),
        expired_leases=int(expired),
        oldest_due_at=as_instant(oldest),
    )
