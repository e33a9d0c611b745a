"""Run queries: the cycles of a schedule, newest planned first."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from cronledger.application.directory import Page
from cronledger.persistence.ledger import Ledger, jsonable
from domain.directory import Principal, check_expected_version
from domain.errors import NotFound
from domain.runs import DEAD_LETTER, PENDING, RETRY_WAIT, Run
from projections.engine import Projector
from projections.runs import backlog_by_status, run_page, unfinished_count
from projections.schedules import last_run_of


@dataclass(frozen=True)
class RunView:
    id: str
    schedule_id: str
    planned_at: datetime
    trigger: str
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
    finished_at: datetime | None
    skipped_count: int
    missed_until: datetime | None
    attempts: list[dict[str, Any]]
    version: int

    @classmethod
    def of(cls, run: Run) -> RunView:
        return cls(
            id=str(run.id),
            schedule_id=str(run.schedule_id),
            planned_at=run.planned_at,
            trigger=run.trigger,
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
            finished_at=run.finished_at,
            skipped_count=run.skipped_count,
            missed_until=run.missed_until,
            attempts=jsonable(run.attempts),
            version=run.version,
        )


class Runs:
    def __init__(self, ledger: Ledger, projector: Projector) -> None:
        self.ledger = ledger
        self.projector = projector

    def run(self, tenant_id: UUID, schedule_id: UUID, run_id: str) -> Run:
        """A run of this schedule in this tenant; anything else is not found."""
        run = self.ledger.find_in_tenant(Run, run_id, "run", tenant_id)
        if run.schedule_id != schedule_id:
            raise NotFound("run", run_id)
        return run

    def retry(
        self, actor: Principal, schedule_id: UUID, run_id: str, version: int | None
    ) -> RunView:
        """A new round of attempts for a failed, dead-lettered or cancelled run."""
        return self._act(actor, schedule_id, run_id, version, Run.retry)

    def cancel(
        self, actor: Principal, schedule_id: UUID, run_id: str, version: int | None
    ) -> RunView:
        """No further attempts for a run that is pending or waiting to retry."""
        return self._act(actor, schedule_id, run_id, version, Run.cancel)

    def _act(
        self,
        actor: Principal,
        schedule_id: UUID,
        run_id: str,
        version: int | None,
        command: Callable[[Run, datetime, str], None],
    ) -> RunView:
        def attempt() -> RunView:
            run = self.run(actor.tenant_id, schedule_id, run_id)
            check_expected_version("run", run.version, version)
            command(run, self.ledger.clock(), actor.account_id)
            self.ledger.save(run)
            return RunView.of(run)

        return self.ledger.retrying(attempt)

    def view(self, tenant_id: UUID, schedule_id: UUID, run_id: str) -> RunView:
        return RunView.of(self.run(tenant_id, schedule_id, run_id))

    def list_page(
        self, schedule_id: UUID, status: str | None, page: int, page_size: int
    ) -> Page[RunView]:
        keys, total = run_page(self.ledger.store, schedule_id, status, page, page_size)
        found = self.ledger.get_many([UUID(key) for key in keys])
        items = [RunView.of(run) for run in found.values() if isinstance(run, Run)]
        items.sort(key=lambda v: (v.planned_at, v.id), reverse=True)
        return Page(items, page, page_size, total)

    def last_run(self, schedule_id: UUID) -> dict[str, Any] | None:
        """The schedule's newest planned run (kept on its `schedules` row)."""
        last = last_run_of(self.ledger.store, schedule_id)
        if last is None:
            return None
        return {
            "run_id": last.run_id,
            "planned_at": jsonable(last.planned_at),
            "status": last.status,
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
