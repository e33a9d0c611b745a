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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar
from uuid import UUID, uuid4

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError

from cronledger.config import Settings
from cronledger.ledger import Ledger
from cronledger.schedules import run_policy
from domain.approvals import WAITING_REVIEW
from domain.directory import Account, Definition, account_uuid
from domain.runs import RUNNING, UNFINISHED, LaunchFailed, Run, checked_launch
from projections.engine import Projector

log = logging.getLogger("cronledger.worker")
A = TypeVar("A", bound=Aggregate)
DUE_READ_FACTOR = 4  # due runs read per free slot, so that busy schedules can be passed over


@dataclass(frozen=True)
class Claim:
    run_id: UUID
    number: int


@dataclass
class WorkReport:
    claimed: int = 0
    succeeded: int = 0
    failed: int = 0
    skipped: int = 0
    rejected: int = 0


class Worker:
    def __init__(
        self, ledger: Ledger, projector: Projector, settings: Settings, name: str | None = None
    ) -> None:
        self.ledger = ledger
        self.projector = projector
        self.policy = run_policy(settings)
        self.lease = timedelta(seconds=settings.lease_seconds)
        self.slots = settings.worker_concurrency
        self.per_schedule = settings.schedule_concurrency
        self.name = name or f"worker:{socket.gethostname()}:{os.getpid()}:{uuid4().hex[:6]}"
        self.stopping = threading.Event()  # set on shutdown: what is claimed finishes, no more

    def poll(self) -> WorkReport:
        """Claim up to `worker_concurrency` due attempts, then launch them."""
        report = WorkReport()
        self.projector.catch_up()
        for claim in self._claim(self._due(), report):
            self._launch(claim, report)
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
        rows = self.ledger.store.query(
            "SELECT id, schedule_id FROM runs WHERE (status IN (?, ?) AND next_attempt_at <= ?)"
            " OR (status = ? AND lease_expires_at <= ?)"
            " ORDER BY COALESCE(next_attempt_at, lease_expires_at), planned_at, id LIMIT ?",
            ("PENDING", "RETRY_WAIT", now, RUNNING, now, self.slots * DUE_READ_FACTOR),
        )
        running = self._running_per_schedule({schedule for _, schedule in rows})
        chosen: list[tuple[UUID, str]] = []
        for run_id, schedule_id in rows:
            if len(chosen) == self.slots or running.get(schedule_id, 0) >= self.per_schedule:
                continue
            running[schedule_id] = running.get(schedule_id, 0) + 1
            chosen.append((UUID(run_id), schedule_id))
        return chosen

    def _running_per_schedule(self, schedule_ids: set[str]) -> dict[str, int]:
        if not schedule_ids:
            return {}
        marks = ", ".join("?" for _ in schedule_ids)
        rows = self.ledger.store.query(
            f"SELECT schedule_id, COUNT(*) FROM runs WHERE status = ? "  # noqa: S608
            f"AND schedule_id IN ({marks}) GROUP BY schedule_id",
            (RUNNING, *schedule_ids),
        )
        return {schedule_id: int(count) for schedule_id, count in rows}

    def _claim(self, due: Sequence[tuple[UUID, str]], report: WorkReport) -> list[Claim]:
        """One transaction for the batch; if another worker won any run, one at a time."""
        runs = [r for r in self.ledger.get_many([i for i, _ in due]).values() if isinstance(r, Run)]
        now = self.ledger.clock()
        claims = [c for c in (self._claim_one(run, now, report) for run in runs) if c]
        try:
            self.ledger.save(*runs)
        except IntegrityError:
            claims = [c for c in (self._claim_again(run.id) for run in runs) if c]
        report.claimed += len(claims)
        return claims

    def _claim_again(self, run_id: UUID) -> Claim | None:
        """Claim one run afresh; None when another worker has it."""

        def attempt() -> Claim | None:
            run = self.ledger.find(Run, run_id, "run", run_id)
            claim = self._claim_one(run, self.ledger.clock(), WorkReport())
            if run.pending_events:
                self.ledger.save(run)
            return claim

        return self.ledger.retrying(attempt)

    def _claim_one(self, run: Run, now: datetime, report: WorkReport) -> Claim | None:
        if not run.is_due(now):
            return None
        if run.skips_overlap and (earlier := self._unfinished_earlier(run)):
            run.skip_overlap(earlier, now, self.name)
            report.skipped += 1
            return None
        number = run.claim(self.name, now, self.lease)
        return Claim(run.id, number) if number else None

    def _unfinished_earlier(self, run: Run) -> str | None:
        """An earlier cycle of the schedule not finished, or its instance still in review."""
        marks = ", ".join("?" for _ in UNFINISHED)
        rows = self.ledger.store.query(
            "SELECT r.id FROM runs r LEFT JOIN approvals a ON a.id = r.instance_id "  # noqa: S608
            f"WHERE r.schedule_id = ? AND r.planned_at < ? AND (r.status IN ({marks}) "
            "OR a.state = ?) ORDER BY r.planned_at LIMIT 1",
            (str(run.schedule_id), run.planned_at, *sorted(UNFINISHED), WAITING_REVIEW),
        )
        return str(rows[0][0]) if rows else None

    # -- launching -----------------------------------------------------------

    def _launch(self, claim: Claim, report: WorkReport) -> None:
        outcome = self.ledger.retrying(lambda: self._attempt(claim))
        setattr(report, outcome, getattr(report, outcome) + 1)

    def _attempt(self, claim: Claim) -> str:
        """Launch the claimed attempt; which outcome counter it adds to."""
        run = self.ledger.find(Run, claim.run_id, "run", claim.run_id)
        now = self.ledger.clock()
        if not run.holds(claim.number, self.name):
            run.reject_outcome(claim.number, self.name, "launch", now)
            self.ledger.save(run)
            return "rejected"
        try:
            initiator, definition = checked_launch(*self._launch_inputs(run))
        except LaunchFailed as failure:
            run.fail(claim.number, self.name, failure, self.policy, now)
            self.ledger.save(run)
            return "failed"
        instance_id = run.instance_id_to_launch
        if self.ledger.exists(instance_id):  # made by an attempt whose outcome was lost
            run.succeed(claim.number, self.name, str(instance_id), now)
            self.ledger.save(run)
            return "succeeded"
        instance = run.approval(definition, now)
        run.succeed(claim.number, self.name, str(instance.id), now)
        self.ledger.save(instance, run, unchanged=[(initiator.id, initiator.version)])
        return "succeeded"

    def _launch_inputs(self, run: Run) -> tuple[Account | None, Definition | None, Account | None]:
        """The initiator, the definition and the schedule's last saver, as of now."""
        initiator = account_uuid(run.tenant_id, run.initiator_id)
        saver = account_uuid(run.tenant_id, run.saved_by)
        definition = _uuid_or_none(run.definition_id)
        found = self.ledger.get_many([initiator, saver, *([definition] if definition else [])])
        return (
            _owned(found.get(initiator), Account, run.tenant_id),
            _owned(found.get(definition) if definition else None, Definition, run.tenant_id),
            _owned(found.get(saver), Account, run.tenant_id),
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
