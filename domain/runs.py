"""Runs (周期): one per schedule and planned instant, frozen when registered."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid5
from zoneinfo import ZoneInfo

from eventsourcing.domain import Aggregate, event

from domain.approvals import ApprovalInstance, Command, approval_uuid
from domain.directory import NAMESPACE, Account, Definition
from domain.errors import DomainError, InvalidState
from domain.permissions import APPROVAL_SUBMIT, SCHEDULE_EDIT
from domain.triggers import Trigger, fire_times, following_fire, load_zone, next_fire, parse_trigger

PENDING = "PENDING"
RUNNING = "RUNNING"
RETRY_WAIT = "RETRY_WAIT"
SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"
DEAD_LETTER = "DEAD_LETTER"
CANCELLED = "CANCELLED"
SKIPPED_OVERLAP = "SKIPPED_OVERLAP"
SKIPPED_MISSED = "SKIPPED_MISSED"
RUN_STATUSES = (
    PENDING,
    RUNNING,
    RETRY_WAIT,
    SUCCEEDED,
    FAILED,
    DEAD_LETTER,
    CANCELLED,
    SKIPPED_OVERLAP,
    SKIPPED_MISSED,
)
UNFINISHED = frozenset({PENDING, RUNNING, RETRY_WAIT})
RETRYABLE = frozenset({FAILED, DEAD_LETTER, CANCELLED})
CANCELLABLE = frozenset({PENDING, RETRY_WAIT})
INTERRUPTED = "INTERRUPTED"
MISSED_GRACE = timedelta(seconds=5)
MAX_MISSED_COUNTED = 1_000_000


def run_uuid(schedule_id: UUID, planned_at: datetime) -> UUID:
    """The one run of a schedule at a planned instant, whoever registers it."""
    instant = planned_at.astimezone(UTC).isoformat()
    return uuid5(NAMESPACE, f"schedule/{schedule_id}/run/{instant}")


def manual_run_uuid(schedule_id: UUID, request_id: str) -> UUID:
    return uuid5(NAMESPACE, f"schedule/{schedule_id}/manual/{request_id}")


@dataclass(frozen=True)
class RunPolicy:
    """How late a cycle may be registered before it counts as missed, and how often it runs."""

    grace: timedelta
    max_attempts: int
    retry_base: timedelta = timedelta(seconds=30)

    def retry_delay(self, attempt_in_round: int) -> timedelta:
        """Attempt n+1 waits base x 2^(n-1): 30, 60, 120, 240 s by default."""
        return self.retry_base * float(2 ** (attempt_in_round - 1))


class LaunchFailed(Exception):
    """Why a launch created no instance; a `permanent` failure is not retried by itself."""

    def __init__(self, code: str, message: str, permanent: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.permanent = permanent


def checked_launch(
    initiator: Account | None, definition: Definition | None, saver: Account | None
) -> tuple[Account, Definition]:
    """The initiator and definition to launch with, checked at every attempt (seeds 000-002)."""
    if initiator is None:
        raise LaunchFailed("INITIATOR_NOT_FOUND", "the initiator is not in the tenant", True)
    if not initiator.active:
        raise LaunchFailed("INITIATOR_INACTIVE", f"initiator {initiator.account_id} is inactive")
    if APPROVAL_SUBMIT not in initiator.permissions:
        message = f"initiator {initiator.account_id} lacks {APPROVAL_SUBMIT}"
        raise LaunchFailed("INITIATOR_NOT_PERMITTED", message)
    if definition is None:
        raise LaunchFailed("DEFINITION_NOT_FOUND", "the definition is not in the tenant", True)
    if not definition.published:
        raise LaunchFailed("DEFINITION_UNPUBLISHED", f"definition {definition.key} is unpublished")
    if definition.external:
        raise LaunchFailed("DEFINITION_EXTERNAL", f"definition {definition.key} is external")
    if saver is None or not saver.active:
        raise LaunchFailed("SAVER_INACTIVE", "the account that saved the schedule is inactive")
    if SCHEDULE_EDIT not in saver.permissions:
        message = f"account {saver.account_id}, which saved the schedule, lost {SCHEDULE_EDIT}"
        raise LaunchFailed("SAVER_NOT_PERMITTED", message)
    return initiator, definition


class LeaseLost(DomainError):
    code = "INVALID_STATE"

    def __init__(self, number: int, worker: str) -> None:
        super().__init__(f"attempt {number} is no longer held by worker {worker}")


@dataclass(frozen=True)
class Cycle:
    """A planned instant to register, or a summary of missed ones."""

    planned_at: datetime
    status: str = PENDING
    skipped_count: int = 0
    missed_until: datetime | None = None


@dataclass(frozen=True)
class CyclePlan:
    cycles: list[Cycle]
    next_fire_at: datetime | None


def plan_due_cycles(
    trigger: dict[str, Any],
    timezone: str,
    misfire_policy: str,
    next_fire_at: datetime,
    now: datetime,
    limit: int,
    grace: timedelta,
) -> CyclePlan:
    """The cycles due at `now`, from the plan's next fire on, and the plan's next fire after.

    A cycle is missed when `now` is more than `grace` past it. `catch_up` registers every due
    cycle, at most `limit` at a time (the rest stay due); `skip` summarises the missed ones in one
    SKIPPED_MISSED run and registers those still on time; `once` also registers the newest
    missed cycle.
    """
    parsed, zone = parse_trigger(trigger), load_zone(timezone)
    times = _fires_from(parsed, zone, next_fire_at)
    if misfire_policy == "catch_up":
        return _catch_up(times, now, limit)
    plan = _skipping(times, now, grace, keep_newest=misfire_policy == "once")
    if plan.next_fire_at is None and plan.cycles:
        return CyclePlan(plan.cycles, next_fire(parsed, zone, now))
    return plan


def _fires_from(trigger: Trigger, zone: ZoneInfo, first: datetime) -> Iterator[datetime]:
    """The plan's instant (a fire time) and the fires after it, the second one from the memo."""
    yield first
    second = following_fire(trigger, zone, first)
    if second is not None:
        yield second
        yield from fire_times(trigger, zone, second)


def _catch_up(times: Iterator[datetime], now: datetime, limit: int) -> CyclePlan:
    cycles: list[Cycle] = []
    for instant in times:
        if instant > now or len(cycles) == limit:
            return CyclePlan(cycles, instant)
        cycles.append(Cycle(instant))
    return CyclePlan(cycles, None)


def _skipping(
    times: Iterator[datetime], now: datetime, grace: timedelta, keep_newest: bool
) -> CyclePlan:
    missed: list[datetime] = []  # the first and the last two missed instants
    count = 0
    on_time: list[Cycle] = []
    upcoming = None
    for instant in times:
        if instant > now:
            upcoming = instant
            break
        if now - instant <= grace:
            on_time.append(Cycle(instant))
            continue
        count += 1
        missed = [missed[0], *missed[1:][-1:], instant] if missed else [instant]
        if count == MAX_MISSED_COUNTED:
            break  # counted enough; planning resumes after now
    return CyclePlan(_missed_cycles(missed, count, keep_newest) + on_time, upcoming)


def _missed_cycles(missed: list[datetime], count: int, keep_newest: bool) -> list[Cycle]:
    """One summary of the missed cycles; with `once`, the newest is registered instead."""
    if count == 0:
        return []
    if not keep_newest:
        return [Cycle(missed[0], SKIPPED_MISSED, count, missed[-1])]
    newest = Cycle(missed[-1])
    if count == 1:
        return [newest]
    return [Cycle(missed[0], SKIPPED_MISSED, count - 1, missed[-2]), newest]


class Run(Aggregate):
    """One cycle of a schedule, with what it was frozen with when registered."""

    @staticmethod
    def create_id(schedule_id: UUID, planned_at: datetime, request_id: str | None) -> UUID:
        if request_id is not None:
            return manual_run_uuid(schedule_id, request_id)
        return run_uuid(schedule_id, planned_at)

    @event("Registered")
    def __init__(
        self,
        tenant_id: UUID,
        schedule_id: UUID,
        planned_at: datetime,
        request_id: str | None,
        trigger: str,
        status: str,
        skipped_count: int,
        missed_until: datetime | None,
        frozen: dict[str, Any],
        max_attempts: int,
        at: datetime,
        actor: str,
    ) -> None:
        self.tenant_id = tenant_id
        self.schedule_id = schedule_id
        self.planned_at = planned_at
        self.request_id = request_id
        self.trigger = trigger
        self.status = status
        self.skipped_count = skipped_count
        self.missed_until = missed_until
        self.frozen = frozen
        self.max_attempts = max_attempts
        self.registered_at = at
        self.finished_at = at if status == SKIPPED_MISSED else None
        self.attempts: list[dict[str, Any]] = []
        self.next_attempt_at = at if status == PENDING else None
        self.instance_id: str | None = None
        self.last_error: dict[str, str] | None = None
        self.round_start = 0  # attempts before it belong to earlier rounds (manual retries)

    @property
    def attempts_in_round(self) -> int:
        return len(self.attempts) - self.round_start

    @property
    def initiator_id(self) -> str:
        return str(self.frozen["initiator_id"])

    @property
    def definition_id(self) -> str:
        return str(self.frozen["definition_id"])

    @property
    def saved_by(self) -> str:
        return str(self.frozen["saved_by"])

    @property
    def skips_overlap(self) -> bool:
        """Overlap policy `skip`, and no attempt made yet: an earlier unfinished cycle blocks it."""
        return self.frozen.get("overlap_policy") == "skip" and not self.attempts

    @property
    def instance_command_id(self) -> str:
        return f"run:{self.id}"

    @property
    def instance_id_to_launch(self) -> UUID:
        """The one instance this run can create: retries and recoveries find it again."""
        return approval_uuid(self.tenant_id, self.initiator_id, self.instance_command_id)

    def approval(self, definition: Definition, at: datetime) -> ApprovalInstance:
        """The instance this run launches: frozen values, on the initiator's behalf."""
        payload = {
            "definition_id": self.definition_id,
            "title": self.frozen["title"],
            "form_data": self.frozen["form_data"],
            "material_version": 1,
            "review_deadline_at": None,
        }
        window = definition.review_window_seconds
        return ApprovalInstance(
            tenant_id=self.tenant_id,
            definition_id=self.definition_id,
            applicant_id=self.initiator_id,
            title=self.frozen["title"],
            form_data=self.frozen["form_data"],
            material_version=1,
            review_deadline_at=at + timedelta(seconds=window),
            deadline_policy={"source": "definition", "review_window_seconds": window},
            origin={
                "source": "schedule",
                "schedule_id": str(self.schedule_id),
                "schedule_name": self.frozen["schedule_name"],
                "run_id": str(self.id),
                "scheduled_for": self.planned_at,
                "trigger_kind": self.trigger,
                "trigger": self.frozen["schedule_trigger"],
                "saved_by": self.saved_by,
            },
            allow_self_approval=definition.allow_self_approval,
            command_id=self.instance_command_id,
            fingerprint=Command("submit", None, payload).fingerprint,
            at=at,
            actor=self.initiator_id,
        )

    def is_due(self, now: datetime) -> bool:
        """Whether a worker may claim it now: due to (re)try, or its attempt's lease ran out."""
        if self.status == RUNNING:
            return bool(self.attempts[-1]["lease_expires_at"] <= now)
        return (
            self.status in CANCELLABLE
            and self.next_attempt_at is not None
            and (self.next_attempt_at <= now)
        )

    def claim(self, worker: str, now: datetime, lease: timedelta) -> int:
        """Start the next attempt, and its number; one whose lease ran out is recorded
        INTERRUPTED first, and if that was the round's last attempt the run is dead-lettered
        and 0 is returned (nothing to launch)."""
        if not self.is_due(now):
            raise InvalidState(f"run {self.id} is {self.status}, not due for an attempt")
        if self.status == RUNNING:
            exhausted = self.attempts_in_round >= self.max_attempts
            self._interrupted(
                number=len(self.attempts),
                status=DEAD_LETTER if exhausted else RETRY_WAIT,
                next_attempt_at=None if exhausted else now,
                at=now,
                actor=worker,
            )
        if self.status == DEAD_LETTER:
            return 0
        number = len(self.attempts) + 1
        self._attempt_started(
            number=number, worker=worker, lease_expires_at=now + lease, at=now, actor=worker
        )
        return number

    def holds(self, number: int, worker: str) -> bool:
        """Whether `worker` still holds attempt `number` (no one took its lease over)."""
        current = self.attempts[-1] if self.attempts else None
        return (
            self.status == RUNNING
            and current is not None
            and (current["number"], current["worker"]) == (number, worker)
        )

    def succeed(self, number: int, worker: str, instance_id: str, at: datetime) -> None:
        self.check_holds(number, worker)
        self._attempt_succeeded(number=number, instance_id=instance_id, at=at, actor=worker)

    def fail(
        self, number: int, worker: str, failure: LaunchFailed, policy: RunPolicy, at: datetime
    ) -> None:
        """Record the failure: wait and retry, or stop (dead letter, or failed for good)."""
        self.check_holds(number, worker)
        if failure.permanent:
            status, retry_at = FAILED, None
        elif self.attempts_in_round >= self.max_attempts:
            status, retry_at = DEAD_LETTER, None
        else:
            status, retry_at = RETRY_WAIT, at + policy.retry_delay(self.attempts_in_round)
        self._attempt_failed(
            number=number,
            code=failure.code,
            message=str(failure),
            status=status,
            next_attempt_at=retry_at,
            at=at,
            actor=worker,
        )

    def reject_outcome(self, number: int, worker: str, outcome: str, at: datetime) -> None:
        """A worker that lost its lease reported anyway: recorded, never applied."""
        self._outcome_rejected(number=number, outcome=outcome, worker=worker, at=at, actor=worker)

    def skip_overlap(self, earlier_run_id: str, at: datetime, actor: str) -> None:
        """Overlap policy `skip`: an earlier cycle of the schedule is not finished."""
        self._skipped_overlap(earlier_run_id=earlier_run_id, at=at, actor=actor)

    def check_holds(self, number: int, worker: str) -> None:
        if not self.holds(number, worker):
            raise LeaseLost(number, worker)

    def retry(self, at: datetime, actor: str) -> None:
        """Manual retry: a new round of attempts on the same run."""
        if self.status not in RETRYABLE:
            raise InvalidState(
                f"run {self.id} is {self.status}: only FAILED, DEAD_LETTER or CANCELLED runs retry"
            )
        self._retried(at=at, actor=actor)

    def cancel(self, at: datetime, actor: str) -> None:
        if self.status not in CANCELLABLE:
            raise InvalidState(
                f"run {self.id} is {self.status}: only PENDING or RETRY_WAIT runs can be cancelled"
            )
        self._cancelled(at=at, actor=actor)

    @event("AttemptStarted")
    def _attempt_started(
        self, number: int, worker: str, lease_expires_at: datetime, at: datetime, actor: str
    ) -> None:
        self.status = RUNNING
        self.next_attempt_at = None
        self.attempts = [
            *self.attempts,
            {
                "number": number,
                "started_at": at,
                "finished_at": None,
                "outcome": None,
                "error": None,
                "instance_id": None,
                "worker": worker,
                "lease_expires_at": lease_expires_at,
            },
        ]

    @event("AttemptSucceeded")
    def _attempt_succeeded(self, number: int, instance_id: str, at: datetime, actor: str) -> None:
        self._end_attempt("SUCCEEDED", None, instance_id, at)
        self.status = SUCCEEDED
        self.instance_id = instance_id
        self.finished_at = at

    @event("AttemptFailed")
    def _attempt_failed(
        self,
        number: int,
        code: str,
        message: str,
        status: str,
        next_attempt_at: datetime | None,
        at: datetime,
        actor: str,
    ) -> None:
        self.last_error = {"code": code, "message": message}
        self._end_attempt(FAILED, self.last_error, None, at)
        self.status = status
        self.next_attempt_at = next_attempt_at
        self.finished_at = None if status == RETRY_WAIT else at

    @event("AttemptInterrupted")
    def _interrupted(
        self, number: int, status: str, next_attempt_at: datetime | None, at: datetime, actor: str
    ) -> None:
        self.last_error = {"code": INTERRUPTED, "message": "the worker's lease ran out"}
        self._end_attempt(INTERRUPTED, self.last_error, None, at)
        self.status = status
        self.next_attempt_at = next_attempt_at
        self.finished_at = at if status == DEAD_LETTER else None

    @event("OutcomeRejected")
    def _outcome_rejected(
        self, number: int, outcome: str, worker: str, at: datetime, actor: str
    ) -> None:
        pass

    @event("SkippedOverlap")
    def _skipped_overlap(self, earlier_run_id: str, at: datetime, actor: str) -> None:
        self.status = SKIPPED_OVERLAP
        self.next_attempt_at = None
        self.finished_at = at

    @event("Retried")
    def _retried(self, at: datetime, actor: str) -> None:
        self.status = PENDING
        self.round_start = len(self.attempts)
        self.next_attempt_at = at
        self.finished_at = None

    @event("Cancelled")
    def _cancelled(self, at: datetime, actor: str) -> None:
        self.status = CANCELLED
        self.next_attempt_at = None
        self.finished_at = at

    def _end_attempt(
        self, outcome: str, error: dict[str, str] | None, instance_id: str | None, at: datetime
    ) -> None:
        last = {**self.attempts[-1], "finished_at": at, "outcome": outcome}
        self.attempts = [*self.attempts[:-1], {**last, "error": error, "instance_id": instance_id}]
