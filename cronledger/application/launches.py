"""Launching runs (the worker's command): due runs claimed and launched as approval
instances, with retries; a run of a built-in job (docs/jobs.md) is claimed alike and its job
run once the claim is committed.

An instance lives on the same log as its run, so a poll starts and launches attempts in one
commit: each claim, its new instance and the attempt's success (同事务回执) or failure, for up
to LAUNCHES_PER_COMMIT runs at once. It commits only while each initiator's account is as the
checks read it, so no instance is ever created after the initiator's deactivation committed,
and no attempt is left in flight between commits. An attempt an earlier release left claimed
between two commits is taken over once its lease ran out; a retry or a recovery finds the
instance by its id.

A job's attempt is claimed in that commit with a lease that outlasts its timeout, then run
outside any transaction (a job may take seconds), and its outcome recorded in a commit of its
own: the same retries and dead letter as a launch's.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache, partial
from typing import Any, TypeVar
from uuid import UUID, uuid4

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError
from opentelemetry.trace import StatusCode

from cronledger.application.auto_pause import cycles_counted
from cronledger.application.calendars import Calendars
from cronledger.application.jobs import Jobs
from cronledger.application.reviews import Reviewing
from cronledger.application.services import Services
from cronledger.application.turns import RegistrationTurn
from cronledger.config import Settings
from cronledger.persistence.ledger import Ledger
from cronledger.tracing import span_in
from domain.approvals import Parties
from domain.directory import Account, Definition, DefinitionTerms, account_uuid
from domain.errors import NoEligibleReviewer, NotEnoughReviewers
from domain.launch import (
    NO_ELIGIBLE_REVIEWER,
    NOT_ENOUGH_REVIEWERS,
    LaunchFailed,
    checked_launch,
)
from domain.policy import RunPolicy
from domain.runs import DEAD_LETTER, Run
from projections.engine import Projector
from projections.runs import Cycle, blocking_runs, due_runs, running_per_schedule

log = logging.getLogger("tick.worker")
A = TypeVar("A", bound=Aggregate)
LaunchInputs = tuple[Account | None, Definition | None, Account | None]
DUE_READ_FACTOR = 4  # due runs read per run taken, so that busy schedules can be passed over
# Attempts a poll starts and launches in one commit (about three events each): none is in
# flight once it commits, so `worker_concurrency` does not bound it.
LAUNCHES_PER_COMMIT = 300
ACCOUNT_IDS_KEPT = 4096
JOB_LEASE_MARGIN = timedelta(seconds=30)  # a job's lease outlasts its timeout by this


@dataclass(frozen=True)
class LogLines:
    """What the worker's log says of an attempt's outcome."""

    succeeded: str
    failed: str
    rejected: str


LAUNCH_LINES = LogLines(
    "launch succeeded", "launch failed", "launch not recorded: the lease was lost"
)
JOB_LINES = LogLines("job succeeded", "job failed", "job not recorded: the lease was lost")


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

    def add(self, other: WorkReport) -> None:
        for key, value in other.__dict__.items():
            setattr(self, key, getattr(self, key) + value)

    def count(self, outcome: str) -> None:
        setattr(self, outcome, getattr(self, outcome) + 1)


class Worker:
    @classmethod
    def of(cls, services: Services, name: str | None = None) -> Worker:
        worker = cls(services.ledger, services.projector, services.settings, name)
        worker.reviewing = services.approvals.reviewing
        worker.calendars = services.calendars
        worker.jobs = Jobs.of(services, worker.name)
        worker.registration = services.registration
        return worker

    def __init__(
        self, ledger: Ledger, projector: Projector, settings: Settings, name: str | None = None
    ) -> None:
        self.ledger = ledger
        self.reviewing = Reviewing(ledger)
        self.calendars = Calendars(ledger)
        self.projector = projector
        self.policy = RunPolicy.from_settings(settings)
        self.lease = timedelta(seconds=settings.lease_seconds)
        self.per_schedule = settings.schedule_concurrency
        self.name = name or f"worker:{socket.gethostname()}:{os.getpid()}:{uuid4().hex[:6]}"
        self.stopping = threading.Event()  # set on shutdown: what is claimed finishes, no more
        self.jobs: Jobs | None = None  # `of` gives it one: the built-in jobs it runs
        # `of` gives it its process's: the tick's saves go first, and wake it
        self.registration = RegistrationTurn()
        self.registration_wait = settings.scan_budget_seconds

    def poll(self) -> WorkReport:
        """Start and launch up to LAUNCHES_PER_COMMIT due attempts, all in one commit; then
        run the jobs among them, each recorded as it ends."""
        self.registration.wait(self.registration_wait)
        self.projector.catch_up()
        due = self._due(LAUNCHES_PER_COMMIT)
        with self.ledger.projections_deferred():  # the next poll catches them up
            report, jobs = self._start_and_launch(due)
        for claim in jobs:
            report.count(self._run_job(claim))
        if report.claimed:
            log.info("launched runs", extra={"worker": self.name, **report.__dict__})
        return report

    def pause(self, interval: float) -> None:
        """Between polls: `interval` seconds, or less once this process's tick has registered
        cycles (they are launched at once), or once the worker is stopping."""
        self.registration.wait_for_cycles(interval, self.stopping)

    def drain(self) -> WorkReport:
        """Poll until nothing is due or the worker is stopping (one loop iteration)."""
        total = WorkReport()
        while not self.stopping.is_set():
            report = self.poll()
            total.add(report)
            if not (report.claimed or report.skipped):
                break
        return total

    def _start_and_launch(self, run_ids: Sequence[UUID]) -> tuple[WorkReport, list[Claim]]:
        """All in one commit; if anything moved meanwhile (another worker won a run, an
        initiator changed, an instance exists), all again from a fresh read; if that fails
        too, one run at a time. What happened, and the jobs' attempts claimed (to run)."""
        for check_instances in (False, True):
            with suppress(IntegrityError):
                return self._started_and_launched(run_ids, check_instances)
        report, jobs = WorkReport(), []
        for run_id in run_ids:
            each = self.ledger.retrying(partial(self._started_and_launched, [run_id], True))
            report.add(each[0])
            jobs.extend(each[1])
        return report, jobs

    def _started_and_launched(
        self, run_ids: Sequence[UUID], check_instances: bool
    ) -> tuple[WorkReport, list[Claim]]:
        """Read the runs, start each due one's attempt (or skip its overlap), launch the
        approvals' attempts, and commit it all at once; what happened, and the attempts of
        the jobs (committed as claimed: they run after the commit).

        With `check_instances`, an instance an earlier attempt made (and lost the outcome of)
        is reused; without, its existence fails the commit.
        """
        runs = self._runs(run_ids)
        now = self.ledger.clock()
        report = WorkReport()
        claims = self._started(runs, now, report)
        launches = [claim for claim in claims if not claim.run.is_job]
        made = self._instances_made(launches) if check_instances else frozenset()
        launched, unchanged, outcomes = self._launched_in_memory(launches, made, now)
        claimed = {claim.run.id for claim in launches}
        counted = cycles_counted(self.ledger, runs, now)  # the schedules' failed cycles
        self.ledger.save(
            *launched,
            *(run for run in runs if run.id not in claimed and run.pending_events),
            *counted.schedules,
            unchanged=unchanged,
        )
        counted.log_paused()
        for claim, outcome in zip(launches, outcomes, strict=True):
            report.count(outcome)
            with self._launch_span(claim, outcome):
                self._log_outcome(claim, outcome)
        return report, [claim for claim in claims if claim.run.is_job]

    # -- built-in jobs ---------------------------------------------------------

    def _run_job(self, claim: Claim) -> str:
        """Run a claimed job's attempt, then record its outcome; the outcome counted."""
        assert self.jobs is not None, "Worker.of gives a worker its job runner"
        try:
            result: dict[str, object] | LaunchFailed = self.jobs.run(claim.run)
        except LaunchFailed as failure:
            result = failure
        outcome, run = self.ledger.retrying(partial(self._record_job, claim, result))
        recorded = Claim(run, claim.number)
        with self._launch_span(recorded, outcome, "run job"):
            self._log_outcome(recorded, outcome, JOB_LINES)
        return outcome

    def _record_job(
        self, claim: Claim, result: dict[str, object] | LaunchFailed
    ) -> tuple[str, Run]:
        """The job's outcome on its run, read afresh; a lease lost meanwhile is recorded,
        never applied."""
        run = self.ledger.find(Run, claim.run.id, "run", claim.run.id)
        now = self.ledger.clock()
        if not run.holds(claim.number, self.name):
            run.reject_outcome(claim.number, self.name, "job", now)
            outcome = "rejected"
        elif isinstance(result, LaunchFailed):
            run.fail(claim.number, self.name, result, self.policy, now)
            outcome = "failed"
        else:
            run.succeed_job(claim.number, self.name, dict(result), now)
            outcome = "succeeded"
        counted = cycles_counted(self.ledger, [run], now)  # a job's cycle counts as a launch's
        self.ledger.save(run, *counted.schedules)
        counted.log_paused()
        return outcome, run

    @contextmanager
    def _launch_span(self, claim: Claim, outcome: str, name: str = "launch run") -> Iterator[None]:
        """The launch as a span of the run's trace (the request's that started it, or the
        run's own), linked to the poll that made it; its log lines are written in it."""
        run = claim.run
        attributes: dict[str, str | int] = {
            "cronledger.run_id": str(run.id),
            "cronledger.schedule_id": str(run.schedule_id),
            "cronledger.tenant_id": str(run.tenant_id),
            "cronledger.attempt": claim.number,
            "cronledger.outcome": outcome,
        }
        with span_in(name, run.launch_traceparent, attributes) as span:
            if outcome != "succeeded":
                span.set_status(StatusCode.ERROR, run.error_code)
            yield

    def _runs(self, run_ids: Sequence[UUID]) -> list[Run]:
        """The runs as the log has them now, in the order asked."""
        found = self.ledger.get_many(run_ids)
        return [run for i in run_ids if isinstance(run := found.get(i), Run)]

    def _instances_made(self, claims: Sequence[Claim]) -> frozenset[UUID]:
        """The instances of these attempts' runs that exist already."""
        return frozenset(self.ledger.get_many([c.run.instance_id_to_launch for c in claims]))

    # -- claiming ------------------------------------------------------------

    def _due(self, limit: int) -> list[UUID]:
        """Up to `limit` due runs, oldest due first, leaving out schedules at their limit."""
        now = self.ledger.clock()
        rows = due_runs(self.ledger.store, now, limit * DUE_READ_FACTOR)
        schedule_ids = {schedule_id for _, schedule_id in rows}
        running = running_per_schedule(self.ledger.store, schedule_ids, now)
        chosen: list[UUID] = []
        for run_id, schedule_id in rows:
            if len(chosen) == limit or running.get(schedule_id, 0) >= self.per_schedule:
                continue
            running[schedule_id] = running.get(schedule_id, 0) + 1
            chosen.append(UUID(run_id))
        return chosen

    def _started(self, runs: Sequence[Run], now: datetime, report: WorkReport) -> list[Claim]:
        """Each due run's next attempt started with its lease, or its overlap skipped."""
        due = [run for run in runs if run.is_due(now)]
        blockers = blocking_runs(
            self.ledger.store,
            [
                Cycle(
                    run.id, run.schedule_id, run.planned_at, run.registered_at, run.overlap_policy
                )
                for run in due
                if run.skips_overlap
            ],
            now,
        )
        claims: list[Claim] = []
        for run in due:
            if blocker := blockers.get(run.id):
                run.skip_overlap(blocker, now, self.name)
                report.skipped += 1
            elif number := run.claim(self.name, now, self._lease_of(run)):
                claims.append(Claim(run, number))
        report.claimed += len(claims)
        return claims

    def _lease_of(self, run: Run) -> timedelta:
        """How long an attempt is held: a job's outlasts its timeout."""
        if not run.is_job:
            return self.lease
        return max(self.lease, timedelta(seconds=run.job_timeout_seconds) + JOB_LEASE_MARGIN)

    def _launched_in_memory(
        self, claims: Sequence[Claim], made: Collection[UUID], now: datetime
    ) -> tuple[list[Aggregate], list[tuple[UUID, int]], list[str]]:
        """Check, create and record every claimed attempt, saving nothing: what to save, the
        initiators' versions the commit must find unchanged, and the outcomes.

        An instance in `made` exists already (an earlier attempt lost its outcome): it is
        reused. One that exists and is not there fails the commit.
        """
        inputs = self._launch_inputs([claim.run for claim in claims])
        chooser = Chooser(self.reviewing.read_once())
        changed: list[Aggregate] = []
        unchanged: dict[UUID, int] = {}
        outcomes: list[str] = []
        for claim in claims:
            run = claim.run
            try:
                initiator, definition = checked_launch(*inputs[run.id])
                candidates = chooser.candidates(run, definition, made)
            except LaunchFailed as failure:
                run.fail(claim.number, self.name, failure, self.policy, now)
                outcomes.append("failed")
            else:
                instance_id = run.instance_id_to_launch
                if instance_id not in made:
                    ruled = self.calendars.ruled(run.tenant_id, run.terms(definition), now)
                    changed.append(run.approval(definition, now, *candidates, ruled))
                run.succeed(claim.number, self.name, str(instance_id), now)
                unchanged[initiator.id] = initiator.version
                outcomes.append("succeeded")
            changed.append(run)
        return changed, list(unchanged.items()), outcomes

    def _log_outcome(self, claim: Claim, outcome: str, lines: LogLines = LAUNCH_LINES) -> None:
        """One line per committed launch or job; never the form data, a job's params or what
        a receiver answered (requirement 002). A failed attempt is a WARNING, one that
        dead-lettered its run an ERROR."""
        run = claim.run
        if outcome == "succeeded":
            log.info(lines.succeeded, extra=self._traced(claim, instance_id=run.instance_id))
        elif outcome == "rejected":
            log.warning(lines.rejected, extra=self._traced(claim))
        else:
            level = logging.ERROR if run.status == DEAD_LETTER else logging.WARNING
            fields = self._traced(claim, error_code=run.error_code, status=run.status)
            log.log(level, lines.failed, extra=fields)

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
                _account_id(run.tenant_id, run.initiator_id),
                _uuid_or_none(run.definition_id),
                _account_id(run.tenant_id, run.saved_by),
            )
            for run in runs
        }
        found = self.ledger.get_many([i for ids in wanted.values() for i in ids if i])
        return {run.id: _resolved(run.tenant_id, wanted[run.id], found) for run in runs}


_account_id = lru_cache(maxsize=ACCOUNT_IDS_KEPT)(account_uuid)  # hashed once, not once a run
Candidates = tuple[list[str] | None, list[dict[str, Any]] | None]


@dataclass
class Chooser:
    """Whom one commit's instances go to: the reviewers of each definition revision found once
    for the same parties, over the directory as the commit read it (`Reviewing.read_once`)."""

    reviewing: Reviewing
    found: dict[tuple[UUID, UUID, int, Parties], Candidates | LaunchFailed] = field(
        default_factory=dict
    )

    def candidates(self, run: Run, definition: Definition, made: Collection[UUID]) -> Candidates:
        """Whom the run's instance goes to, by the reviewers (or levels) of the revision it
        was frozen at (nobody eligible, or a level with fewer eligible reviewers than it
        requires, fails the attempt, which retries); None when none are named, or when the
        instance exists already."""
        terms = definition.terms_of(run.definition_revision)
        if (terms.reviewers is None and not terms.levels) or run.instance_id_to_launch in made:
            return None, None
        parties = Parties(run.initiator_id, True, run.saved_by, terms.allow_self_approval)
        key = (run.tenant_id, definition.id, run.definition_revision, parties)
        if key not in self.found:
            self.found[key] = self._levels(run.tenant_id, terms, parties)
        found = self.found[key]
        if isinstance(found, LaunchFailed):
            raise LaunchFailed(found.code, found.args[0], found.permanent, found.params)
        return found

    def _levels(
        self, tenant_id: UUID, terms: DefinitionTerms, parties: Parties
    ) -> Candidates | LaunchFailed:
        try:
            return self.reviewing.levels(tenant_id, terms, parties)
        except NoEligibleReviewer as refused:
            return LaunchFailed(NO_ELIGIBLE_REVIEWER, refused.message)
        except NotEnoughReviewers as refused:
            return LaunchFailed(NOT_ENOUGH_REVIEWERS, refused.message, params=refused.params)


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


@lru_cache(maxsize=ACCOUNT_IDS_KEPT)  # parsed once, not once a run
def _uuid_or_none(text: str) -> UUID | None:
    try:
        return UUID(text)
    except ValueError:
        return None
