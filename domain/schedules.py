"""Schedules (定时任务): what starts approval instances (or runs a built-in job), when, and on
whose behalf."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.calendar_cycles import CALENDAR_RULES, CycleCalendar
from domain.directory import FIRST_REVISION
from domain.errors import InvalidState, ValidationFailed
from domain.jobs import APPROVAL, checked_target, is_job, run_target, target_problems
from domain.messages import N_, Message
from domain.overlap import (
    DEFAULT_OVERLAP_POLICY,
    OVERLAP_POLICIES,
    renamed_changes,
    renamed_in,
)
from domain.planning import Cycle, plan_due_cycles
from domain.policy import RunPolicy
from domain.reasons import ReasonedEvent
from domain.runs import TICK_ACTOR, Run, run_uuid
from domain.triggers import (
    TriggerError,
    check_fires_within,
    load_zone,
    next_fire,
    parse_trigger,
    trigger_to_dict,
)
from domain.values import FormData, form_data_problem

MISFIRE_POLICIES = ("catch_up", "skip", "once")
PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}")
PLACEHOLDERS = {"date": "%Y-%m-%d", "datetime": "%Y-%m-%d %H:%M"}
RULES_LISTED = ", ".join(CALENDAR_RULES)
MAX_CYCLES_BEFORE_EDIT = 500  # per transaction; the service saves a longer backlog first
DEFAULT_GROUP = "DEFAULT"  # 任务组名, as RuoYi names a job's group when none is given
APPROVAL_TARGET = APPROVAL  # a cycle launches an approval instance (the default target)
# The settings only an approval target uses: a built-in job leaves them empty.
APPROVAL_FIELDS = ("definition_id", "initiator_id", "title_template", "form_data")
DEFAULT_AUTO_PAUSE = 3  # consecutive cycles ending without a launch before the schedule pauses
MAX_AUTO_PAUSE = 1000
MAX_GROUP = 64
WORKER_ACTOR = "system:worker"  # who counts a schedule's failed cycles, and pauses it
AUTO_PAUSED = "AUTO_PAUSED"  # the code of an auto-pause's reason
AUTO_PAUSE_WORDS = N_("{count} cycle(s) in a row ended without launching: {runs}")


@dataclass(frozen=True)
class ScheduleSettings:
    """Everything a user sets on a schedule, apart from whether it is enabled."""

    name: str
    definition_id: str
    trigger: dict[str, Any]
    timezone: str
    initiator_id: str
    title_template: str
    form_data: FormData
    misfire_policy: str = "catch_up"
    overlap_policy: str = DEFAULT_OVERLAP_POLICY
    preset_id: str | None = None
    calendar: str | None = None  # a calendar's key: its cycles respect its working days
    calendar_rule: str | None = None  # CALENDAR_RULES', with a calendar only
    group: str = DEFAULT_GROUP
    target: dict[str, Any] = field(default_factory=lambda: {"kind": APPROVAL_TARGET})
    auto_pause_after_failures: int | None = DEFAULT_AUTO_PAUSE  # None: never

    def __post_init__(self) -> None:
        object.__setattr__(self, "form_data", FormData.of(self.form_data))

    @property
    def is_job(self) -> bool:
        """Whether its cycles run a built-in job instead of launching an approval."""
        return is_job(self.target)

    def timing_differs(self, other: ScheduleSettings) -> bool:
        return (self.trigger, self.timezone) != (other.trigger, other.timezone)

    def next_fire_after(self, instant: datetime) -> datetime | None:
        return next_fire(parse_trigger(self.trigger), load_zone(self.timezone), instant)


def checked_settings(settings: ScheduleSettings, now: datetime) -> ScheduleSettings:
    """The settings with the trigger normalised, or every rule they break at once."""
    errors = {
        field: [message]
        for field, message in (
            ("title_template", template_problem(settings.title_template)),
            ("form_data", form_data_problem(settings.form_data)),
            ("misfire_policy", choice_problem(settings.misfire_policy, MISFIRE_POLICIES)),
            ("overlap_policy", choice_problem(settings.overlap_policy, OVERLAP_POLICIES)),
            ("calendar_rule", calendar_rule_problem(settings.calendar, settings.calendar_rule)),
            ("group", group_problem(settings.group)),
            ("auto_pause_after_failures", auto_pause_problem(settings.auto_pause_after_failures)),
        )
        if message
    }
    errors.update(target_problems(settings.target))
    if not any(name.startswith("target") for name in errors):
        errors.update(approval_field_problems(settings))
    try:
        trigger = checked_trigger(settings.trigger, settings.timezone, now)
    except ValidationFailed as failed:
        errors.update(failed.errors)
    if errors:
        raise ValidationFailed(errors)
    return replace(settings, trigger=trigger, target=checked_target(settings.target))


def approval_field_problems(settings: ScheduleSettings) -> dict[str, list[str]]:
    """An approval target needs its definition and initiator; a built-in job launches no
    approval, so it takes none of the approval's fields."""
    if settings.is_job:
        refused = Message("a built-in job launches no approval: leave it out")
        return {name: [refused] for name in APPROVAL_FIELDS if getattr(settings, name)}
    needed = Message("required when the target is an approval")
    return {
        name: [needed] for name in ("definition_id", "initiator_id") if not getattr(settings, name)
    }


def checked_trigger(trigger: dict[str, Any], timezone: str, now: datetime) -> dict[str, Any]:
    """The trigger in normal form, if it and the timezone are valid and it fires within 5 years."""
    errors: dict[str, list[str]] = {}
    zone = parsed = None
    try:
        zone = load_zone(timezone)
    except TriggerError as error:
        errors["timezone"] = [error.message]
    try:
        parsed = parse_trigger(trigger)
        if zone is not None:
            check_fires_within(parsed, zone, now)
    except TriggerError as error:
        errors[f"trigger.{error.field}"] = [error.message]
    if errors or parsed is None:
        raise ValidationFailed(errors)
    return trigger_to_dict(parsed)


def calendar_rule_problem(calendar: str | None, rule: str | None) -> str | None:
    """A calendar needs its rule, and a rule its calendar."""
    if calendar is None:
        if rule is None:
            return None
        return Message("name a calendar for the rule to apply, or leave the rule out")
    if rule is None:
        return Message("a schedule on a calendar needs a rule: {choices}", choices=RULES_LISTED)
    return choice_problem(rule, CALENDAR_RULES)


def group_problem(group: str) -> str | None:
    """A job group (任务组名) is 1-64 characters, not only spaces."""
    if group.strip() and len(group) <= MAX_GROUP:
        return None
    return Message("use 1-{most} characters, not only spaces", most=MAX_GROUP)


def auto_pause_problem(failures: int | None) -> str | None:
    """Null (never), or how many failed cycles in a row pause the schedule."""
    if failures is None or 1 <= failures <= MAX_AUTO_PAUSE:
        return None
    return Message("use 1 to {most}, or null to never pause", most=MAX_AUTO_PAUSE)


def template_problem(template: str) -> str | None:
    unknown = sorted({p for p in PLACEHOLDER.findall(template) if p not in PLACEHOLDERS})
    if unknown:
        named = ", ".join("{{" + p + "}}" for p in unknown)
        return Message(
            "unknown placeholder(s) {named}; use {{{{date}}}} or {{{{datetime}}}}", named=named
        )
    rest = PLACEHOLDER.sub("", template)
    if "{{" in rest or "}}" in rest:
        return Message("unbalanced braces; placeholders are {{{{date}}}} and {{{{datetime}}}}")
    return None


def choice_problem(value: str, choices: tuple[str, ...]) -> str | None:
    return (
        None
        if value in choices
        else Message("must be one of {choices}", choices=", ".join(choices))
    )


def checked_presets(
    presets: list[dict[str, Any]], default_timezone: str, now: datetime
) -> list[dict[str, Any]]:
    """The presets with their form data kept as given, if each is usable as a schedule's."""
    kept = [{**preset, "form_data": FormData.of(preset.get("form_data"))} for preset in presets]
    errors: dict[str, list[str]] = {}
    for number, preset in enumerate(kept):
        problem = form_data_problem(preset["form_data"])
        if problem:
            errors[f"schedule_presets.{number}.form_data"] = [problem]
        timezone = preset.get("timezone") or default_timezone
        try:
            checked_trigger(preset["trigger"], timezone, now)
        except ValidationFailed as failed:
            for field, messages in failed.errors.items():
                errors[f"schedule_presets.{number}.{field}"] = messages
    if errors:
        raise ValidationFailed(errors)
    return kept


def untemplated(template: str) -> str:
    """A template without its placeholders, as a name."""
    return " ".join(PLACEHOLDER.sub("", template).split()) or template


def render_title(template: str, name: str, planned_at: datetime, timezone: str) -> str:
    """The run's title: placeholders filled from the planned instant in `timezone`, the business
    time zone (requirement 000: the cron runs in the schedule's zone, titles in the business
    zone), not the schedule's."""
    if not template:
        return name
    if "{{" not in template:
        return template
    for placeholder, text in _placeholder_texts(planned_at, timezone):
        template = template.replace(placeholder, text)
    return template


@lru_cache(maxsize=256)
def _placeholder_texts(planned_at: datetime, timezone: str) -> tuple[tuple[str, str], ...]:
    """Each placeholder and its text for the instant in `timezone`: the cycles due at one
    instant share them."""
    local = planned_at.astimezone(load_zone(timezone))
    return tuple(("{{" + p + "}}", local.strftime(pattern)) for p, pattern in PLACEHOLDERS.items())


JOB_DEFAULTS: dict[str, Any] = {
    "group": DEFAULT_GROUP,
    "target": {"kind": APPROVAL_TARGET},
    "auto_pause_after_failures": DEFAULT_AUTO_PAUSE,
}


def saved_against_first_revision(state: dict[str, Any]) -> None:
    """Upcast from before definition revisions: every definition then counted as revision 1."""
    state["definition_revision"] = FIRST_REVISION


def changes_not_recorded(state: dict[str, Any]) -> None:
    """Upcast from before edits recorded their changes: readers derive them (`changes_between`)."""
    state["changes"] = None


def overlap_renamed(state: dict[str, Any]) -> None:
    """Upcast from before release 0.11.0 renamed the overlap policy `skip` `skip_while_open`."""
    state["settings"] = renamed_in(state["settings"])
    if "changes" in state:
        state["changes"] = renamed_changes(state["changes"])


def no_calendar(state: dict[str, Any]) -> None:
    """Upcast from before schedules could name a calendar: the saved settings named none."""
    state["settings"] = {**state["settings"], "calendar": None, "calendar_rule": None}


def ungrouped(state: dict[str, Any]) -> None:
    """Upcast from before job groups, targets and auto-pause: the saved settings were in the
    default group, launched approvals, and pause after the default number of failures."""
    state["settings"] = {**state["settings"], **JOB_DEFAULTS}


def snapshot_ungrouped(state: dict[str, Any]) -> None:
    """`ungrouped` for a snapshot, whose settings are decoded already."""
    state["settings"] = replace(state["settings"], **JOB_DEFAULTS)


def no_failed_cycles(state: dict[str, Any]) -> None:
    """Upcast from before auto-pause: no failed cycle counted, never paused by the service."""
    state["failed_cycles"] = []
    state["auto_paused"] = None


def snapshot_no_calendar(state: dict[str, Any]) -> None:
    """`no_calendar` for a snapshot, whose settings are decoded already."""
    state["settings"] = replace(state["settings"], calendar=None, calendar_rule=None)


def snapshot_overlap_renamed(state: dict[str, Any]) -> None:
    """`overlap_renamed` for a snapshot, whose settings are decoded already."""
    settings = state["settings"]
    state["settings"] = ScheduleSettings(**renamed_in(asdict(settings)))


def saved_state(
    settings: dict[str, Any], enabled: bool, definition_revision: int
) -> dict[str, Any]:
    """What a save sets, flat: the settings, the switch and the definition's revision."""
    return {**settings, "enabled": enabled, "definition_revision": definition_revision}


def runs_listed(runs: list[dict[str, str]]) -> str:
    """Failed cycles as a reason names them: each run's id and its error code."""
    return ", ".join(f"{run['run_id']} ({run['error_code']})" for run in runs)


def auto_pause_reason(runs: list[dict[str, str]]) -> tuple[str, dict[str, Any]]:
    """An auto-pause's reason, in English (as events keep it), and the values of its words."""
    params = {"count": len(runs), "runs": runs_listed(runs)}
    return str(Message(AUTO_PAUSE_WORDS, **params)), params


def changes_between(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """Each field whose value differs, as `{"field", "old", "new"}`, in `after`'s order."""
    return [
        {"field": field, "old": before.get(field), "new": value}
        for field, value in after.items()
        if before.get(field) != value
    ]


class Schedule(Aggregate):
    """One schedule, with its plan: the next instant it fires, or None when it does not.

    Version 2 records the definition's published revision it was saved against
    (`definition_revision`): its runs launch that revision until the schedule is saved again.
    Version 3 names the overlap policy `skip` `skip_while_open`. Version 4's settings may name
    a calendar and its rule (`calendar`, `calendar_rule`; None before). Version 5's settings
    have `group`, `target` and `auto_pause_after_failures` (`DEFAULT`, an approval and 3
    before). Version 6 keeps the cycles that ended without launching since the last launch
    (`failed_cycles`, each `{"run_id", "error_code"}`) and the service's pause they caused
    (`auto_paused`: `{"at", "reason", "runs"}`, None while not paused so); none before.
    """

    class_version = 6

    upcast_v1_v2 = staticmethod(saved_against_first_revision)
    upcast_v2_v3 = staticmethod(snapshot_overlap_renamed)
    upcast_v3_v4 = staticmethod(snapshot_no_calendar)
    upcast_v4_v5 = staticmethod(snapshot_ungrouped)
    upcast_v5_v6 = staticmethod(no_failed_cycles)

    class Created(Aggregate.Created):
        """Version 2 added `definition_revision` (1 before); version 3 names the overlap
        policy `skip` `skip_while_open`; version 4's settings have `calendar` and
        `calendar_rule` (None before); version 5's `group`, `target` and
        `auto_pause_after_failures` (`DEFAULT`, an approval and 3 before)."""

        class_version = 5
        tenant_id: UUID
        settings: dict[str, Any]
        enabled: bool
        next_fire_at: datetime | None
        definition_revision: int
        at: datetime
        actor: str

        upcast_v1_v2 = staticmethod(saved_against_first_revision)
        upcast_v2_v3 = staticmethod(overlap_renamed)
        upcast_v3_v4 = staticmethod(no_calendar)
        upcast_v4_v5 = staticmethod(ungrouped)

    @event(Created)
    def __init__(
        self,
        tenant_id: UUID,
        settings: dict[str, Any],
        enabled: bool,
        next_fire_at: datetime | None,
        definition_revision: int,
        at: datetime,
        actor: str,
    ) -> None:
        self.tenant_id = tenant_id
        self.settings = ScheduleSettings(**settings)
        self.enabled = enabled
        self.next_fire_at = next_fire_at
        self.definition_revision = definition_revision
        self.revision = 1
        self.created_at = at
        self.updated_at = at
        self.updated_by = actor
        self.deleted = False
        self.failed_cycles: list[dict[str, str]] = []
        self.auto_paused: dict[str, Any] | None = None

    @classmethod
    def create(
        cls,
        tenant_id: UUID,
        settings: ScheduleSettings,
        enabled: bool,
        at: datetime,
        actor: str,
        definition_revision: int = FIRST_REVISION,
    ) -> Schedule:
        """A new schedule, saved against the definition's current published revision (the
        service names it; the first revision otherwise)."""
        next_fire_at = settings.next_fire_after(at) if enabled else None
        return cls(
            tenant_id=tenant_id,
            settings=asdict(settings),
            enabled=enabled,
            next_fire_at=next_fire_at,
            definition_revision=definition_revision,
            at=at,
            actor=actor,
        )

    def edit(
        self,
        settings: ScheduleSettings,
        enabled: bool,
        at: datetime,
        actor: str,
        policy: RunPolicy,
        definition_revision: int | None = None,
        calendar: CycleCalendar | None = None,
    ) -> list[Run]:
        """Replace the settings; the plan moves only if the timing or the enabled state did.

        Cycles already due under the old plan are registered first, so an edit never drops or
        delays a cycle that came due before it (a backlog longer than MAX_CYCLES_BEFORE_EDIT
        is the caller's to register beforehand, see `replans`). A re-save names the
        definition's current `definition_revision`; without one (enabling, disabling) the
        schedule keeps the revision it has. `calendar` is that of the settings before the edit.
        """
        self.check_not_deleted()
        runs: list[Run] = []
        if self.replans(settings, enabled, at):
            runs = self.register_due(at, MAX_CYCLES_BEFORE_EDIT, policy, calendar=calendar)
        revision = self.definition_revision if definition_revision is None else definition_revision
        after = saved_state(asdict(settings), enabled, revision)
        self._updated(
            settings=asdict(settings),
            enabled=enabled,
            next_fire_at=self._plan_after_edit(settings, enabled, at),
            definition_revision=revision,
            changes=changes_between(self.saved_fields, after),
            at=at,
            actor=actor,
        )
        return runs

    @property
    def saved_fields(self) -> dict[str, Any]:
        return saved_state(asdict(self.settings), self.enabled, self.definition_revision)

    def switch(
        self,
        enabled: bool,
        at: datetime,
        actor: str,
        policy: RunPolicy,
        reason: str | None = None,
        calendar: CycleCalendar | None = None,
    ) -> list[Run]:
        """Enable (the first fire is strictly after `at`) or disable (cycles already due are
        registered first, as an edit does); switching to the state it is in records nothing."""
        self.check_not_deleted()
        if enabled == self.enabled:
            return []
        if enabled:
            next_fire_at = self.settings.next_fire_after(at)
            self._enabled(next_fire_at=next_fire_at, at=at, actor=actor, reason=reason)
            return []
        runs = self.register_due(at, MAX_CYCLES_BEFORE_EDIT, policy, calendar=calendar)
        self._disabled(at=at, actor=actor, reason=reason)
        return runs

    def cycle_failed(self, run_id: str, error_code: str, at: datetime) -> None:
        """A cycle ended without launching (dead-lettered, or failed for good): counted while
        the schedule is enabled and pauses (a cycle once, however often it is retried); the
        count reaching `auto_pause_after_failures` disables it (`AutoPaused`), once."""
        threshold = self.settings.auto_pause_after_failures
        if self.deleted or not self.enabled or threshold is None:
            return
        if any(failed["run_id"] == run_id for failed in self.failed_cycles):
            return
        self._cycle_failed(run_id=run_id, error_code=error_code, at=at, actor=WORKER_ACTOR)
        if len(self.failed_cycles) >= threshold:
            runs = list(self.failed_cycles)
            reason, params = auto_pause_reason(runs)
            self._auto_paused(
                runs=runs,
                reason=reason,
                reason_code=AUTO_PAUSED,
                reason_params=params,
                at=at,
                actor=WORKER_ACTOR,
            )

    def cycle_launched(self, run_id: str, at: datetime) -> None:
        """A cycle launched its instance: the count of failed cycles starts again (recorded
        only when there is one to clear)."""
        if self.failed_cycles and not self.deleted:
            self._failures_cleared(run_id=run_id, at=at, actor=WORKER_ACTOR)

    def replans(self, settings: ScheduleSettings, enabled: bool, at: datetime) -> bool:
        """Whether this edit would move the plan."""
        return self._plan_after_edit(settings, enabled, at) != self.next_fire_at

    def register_due(
        self,
        now: datetime,
        limit: int,
        policy: RunPolicy,
        actor: str = TICK_ACTOR,
        calendar: CycleCalendar | None = None,
    ) -> list[Run]:
        """Register the cycles due at `now` (per the misfire policy) and advance the plan;
        each placed on `calendar`, the current revision of the one the settings name."""
        if self.next_fire_at is None or self.next_fire_at > now:
            return []
        settings = self.settings
        plan = plan_due_cycles(
            settings.trigger,
            settings.timezone,
            settings.misfire_policy,
            self.next_fire_at,
            now,
            limit,
            policy.grace,
            calendar if settings.calendar else None,
        )
        runs = [
            self._run(c.planned_at, c, None, "schedule", policy, now, actor) for c in plan.cycles
        ]
        self._plan_advanced(next_fire_at=plan.next_fire_at, cycles=len(runs), at=now, actor=actor)
        return runs

    def manual_run(
        self,
        request_id: str,
        at: datetime,
        actor: str,
        policy: RunPolicy,
        traceparent: str | None = None,
    ) -> Run:
        """A cycle planned at the time the request was accepted, recorded on the schedule's own
        history too (save both together); the plan stays as it is. It keeps the trace context
        of the request (`traceparent`), which its launches continue."""
        self.check_not_deleted()
        run = self._run(at, Cycle(at), request_id, "manual", policy, at, actor, traceparent)
        self._run_requested(run_id=str(run.id), request_id=request_id, at=at, actor=actor)
        return run

    def _run(
        self,
        planned_at: datetime,
        cycle: Cycle,
        request_id: str | None,
        trigger: str,
        policy: RunPolicy,
        at: datetime,
        actor: str,
        traceparent: str | None = None,
    ) -> Run:
        settings = self.settings
        runs_at = cycle.moved_to or planned_at  # a title's date is the day the cycle runs
        frozen = {
            "title": render_title(
                settings.title_template, settings.name, runs_at, policy.business_timezone
            ),
            "form_data": settings.form_data,
            "initiator_id": settings.initiator_id,
            "definition_id": settings.definition_id,
            "definition_revision": self.definition_revision,
            "schedule_name": settings.name,
            "schedule_revision": self.revision,
            "schedule_trigger": settings.trigger,
            "timezone": settings.timezone,
            "overlap_policy": settings.overlap_policy,
            "saved_by": self.updated_by,
            "target": run_target(settings.target),
        }
        return Run(
            tenant_id=self.tenant_id,
            schedule_id=self.id,
            planned_at=planned_at,
            request_id=request_id,
            trigger=trigger,
            status=cycle.status,
            skipped_count=cycle.skipped_count,
            missed_until=cycle.missed_until,
            frozen=frozen,
            max_attempts=policy.max_attempts,
            at=at,
            actor=actor,
            traceparent=traceparent,
            moved_to=cycle.moved_to,
            calendar=self._calendar_kept(cycle.calendar),
        )

    def _calendar_kept(self, found: dict[str, Any] | None) -> dict[str, Any] | None:
        """What a run keeps of its calendar's finding, instants as text, and the run launched
        instead of a skipped one by its id."""
        if found is None or "launched_planned_at" not in found:
            return found
        launched: datetime = found["launched_planned_at"]
        return {
            **found,
            "launched_run_id": str(run_uuid(self.id, launched)),
            "launched_planned_at": launched.astimezone(UTC).isoformat(),
        }

    def _plan_after_edit(
        self, settings: ScheduleSettings, enabled: bool, at: datetime
    ) -> datetime | None:
        if not enabled:
            return None
        if not self.enabled or settings.timing_differs(self.settings):
            return settings.next_fire_after(at)
        return self.next_fire_at

    def delete(self, at: datetime, actor: str, reason: str | None = None) -> None:
        self.check_not_deleted()
        self._deleted(at=at, actor=actor, reason=reason)

    def check_not_deleted(self) -> None:
        if self.deleted:
            raise InvalidState("the schedule was deleted")

    class Updated(Aggregate.Event):
        """Version 2 added `definition_revision` (1 before); version 3 `changes`, each field
        the save changed as `{"field", "old", "new"}` (None before: the timeline derives them);
        version 4 names the overlap policy `skip` `skip_while_open`, in both; version 5's
        settings have `calendar` and `calendar_rule` (None before); version 6's `group`, `target`
        and `auto_pause_after_failures` (`DEFAULT`, an approval and 3 before).
        """

        class_version = 6
        settings: dict[str, Any]
        enabled: bool
        next_fire_at: datetime | None
        definition_revision: int
        changes: list[dict[str, Any]] | None
        at: datetime
        actor: str

        upcast_v1_v2 = staticmethod(saved_against_first_revision)
        upcast_v2_v3 = staticmethod(changes_not_recorded)
        upcast_v3_v4 = staticmethod(overlap_renamed)
        upcast_v4_v5 = staticmethod(no_calendar)
        upcast_v5_v6 = staticmethod(ungrouped)

    @event(Updated)
    def _updated(
        self,
        settings: dict[str, Any],
        enabled: bool,
        next_fire_at: datetime | None,
        definition_revision: int,
        changes: list[dict[str, Any]] | None,
        at: datetime,
        actor: str,
    ) -> None:
        self.settings = ScheduleSettings(**settings)
        if enabled and not self.enabled:
            self._switched_on()
        self.enabled = enabled
        self.next_fire_at = next_fire_at
        self.definition_revision = definition_revision
        self._saved(at, actor)

    class Enabled(Aggregate.Event):
        next_fire_at: datetime | None
        at: datetime
        actor: str
        reason: str | None

    @event(Enabled)
    def _enabled(
        self, next_fire_at: datetime | None, at: datetime, actor: str, reason: str | None
    ) -> None:
        self.enabled = True
        self.next_fire_at = next_fire_at
        self._switched_on()
        self._saved(at, actor)

    class Disabled(Aggregate.Event):
        at: datetime
        actor: str
        reason: str | None

    @event(Disabled)
    def _disabled(self, at: datetime, actor: str, reason: str | None) -> None:
        self.enabled = False
        self.next_fire_at = None
        self._saved(at, actor)

    class CycleFailed(Aggregate.Event):
        """A cycle of the schedule ended without launching: its run and the error code."""

        run_id: str
        error_code: str
        at: datetime
        actor: str

    @event(CycleFailed)
    def _cycle_failed(self, run_id: str, error_code: str, at: datetime, actor: str) -> None:
        self.failed_cycles = [*self.failed_cycles, {"run_id": run_id, "error_code": error_code}]

    class FailuresCleared(Aggregate.Event):
        """A cycle launched (`run_id`) after failed ones: their count starts again."""

        run_id: str
        at: datetime
        actor: str

    @event(FailuresCleared)
    def _failures_cleared(self, run_id: str, at: datetime, actor: str) -> None:
        self.failed_cycles = []

    class AutoPaused(Aggregate.Event):
        """The service disabled the schedule: `runs` (each `{"run_id", "error_code"}`, oldest
        first) ended without launching, in a row; `reason` says so in English, from its code
        and `reason_params` (`count`, `runs`)."""

        runs: list[dict[str, str]]
        reason: str
        reason_code: str
        reason_params: dict[str, Any]
        at: datetime
        actor: str

    @event(AutoPaused)
    def _auto_paused(
        self,
        runs: list[dict[str, str]],
        reason: str,
        reason_code: str,
        reason_params: dict[str, Any],
        at: datetime,
        actor: str,
    ) -> None:
        """Disabled as `Disabled` does, but the account that last saved it stays its saver (it
        vouches for the launches of its runs); the count starts again."""
        self.enabled = False
        self.next_fire_at = None
        self.failed_cycles = []
        self.auto_paused = {"at": at, "reason": reason, "runs": runs}
        self.revision += 1

    def _switched_on(self) -> None:
        """Enabled again: a pause by the service is over, and failed cycles count afresh."""
        self.failed_cycles = []
        self.auto_paused = None

    def _saved(self, at: datetime, actor: str) -> None:
        self.revision += 1
        self.updated_at = at
        self.updated_by = actor

    class RunRequested(Aggregate.Event):
        run_id: str
        request_id: str
        at: datetime
        actor: str

    @event(RunRequested)
    def _run_requested(self, run_id: str, request_id: str, at: datetime, actor: str) -> None:
        """A manual run, registered with this event: the schedule's own state stays."""

    class PlanAdvanced(Aggregate.Event):
        next_fire_at: datetime | None
        cycles: int
        at: datetime
        actor: str

    @event(PlanAdvanced)
    def _plan_advanced(
        self, next_fire_at: datetime | None, cycles: int, at: datetime, actor: str
    ) -> None:
        self.next_fire_at = next_fire_at

    class Deleted(ReasonedEvent):
        """Version 2 added the optional `reason` (None before)."""

    @event(Deleted)
    def _deleted(self, at: datetime, actor: str, reason: str | None) -> None:
        self.revision += 1
        self.deleted = True
        self.enabled = False
        self.next_fire_at = None
        self.updated_at = at
        self.updated_by = actor
