"""The worker: claims due runs and launches each as an approval instance, with retries.

An attempt is two commits. The claim records the attempt with its lease. The launch commits
the new instance together with the attempt's success (同事务回执), and only while the
initiator's account is as the checks read it, so no instance is ever created after the
initiator's deactivation committed. A retry or a recovery finds the instance by its id.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TypeVar
from uuid import UUID, uuid4

from eventsourcing.domain import Aggregate

from cronledger.application.services import Services
from cronledger.config import Settings
from cronledger.persistence.ledger import Ledger
from domain.directory import Account, Definition, account_uuid
from domain.launch import LaunchFailed, checked_launch
from domain.policy import RunPolicy
from domain.runs import DEAD_LETTER, Run
from projections.engine import Projector
from projections.runs import due_runs, running_per_schedule, unfinished_earlier

log = logging.getLogger("tick.worker")
A = TypeVar("A", bound=Aggregate)
LaunchInputs = tuple[Account | None, Definition | None, Account | None]
DUE_READ_FACTOR = 4  # due runs read per free slot, so that busy schedules can be passed over


@dataclass(frozen=True)
class Claim:
    """An attempt this worker started: the run as saved with it, and its number."""

    run: Run
    number: int


@dataclass
class WorkReport:
    claimed: int = 0
    succeeded: int = 0
    failed: int = 0
    skipped: int = 0
    rejected: int = 0


class Worker:
    @classmethod
    def of(cls, services: Services, name: str | None = None) -> Worker:
        return cls(services.ledger, services.projector, services.settings, name)

    def __init__(
        self, ledger: Ledger, projector: Projector, settings: Settings, name: str | None = None
    ) -> None:
        self.ledger = ledger
        self.projector = projector
        self.policy = RunPolicy.from_settings(settings)
        self.lease = timedelta(seconds=settings.lease_seconds)
        self.slots = settings.worker_concurrency
        self.per_schedule = settings.schedule_concurrency
        self.name = name or f"worker:{socket.gethostname()}:{os.getpid()}:{uuid4().hex[:6]}"
        self.stopping = threading.Event()  # set on shutdown: what is claimed finishes, no more
        self.held: dict[UUID, Claim] = {}  # claimed, no outcome recorded yet

    def poll(self) -> WorkReport:
        """Claim up to `worker_concurrency` due attempts, then launch them."""
        report = WorkReport()
        self.projector.catch_up()
        with self.ledger.projections_deferred():  # the next poll catches them up
            self.launch(self.claim(report), report)
        if report.claimed:
            log.info("launched runs", extra={"worker": self.name, **report.__dict__})
        return report

    def drain(self) -> WorkReport:
        """Poll until nothing is due or the worker is stopping (one loop iteration)."""
        total = WorkReport()
        while not self.stopping.is_set() and (report := self.poll()).claimed:
            for key, value in report.__dict__.items():
                setattr(total, key, getattr(total, key) + value)
        return total

    # -- claiming ------------------------------------------------------------

    def _due(self) -> list[tuple[UUID, str]]:
        """Due runs, oldest due first, leaving out schedules already at their limit."""
        now = self.ledger.clock()
        rows = due_runs(self.ledger.store, now, self.slots * DUE_READ_FACTOR)
        schedule_ids = {schedule_id for _, schedule_id in rows}
        running = running_per_schedule(self.ledger.store, schedule_ids, now)
        chosen: list[tuple[UUID, str]] = []
        for run_id, schedule_id in rows:
            if len(chosen) == self.slots or running.get(schedule_id, 0) >= self.per_schedule:
                continue
            running[schedule_id] = running.get(schedule_id, 0) + 1
            chosen.append((UUID(run_id), schedule_id))
        return chosen

    def claim(self, report: WorkReport | None = None) -> list[Claim]:
        """Claim the due attempts, each saved with its lease: the first half of a poll.

        One transaction for the batch; if another worker won any run, one at a time.
        """
        report = report if report is not None else WorkReport()
        due = self._due()
        runs = [r for r in self.ledger.get_many([i for i, _ in due]).values() if isinstance(r, Run)]
        now = self.ledger.clock()
        claimed = [self._claim_one(run, now, report) for run in runs]

        def save_all() -> list[Claim | None]:
            self.ledger.save(*runs)
            return claimed

        claims = [c for c in self.ledger.save_batch_or_each(save_all, runs, self._claim_again) if c]
        report.claimed += len(claims)
        for claim in claims:
            self.held[claim.run.id] = claim
            log.info("attempt started", extra=self._traced(claim))
        return claims

    def release_held(self) -> None:
        """Give back the attempts this worker claimed and could not launch (see `Run.release`),
        so that another worker launches them now rather than after their lease."""
        try:
            for claim in list(self.held.values()):
                self._release(claim)
        except Exception:
            log.exception("could not release held attempts: their leases will")
        self.held.clear()

    def _release(self, claim: Claim) -> None:
        run = self.ledger.find(Run, claim.run.id, "run", claim.run.id)
        if run.holds(claim.number, self.name):
            run.release(claim.number, self.name, self.ledger.clock())
            self.ledger.save(run)
            log.info("attempt released", extra=self._traced(claim))

    def _claim_again(self, stale: Run) -> Claim | None:
        """Claim one run afresh; None when another worker has it."""
        run = self.ledger.find(Run, stale.id, "run", stale.id)
        claim = self._claim_one(run, self.ledger.clock(), WorkReport())
        if run.pending_events:
            self.ledger.save(run)
        return claim

    def _claim_one(self, run: Run, now: datetime, report: WorkReport) -> Claim | None:
        if not run.is_due(now):
            return None
        if run.skips_overlap and (
            earlier := unfinished_earlier(
                self.ledger.store, run.schedule_id, run.planned_at, run.registered_at, run.id
            )
        ):
            run.skip_overlap(earlier, now, self.name)
            report.skipped += 1
            return None
        number = run.claim(self.name, now, self.lease)
        return Claim(run, number) if number else None

    # -- launching -----------------------------------------------------------

    def launch(self, claims: Sequence[Claim], report: WorkReport | None = None) -> WorkReport:
        """Launch claimed attempts, counting their outcomes: the second half of a poll.

        One transaction for the batch; if anything moved meanwhile, one at a time.
        """
        report = report if report is not None else WorkReport()
        outcomes = self.ledger.save_batch_or_each(
            partial(self._launched, claims), claims, self._relaunch
        )
        for claim, outcome in zip(claims, outcomes, strict=True):
            self.held.pop(claim.run.id, None)
            setattr(report, outcome, getattr(report, outcome) + 1)
        return report

    def _relaunch(self, claim: Claim) -> str:
        """Launch one attempt from a fresh read; a lost lease is recorded, never acted on."""
        run = self.ledger.find(Run, claim.run.id, "run", claim.run.id)
        if not run.holds(claim.number, self.name):
            run.reject_outcome(claim.number, self.name, "launch", self.ledger.clock())
            self.ledger.save(run)
            log.warning("launch not recorded: the lease was lost", extra=self._traced(claim))
            return "rejected"
        made = self.ledger.exists(run.instance_id_to_launch)  # by an attempt that lost its outcome
        return self._launched([Claim(run, claim.number)], reuse=made)[0]

    def _launched(self, claims: Sequence[Claim], reuse: bool = False) -> list[str]:
        """Check, create and record every claimed attempt, all in one commit; the outcomes.

        The commit goes through only while each initiator's account is as the checks read it.
        If an instance exists already, the commit fails and each attempt goes again alone,
        then reusing (`reuse`) the instance that one run made.
        """
        now = self.ledger.clock()
        inputs = self._launch_inputs([claim.run for claim in claims])
        changed: list[Aggregate] = []
        unchanged: dict[UUID, int] = {}
        outcomes: list[str] = []
        for claim in claims:
            run = claim.run
            try:
                initiator, definition = checked_launch(*inputs[run.id])
            except LaunchFailed as failure:
                run.fail(claim.number, self.name, failure, self.policy, now)
                outcomes.append("failed")
            else:
                instance_id = run.instance_id_to_launch
                if not reuse:
                    changed.append(run.approval(definition, now))
                run.succeed(claim.number, self.name, str(instance_id), now)
                unchanged[initiator.id] = initiator.version
                outcomes.append("succeeded")
            changed.append(run)
        self.ledger.save(*changed, unchanged=list(unchanged.items()))
        for claim, outcome in zip(claims, outcomes, strict=True):
            self._log_outcome(claim, outcome)
        return outcomes

    def _log_outcome(self, claim: Claim, outcome: str) -> None:
        """One line per committed launch; never the form data (requirement 002). A failed
        attempt is a WARNING, one that dead-lettered its run an ERROR."""
        run = claim.run
        if outcome == "succeeded":
            log.info("launch succeeded", extra=self._traced(claim, instance_id=run.instance_id))
        else:
            level = logging.ERROR if run.status == DEAD_LETTER else logging.WARNING
            fields = self._traced(claim, error_code=run.error_code, status=run.status)
            log.log(level, "launch failed", extra=fields)

    def _traced(self, claim: Claim, **fields: object) -> dict[str, object]:
        """A launch log line's fields: the run's trace id (its record shows it), the attempt."""
        run = claim.run
        return {
            "trace_id": run.trace_id,
            "run_id": str(run.id),
            "schedule_id": str(run.schedule_id),
            "tenant_id": str(run.tenant_id),
            "attempt": claim.number,
            "worker": self.name,
            **fields,
        }

    def _launch_inputs(self, runs: Sequence[Run]) -> dict[UUID, LaunchInputs]:
        """Each run's initiator, definition and schedule's last saver, as of now."""
        wanted = {
            run.id: (
                account_uuid(run.tenant_id, run.initiator_id),
                _uuid_or_none(run.definition_id),
                account_uuid(run.tenant_id, run.saved_by),
            )
            for run in runs
        }
        found = self.ledger.get_many([i for ids in wanted.values() for i in ids if i])
        return {run.id: _resolved(run.tenant_id, wanted[run.id], found) for run in runs}


def _resolved(
    tenant_id: UUID, ids: tuple[UUID, UUID | None, UUID], found: Mapping[UUID, Aggregate]
) -> LaunchInputs:
    initiator, definition, saver = ids
    return (
        _owned(found.get(initiator), Account, tenant_id),
        _owned(found.get(definition) if definition else None, Definition, tenant_id),
        _owned(found.get(saver), Account, tenant_id),
    )


def _owned(aggregate: Aggregate | None, kind: type[A], tenant_id: UUID) -> A | None:
    if isinstance(aggregate, kind) and getattr(aggregate, "tenant_id", None) == tenant_id:
        return aggregate
    return None


def _uuid_or_none(text: str) -> UUID | None:
    try:
        return UUID(text)
    except ValueError:
        return None
