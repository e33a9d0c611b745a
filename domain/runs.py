"""Runs (周期): one per schedule and planned instant, frozen when registered."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.approvals import ApprovalInstance, Ruled, Submission, approval_uuid
from domain.directory import FIRST_REVISION, NAMESPACE, Definition, DefinitionTerms
from domain.errors import DomainError, InvalidState
from domain.jobs import APPROVAL, is_job
from domain.launch import LaunchFailed
from domain.messages import Message
from domain.overlap import ALLOW, Blocker, renamed_in, skips
from domain.policy import RunPolicy
from domain.reasons import given_no_reason

PENDING = "PENDING"
RUNNING = "RUNNING"
RETRY_WAIT = "RETRY_WAIT"
SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"
DEAD_LETTER = "DEAD_LETTER"
CANCELLED = "CANCELLED"
SKIPPED_OVERLAP = "SKIPPED_OVERLAP"
SKIPPED_MISSED = "SKIPPED_MISSED"
SKIPPED_CALENDAR = "SKIPPED_CALENDAR"  # on a day its schedule's calendar does not work
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
    SKIPPED_CALENDAR,
)
SKIPPED_AT_REGISTRATION = frozenset({SKIPPED_MISSED, SKIPPED_CALENDAR})
UNFINISHED = frozenset({PENDING, RUNNING, RETRY_WAIT})
RETRYABLE = frozenset({FAILED, DEAD_LETTER, CANCELLED})
CANCELLABLE = frozenset({PENDING, RETRY_WAIT})

# Why a run was skipped (requirement 001: workflow schedules, the plan page shows 跳过原因).
SKIP_OVERLAP = "OVERLAP"
SKIP_MISSED = "MISSED"
SKIP_CALENDAR = "CALENDAR"
# The skips recorded as the cycle is registered, and the code of each.
SKIPPED_AT_REGISTRATION_CODES = {SKIPPED_MISSED: SKIP_MISSED, SKIPPED_CALENDAR: SKIP_CALENDAR}
CALENDAR_SKIP_KEYS = (
    "calendar",
    "calendar_revision",
    "rule",
    "day",
    "day_reason",
    "holiday",
    "assumed",
    "launched_run_id",
    "launched_planned_at",
)


def skip_reason_of(
    code: str, blocker: Blocker | None, count: int, calendar: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A skip reason: OVERLAP names the unfinished run that blocked the cycle (its status then,
    and the instance waiting for review if that was what blocked it), MISSED counts the missed
    cycles a summary stands for, CALENDAR names the calendar, the day it does not work and why
    (the holiday's name), and, when the cycle moved onto a later one's instant, the run
    launched instead."""
    shown = blocker if code == SKIP_OVERLAP else None
    reason: dict[str, Any] = {
        "code": code,
        "blocking_run_id": shown.run_id if shown else None,
        "blocking_status": shown.status if shown else None,
        "blocking_instance_id": shown.instance_id if shown else None,
        "count": None if code == SKIP_OVERLAP else count,
    }
    if code == SKIP_CALENDAR:
        found = calendar or {}
        reason.update({key: found.get(key) for key in CALENDAR_SKIP_KEYS}, count=1)
    return reason


# How an attempt ended (stored on the log); INTERRUPTED is also the error code of a lost lease.
ATTEMPT_SUCCEEDED = "SUCCEEDED"
ATTEMPT_FAILED = "FAILED"
INTERRUPTED = "INTERRUPTED"
LEASE_RAN_OUT = "the worker's lease ran out"
TICK_ACTOR = "system:tick"  # who registers scheduled cycles


def run_uuid(schedule_id: UUID, planned_at: datetime) -> UUID:
    """The one run of a schedule at a planned instant, whoever registers it."""
    instant = planned_at.astimezone(UTC).isoformat()
    return uuid5(NAMESPACE, f"schedule/{schedule_id}/run/{instant}")


def manual_run_uuid(schedule_id: UUID, account_id: str, request_id: str) -> UUID:
    """The one manual run of an account's request on a schedule (requirement 002: scheduled
    tasks): the key is (account, schedule, request id)."""
    return uuid5(NAMESPACE, f"schedule/{schedule_id}/account/{account_id}/manual/{request_id}")


def run_trace_id(run_id: UUID, traceparent: str | None) -> str:
    """A run's trace id (32 hex digits, W3C): that of the trace it was started under (the
    request's `traceparent`), if any, else its own id's."""
    return traceparent.split("-")[1] if traceparent else run_id.hex


def legacy_manual_run_uuid(schedule_id: UUID, request_id: str) -> UUID:
    """How release 0.1.0 named a manual run, whoever asked: such runs are found by it."""
    return uuid5(NAMESPACE, f"schedule/{schedule_id}/manual/{request_id}")


def status_was(status: str) -> Callable[[dict[str, Any]], None]:
    """Upcast from version 1, which left out the status its event always left the run in."""

    def upcast(state: dict[str, Any]) -> None:
        state["status"] = status

    return upcast


class RequestIdReused(DomainError):
    code = "REQUEST_ID_REUSED"

    def __init__(self, run: Run) -> None:
        super().__init__(
            f"request_id {run.request_id!r} registered run {run.id} at schedule version "
            f"{run.schedule_version}; the schedule has changed since: check that run's outcome, "
            "then use a new request_id"
        )


def frozen_at_first_revision(frozen: dict[str, Any]) -> dict[str, Any]:
    """What a run registered before definition revisions froze: every definition was at 1."""
    return {**frozen, "definition_revision": FIRST_REVISION}


def frozen_for_approval(state: dict[str, Any]) -> None:
    """Upcast from before built-in jobs: every run launched an approval."""
    state["frozen"] = {**state["frozen"], "target": {"kind": APPROVAL}}


def frozen_overlap_renamed(state: dict[str, Any]) -> None:
    """Upcast from before release 0.11.0 renamed the overlap policy `skip` `skip_while_open`."""
    state["frozen"] = renamed_in(state["frozen"])


class LeaseLost(DomainError):
    code = "INVALID_STATE"

    def __init__(self, number: int, worker: str) -> None:
        super().__init__(f"attempt {number} is no longer held by worker {worker}")


class Run(Aggregate):
    """One cycle of a schedule, with what it was frozen with when registered.

    Version 2 keeps who registered it (`triggered_by`, the Registered event's actor), and the
    run whose overlap skipped it (`blocked_by`). Version 4 clears `last_error` when an attempt
    succeeds (its attempts keep the history). Version 5 names the overlap policy `skip`
    `skip_while_open` and keeps more of what blocked a skipped run: its status then
    (`blocking_status`) and the instance waiting for review (`blocking_instance_id`). Version 6
    keeps with each error (`last_error`, an attempt's `error`) the values its code names
    (`params`). Version 7 keeps the trace context it was started under (`traceparent`).
    Version 8 keeps what its schedule's calendar did to it: the instant it was moved to
    (`moved_to`) and why it was moved or skipped (`calendar`). Version 9 freezes what it does
    (`frozen["target"]`: an approval, or a built-in job's kind and timeout) and keeps a job's
    result summary (`result`, on the run and on each attempt).
    """

    class_version = 9

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """A snapshot of version 1 left it out: the tick registers every scheduled cycle; the
        account behind a manual run is not in the snapshot (None: unknown)."""
        state["triggered_by"] = TICK_ACTOR if state["trigger"] == "schedule" else None
        # A run skipped for overlap has two events, never a snapshot (taken every 50).
        state["blocked_by"] = None

    @staticmethod
    def upcast_v2_v3(state: dict[str, Any]) -> None:
        """Version 3 freezes the definition's revision; a snapshot before it ran revision 1."""
        state["frozen"] = frozen_at_first_revision(state["frozen"])

    @staticmethod
    def upcast_v3_v4(state: dict[str, Any]) -> None:
        """A snapshot before version 4 kept the last failure of a run that succeeded since."""
        if state["status"] == SUCCEEDED:
            state["last_error"] = None

    @staticmethod
    def upcast_v4_v5(state: dict[str, Any]) -> None:
        """A snapshot before version 5 froze `skip`, and kept only the blocking run's id."""
        frozen_overlap_renamed(state)
        state["blocking_status"] = state["blocking_instance_id"] = None

    @staticmethod
    def upcast_v5_v6(state: dict[str, Any]) -> None:
        """A snapshot before version 6 kept errors without the values their code names (an
        interruption names none)."""
        errors = [state["last_error"], *(a["error"] for a in state["attempts"])]
        for error in errors:
            if error is not None:
                error.setdefault("params", {} if error["code"] == INTERRUPTED else None)

    @staticmethod
    def upcast_v6_v7(state: dict[str, Any]) -> None:
        """A snapshot before version 7 was of a run started under no trace of a caller's."""
        state["traceparent"] = None

    @staticmethod
    def upcast_v7_v8(state: dict[str, Any]) -> None:
        """A snapshot before version 8 was of a run no calendar moved or skipped."""
        state["moved_to"] = state["calendar"] = None

    @staticmethod
    def upcast_v8_v9(state: dict[str, Any]) -> None:
        """A snapshot before version 9 was of a run that launched an approval (no result)."""
        frozen_for_approval(state)
        state["result"] = None
        state["attempts"] = [{**attempt, "result": None} for attempt in state["attempts"]]

    @staticmethod
    def create_id(
        schedule_id: UUID, planned_at: datetime, request_id: str | None, actor: str
    ) -> UUID:
        if request_id is not None:
            return manual_run_uuid(schedule_id, actor, request_id)
        return run_uuid(schedule_id, planned_at)

    class Registered(Aggregate.Created):
        """Version 2 added `definition_revision` to `frozen` (1 before: see Definition);
        version 3 names the overlap policy `skip` `skip_while_open` in `frozen`; version 4 adds
        `traceparent`, the W3C trace context of the request that started the run (None: none
        came, or the tick registered it); version 5 `moved_to`, the instant a calendar's
        `next_working_day` moved the cycle to, and `calendar`, what the calendar found (None
        before: no calendar moved or skipped a cycle); version 6 `target` in `frozen`, what the
        run does: `{"kind": "approval"}`, or a built-in job's `{"kind", "timeout_seconds"}`
        (an approval before)."""

        class_version = 6
        tenant_id: UUID
        schedule_id: UUID
        planned_at: datetime
        request_id: str | None
        trigger: str
        status: str
        skipped_count: int
        missed_until: datetime | None
        frozen: dict[str, Any]
        max_attempts: int
        at: datetime
        actor: str
        traceparent: str | None
        moved_to: datetime | None = None
        calendar: dict[str, Any] | None = None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["frozen"] = frozen_at_first_revision(state["frozen"])

        upcast_v2_v3 = staticmethod(frozen_overlap_renamed)

        @staticmethod
        def upcast_v3_v4(state: dict[str, Any]) -> None:
            state["traceparent"] = None

        @staticmethod
        def upcast_v4_v5(state: dict[str, Any]) -> None:
            state["moved_to"] = state["calendar"] = None

        upcast_v5_v6 = staticmethod(frozen_for_approval)

    @event(Registered)
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
        traceparent: str | None,
        moved_to: datetime | None = None,
        calendar: dict[str, Any] | None = None,
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
        self.triggered_by: str | None = actor
        self.traceparent = traceparent
        self.moved_to = moved_to
        self.calendar = calendar
        self.finished_at = at if status in SKIPPED_AT_REGISTRATION else None
        self.attempts: list[dict[str, Any]] = []
        self.next_attempt_at = (moved_to or at) if status == PENDING else None
        self.instance_id: str | None = None
        self.result: dict[str, Any] | None = None  # a job's summary, once it succeeded
        self.last_error: dict[str, Any] | None = None
        self.round_start = 0  # attempts before it belong to earlier rounds (manual retries)
        self.blocked_by: str | None = None  # the unfinished run that made it skip its overlap
        self.blocking_status: str | None = None
        self.blocking_instance_id: str | None = None

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
    def schedule_version(self) -> int:
        """The schedule's version when the run was registered."""
        return int(self.frozen["schedule_revision"])

    @property
    def trace_id(self) -> str:
        """The run's trace id, on its record and on every log line of its launch: the trace of
        the request that started it, else its id as 32 hex digits (a W3C trace id), so every
        attempt and every process shares it."""
        return run_trace_id(self.id, self.traceparent)

    @property
    def launch_traceparent(self) -> str:
        """The trace context its launches continue: the request's that started it, else one
        made of its id (a trace of its own)."""
        return self.traceparent or f"00-{self.id.hex}-{self.id.hex[16:]}-01"

    @property
    def started_at(self) -> datetime | None:
        """When its first attempt started (the actual start); None before."""
        if not self.attempts:
            return None
        first: datetime = self.attempts[0]["started_at"]
        return first

    @property
    def duration_seconds(self) -> float | None:
        """From the actual start to the finish, retries included; None until both exist."""
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    @property
    def error_code(self) -> str | None:
        """The code of the last failed or interrupted attempt, unless the run succeeded since."""
        if self.last_error is None:
            return None
        return str(self.last_error["code"])

    def answers_request_of(self, account_id: str) -> bool:
        """Whether a repeat of this manual run's request by this account finds it (the account
        is unknown only for a release 0.1.0 run read from an old snapshot)."""
        return self.triggered_by in (account_id, None)

    def check_repeat(self, schedule_version: int, version: int | None) -> None:
        """A repeated run-now answers this run only at the schedule version it was registered
        at; after the schedule changed, or naming another version, the request id is reused."""
        if schedule_version != self.schedule_version or version not in (None, schedule_version):
            raise RequestIdReused(self)

    @property
    def target(self) -> dict[str, Any]:
        """What the run does, frozen at registration: an approval, or a job's kind and timeout."""
        target: dict[str, Any] = self.frozen["target"]
        return target

    @property
    def is_job(self) -> bool:
        return is_job(self.target)

    @property
    def job_timeout_seconds(self) -> int:
        """A job run's timeout (0 for an approval's launch)."""
        return int(self.target.get("timeout_seconds", 0))

    @property
    def overlap_policy(self) -> str:
        """The overlap policy frozen at registration (`allow` for runs from before policies)."""
        return str(self.frozen.get("overlap_policy", ALLOW))

    @property
    def skips_overlap(self) -> bool:
        """A skipping overlap policy, and no attempt made yet: an earlier cycle may block it."""
        return skips(self.overlap_policy) and not self.attempts

    @property
    def blocker(self) -> Blocker | None:
        """The earlier run that made it skip its overlap, if one did."""
        if self.blocked_by is None:
            return None
        return Blocker(self.blocked_by, self.blocking_status, self.blocking_instance_id)

    @property
    def skip_reason(self) -> dict[str, Any] | None:
        """Why the run was skipped: the run whose overlap blocked it, or how many were missed."""
        if self.status == SKIPPED_OVERLAP:
            return skip_reason_of(SKIP_OVERLAP, self.blocker, 0)
        if self.status == SKIPPED_MISSED:
            return skip_reason_of(SKIP_MISSED, None, self.skipped_count)
        if self.status == SKIPPED_CALENDAR:
            return skip_reason_of(SKIP_CALENDAR, None, 1, self.calendar)
        return None

    @property
    def instance_command_id(self) -> str:
        return f"run:{self.id}"

    @property
    def instance_id_to_launch(self) -> UUID:
        """The one instance this run can create: retries and recoveries find it again."""
        return approval_uuid(self.tenant_id, self.initiator_id, self.instance_command_id)

    @property
    def definition_revision(self) -> int:
        """The definition's published revision the run launches (frozen at registration)."""
        return int(self.frozen["definition_revision"])

    def approval(
        self,
        definition: Definition,
        at: datetime,
        candidates: Sequence[str] | None = None,
        levels: Sequence[Mapping[str, Any]] | None = None,
        ruled: Ruled | None = None,
    ) -> ApprovalInstance:
        """The instance this run launches: frozen values, on the initiator's behalf, with the
        terms of the definition's revision it was frozen at, its task to `candidates`, its
        deadline counted in working time (`ruled`) when those terms count it so."""
        terms = definition.terms_of(self.definition_revision)
        submission = Submission(
            command_id=self.instance_command_id,
            definition_id=self.definition_id,
            title=self.frozen["title"],
            form_data=self.frozen["form_data"],
            material_version=1,
            review_deadline_at=None,
        )
        return ApprovalInstance.submit(
            tenant_id=self.tenant_id,
            applicant_id=self.initiator_id,
            submission=submission,
            definition=terms,
            origin=self.fire_metadata(terms),
            at=at,
            candidates=candidates,
            ruled=ruled,
            levels=levels,
        )

    def terms(self, definition: Definition) -> DefinitionTerms:
        """The terms of the definition's revision the run was frozen at."""
        return definition.terms_of(self.definition_revision)

    def fire_metadata(self, terms: DefinitionTerms) -> dict[str, Any]:
        """What the instance records of the fire that launched it (requirement 001: workflow
        schedules); `run_id` repeats `fire_id` for clients of earlier releases."""
        return {
            "source": self.trigger,
            "schedule_id": str(self.schedule_id),
            "schedule_name": self.frozen["schedule_name"],
            "fire_id": str(self.id),
            "run_id": str(self.id),
            "scheduled_for": self.planned_at,
            "trigger_kind": self.frozen["schedule_trigger"]["kind"],
            "trigger": self.frozen["schedule_trigger"],
            "definition_revision": self.definition_revision,
            "definition_name": terms.name,
            "saved_by": self.saved_by,
            **({"moved_to": self.moved_to, "calendar": self.calendar} if self.moved_to else {}),
        }

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
            raise InvalidState(
                Message(
                    "run {id} is {status}, not due for an attempt",
                    id=str(self.id),
                    status=self.status,
                )
            )
        if self.status == RUNNING:
            self._interrupt(LEASE_RAN_OUT, now, worker)
        if self.status == DEAD_LETTER:
            return 0
        number = len(self.attempts) + 1
        self._attempt_started(
            number=number,
            worker=worker,
            lease_expires_at=now + lease,
            status=RUNNING,
            at=now,
            actor=worker,
        )
        return number

    def _interrupt(self, message: str, at: datetime, actor: str) -> None:
        exhausted = self.attempts_in_round >= self.max_attempts
        self._interrupted(
            number=len(self.attempts),
            code=INTERRUPTED,
            message=message,
            status=DEAD_LETTER if exhausted else RETRY_WAIT,
            next_attempt_at=None if exhausted else at,
            at=at,
            actor=actor,
        )

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
        self._attempt_succeeded(
            number=number,
            instance_id=instance_id,
            result=None,
            status=SUCCEEDED,
            at=at,
            actor=worker,
        )

    def succeed_job(self, number: int, worker: str, result: dict[str, Any], at: datetime) -> None:
        """A built-in job's attempt ended well: its small result summary, no instance."""
        self.check_holds(number, worker)
        self._attempt_succeeded(
            number=number, instance_id=None, result=result, status=SUCCEEDED, at=at, actor=worker
        )

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
            reason_params=failure.params,
            status=status,
            next_attempt_at=retry_at,
            at=at,
            actor=worker,
        )

    def reject_outcome(self, number: int, worker: str, outcome: str, at: datetime) -> None:
        """A worker that lost its lease reported anyway: recorded, never applied."""
        self._outcome_rejected(number=number, outcome=outcome, worker=worker, at=at, actor=worker)

    def skip_overlap(self, blocker: Blocker, at: datetime, actor: str) -> None:
        """A skipping overlap policy, and an earlier cycle of the schedule it counts as unfinished
        (still being launched, or for `skip_while_open` its instance waiting for review)."""
        self._skipped_overlap(
            earlier_run_id=blocker.run_id,
            blocking_status=blocker.status,
            blocking_instance_id=blocker.instance_id,
            status=SKIPPED_OVERLAP,
            at=at,
            actor=actor,
        )

    def check_holds(self, number: int, worker: str) -> None:
        if not self.holds(number, worker):
            raise LeaseLost(number, worker)

    def retry(self, at: datetime, actor: str, reason: str | None = None) -> None:
        """Manual retry: a new round of attempts on the same run."""
        if self.status not in RETRYABLE:
            raise InvalidState(
                Message(
                    "run {id} is {status}: only FAILED, DEAD_LETTER or CANCELLED runs retry",
                    id=str(self.id),
                    status=self.status,
                )
            )
        self._retried(status=PENDING, at=at, actor=actor, reason=reason)

    def cancel(self, at: datetime, actor: str, reason: str | None = None) -> None:
        if self.status not in CANCELLABLE:
            raise InvalidState(
                Message(
                    "run {id} is {status}: only PENDING or RETRY_WAIT runs can be cancelled",
                    id=str(self.id),
                    status=self.status,
                )
            )
        self._cancelled(status=CANCELLED, at=at, actor=actor, reason=reason)

    class AttemptStarted(Aggregate.Event):
        """Version 2 added `status`, the run's status after it."""

        class_version = 2
        number: int
        worker: str
        lease_expires_at: datetime
        status: str
        at: datetime
        actor: str

        upcast_v1_v2 = staticmethod(status_was(RUNNING))

    @event(AttemptStarted)
    def _attempt_started(
        self,
        number: int,
        worker: str,
        lease_expires_at: datetime,
        status: str,
        at: datetime,
        actor: str,
    ) -> None:
        self.status = status
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
                "result": None,
                "worker": worker,
                "lease_expires_at": lease_expires_at,
            },
        ]

    class AttemptSucceeded(Aggregate.Event):
        """Version 2 added `status`, the run's status after it; version 3 `result`, a built-in
        job's small summary (None: an approval's launch, whose `instance_id` it has; a job's
        success has no instance, `instance_id` None)."""

        class_version = 3
        number: int
        instance_id: str | None
        result: dict[str, Any] | None
        status: str
        at: datetime
        actor: str

        upcast_v1_v2 = staticmethod(status_was(SUCCEEDED))

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            state["result"] = None

    @event(AttemptSucceeded)
    def _attempt_succeeded(
        self,
        number: int,
        instance_id: str | None,
        result: dict[str, Any] | None,
        status: str,
        at: datetime,
        actor: str,
    ) -> None:
        self._end_attempt(ATTEMPT_SUCCEEDED, None, instance_id, at, result)
        self.status = status
        self.instance_id = instance_id
        self.result = result
        self.last_error = None
        self.finished_at = at

    class AttemptFailed(Aggregate.Event):
        """Version 2 added `reason_params`, the values the code names (`subject`: the account
        or definition), from which its words are made in any language (None before)."""

        class_version = 2
        number: int
        code: str
        message: str
        reason_params: dict[str, Any] | None
        status: str
        next_attempt_at: datetime | None
        at: datetime
        actor: str

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["reason_params"] = None

    @event(AttemptFailed)
    def _attempt_failed(
        self,
        number: int,
        code: str,
        message: str,
        reason_params: dict[str, Any] | None,
        status: str,
        next_attempt_at: datetime | None,
        at: datetime,
        actor: str,
    ) -> None:
        self.last_error = {"code": code, "message": message, "params": reason_params}
        self._end_attempt(ATTEMPT_FAILED, self.last_error, None, at)
        self.status = status
        self.next_attempt_at = next_attempt_at
        self.finished_at = None if status == RETRY_WAIT else at

    class AttemptInterrupted(Aggregate.Event):
        """Version 2 added the error's `code` and `message`, as on a failed attempt."""

        class_version = 2
        number: int
        code: str
        message: str
        status: str
        next_attempt_at: datetime | None
        at: datetime
        actor: str

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 left them out: a lost lease always had this code and message."""
            state["code"] = INTERRUPTED
            state["message"] = LEASE_RAN_OUT

    @event(AttemptInterrupted)
    def _interrupted(
        self,
        number: int,
        code: str,
        message: str,
        status: str,
        next_attempt_at: datetime | None,
        at: datetime,
        actor: str,
    ) -> None:
        self.last_error = {"code": code, "message": message, "params": {}}
        self._end_attempt(INTERRUPTED, self.last_error, None, at)
        self.status = status
        self.next_attempt_at = next_attempt_at
        self.finished_at = at if status == DEAD_LETTER else None

    class OutcomeRejected(Aggregate.Event):
        number: int
        outcome: str
        worker: str
        at: datetime
        actor: str

    @event(OutcomeRejected)
    def _outcome_rejected(
        self, number: int, outcome: str, worker: str, at: datetime, actor: str
    ) -> None:
        pass

    class SkippedOverlap(Aggregate.Event):
        """Version 2 added `status`, the run's status after it; version 3 the blocking run's
        status and the instance waiting for review that blocked it (None before: not said)."""

        class_version = 3
        earlier_run_id: str
        blocking_status: str | None
        blocking_instance_id: str | None
        status: str
        at: datetime
        actor: str

        upcast_v1_v2 = staticmethod(status_was(SKIPPED_OVERLAP))

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            state["blocking_status"] = None
            state["blocking_instance_id"] = None

    @event(SkippedOverlap)
    def _skipped_overlap(
        self,
        earlier_run_id: str,
        blocking_status: str | None,
        blocking_instance_id: str | None,
        status: str,
        at: datetime,
        actor: str,
    ) -> None:
        self.status = status
        self.blocked_by = earlier_run_id
        self.blocking_status = blocking_status
        self.blocking_instance_id = blocking_instance_id
        self.next_attempt_at = None
        self.finished_at = at

    class Retried(Aggregate.Event):
        """Version 2 added `status`, the run's status after it; version 3 the optional `reason`."""

        class_version = 3
        status: str
        at: datetime
        actor: str
        reason: str | None

        upcast_v1_v2 = staticmethod(status_was(PENDING))
        upcast_v2_v3 = staticmethod(given_no_reason)

    @event(Retried)
    def _retried(self, status: str, at: datetime, actor: str, reason: str | None) -> None:
        self.status = status
        self.round_start = len(self.attempts)
        self.next_attempt_at = at
        self.finished_at = None

    class Cancelled(Aggregate.Event):
        """Version 2 added `status`, the run's status after it; version 3 the optional `reason`."""

        class_version = 3
        status: str
        at: datetime
        actor: str
        reason: str | None

        upcast_v1_v2 = staticmethod(status_was(CANCELLED))
        upcast_v2_v3 = staticmethod(given_no_reason)

    @event(Cancelled)
    def _cancelled(self, status: str, at: datetime, actor: str, reason: str | None) -> None:
        self.status = status
        self.next_attempt_at = None
        self.finished_at = at

    def _end_attempt(
        self,
        outcome: str,
        error: dict[str, Any] | None,
        instance_id: str | None,
        at: datetime,
        result: dict[str, Any] | None = None,
    ) -> None:
        last = {**self.attempts[-1], "finished_at": at, "outcome": outcome}
        ended = {**last, "error": error, "instance_id": instance_id, "result": result}
        self.attempts = [*self.attempts[:-1], ended]
