"""Approval commands and queries: every entry point goes through the instance's one rule."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from cronledger.application.calendars import Calendars
from cronledger.application.directory import Directory, Page
from cronledger.application.idempotency import AlreadyCreated, check_key, key_record
from cronledger.application.reviews import Reviewing
from cronledger.persistence.ledger import Ledger, TimelineEntry
from domain.approvals import (
    DEADLINE_ACTOR,
    EXTEND,
    FORBIDDEN,
    PLAIN_CLOCK,
    REASSIGN,
    RESUBMIT,
    REVISE,
    SWEEP,
    TERMINAL,
    WAITING_REVIEW,
    Answer,
    ApprovalInstance,
    Clock,
    Command,
    CommandIdReused,
    Links,
    Parties,
    Submission,
    approval_uuid,
    definition_deadline,
    linked_command_id,
    refusal_error,
    revision_of,
)
from domain.directory import Definition, Principal
from domain.errors import NotFound, PreconditionFailed, ValidationFailed, every_problem
from domain.idempotency import KeyedRequest
from domain.launch import definition_problem
from domain.messages import Message
from domain.permissions import APPROVAL_DECIDE, ROLES
from projections.approvals import (
    ApprovalFilter,
    ApprovalRow,
    approval_page,
    approval_row,
    expiry_lags,
    instances_owing_notices,
    overdue_backlog,
    overdue_instances,
    pauses_ending,
)
from projections.engine import Projector
from projections.keyset import Window
from projections.tasks import (
    TaskRow,
    held_by_those_who_may_not_decide,
    task_counts,
    task_page,
    with_inactive_candidates,
)

SWEEPER = DEADLINE_ACTOR
DECIDING_ROLES = sorted(role for role, granted in ROLES.items() if APPROVAL_DECIDE in granted)
# Why a sweep failed to expire a due instance (the reason label of the failures counter).
VERSION_CONFLICT = "version_conflict"  # another writer saved one of a batch first; retried
UNREADABLE = "unreadable"  # its history holds an undecodable event; left waiting
ERROR = "error"  # the sweep itself failed (e.g. the store went away); the next one retries
# Upper bounds (seconds) of the expiry lag histogram: from a deadline to its recorded expiry.
EXPIRY_LAG_BOUNDS = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 86400.0)


class SweepFailures:
    """How many times this process's sweeps failed, by reason (kept in memory)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, reason: str, count: int = 1) -> None:
        if count:
            with self._lock:
                self._counts[reason] += count

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {
                reason: self._counts[reason] for reason in (VERSION_CONFLICT, UNREADABLE, ERROR)
            }

    @contextmanager
    def counting(self, reason: str, kind: type[Exception] = Exception) -> Iterator[None]:
        """Count an exception of `kind` from the block under `reason`, and let it go on."""
        try:
            yield
        except kind:
            self.add(reason)
            raise


@dataclass(frozen=True)
class CommandResult:
    outcome: str
    state: str
    accepted: bool
    instance: ApprovalRow
    replayed: bool
    reason: str
    winning_command: dict[str, str | None] | None
    reason_code: str | None
    reason_params: dict[str, Any] | None

    @classmethod
    def of(cls, answer: Answer, instance: ApprovalInstance, replayed: bool) -> CommandResult:
        row = ApprovalRow.of_aggregate(instance)
        return cls(
            answer.outcome,
            answer.state,
            answer.accepted,
            row,
            replayed,
            answer.reason,
            row.winning_command,
            answer.reason_code,
            answer.reason_params,
        )


@dataclass(frozen=True)
class LinkResult:
    """What a resubmit or a cancellation request got: the command's answer on the original,
    and the instance it started (None when refused)."""

    command: CommandResult
    linked: ApprovalRow | None


class Approvals:
    def __init__(
        self,
        ledger: Ledger,
        directory: Directory,
        projector: Projector,
        reviewing: Reviewing | None = None,
        calendars: Calendars | None = None,
    ) -> None:
        self.ledger = ledger
        self.calendars = calendars or Calendars(ledger)
        self.directory = directory
        self.projector = projector
        self.reviewing = reviewing or Reviewing(ledger)
        self.sweep_failures = SweepFailures()

    def submit(self, actor: Principal, submission: Submission) -> tuple[ApprovalRow, bool]:
        """The new instance, or the one this command id already made (then True)."""
        return self.ledger.retrying(lambda: self._submit(actor, submission))

    def _submit(self, actor: Principal, submission: Submission) -> tuple[ApprovalRow, bool]:
        instance_id = approval_uuid(actor.tenant_id, actor.account_id, submission.command_id)
        if self.ledger.exists(instance_id):
            first = self.ledger.find(ApprovalInstance, instance_id, "approval", instance_id)
            if first.submission_fingerprint != submission.fingerprint:
                raise CommandIdReused(submission.command_id)
            return ApprovalRow.of_aggregate(first), True
        instance = self._submitted(actor, submission, self.ledger.clock())
        self.ledger.save(instance)
        return ApprovalRow.of_aggregate(instance), False

    def _submitted(
        self,
        actor: Principal,
        submission: Submission,
        now: datetime,
        linked: dict[str, str | None] | None = None,
        field: str = "definition_id",
    ) -> ApprovalInstance:
        """A new instance of a published definition, not yet saved: its reviewers' candidates
        and its deadline counted as for any submission (`field`: what a refusal names)."""
        self.check_submission(actor, submission, now, field)
        definition = self._definition(actor.tenant_id, submission.definition_id, field)
        parties = Parties(actor.account_id, False, None, definition.allow_self_approval)
        candidates, levels = self.reviewing.levels(actor.tenant_id, definition, parties)
        ruled = None
        if submission.review_deadline_at is None:
            ruled = self.calendars.ruled(actor.tenant_id, definition, now)
        return ApprovalInstance.submit(
            actor.tenant_id,
            actor.account_id,
            submission,
            definition,
            origin=None,
            at=now,
            candidates=candidates,
            ruled=ruled,
            levels=levels,
            linked=linked,
        )

    def check_submission(
        self,
        actor: Principal,
        submission: Submission,
        now: datetime | None = None,
        field: str = "definition_id",
    ) -> None:
        """Every rule a submission breaks at once: its definition (named by `field`), its
        deadline and its form data."""
        errors = every_problem(
            lambda: self._definition(actor.tenant_id, submission.definition_id, field),
            lambda: submission.check(now or self.ledger.clock()),
        )
        if errors:
            raise ValidationFailed(errors)

    def check_command(
        self, actor: Principal, instance_id: str, kind: str, payload: Mapping[str, Any]
    ) -> None:
        """The rule a command's given fields break whatever else it says (docs/approvals.md),
        found without deciding or recording anything."""
        instance = self.instance(actor.tenant_id, instance_id)
        review = None
        if kind == REASSIGN:
            review = self.reviewing.review(instance, actor, Command(kind, None, dict(payload)))
        instance.check_rules(kind, payload, self.ledger.clock(), review)

    def _definition(
        self, tenant_id: UUID, definition_id: str, field: str = "definition_id"
    ) -> Definition:
        """A definition that instances may be submitted from."""
        definition = self.directory.find_definition(tenant_id, definition_id)
        problem = definition_problem(definition, allow_external=True)
        if problem or definition is None:
            raise ValidationFailed.of(field, problem.reason if problem else Message("not found"))
        return definition

    def link(self, actor: Principal, instance_id: str, command: Command) -> LinkResult:
        """Resubmit a decided instance, or request the cancellation of an approved one
        (docs/approvals.md#resubmit-and-cancel): decided by the original's one rule and
        recorded on it, refusals too; when accepted, the new instance is saved with the
        original's event, in one transaction. A repeat answers the instance the first made."""
        return self.ledger.retrying(
            lambda: self._link(actor, instance_id, command), one_at_a_time=instance_id
        )

    def _link(self, actor: Principal, instance_id: str, command: Command) -> LinkResult:
        original = self.instance(actor.tenant_id, instance_id)
        review = self.reviewing.review(original, actor, command)
        first = original.answer_to(command, actor.account_id, actor.permissions, review)
        if first is not None:
            return LinkResult(
                CommandResult.of(first, original, True), self._linked_row(original, first)
            )
        now = self.ledger.clock()
        new_command_id = linked_command_id(command.kind, original.id, command.command_id or "")
        new_id = approval_uuid(actor.tenant_id, actor.account_id, new_command_id)
        if self.ledger.exists(new_id):
            raise CommandIdReused(command.command_id or "")
        links = Links(str(new_id), cancellation_definition=self._cancels_with(original))
        answer = original.handle(command, now, actor.account_id, actor.permissions, review, links)
        if not answer.accepted:
            self.ledger.save(original, *self.settled([original]))  # a late one may expire it
            refused = refusal_error(answer, command)
            if refused is not None:
                raise refused
            return LinkResult(CommandResult.of(answer, original, False), None)
        submission = self._linked_submission(original, command, new_command_id, links)
        linked = self._submitted(
            actor,
            submission,
            now,
            {"resubmits" if command.kind == RESUBMIT else "cancellation_of": str(original.id)},
            "definition_id" if command.kind == RESUBMIT else "cancellation_definition",
        )
        self.ledger.save(original, linked)
        return LinkResult(
            CommandResult.of(answer, original, False), ApprovalRow.of_aggregate(linked)
        )

    def _cancels_with(self, original: ApprovalInstance) -> str | None:
        """The cancellation definition the original's definition now names, if any."""
        definition = self.directory.find_definition(original.tenant_id, original.definition_id)
        return None if definition is None else definition.cancellation_definition

    @staticmethod
    def _linked_submission(
        original: ApprovalInstance, command: Command, command_id: str, links: Links
    ) -> Submission:
        """What a resubmit (the original's definition, title and form data unless given) or
        a cancellation request (the cancellation definition, material version 1) submits."""
        asked = command.payload
        resubmit = command.kind == RESUBMIT
        definition_id = original.definition_id if resubmit else links.cancellation_definition
        assert definition_id is not None  # the rule refuses a cancellation without one
        return Submission(
            command_id=command_id,
            definition_id=definition_id,
            title=asked.get("title") or original.title,
            form_data=(
                asked["form_data"]
                if asked.get("form_data") is not None
                else dict(original.form_data)
            ),
            material_version=asked.get("material_version") or 1,
            review_deadline_at=None,
        )

    def _linked_row(self, original: ApprovalInstance, answer: Answer) -> ApprovalRow | None:
        """The instance an accepted resubmit or cancellation request started, as it now is."""
        linked_id = (answer.reason_params or {}).get("instance_id")
        if not answer.accepted or linked_id is None:
            return None
        linked = self.ledger.find(ApprovalInstance, UUID(linked_id), "approval", linked_id)
        return ApprovalRow.of_aggregate(linked)

    def settled(self, instances: Sequence[ApprovalInstance]) -> list[ApprovalInstance]:
        """The approved originals whose cancellation the given instances' pending decisions
        settle, each with its `CancellationSettled` recorded: to be saved with them, in one
        transaction. Every path where an instance becomes final goes through here."""
        originals = []
        for instance in instances:
            if instance.cancellation_of is None or not _decided_now(instance):
                continue
            original_id = UUID(instance.cancellation_of)
            original = self.ledger.find(
                ApprovalInstance, original_id, "approval", instance.cancellation_of
            )
            if original.settle_cancellation(str(instance.id), instance.state, self.ledger.clock()):
                originals.append(original)
        return originals

    def command(
        self,
        actor: Principal,
        instance_id: str,
        command: Command,
        accepts: Callable[[int], bool] | None = None,
        request: KeyedRequest | None = None,
    ) -> CommandResult:
        """Decide a command by the instance's one rule at the server's time of acceptance.

        `accepts` (the request's If-Match) must accept the version the command is decided on,
        checked with the write, unless the command is a repeat (answered again) or refused.
        A keyed `request` (a signed delivery: its source and webhook-id) is recorded with the
        command; the key sent again with another request is IDEMPOTENCY_KEY_REUSED.
        """
        return self.ledger.retrying(
            lambda: self._command(actor, instance_id, command, accepts, request),
            one_at_a_time=instance_id,
        )

    def _command(
        self,
        actor: Principal,
        instance_id: str,
        command: Command,
        accepts: Callable[[int], bool] | None,
        request: KeyedRequest | None,
    ) -> CommandResult:
        """Get, decide (a refusal too), save; a refusal is then answered as its problem."""
        instance = self.instance(actor.tenant_id, instance_id)
        version = instance.version
        with suppress(AlreadyCreated):  # the same request again: the instance answers it again
            check_key(self.ledger, request)
        command = self._counted(instance, command)
        review = self.reviewing.review(instance, actor, command)
        first = instance.answer_to(command, actor.account_id, actor.permissions, review)
        replayed = first is not None
        answer = first or instance.handle(
            command,
            self.ledger.clock(),
            actor.account_id,
            actor.permissions,
            review,
            clock=self._clock_of(instance),
        )
        if not replayed:
            _check_precondition(answer, version, accepts)
            at = self.ledger.clock()
            self.ledger.save(
                instance,
                *self.settled([instance]),
                key_record(request, "approval", str(instance.id), at),
            )
        refused = refusal_error(answer, command)
        if refused is not None:
            raise refused
        return CommandResult.of(answer, instance, replayed)

    def _counted(self, instance: ApprovalInstance, command: Command) -> Command:
        """An extension in working days with the deadline the calendar counts for it (a
        repeat's is answered as first recorded: the count is left out of its fingerprint)."""
        if command.kind == REVISE:
            return self._restarted(instance, command)
        days = command.payload.get("working_days")
        if command.kind != EXTEND or days is None or instance.answered_for_good(command.command_id):
            return command
        counted, offset = self.calendars.extension(
            instance.tenant_id, instance.deadline_policy, instance.review_deadline_at, days
        )
        return replace(
            command, payload={**command.payload, **counted}, deadline_offset_minutes=offset
        )

    def _clock_of(self, instance: ApprovalInstance) -> Clock:
        """How the instance's stood clock counts (only a clock that stands needs counting)."""
        if instance.paused_since is None:
            return PLAIN_CLOCK
        return self.calendars.clock(instance.tenant_id, instance.deadline_policy)

    def _restarted(self, instance: ApprovalInstance, command: Command) -> Command:
        """A revise of an instance whose definition restarts the deadline on a revise, with
        the new deadline its definition's rule counts from now (a repeat keeps the first)."""
        if not instance.restart_deadline_on_revise or instance.answered_for_good(
            command.command_id
        ):
            return command
        definition = self.directory.find_definition(instance.tenant_id, instance.definition_id)
        if definition is None:
            return command
        now = self.ledger.clock()
        deadline, policy = definition_deadline(
            definition.review_window_seconds,
            now,
            revision_of(definition),
            self.calendars.ruled(instance.tenant_id, definition, now),
        )
        policy = {**policy, "restarted_on_revise": True}
        counted = {"new_deadline_at": deadline, "deadline_policy": policy}
        return replace(command, payload={**command.payload, **counted})

    def sweep(self, limit: int = 500) -> int:
        """Resume every pause that reached its definition's `max_pause_seconds` (at that
        instant: the instance may then expire at once), expire every waiting instance whose
        deadline has come (never one whose clock stands), then record the reminders and
        escalations due on those still waiting, each once, however late the sweep (with the
        instant each was due); how many were expired.

        Failures are counted by reason (`sweep_failures`)."""
        with self.sweep_failures.counting(ERROR):
            self.projector.catch_up()
            ending = pauses_ending(self.ledger.store, self.ledger.clock(), limit)
            self._in_chunks(ending, partial(_expire, clock_of=self._clock_of))
            if ending:
                self.projector.catch_up()
            due = overdue_instances(self.ledger.store, self.ledger.clock(), limit)
            expired = self._in_chunks(due, _expire)
            self._in_chunks(
                instances_owing_notices(self.ledger.store, self.ledger.clock(), limit),
                partial(_notify, reviewing=self.reviewing),
            )
            self._release_tasks(limit)
            self._block_levels(limit)
            return expired

    def _release_tasks(self, limit: int) -> None:
        """Give back the tasks whose assignee may no longer decide (deactivated, or without
        the permission), each recorded by the sweeper; the log, not the row, has the last word."""
        held = held_by_those_who_may_not_decide(self.ledger.store, DECIDING_ROLES, limit)
        for instance_id, task_id in held:
            instance = self.ledger.find(
                ApprovalInstance, UUID(instance_id), "approval", instance_id
            )
            task = instance.task(task_id)
            if task.assignee_id is None or instance.state != WAITING_REVIEW:
                continue
            if self.reviewing.person(instance.tenant_id, task.assignee_id).may_decide:
                continue
            instance.release_task(task_id, self.ledger.clock(), SWEEPER)
            with suppress(IntegrityError):  # another writer moved it first: the next sweep sees
                self.ledger.save(instance)

    def _block_levels(self, limit: int) -> None:
        """Record, once, each waiting instance's level that can no longer reach its approvals
        because candidates were deactivated (or lost the permission to decide): the
        instance shows it (`blocked_levels`) and its candidates are told."""
        for instance_id in with_inactive_candidates(self.ledger.store, limit):
            instance = self.ledger.find(
                ApprovalInstance, UUID(instance_id), "approval", instance_id
            )
            if instance.state != WAITING_REVIEW or instance.reviewer_rule is None:
                continue
            pool = instance.level_candidates(instance.current_level)
            eligible = self.reviewing.eligible(
                instance.tenant_id, instance.reviewer_rule, instance.parties, pool
            )
            if instance.block_level(eligible, self.ledger.clock(), SWEEPER):
                with suppress(IntegrityError):  # moved by another writer: the next sweep sees
                    self.ledger.save(instance)

    def _in_chunks(self, ids: Sequence[UUID], act: Sweep) -> int:
        return sum(self._sweep(ids[i : i + 100], act) for i in range(0, len(ids), 100))

    def _sweep(self, ids: Sequence[UUID], act: Sweep) -> int:
        """`act` on each instance, the chunk saved in one transaction; if another writer got
        there first, one at a time. How many instances it changed."""
        found = self.ledger.get_many(ids).values()  # an unreadable one is left out, and logged
        instances = [i for i in found if isinstance(i, ApprovalInstance)]
        self.sweep_failures.add(UNREADABLE, len(ids) - len(instances))
        for instance in instances:
            act(instance, self.ledger.clock())
        changed = [i for i in instances if i.pending_events]

        def save_all() -> list[int]:
            with self.sweep_failures.counting(VERSION_CONFLICT, IntegrityError):
                self.ledger.save(*changed, *self.settled(changed))
            return [1 for _ in changed]

        readable = [i.id for i in instances]  # the unreadable ones would fail one at a time
        return sum(
            self.ledger.save_batch_or_each(save_all, readable, partial(self._sweep_one, act=act))
        )

    def _sweep_one(self, instance_id: UUID, act: Sweep) -> int:
        instance = self.ledger.find(ApprovalInstance, instance_id, "approval", instance_id)
        act(instance, self.ledger.clock())
        if not instance.pending_events:
            return 0
        self.ledger.save(instance, *self.settled([instance]))
        return 1

    def view(self, tenant_id: UUID, instance_id: str) -> ApprovalRow:
        """An instance of this tenant, from its `approvals` row; another tenant's is not found."""
        try:
            wanted = UUID(instance_id)
        except ValueError:
            raise NotFound("approval", instance_id) from None
        row = approval_row(self.ledger.store, tenant_id, wanted)
        if row is None:
            raise NotFound("approval", instance_id)
        return row

    def list_page(
        self, tenant_id: UUID, wanted: ApprovalFilter, window: Window
    ) -> Page[ApprovalRow]:
        """The tenant's instances that match, newest submitted first, from their `approvals`
        rows."""
        listed = approval_page(self.ledger.store, tenant_id, wanted, window)
        return Page.of(listed.rows, window, listed)

    def tasks(
        self, actor: Principal, scope: str, window: Window
    ) -> tuple[Page[TaskRow], dict[str, int]]:
        """The actor's tasks in `scope` (assigned to them, claimable by them, or decided by
        them), with how long each has left, and how many each scope holds."""
        may_decide = APPROVAL_DECIDE in actor.permissions
        store, now = self.ledger.store, self.ledger.clock()
        found = task_page(store, actor.tenant_id, actor.account_id, may_decide, scope, window)
        counts = task_counts(store, actor.tenant_id, actor.account_id, may_decide)
        return Page.of([row.at(now) for row in found.rows], window, found), counts

    def timeline(self, tenant_id: UUID, instance_id: str) -> list[TimelineEntry]:
        return self.ledger.timeline(self.instance(tenant_id, instance_id).id)

    def instance(self, tenant_id: UUID, instance_id: str) -> ApprovalInstance:
        """An instance of this tenant; another tenant's is not found."""
        return self.ledger.find_in_tenant(ApprovalInstance, instance_id, "approval", tenant_id)

    def backlog(self, tenant_id: UUID | None) -> dict[str, Any]:
        """Instances past their deadline but not yet expired, and the oldest one's lag; how late
        the expiries were recorded; and this process's sweep failures by reason.

        For one tenant, or for all (None); the sweep failures are always the process's.
        """
        now = self.ledger.clock()
        count, oldest_at = overdue_backlog(self.ledger.store, tenant_id, now)
        lags = expiry_lags(self.ledger.store, tenant_id, EXPIRY_LAG_BOUNDS)
        return {
            "expired_unswept_approvals": count,
            "oldest_expired_unswept_lag_seconds": (
                (now - oldest_at).total_seconds() if oldest_at else 0.0
            ),
            "expiry_lag_buckets": {
                **{str(b): n for b, n in zip(EXPIRY_LAG_BOUNDS, lags.at_most, strict=True)},
                "+Inf": lags.total,
            },
            "expiry_lag_sum_seconds": lags.sum_seconds,
            "sweep_failures": self.sweep_failures.counts(),
        }


Sweep = Callable[[ApprovalInstance, datetime], object]  # what a sweep does to an instance


def _expire(
    instance: ApprovalInstance,
    now: datetime,
    clock_of: Callable[[ApprovalInstance], Clock] = lambda _: PLAIN_CLOCK,
) -> None:
    """The deadline rule at `now`: a pause past its limit resumed (its clock counted as
    `clock_of` says), then the instance expired if its deadline has come."""
    clock = clock_of(instance)
    instance.handle(Command(SWEEP, None), now, SWEEPER, clock=clock)


def _notify(instance: ApprovalInstance, now: datetime, reviewing: Reviewing) -> None:
    """The reminders and escalation due; an escalation's target found in and checked against
    the directory."""
    tenant_id = instance.tenant_id

    def may_review(account_id: str) -> bool:
        rule, parties = instance.reviewer_rule, instance.parties
        return bool(reviewing.eligible(tenant_id, rule, parties, [account_id]))

    def leaders_up(key: str) -> list[str]:
        return reviewing.groups.leaders_up(tenant_id, key)

    instance.record_due_notices(now, SWEEPER, may_review, leaders_up)


def _decided_now(instance: ApprovalInstance) -> bool:
    """Whether the instance's pending events decide it (it was waiting before them)."""
    pending = instance.pending_events
    return instance.state in TERMINAL and any(
        isinstance(e, ApprovalInstance.CommandHandled) and e.outcome in TERMINAL and e.accepted
        for e in pending
    )


def _check_precondition(
    answer: Answer, version: int, accepts: Callable[[int], bool] | None
) -> None:
    """412, nothing recorded, if If-Match does not accept the version a new command was decided
    on; a refusal is still answered (and recorded) as one."""
    if accepts is not None and answer.outcome != FORBIDDEN and not accepts(version):
        raise PreconditionFailed("approval", version)
