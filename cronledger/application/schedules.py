"""Schedule commands and queries, with the checks that reach beyond one schedule."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from itertools import islice
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

from cronledger.application.cycle_calendars import cycle_calendar
from cronledger.application.directory import Directory, Page
from cronledger.application.idempotency import Outcome, check_key, key_record
from cronledger.application.runs import Runs
from cronledger.config import Settings
from cronledger.persistence.ledger import Ledger, TimelineEntry
from cronledger.tracing import current_traceparent
from domain.calendar_cycles import CycleCalendar, Placement, place
from domain.calendars import Calendar, calendar_uuid, working_calendar
from domain.directory import FIRST_REVISION, Principal, check_expected_version
from domain.errors import Forbidden, InFlight, NotFound, ValidationFailed
from domain.idempotency import KeyedRequest
from domain.jobs import WEBHOOK_PING
from domain.messages import Message
from domain.overlap import DEFAULT_OVERLAP_POLICY, OVERLAP_POLICIES
from domain.permissions import DIRECTORY_MANAGE
from domain.policy import RunPolicy
from domain.schedules import (
    APPROVAL_TARGET,
    DEFAULT_AUTO_PAUSE,
    DEFAULT_GROUP,
    MAX_CYCLES_BEFORE_EDIT,
    Schedule,
    ScheduleSettings,
    calendar_rule_problem,
    changes_between,
    checked_settings,
    checked_trigger,
    choice_problem,
    saved_state,
    untemplated,
)
from domain.triggers import fire_times, load_zone, local_time, parse_trigger
from domain.values import FormData
from domain.webhooks import WebhookSubscription
from projections.keyset import Window
from projections.runs import RunDetail, RunFilter, RunRow
from projections.schedules import (
    ScheduleFilter,
    ScheduleRow,
    due_schedule_backlog,
    last_run_of,
    live_schedule_page,
    schedule_names,
    schedule_row,
)

NEXT_FIRES_SHOWN = 5  # requirement 001: saving a schedule shows its next five fire times
NEXT_FIRES_KEPT = 4096  # triggers and zones whose next fire times are remembered
MOVED, UNCHANGED, NOT_FOUND = "MOVED", "UNCHANGED", "NOT_FOUND"  # a bulk move, per schedule
MOVE_OUTCOMES = (MOVED, UNCHANGED, NOT_FOUND)
# What a schedule's required fields stand in for when their own are not there to check the
# others by (docs/api.md: every invalid field is reported at once).
STAND_INS: dict[str, Any] = {"name": "-", "trigger": {"kind": "cron", "expression": "0 0 * * *"}}


@dataclass(frozen=True)
class PolicyMove:
    """What a bulk move of overlap policies did to one schedule: saved with the policy
    (`MOVED`), on it already (`UNCHANGED`), or no live schedule of the tenant (`NOT_FOUND`)."""

    schedule_id: str
    outcome: str
    version: int | None = None
    overlap_policy: str | None = None


@dataclass(frozen=True)
class FireTime:
    """A fire time in UTC (`at`) and in the schedule's zone (`local`)."""

    at: datetime
    local: datetime


@dataclass(frozen=True)
class ScheduleAnswer:
    """A schedule as the API answers it: its row (whose fields and properties are read
    through), and what is computed when it is asked for: its last skip (read with its runs)
    and its next fire times."""

    row: ScheduleRow
    last_skip: dict[str, Any] | None
    next_fires: list[FireTime]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy and pickle ask before the fields are set
            raise AttributeError(name)
        return getattr(self.row, name)

    @property
    def definition_id(self) -> str | None:
        """The definition it launches; None for a built-in job's schedule."""
        return self.row.definition_id or None

    @property
    def initiator_id(self) -> str | None:
        return self.row.initiator_id or None

    @property
    def definition_revision(self) -> int | None:
        return None if self.row.settings.is_job else self.row.definition_revision


@dataclass(frozen=True)
class Preview:
    fire_times: list[datetime]
    local_times: list[datetime]
    fires: list[MarkedFire]

    @classmethod
    def of(
        cls,
        fires: list[FireTime],
        trigger: dict[str, Any],
        timezone: str,
        calendar: CycleCalendar | None = None,
    ) -> Preview:
        """The fire times, each marked with what the calendar does to it (if one is named)."""
        parsed, zone = parse_trigger(trigger), load_zone(timezone)
        marked = [
            MarkedFire.of(fire, place(calendar, parsed, zone, fire.at) if calendar else None, zone)
            for fire in fires
        ]
        return cls([fire.at for fire in fires], [fire.local for fire in fires], marked)


FIRES, MOVED, SKIPPED = "FIRES", "MOVED", "SKIPPED"


@dataclass(frozen=True)
class MarkedFire:
    """One fire time of a preview, and what the schedule's calendar does to it: nothing
    (`FIRES`), launches it later (`MOVED`, to `moved_to`), or skips it (`SKIPPED`); `calendar`
    says why (the day, the holiday's name) and, for a cycle another launched instead of, that
    one's planned instant."""

    at: datetime
    local: datetime
    outcome: str
    moved_to: datetime | None
    moved_to_local: datetime | None
    calendar: dict[str, Any] | None

    @classmethod
    def of(cls, fire: FireTime, placed: Placement | None, zone: ZoneInfo) -> MarkedFire:
        if placed is None or placed.why is None:
            return cls(fire.at, fire.local, FIRES, None, None, None)
        why = dict(placed.why)
        if "launched_planned_at" in why:
            why["launched_planned_at"] = why["launched_planned_at"].isoformat()
        moved = placed.moved_to
        outcome = SKIPPED if placed.skipped else MOVED
        local = None if moved is None else local_time(moved, zone)
        return cls(fire.at, fire.local, outcome, moved, local, why)


def fires_after(
    trigger: dict[str, Any], timezone: str, count: int, after: datetime
) -> list[FireTime]:
    """The first `count` fire times strictly after `after`."""
    parsed, zone = parse_trigger(trigger), load_zone(timezone)
    times = islice(fire_times(parsed, zone, after), count)
    return [FireTime(instant, local_time(instant, zone)) for instant in times]


class NextFires:
    """The next NEXT_FIRES_SHOWN fire times of each trigger and zone lately asked, reused while
    the first of them is still ahead: until then they are the next ones after any later instant
    too. Schedules listed together mostly share a few triggers."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str], list[FireTime]] = {}

    def after(self, trigger: dict[str, Any], timezone: str, now: datetime) -> list[FireTime]:
        key = (json.dumps(trigger, sort_keys=True), timezone)
        kept = self._kept.get(key)
        if kept is not None and now < kept[0].at:
            return kept
        fires = fires_after(trigger, timezone, NEXT_FIRES_SHOWN, now)
        if len(fires) == NEXT_FIRES_SHOWN:  # a trigger that stops firing is not kept
            if len(self._kept) >= NEXT_FIRES_KEPT:
                self._kept.clear()
            self._kept[key] = fires
        return fires


class Schedules:
    def __init__(
        self, ledger: Ledger, directory: Directory, runs: Runs, settings: Settings
    ) -> None:
        self.ledger = ledger
        self.directory = directory
        self.runs = runs
        self.default_timezone = settings.timezone
        self.policy = RunPolicy.from_settings(settings)
        self.next_fires = NextFires()

    def settings_from(self, fields: dict[str, Any]) -> ScheduleSettings:
        """Settings from request fields; an omitted timezone is the business timezone."""
        return ScheduleSettings(
            name=fields["name"],
            definition_id=fields.get("definition_id") or "",  # "": a built-in job's, which has none
            trigger=fields["trigger"],
            timezone=fields.get("timezone") or self.default_timezone,
            initiator_id=fields.get("initiator_id") or "",
            title_template=fields.get("title_template") or "",
            form_data=FormData.of(fields.get("form_data")),
            misfire_policy=fields.get("misfire_policy", "catch_up"),
            overlap_policy=fields.get("overlap_policy", DEFAULT_OVERLAP_POLICY),
            preset_id=fields.get("preset_id"),
            calendar=fields.get("calendar"),
            calendar_rule=fields.get("calendar_rule"),
            group=fields.get("group", DEFAULT_GROUP),
            target=dict(fields.get("target") or {"kind": APPROVAL_TARGET}),
            auto_pause_after_failures=fields.get("auto_pause_after_failures", DEFAULT_AUTO_PAUSE),
        )

    def create(
        self,
        actor: Principal,
        settings: ScheduleSettings,
        enabled: bool,
        request: KeyedRequest | None = None,
    ) -> ScheduleAnswer:
        """A new schedule; a repeat of a keyed `request` stops with `AlreadyCreated`."""
        return self.ledger.retrying(lambda: self._create(actor, settings, enabled, request))

    def _create(
        self,
        actor: Principal,
        settings: ScheduleSettings,
        enabled: bool,
        request: KeyedRequest | None,
    ) -> ScheduleAnswer:
        check_key(self.ledger, request)
        check_may_save_jobs(actor, settings)
        at = self.ledger.clock()
        settings = self._checked(actor.tenant_id, settings, at)
        revision = self._published_revision(actor.tenant_id, settings)
        schedule = Schedule.create(
            actor.tenant_id, settings, enabled, at, actor.account_id, revision
        )
        self.ledger.save(schedule, key_record(request, "schedule", str(schedule.id), at))
        return self.answer_of(schedule)

    def check_fields(self, actor: Principal, fields: Mapping[str, Any]) -> None:
        """The rules of meaning the given fields of a schedule break, all at once, as saving
        it would find them; ValidationFailed names them."""
        settings = self.settings_from({**STAND_INS, **fields})
        self._checked(actor.tenant_id, settings, self.ledger.clock())

    def check_preset_fields(self, actor: Principal, fields: Mapping[str, Any]) -> None:
        """What stops the given definition or initiator of a schedule from a preset."""
        given = {name: fields.get(name, "") for name in ("definition_id", "initiator_id")}
        problems = self.directory.launch_problems_of(actor.tenant_id, **given)
        if problems:
            raise ValidationFailed(problems)

    def create_from_preset(
        self,
        actor: Principal,
        definition_id: str,
        preset_id: str,
        initiator_id: str,
        name: str | None,
        request: KeyedRequest | None = None,
    ) -> ScheduleAnswer:
        """A disabled schedule with a preset's trigger, timezone, title and form data."""
        check_key(self.ledger, request)
        definition = self.directory.definition_aggregate(actor.tenant_id, definition_id)
        preset = next((p for p in definition.schedule_presets if p["id"] == preset_id), None)
        if preset is None:
            raise ValidationFailed.of(
                "preset_id", Message("definition has no preset {preset}", preset=preset_id)
            )
        fields = {
            "name": name or untemplated(preset["title"]),
            "definition_id": definition_id,
            "trigger": preset["trigger"],
            "timezone": preset.get("timezone"),
            "initiator_id": initiator_id,
            "title_template": preset["title"],
            "form_data": preset.get("form_data") or {},
            "preset_id": preset_id,
        }
        return self.create(actor, self.settings_from(fields), False, request)

    def update(
        self,
        actor: Principal,
        schedule_id: str,
        settings: ScheduleSettings,
        enabled: bool,
        version: int,
    ) -> ScheduleAnswer:
        """Replace the settings; cycles due under the old plan are registered first."""
        saved = self.schedule(actor.tenant_id, schedule_id)
        check_may_save_jobs(actor, saved.settings, settings)
        settings = self._checked(actor.tenant_id, settings, self.ledger.clock())
        revision = self._published_revision(actor.tenant_id, settings)
        return self.ledger.retrying(
            lambda: self._edit(actor, schedule_id, settings, enabled, version, revision)
        )

    def _edit(
        self,
        actor: Principal,
        schedule_id: str,
        settings: ScheduleSettings,
        enabled: bool,
        version: int | None,
        definition_revision: int | None = None,
    ) -> ScheduleAnswer:
        """Save the settings; a re-save names the definition's revision, enabling keeps it."""
        schedule = self.schedule(actor.tenant_id, schedule_id, version)
        at = self.ledger.clock()
        if schedule.replans(settings, enabled, at):
            schedule = self._register_backlog(schedule, at)
        runs = schedule.edit(
            settings,
            enabled,
            at,
            actor.account_id,
            self.policy,
            definition_revision,
            cycle_calendar(self.ledger, schedule),
        )
        self.ledger.save(schedule, *runs)
        return self.answer_of(schedule)

    def _register_backlog(self, schedule: Schedule, at: datetime) -> Schedule:
        """Register the cycles due under the old plan, in bounded transactions, before the edit."""
        while True:
            calendar = cycle_calendar(self.ledger, schedule)
            runs = schedule.register_due(at, MAX_CYCLES_BEFORE_EDIT, self.policy, calendar=calendar)
            if schedule.pending_events:
                self.ledger.save(schedule, *runs)
            if len(runs) < MAX_CYCLES_BEFORE_EDIT:
                return schedule

    def set_enabled(
        self,
        actor: Principal,
        schedule_id: str,
        enabled: bool,
        version: int | None,
        reason: str | None = None,
    ) -> ScheduleAnswer:
        """Enable or disable (`Schedule.Enabled`, `.Disabled`); the settings and the
        definition's revision stay as they are."""
        schedule = self.schedule(actor.tenant_id, schedule_id, version)
        if schedule.enabled == enabled:
            return self.answer_of(schedule)
        if enabled:
            check_may_save_jobs(actor, schedule.settings)
            self._checked(actor.tenant_id, schedule.settings, self.ledger.clock())
        return self.ledger.retrying(
            lambda: self._switch(actor, schedule_id, enabled, version, reason)
        )

    def _switch(
        self,
        actor: Principal,
        schedule_id: str,
        enabled: bool,
        version: int | None,
        reason: str | None,
    ) -> ScheduleAnswer:
        schedule = self.schedule(actor.tenant_id, schedule_id, version)
        at = self.ledger.clock()
        if not enabled and schedule.next_fire_at is not None:
            schedule = self._register_backlog(schedule, at)
        calendar = cycle_calendar(self.ledger, schedule)
        runs = schedule.switch(enabled, at, actor.account_id, self.policy, reason, calendar)
        self.ledger.save(schedule, *runs)
        return self.answer_of(schedule)

    def move_overlap_policy(
        self, actor: Principal, schedule_ids: Sequence[str], policy: str
    ) -> list[PolicyMove]:
        """Each schedule saved with `policy` as its overlap policy, one by one, as an edit that
        changes that alone (`Schedule.Updated`); its registered runs keep the policy they
        froze. The documented step that moves schedules saved with `skip` to the new default."""
        problem = choice_problem(policy, OVERLAP_POLICIES)
        if problem:
            raise ValidationFailed.of("overlap_policy", problem)
        return [
            self.ledger.retrying(partial(self._move_overlap, actor, schedule_id, policy))
            for schedule_id in dict.fromkeys(schedule_ids)
        ]

    def _move_overlap(self, actor: Principal, schedule_id: str, policy: str) -> PolicyMove:
        try:
            schedule = self.schedule(actor.tenant_id, schedule_id)
        except NotFound:
            return PolicyMove(schedule_id, NOT_FOUND)
        outcome = UNCHANGED
        if schedule.settings.overlap_policy != policy:
            settings = replace(schedule.settings, overlap_policy=policy)
            at = self.ledger.clock()
            runs = schedule.edit(
                settings,
                schedule.enabled,
                at,
                actor.account_id,
                self.policy,
                calendar=cycle_calendar(self.ledger, schedule),
            )
            self.ledger.save(schedule, *runs)
            outcome = MOVED
        return PolicyMove(str(schedule.id), outcome, schedule.revision, policy)

    def delete(
        self, actor: Principal, schedule_id: str, version: int, reason: str | None = None
    ) -> None:
        self.ledger.retrying(lambda: self._delete(actor, schedule_id, version, reason))

    def _delete(self, actor: Principal, schedule_id: str, version: int, reason: str | None) -> None:
        schedule = self.schedule(actor.tenant_id, schedule_id, version)
        check_may_save_jobs(actor, schedule.settings)
        unfinished = self.runs.unfinished(schedule.id)
        if unfinished:
            raise InFlight(
                Message(
                    "{count} cycle(s) of this schedule are pending, running or waiting to "
                    "retry: cancel them or let them finish first",
                    count=unfinished,
                )
            )
        schedule.delete(self.ledger.clock(), actor.account_id, reason)
        self.ledger.save(schedule)

    def run_now(
        self, actor: Principal, schedule_id: str, request_id: str, version: int | None = None
    ) -> RunDetail:
        """A manual cycle at the accepted time (requirement 002: scheduled tasks): the same
        account's same request id answers the same run, while the schedule is at the version
        the run was registered at."""
        return self.request_run(actor, schedule_id, request_id, version).value

    def request_run(
        self, actor: Principal, schedule_id: str, request_id: str, version: int | None = None
    ) -> Outcome[RunDetail]:
        """`run_now`, saying whether it answered the run of an earlier request (`replayed`)."""
        return self.ledger.retrying(lambda: self._run_now(actor, schedule_id, request_id, version))

    def _run_now(
        self, actor: Principal, schedule_id: str, request_id: str, version: int | None
    ) -> Outcome[RunDetail]:
        """Register the run and `Schedule.RunRequested` together; if another writer won (the
        same request accepted elsewhere, or the tick), the retry answers from what it saved."""
        schedule = self.schedule(actor.tenant_id, schedule_id)
        original = self.runs.manual(schedule.id, actor.account_id, request_id)
        if original is not None:
            original.check_repeat(schedule.revision, version)
            return Outcome(RunDetail.of_aggregate(original), replayed=True)
        check_expected_version("schedule", schedule.revision, version)
        at = self.ledger.clock()
        self._checked(actor.tenant_id, schedule.settings, at)
        run = schedule.manual_run(
            request_id, at, actor.account_id, self.policy, traceparent=current_traceparent()
        )
        self.ledger.save(schedule, run)
        return Outcome(RunDetail.of_aggregate(run))

    def answer_of(self, schedule: Schedule) -> ScheduleAnswer:
        """A live schedule as saved (its newest planned run and last skip read with its runs)."""
        row = ScheduleRow.of_aggregate(schedule, last_run_of(self.ledger.store, schedule.id))
        return self._answer(row, self.runs.last_skip(schedule.id))

    def from_log(self, tenant_id: UUID, schedule_id: str) -> ScheduleAnswer:
        """A live schedule of this tenant as its history has it: what a write's If-Match and
        merge patch compare, and what a repeated create answers."""
        return self.answer_of(self.schedule(tenant_id, schedule_id))

    def view(self, tenant_id: UUID, schedule_id: str) -> ScheduleAnswer:
        """A live schedule of this tenant, from its `schedules` row."""
        wanted = schedule_uuid(schedule_id)
        row = schedule_row(self.ledger.store, tenant_id, wanted)
        if row is None:
            raise NotFound("schedule", schedule_id)
        return self._answer(row, self.runs.last_skip(wanted))

    def list_page(
        self, tenant_id: UUID, wanted: ScheduleFilter, window: Window
    ) -> Page[ScheduleAnswer]:
        """Live schedules of the tenant that match, oldest first, from their `schedules` rows
        (and one query for their last skips)."""
        listed = live_schedule_page(self.ledger.store, tenant_id, wanted, window)
        skips = self.runs.last_skips(listed.keys)
        answers = [self._answer(row, skips.get(row.id)) for row in listed.rows]
        return Page.of(answers, window, listed)

    def names(self, tenant_id: UUID, ids: Iterable[str]) -> dict[str, tuple[str, bool]]:
        """The name of each of the tenant's schedules of these ids (deleted ones' too), and
        whether it was deleted: a page's, in one query."""
        return schedule_names(self.ledger.store, tenant_id, ids)

    def _answer(self, row: ScheduleRow, last_skip: dict[str, Any] | None) -> ScheduleAnswer:
        return ScheduleAnswer(row, last_skip, self._fire_times(row.trigger, row.timezone))

    def run(self, tenant_id: UUID, schedule_id: str, run_id: str) -> RunDetail:
        """A run of a schedule of this tenant (a deleted one's too), from its rows; the
        schedule's history is read only to tell an unknown schedule (404) from an unknown run."""
        try:
            return self.runs.view(tenant_id, schedule_uuid(schedule_id), run_id)
        except NotFound:
            self.find(tenant_id, schedule_id)
            raise

    def runs_page(
        self, tenant_id: UUID, schedule_id: str, status: str | None, window: Window
    ) -> Page[RunRow]:
        """The runs of a schedule of this tenant (a deleted one's too), newest planned first,
        from their rows; the schedule's history is read only to tell an unknown schedule
        (404) from one without such runs."""
        wanted = RunFilter(schedule_id=schedule_uuid(schedule_id), status=status)
        page = self.runs.list_page(tenant_id, wanted, window)
        if page.total == 0:
            self.find(tenant_id, schedule_id)
        return page

    def due_backlog(self, tenant_id: UUID | None) -> tuple[int, float]:
        """Schedules whose next fire has come, and the oldest one's lag (one tenant, or all)."""
        now = self.ledger.clock()
        count, oldest_at = due_schedule_backlog(self.ledger.store, tenant_id, now)
        return count, (now - oldest_at).total_seconds() if oldest_at else 0.0

    def timeline(self, tenant_id: UUID, schedule_id: str) -> list[TimelineEntry]:
        """Every event of the schedule, deleted ones included; an edit saved before edits
        recorded their `changes` shows them derived from the save before it."""
        return with_changes(self.ledger.timeline(self.find(tenant_id, schedule_id).id))

    def timeline_range(self, schedule_id: UUID, after: int, upto: int) -> list[TimelineEntry]:
        """The schedule's events after log version `after` up to `upto`, as `timeline` shows
        them: the events before are read only for an edit saved without its `changes`."""
        entries = self.ledger.timeline_range(schedule_id, after, upto)
        if not any(e.type == "Schedule.Updated" and e.data.get("changes") is None for e in entries):
            return entries
        earlier = self.ledger.timeline_range(schedule_id, 0, after)
        return with_changes([*earlier, *entries])[len(earlier) :]

    def schedule(self, tenant_id: UUID, schedule_id: str, version: int | None = None) -> Schedule:
        """A live schedule of this tenant, at the expected version if one is named."""
        schedule = self.find(tenant_id, schedule_id)
        if schedule.deleted:
            raise NotFound("schedule", schedule_id)
        check_expected_version("schedule", schedule.revision, version)
        return schedule

    def find(self, tenant_id: UUID, schedule_id: str) -> Schedule:
        """A schedule of this tenant, deleted ones included."""
        return self.ledger.find_in_tenant(Schedule, schedule_id, "schedule", tenant_id)

    def preview(
        self,
        trigger: dict[str, Any],
        timezone: str | None,
        count: int,
        after: datetime | None,
        tenant_id: UUID | None = None,
        calendar: tuple[str | None, str | None] = (None, None),
    ) -> Preview:
        """The next `count` fire times, so a user sees daylight saving before saving; with a
        calendar (key and rule) each marked as it would fire, move or be skipped."""
        timezone = timezone or self.default_timezone
        checked_trigger(trigger, timezone, after or self.ledger.clock())
        placed = self._preview_calendar(tenant_id, *calendar)
        fires = self._fire_times(trigger, timezone, count, after)
        return Preview.of(fires, trigger, timezone, placed)

    def _preview_calendar(
        self, tenant_id: UUID | None, key: str | None, rule: str | None
    ) -> CycleCalendar | None:
        """The tenant's calendar of that key with the rule, checked as a save checks them."""
        if tenant_id is None or (key is None and rule is None):
            return None
        problem = calendar_rule_problem(key, rule)
        if problem:
            raise ValidationFailed.of("calendar_rule", problem)
        if key is None or rule is None:  # as the rule's problem says, never
            return None
        found = self.ledger.get_many([calendar_uuid(tenant_id, key)])
        calendar = next(iter(found.values()), None)
        if not isinstance(calendar, Calendar):
            raise ValidationFailed.of(
                "calendar", Message("the tenant has no calendar {key}", key=key)
            )
        return CycleCalendar(key, calendar.revision, rule, working_calendar(calendar.current))

    def saved_preview(
        self, tenant_id: UUID, schedule_id: str, count: int, after: datetime | None
    ) -> Preview:
        """The next `count` fire times of a live schedule's saved trigger, enabled or not,
        each marked with what its calendar (at its current revision) does to it."""
        schedule = self.schedule(tenant_id, schedule_id)
        settings = schedule.settings
        fires = self._fire_times(settings.trigger, settings.timezone, count, after)
        placed = cycle_calendar(self.ledger, schedule)
        return Preview.of(fires, settings.trigger, settings.timezone, placed)

    def _fire_times(
        self,
        trigger: dict[str, Any],
        timezone: str,
        count: int = NEXT_FIRES_SHOWN,
        after: datetime | None = None,
    ) -> list[FireTime]:
        """The next `count` fire times after `after` (default now), enabled or not."""
        if after is None and count == NEXT_FIRES_SHOWN:
            return self.next_fires.after(trigger, timezone, self.ledger.clock())
        return fires_after(trigger, timezone, count, after or self.ledger.clock())

    def _published_revision(self, tenant_id: UUID, settings: ScheduleSettings) -> int:
        """The revision of the (checked, so published) definition a schedule is saved against
        (the first for a built-in job, which has none)."""
        if settings.is_job:
            return FIRST_REVISION
        definition = self.directory.definition_aggregate(tenant_id, settings.definition_id)
        return definition.revision

    def _checked(
        self, tenant_id: UUID, settings: ScheduleSettings, at: datetime
    ) -> ScheduleSettings:
        """Every rule at once: the settings' own, the definition's and the initiator's (an
        approval's), or the webhook subscription's (a `webhook.ping` job's)."""
        own: dict[str, list[str]] = {}
        try:
            settings = checked_settings(settings, at)
        except ValidationFailed as failed:
            own = failed.errors
        errors = {**self._target_problems(tenant_id, settings), **own}
        key = settings.calendar
        if key is not None and not self.ledger.exists(calendar_uuid(tenant_id, key)):
            errors["calendar"] = [Message("the tenant has no calendar {key}", key=key)]
        if errors:
            raise ValidationFailed(errors)
        return settings

    def _target_problems(self, tenant_id: UUID, settings: ScheduleSettings) -> dict[str, list[str]]:
        """What the tenant's directory says of the target: an approval's definition and
        initiator, or the subscription a `webhook.ping` job pings."""
        kind = settings.target.get("kind")
        if kind == APPROVAL_TARGET:
            return self.directory.launch_problems(tenant_id, settings)
        if kind == WEBHOOK_PING:
            return self._webhook_problems(tenant_id, settings.target.get("params"))
        return {}

    def _webhook_problems(self, tenant_id: UUID, params: object) -> dict[str, list[str]]:
        """The subscription must be a live one of the tenant."""
        webhook_id = params.get("webhook_id") if isinstance(params, Mapping) else None
        if not isinstance(webhook_id, str):
            return {}  # the target's own check names it
        try:
            found = self.ledger.find_in_tenant(
                WebhookSubscription, webhook_id, "webhook", tenant_id
            )
        except NotFound:
            found = None
        if found is None or found.deleted:
            missing = Message("the tenant has no webhook subscription {id}", id=webhook_id)
            return {"target.params.webhook_id": [missing]}
        return {}


def check_may_save_jobs(actor: Principal, *settings: ScheduleSettings) -> None:
    """Saving, enabling or deleting a schedule that runs a built-in job (before or after the
    save) needs `directory:manage`: the jobs act on the whole service (docs/jobs.md)."""
    if any(each.is_job for each in settings) and not actor.can(DIRECTORY_MANAGE):
        raise Forbidden(
            Message(
                "only an account with {permission} may save a schedule that runs a built-in job",
                permission=DIRECTORY_MANAGE,
            )
        )


def schedule_uuid(schedule_id: str) -> UUID:
    """A schedule's id as given in a path; one that is no UUID names no schedule."""
    try:
        return UUID(schedule_id)
    except ValueError:
        raise NotFound("schedule", schedule_id) from None


SAVES = ("Schedule.Created", "Schedule.Updated")
SWITCHES = {"Schedule.Enabled": True, "Schedule.Disabled": False, "Schedule.AutoPaused": False}


def with_changes(entries: list[TimelineEntry]) -> list[TimelineEntry]:
    """The timeline, each `Schedule.Updated` without recorded `changes` given them, derived
    from the settings of the save before it (the events themselves stay as stored)."""
    before: dict[str, Any] = {}
    shown = []
    for entry in entries:
        if entry.type in SAVES:
            data = entry.data
            after = saved_state(data["settings"], data["enabled"], data["definition_revision"])
            if entry.type == "Schedule.Updated" and data.get("changes") is None:
                entry = replace(entry, data={**data, "changes": changes_between(before, after)})
            before = after
        elif entry.type in SWITCHES:
            before = {**before, "enabled": SWITCHES[entry.type]}
        shown.append(entry)
    return shown
