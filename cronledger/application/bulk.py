"""Actions on many schedules or runs at once (docs/api.md#bulk-actions): each item is one
ordinary command through the service its single action uses, with the same checks, the same
idempotency and the same refusals, done or refused on its own, in the order asked. Nothing
here is a path of its own: a bulk action is its single actions, one after the other."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from uuid import UUID

from cronledger.application.runs import Runs
from cronledger.application.schedules import Schedules
from domain.directory import Principal
from domain.errors import DomainError, NotFound, ValidationFailed
from domain.schedules import Schedule

MAX_BULK = 100  # items one bulk action takes
ENABLE, DISABLE, RUN, DELETE = "enable", "disable", "run", "delete"
SCHEDULE_ACTIONS = (ENABLE, DISABLE, RUN, DELETE)
RETRY, CANCEL = "retry", "cancel"
RUN_ACTIONS = (RETRY, CANCEL)
DONE, UNCHANGED, REFUSED = "DONE", "UNCHANGED", "REFUSED"
BULK_OUTCOMES = (DONE, UNCHANGED, REFUSED)


@dataclass(frozen=True)
class BulkRequest:
    """A bulk action: the ids in the order asked (a repeated one counts once), the version of
    each that the caller saw (a changed one is refused as stale), the reason the events record,
    and run now's repeat key (with the account and each schedule it names one run)."""

    action: str
    ids: Sequence[str]
    versions: Mapping[str, int] = field(default_factory=dict)
    reason: str | None = None
    request_id: str | None = None

    def unique_ids(self) -> list[str]:
        return list(dict.fromkeys(self.ids))


@dataclass(frozen=True)
class BulkItem:
    """What one item's command did: `DONE`; `UNCHANGED` (it was so already, or run now's repeat
    answered the run registered before: nothing recorded); or `REFUSED`, with the refusal's
    `code`, `detail` and field `errors` as the single action answers them. `name` is the
    schedule's name or the run's title when there is such an item (a deleted schedule's too);
    `version` the item's version after; `run_id` and `run_status` the run acted on or
    registered."""

    id: str
    outcome: str
    name: str | None = None
    code: str | None = None
    detail: str | None = None
    errors: Mapping[str, list[str]] = field(default_factory=dict)
    version: int | None = None
    run_id: str | None = None
    run_status: str | None = None

    @classmethod
    def refused(cls, item_id: str, name: str | None, error: DomainError) -> BulkItem:
        errors = error.errors if isinstance(error, ValidationFailed) else {}
        return cls(item_id, REFUSED, name, error.code, error.message, errors)


ScheduleAct = Callable[[Schedules, Principal, str, Schedule, BulkRequest], BulkItem]


def act_on_schedules(schedules: Schedules, actor: Principal, asked: BulkRequest) -> list[BulkItem]:
    """Enable, disable, run now or delete each schedule, as its single action does."""
    _check_run_fields(asked)
    act = SCHEDULE_ACTS[asked.action]
    return [_on_schedule(schedules, actor, asked, key, act) for key in asked.unique_ids()]


def _check_run_fields(asked: BulkRequest) -> None:
    """Run now needs its repeat key and records no reason; no other action takes the key."""
    problems: dict[str, list[str]] = {}
    if asked.action == RUN and not asked.request_id:
        problems["request_id"] = ["run needs a request_id (the repeat key of its runs)"]
    if asked.action == RUN and asked.reason:
        problems["reason"] = ["run now records no reason"]
    if asked.action != RUN and asked.request_id:
        problems["request_id"] = ["only run takes a request_id"]
    if problems:
        raise ValidationFailed(problems)


def _on_schedule(
    schedules: Schedules, actor: Principal, asked: BulkRequest, key: str, act: ScheduleAct
) -> BulkItem:
    try:
        found = schedules.find(actor.tenant_id, key)
    except NotFound as missing:
        return BulkItem.refused(key, None, missing)
    try:
        return act(schedules, actor, key, found, asked)
    except DomainError as refused:
        return BulkItem.refused(key, found.settings.name, refused)


def _switch(enabled: bool) -> ScheduleAct:
    def act(
        schedules: Schedules, actor: Principal, key: str, found: Schedule, asked: BulkRequest
    ) -> BulkItem:
        after = schedules.set_enabled(actor, key, enabled, asked.versions.get(key), asked.reason)
        outcome = UNCHANGED if found.enabled == enabled else DONE
        return BulkItem(key, outcome, after.name, version=after.version)

    return act


def _run_now(
    schedules: Schedules, actor: Principal, key: str, found: Schedule, asked: BulkRequest
) -> BulkItem:
    requested = schedules.request_run(actor, key, str(asked.request_id), asked.versions.get(key))
    run = requested.value
    outcome = UNCHANGED if requested.replayed else DONE
    return BulkItem(key, outcome, found.settings.name, run_id=run.id, run_status=run.status)


def _delete(
    schedules: Schedules, actor: Principal, key: str, found: Schedule, asked: BulkRequest
) -> BulkItem:
    version = asked.versions.get(key)
    if version is None:
        raise ValidationFailed.of("version", "deleting needs the schedule's version")
    schedules.delete(actor, key, version, asked.reason)
    return BulkItem(key, DONE, found.settings.name)


SCHEDULE_ACTS: dict[str, ScheduleAct] = {
    ENABLE: _switch(True),
    DISABLE: _switch(False),
    RUN: _run_now,
    DELETE: _delete,
}


def act_on_runs(runs: Runs, actor: Principal, asked: BulkRequest) -> list[BulkItem]:
    """Retry or cancel each run of the tenant (any schedule's), as its single action does."""
    return [_on_run(runs, actor, asked, key) for key in asked.unique_ids()]


def _on_run(runs: Runs, actor: Principal, asked: BulkRequest, key: str) -> BulkItem:
    command = runs.retry if asked.action == RETRY else runs.cancel
    try:
        run, _frozen = runs.frozen_by_id(actor.tenant_id, key)
    except NotFound as missing:
        return BulkItem.refused(key, None, missing)
    try:
        after = command(actor, UUID(run.schedule_id), run.id, asked.versions.get(key), asked.reason)
    except DomainError as refused:
        return BulkItem.refused(key, run.title, refused)
    return BulkItem(
        key, DONE, run.title, version=after.version, run_id=run.id, run_status=after.status
    )
