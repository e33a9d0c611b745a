"""Run queries: the cycles of a schedule, newest planned first."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from cronledger.application.directory import Directory, Page
from cronledger.persistence.ledger import Ledger, TimelineEntry, jsonable
from domain.directory import Principal, check_expected_version
from domain.errors import NotFound, ValidationFailed
from domain.runs import (
    DEAD_LETTER,
    PENDING,
    RETRY_WAIT,
    Run,
    legacy_manual_run_uuid,
    manual_run_uuid,
    skip_reason_of,
)
from projections.engine import Projector
from projections.keyset import Window
from projections.runs import (
    RunDetail,
    RunFilter,
    RunRow,
    backlog_by_status,
    last_skips_of,
    run_attempts,
    run_log_page,
    run_row,
    unfinished_count,
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
    ) -> RunDetail:
        """A new round of attempts for a failed, dead-lettered or cancelled run."""
        return self._act(actor, schedule_id, run_id, version, reason, self._retried)

    def _retried(self, run: Run, at: datetime, actor: str, reason: str | None) -> None:
        """Retry, refused as run-now is (422) while the initiator or definition still fails
        the launch checks: the new round could only fail again (a built-in job's run has
        neither: its job is checked as it runs)."""
        run.retry(at, actor, reason)
        if run.is_job:
            return
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
    ) -> RunDetail:
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
    ) -> RunDetail:
        def attempt() -> RunDetail:
            run = self.run(actor.tenant_id, schedule_id, run_id)
            check_expected_version("run", run.version, version)
            command(run, self.ledger.clock(), actor.account_id, reason)
            self.ledger.save(run)
            return RunDetail.of_aggregate(run)

        return self.ledger.retrying(attempt)

    def view(self, tenant_id: UUID, schedule_id: UUID, run_id: str) -> RunDetail:
        """A run of this schedule in this tenant, from its rows; anything else is not found."""
        found = self.view_by_id(tenant_id, run_id)
        if found.schedule_id != str(schedule_id):
            raise NotFound("run", run_id)
        return found

    def view_by_id(self, tenant_id: UUID, run_id: str) -> RunDetail:
        """A run of this tenant by its id alone, from its rows; another tenant's is not found."""
        try:
            wanted = UUID(run_id)
        except ValueError:
            raise NotFound("run", run_id) from None
        row = run_row(self.ledger.store, tenant_id, wanted)
        if row is None:
            raise NotFound("run", run_id)
        return RunDetail(row, run_attempts(self.ledger.store, row.id))

    def frozen_by_id(self, tenant_id: UUID, run_id: str) -> tuple[RunDetail, dict[str, Any]]:
        """A run of this tenant by its id alone, from its history, and every value it was
        frozen with when registered (what it launches with: its answer leaves the schedule's
        name, trigger and zone out)."""
        run = self.ledger.find_in_tenant(Run, run_id, "run", tenant_id)
        return RunDetail.of_aggregate(run), jsonable(run.frozen)

    def timeline(self, tenant_id: UUID, run_id: str) -> list[TimelineEntry]:
        """Every event of one of the tenant's runs."""
        return self.ledger.timeline(self.ledger.find_in_tenant(Run, run_id, "run", tenant_id).id)

    def list_page(self, tenant_id: UUID, run_filter: RunFilter, window: Window) -> Page[RunRow]:
        """The tenant's runs that match, newest planned first (deleted schedules' included),
        from their `runs` rows."""
        listed = run_log_page(self.ledger.store, tenant_id, run_filter, window)
        return Page.of(listed.rows, window, listed)

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
                "skip_reason": skip_reason_of(
                    last.skip_reason, last.blocker, last.skipped_count, last.calendar
                ),
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
