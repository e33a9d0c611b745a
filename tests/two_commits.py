"""A worker that splits an attempt into two commits, the claim with its lease and then the
launch, as a worker of an earlier release did: the tests use it to stand for a worker that
stopped, paused or died between the two (production launches in one commit, `Worker.poll`)."""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from functools import partial
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from cronledger.application.launches import Claim, Worker, WorkReport
from cronledger.application.services import Services
from cronledger.config import Settings
from cronledger.persistence.ledger import Ledger
from domain.runs import ATTEMPT_FAILED, ATTEMPT_SUCCEEDED, Run
from projections.engine import Projector

log = logging.getLogger("tests.two_commits")
LAUNCH_OUTCOMES = {ATTEMPT_SUCCEEDED: "succeeded", ATTEMPT_FAILED: "failed"}


class TwoCommitWorker(Worker):
    """`claim` starts up to `worker_concurrency` due attempts and commits them; `launch` checks,
    creates and records them in a second commit."""

    @classmethod
    def of(cls, services: Services, name: str | None = None) -> TwoCommitWorker:
        return cls(services.ledger, services.projector, services.settings, name)

    def __init__(
        self, ledger: Ledger, projector: Projector, settings: Settings, name: str | None = None
    ) -> None:
        super().__init__(ledger, projector, settings, name)
        self.slots = settings.worker_concurrency
        self.held: dict[UUID, Claim] = {}  # claimed, no outcome recorded yet

    def claim(self, report: WorkReport | None = None) -> list[Claim]:
        """Start up to `worker_concurrency` due attempts, each committed with its lease and not
        launched: the first of an attempt's two commits (`launch` is the second).

        One transaction for the batch; if another worker won any run, one at a time.
        """
        report = report if report is not None else WorkReport()
        due = self._due(self.slots)
        try:
            claims = self._claimed(due, report)
        except IntegrityError:
            claims = [
                claim
                for run_id in due
                for claim in self.ledger.retrying(partial(self._claimed, [run_id], report))
            ]
        for claim in claims:
            self.held[claim.run.id] = claim
            log.info("attempt started", extra=self._traced(claim))
        return claims

    def _claimed(self, run_ids: Sequence[UUID], report: WorkReport) -> list[Claim]:
        """Start the due runs' attempts and commit them; counted in `report` once committed.

        An attempt this worker started without hearing so (the commit went through, its answer
        was lost) is read back as a claim, not left to its lease."""
        runs = self._runs(run_ids)
        now = self.ledger.clock()
        unheard = [
            Claim(run, len(run.attempts))
            for run in runs
            if run.id not in self.held
            and not run.is_due(now)
            and run.holds(len(run.attempts), self.name)
        ]
        counted = WorkReport(claimed=len(unheard))
        claims = self._started(runs, now, counted)
        self.ledger.save(*(run for run in runs if run.pending_events))
        report.add(counted)
        return [*unheard, *claims]

    def launch(self, claims: Sequence[Claim], report: WorkReport | None = None) -> WorkReport:
        """Launch claimed attempts, counting their outcomes: the second of an attempt's two
        commits.

        One transaction for the batch; if anything moved meanwhile, one at a time.
        """
        report = report if report is not None else WorkReport()
        outcomes = self.ledger.save_batch_or_each(
            partial(self._launched, claims), claims, self._relaunch
        )
        for claim, outcome in zip(claims, outcomes, strict=True):
            self.held.pop(claim.run.id, None)
            report.count(outcome)
        return report

    def _relaunch(self, claim: Claim) -> str:
        """Launch one attempt from a fresh read; a lost lease is recorded, never acted on."""
        run = self.ledger.find(Run, claim.run.id, "run", claim.run.id)
        if recorded := self._recorded_outcome(run, claim.number):
            return recorded  # an earlier commit went through, though its answer was lost
        if not run.holds(claim.number, self.name):
            run.reject_outcome(claim.number, self.name, "launch", self.ledger.clock())
            self.ledger.save(run)
            log.warning("launch not recorded: the lease was lost", extra=self._traced(claim))
            return "rejected"
        fresh = Claim(run, claim.number)
        return self._launched([fresh], self._instances_made([fresh]))[0]

    def _recorded_outcome(self, run: Run, number: int) -> str | None:
        """The outcome this worker's launch of attempt `number` recorded already, if it did."""
        for attempt in run.attempts:
            if attempt["number"] == number and attempt["worker"] == self.name:
                return LAUNCH_OUTCOMES.get(attempt["outcome"] or "")
        return None

    def _launched(self, claims: Sequence[Claim], made: Collection[UUID] = ()) -> list[str]:
        """Check, create and record every claimed attempt, all in one commit; the outcomes."""
        launched, unchanged, outcomes = self._launched_in_memory(claims, made, self.ledger.clock())
        self.ledger.save(*launched, unchanged=unchanged)
        for claim, outcome in zip(claims, outcomes, strict=True):
            self._log_outcome(claim, outcome)
        return outcomes
