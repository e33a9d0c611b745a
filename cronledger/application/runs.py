"""Run queries: the cycles of a schedule, newest planned first."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from cronledger.application.directory import Directory, Page
from cronledger.persistence.ledger import Ledger, TimelineEntry, jsonable
from domain.directory import Principal, check_expected_version
from domain.errors import NotFound, ValidationFailed
from domain.overlap import Blocker
from domain.runs import (
    DEAD_LETTER,
    PENDING,
    RETRY_WAIT,
    SKIP_MISSED,
    SKIP_OVERLAP,
    SKIPPED_MISSED,
    SKIPPED_OVERLAP,
    Run,
    legacy_manual_run_uuid,
    manual_run_uuid,
    skip_reason_of,
)
from domain.triggers import local_or_none
from projections.engine import Projector
from projections.keyset import Window
from projections.runs import (
    RunFilter,
    RunRow,
    backlog_by_status,
    blocker_of,
    last_skips_of,
    run_log_page,
    unfinished_count,
)
from projections.schedules import LastRun, last_run_of


@dataclass(frozen=True)
class RunSummary:
    """A run as lists show it: everything but its attempts."""

    id: str
    schedule_id: str
    schedule_version: int
    definition_revision: int
    planned_at: datetime
    planned_at_local: datetime | None
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
    last_error: dict[str, str] | None
    instance_id: str | None
    registered_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    duration_seconds: float | None
    error_code: str | None
    trace_id: str
    skipped_count: int
    missed_until: datetime | None
    skip_reason: dict[str, Any] | None
    version: int

    @classmethod
    def of_row(cls, row: RunRow) -> RunSummary:
        """From the run's `runs` row, without reading its history."""
        code, message = row.last_error_code, row.last_error_message
        last_error = None if code is None or message is None else {"code": code, "message": message}
        return cls(
            id=row.id,
            schedule_id=row.schedule_id,
            schedule_version=row.schedule_version,
            definition_revision=row.definition_revision,
            planned_at=row.planned_at,
            planned_at_local=local_or_none(row.planned_at, row.timezone),
            trigger=row.trigger,
            triggered_by=row.triggered_by,
            request_id=row.request_id,
            status=row.status,
            title=row.title,
            form_data=row.form_data,
            initiator_id=row.initiator_id,
            attempt_count=row.attempt_count,
            max_attempts=row.max_attempts,
            next_attempt_at=row.next_attempt_at,
            last_error=last_error,
            instance_id=row.instance_id,
            registered_at=row.registered_at,
            started_at=row.started_at,
            finished_at=row.finished_at,
            duration_seconds=duration_between(row.started_at, row.finished_at),
            error_code=row.last_error_code,
            trace_id=row.trace_id,
            skipped_count=row.skipped_count,
            missed_until=row.missed_until,
            skip_reason=skip_reason_for(
                row.status,
                blocker_of(row.blocking_run_id, row.blocking_status, row.blocking_instance_id),
                row.skipped_count,
            ),
            version=row.version,
        )


def last_run_shown(last: LastRun | None) -> dict[str, Any] | None:
    """A schedule's newest planned run, as its view shows it."""
    if last is None:
        return None
    return {"run_id": last.run_id, "planned_at": jsonable(last.planned_at), "status": last.status}


def duration_between(started_at: datetime | None, finished_at: datetime | None) -> float | None:
    """Seconds from the first start to the finish, as `Run.duration_seconds` counts them."""
    if started_at is None or finished_at is None:
        return None
    return (finished_at - started_at).total_seconds()


def skip_reason_for(status: str, blocker: Blocker | None, count: int) -> dict[str, Any] | None:
    """Why a run of this status was skipped, as `Run.skip_reason` tells it; None if it was not."""
    if status == SKIPPED_OVERLAP:
        return skip_reason_of(SKIP_OVERLAP, blocker, 0)
    if status == SKIPPED_MISSED:
        return skip_reason_of(SKIP_MISSED, None, count)
    return None


@dataclass(frozen=True)
class RunView(RunSummary):
    """A run with its attempts."""

    attempts: list[dict[str, Any]]

    @classmethod
    def of(cls, run: Run) -> RunView:
        return cls(
            id=str(run.id),
            schedule_id=str(run.schedule_id),
            schedule_version=run.schedule_version,
            definition_revision=run.definition_revision,
            planned_at=run.planned_at,
            planned_at_local=local_or_none(run.planned_at, run.frozen.get("timezone")),
            trigger=run.trigger,
            triggered_by=run.triggered_by,
            request_id=run.request_id,
            status=run.status,
            title=run.frozen["title"],
            form_data=dict(run.frozen["form_data"]),
            initiator_id=run.frozen["initiator_id"],
            attempt_count=len(run.attempts),
            max_attempts=run.max_attempts,
            next_attempt_at=run.next_attempt_at,
            last_error=run.last_error,
            instance_id=run.instance_id,
            registered_at=run.registered_at,
            started_at=run.started_at,
            finished_at=run.finished_at,
            duration_seconds=run.duration_seconds,
            error_code=run.error_code,
            trace_id=run.trace_id,
            skipped_count=run.skipped_count,
            missed_until=run.missed_until,
            skip_reason=run.skip_reason,
            attempts=jsonable(run.attempts),
            version=run.version,
        )


class Runs:
    def __init__(self, ledger: Ledger, projector: Projector, directory: Directory) -> None:
        self.ledger = ledger
        self.projector = projector
        self.directory = directory

    def run(self, tenant_id: UUID, schedule_id: UUID, run_id: str) -> Run:
        """A run of this schedule in this tenant; anything else is not found."""
        run = self.ledger.find_in_tenant(Run, run_id, "run", tenant_id)
        if run.schedule_id != schedule_id:
            raise NotFound("run", run_id)
        return run

    def manual(self, schedule_id: UUID, account_id: str, request_id: str) -> Run | None:
        """The manual run of this account's request on the schedule, if there is one: named by
        (account, schedule, request id), or as release 0.1.0 named it (schedule, request id)."""
        for run_id in (
            manual_run_uuid(schedule_id, account_id, request_id),
            legacy_manual_run_uuid(schedule_id, request_id),
        ):
            if self.ledger.exists(run_id):
                run = self.ledger.find(Run, run_id, "run", run_id)
                if run.answers_request_of(account_id):
                    return run
        return None

    def retry(
        self,
        actor: Principal,
        schedule_id: UUID,
        run_id: str,
        version: int | None,
        reason: str | None = None,
    ) -> RunView:
        """A new round of attempts for a failed, dead-lettered or cancelled run."""
        return self._act(actor, schedule_id, run_id, version, reason, self._retried)

    def _retried(self, run: Run, at: datetime, actor: str, reason: str | None) -> None:
        """Retry, refused as run-now is (422) while the initiator or definition still fails
        the launch checks: the new round could only fail again."""
        run.retry(at, actor, reason)
        problems = self.directory.launch_problems_of(
            run.tenant_id, run.definition_id, run.initiator_id
        )
        if problems:
            raise ValidationFailed(problems)

    def cancel(
        self,
        actor: Principal,
        schedule_id: UUID,
        run_id: str,
        version: int | None,
        reason: str | None = None,
    ) -> RunView:
        """No further attempts for a run that is pending or waiting to retry."""
        return self._act(actor, schedule_id, run_id, version, reason, Run.cancel)

    def _act(
        self,
        actor: Principal,
        schedule_id: UUID,
        run_id: str,
        version: int | None,
        reason: str | None,
        command: Callable[[Run, datetime, str, str | None], None],
    ) -> RunView:
        def attempt() -> RunView:
            run = self.run(actor.tenant_id, schedule_id, run_id)
            check_expected_version("run", run.version, version)
            command(run, self.ledger.clock(), actor.account_id, reason)
            self.ledger.save(run)
            return RunView.of(run)

        return self.ledger.retrying(attempt)

    def view(self, tenant_id: UUID, schedule_id: UUID, run_id: str) -> RunView:
        return RunView.of(self.run(tenant_id, schedule_id, run_id))

    def view_by_id(self, tenant_id: UUID, run_id: str) -> RunView:
        """A run of this tenant by its id alone; another tenant's is not found."""
        return RunView.of(self.ledger.find_in_tenant(Run, run_id, "run", tenant_id))

    def frozen_by_id(self, tenant_id: UUID, run_id: str) -> tuple[RunView, dict[str, Any]]:
        """`view_by_id`, and every value the run was frozen with when registered (what it
        launches with: its view leaves the schedule's name, trigger and zone out)."""
        run = self.ledger.find_in_tenant(Run, run_id, "run", tenant_id)
        return RunView.of(run), jsonable(run.frozen)

    def timeline(self, tenant_id: UUID, run_id: str) -> list[TimelineEntry]:
        """Every event of one of the tenant's runs."""
        return self.ledger.timeline(self.ledger.find_in_tenant(Run, run_id, "run", tenant_id).id)

    def list_page(self, tenant_id: UUID, run_filter: RunFilter, window: Window) -> Page[RunSummary]:
        """The tenant's runs that match, newest planned first (deleted schedules' included),
        from their `runs` rows."""
        listed = run_log_page(self.ledger.store, tenant_id, run_filter, window)
        return Page.of([RunSummary.of_row(row) for row in listed.rows], window, listed)

    def last_run(self, schedule_id: UUID) -> dict[str, Any] | None:
        """The schedule's newest planned run (kept on its `schedules` row)."""
        return last_run_shown(last_run_of(self.ledger.store, schedule_id))

    def last_skip(self, schedule_id: UUID) -> dict[str, Any] | None:
        """The schedule's most recently skipped run and why (requirement 001: workflow
        schedules, the plan page shows 跳过原因)."""
        return self.last_skips([str(schedule_id)]).get(str(schedule_id))

    def last_skips(self, schedule_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """`last_skip` of each of these schedules that has one, by schedule id: one query."""
        return {
            schedule_id: {
                "run_id": last.run_id,
                "planned_at": last.planned_at,
                "skipped_at": last.skipped_at,
                "skip_reason": skip_reason_of(last.skip_reason, last.blocker, last.skipped_count),
            }
            for schedule_id, last in last_skips_of(self.ledger.store, schedule_ids).items()
        }

    def backlog(self, tenant_id: UUID | None) -> dict[str, int]:
        """How many runs wait to launch, wait to retry, or lie in the dead letter."""
        counts = backlog_by_status(self.ledger.store, tenant_id)
        return {
            "pending_runs": counts[PENDING],
            "retry_wait_runs": counts[RETRY_WAIT],
            "dead_letter_runs": counts[DEAD_LETTER],
        }

    def unfinished(self, schedule_id: UUID) -> int:
        """Runs of the schedule not yet finished, counting every run committed so far."""
        self.projector.catch_up()
        return unfinished_count(self.ledger.store, schedule_id)
