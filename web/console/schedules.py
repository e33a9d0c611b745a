"""The console's schedules pages (定时任务): the list, a schedule's page, the create and edit
forms with a live preview of the next fires, creation from a definition's preset, enable and
disable, delete, and run now (docs/console/schedules.md).

Every change goes through the application service the API uses (web/schedules.py, web/runs.py);
the API's request schemas check the typed fields, so no rule is written twice.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, tzinfo
from typing import Any
from uuid import UUID, uuid4
from zoneinfo import available_timezones

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from markupsafe import Markup
from marshmallow import Schema, ValidationError
from werkzeug.exceptions import Forbidden
from werkzeug.wrappers import Response

from cronledger.application.bulk import (
    DELETE,
    MAX_BULK,
    RUN,
    SCHEDULE_ACTIONS,
    BulkRequest,
    act_on_schedules,
)
from cronledger.application.schedules import (
    FIRES,
    MOVED,
    NEXT_FIRES_SHOWN,
    NOT_FOUND,
    SKIPPED,
    UNCHANGED,
    FireTime,
    MarkedFire,
    ScheduleAnswer,
)
from cronledger.health import REBUILDING
from domain.calendar_cycles import CALENDAR_RULES, WORKING_DAYS_ONLY
from domain.directory import Principal
from domain.errors import DomainError, NotFound, ValidationFailed, VersionConflict
from domain.exports import FORMATS, TooManyRows
from domain.jobs import APPROVAL, AUDIT_VERIFY, TARGET_KINDS, WEBHOOK_PING, is_job
from domain.overlap import DEFAULT_OVERLAP_POLICY, OVERLAP_POLICIES, SKIP_WHILE_OPEN
from domain.permissions import (
    DIRECTORY_MANAGE,
    SCHEDULE_CREATE,
    SCHEDULE_DELETE,
    SCHEDULE_EDIT,
    SCHEDULE_LIST,
)
from domain.schedules import (
    DEFAULT_AUTO_PAUSE,
    DEFAULT_GROUP,
    MISFIRE_POLICIES,
    runs_listed,
    untemplated,
)
from domain.triggers import TriggerError, load_zone
from projections.directory import DefinitionRow
from projections.keyset import Window
from projections.schedules import SCHEDULE_LISTING, ScheduleFilter, ScheduleRow
from web.api import as_message, services
from web.console.access import signed_in
from web.console.bulk import Confirm, ConfirmRow, Picked, picked, posted_reason, report
from web.console.clock import offset_text
from web.console.code_words import code
from web.console.cron_builder import MODES, builder_of
from web.console.job_words import target_label, target_words
from web.console.lists import (
    ListView,
    account_names,
    definition_names,
    list_view,
    read_picker,
    shown_names,
)
from web.console.overlap_words import blocked_words, overlap_words
from web.console.schedule_words import WEEKDAYS, _, as_written, in_words
from web.exports import asked, exported
from web.problems import STATUS_OF_CODE
from web.schemas.base import ReasonBody
from web.schemas.schedules import (
    OverlapMoveIn,
    ScheduleExportQuery,
    ScheduleFieldsIn,
    ScheduleFromPresetIn,
    ScheduleListQuery,
)

bp = Blueprint("schedules", __name__, url_prefix="/schedules")

# The list's filters, in ScheduleFilter's order (`group` is its `job_group`).
FILTERS = (
    "name",
    "enabled",
    "definition_id",
    "initiator_id",
    "overlap_policy",
    "group",
    "name_contains",
)
TRIGGER_INPUTS = ("kind", "expression", "weekdays", "windows", "interval_minutes")
TARGET_INPUTS = ("target_kind", "target_full", "target_webhook_id", "target_timeout_seconds")
# A target's errors (the API's names) by the form field that shows each.
TARGET_FIELDS = {
    "target.kind": "target_kind",
    "target.params.full": "target_full",
    "target.params.webhook_id": "target_webhook_id",
    "target.timeout_seconds": "target_timeout_seconds",
}
FORM_INPUTS = (
    "name",
    "group",
    *TARGET_INPUTS,
    "definition_id",
    *TRIGGER_INPUTS,
    "timezone",
    "initiator_id",
    "title_template",
    "form_data",
    "misfire_policy",
    "overlap_policy",
    "calendar",
    "calendar_rule",
    "auto_pause_after_failures",
    "enabled",
    "preview_after",
)
TEXT_INPUTS = tuple(
    name for name in FORM_INPUTS if name not in ("weekdays", "enabled", "target_full")
)
PRESET_INPUTS = ("name", "initiator_id")
# Added after the form was first published: a post without them (a page opened before) keeps
# their defaults rather than clearing them.
LATER_INPUTS = ("group", "target_kind", "auto_pause_after_failures")
Errors = dict[str, list[str]]
Shown = str | tuple[str, int]


# ---------------------------------------------------------------------------------------------
# What the form holds, and the API's body it stands for


@dataclass
class ScheduleForm:
    """The create and edit form's fields, as the user typed them."""

    name: str = ""
    group: str = DEFAULT_GROUP
    target_kind: str = APPROVAL
    target_full: bool = False
    target_webhook_id: str = ""
    target_timeout_seconds: str = ""  # empty: the job's default
    definition_id: str = ""
    kind: str = "cron"
    expression: str = "0 9 * * *"
    weekdays: list[str] = field(default_factory=lambda: ["1", "2", "3", "4", "5"])
    windows: str = "09:00-17:00"
    interval_minutes: str = "60"
    timezone: str = ""
    initiator_id: str = ""
    title_template: str = ""
    form_data: str = "{}"
    misfire_policy: str = "catch_up"
    overlap_policy: str = DEFAULT_OVERLAP_POLICY
    calendar: str = ""
    calendar_rule: str = WORKING_DAYS_ONLY
    auto_pause_after_failures: str = str(DEFAULT_AUTO_PAUSE)  # empty: never
    enabled: bool = False
    preview_after: str = ""

    @classmethod
    def posted(cls) -> ScheduleForm:
        typed = request.form
        text: dict[str, Any] = {name: typed.get(name, "").strip() for name in TEXT_INPUTS}
        kept = {name: typed[name].strip() for name in LATER_INPUTS if name in typed}
        defaults = {name: getattr(cls, name) for name in LATER_INPUTS}
        return cls(
            **{**text, **defaults, **kept},
            weekdays=typed.getlist("weekdays"),
            enabled="enabled" in typed,
            target_full="target_full" in typed,
        )

    @classmethod
    def of(cls, row: ScheduleRow) -> ScheduleForm:
        """The form filled with a saved schedule's settings."""
        trigger = row.trigger
        form = cls(
            name=row.name,
            group=row.group,
            definition_id=row.definition_id,
            kind=trigger["kind"],
            timezone=row.timezone,
            initiator_id=row.initiator_id,
            title_template=row.title_template,
            form_data=_json(row.form_data),
            misfire_policy=row.misfire_policy,
            overlap_policy=row.overlap_policy,
            calendar=row.calendar or "",
            calendar_rule=row.calendar_rule or WORKING_DAYS_ONLY,
            auto_pause_after_failures=_count_text(row.auto_pause_after_failures),
            enabled=row.enabled,
            **_target_inputs(row.target),
        )
        if trigger["kind"] == "cron":
            return replace(form, expression=trigger["expression"])
        windows = ", ".join(f"{w['start']}-{w['end']}" for w in trigger["windows"])
        weekdays = [str(day) for day in trigger["weekdays"]]
        interval = str(trigger["interval_minutes"])
        return replace(form, weekdays=weekdays, windows=windows, interval_minutes=interval)


def _target_inputs(target: Mapping[str, Any]) -> dict[str, Any]:
    """The form's target fields, filled with a saved target."""
    params = target.get("params") or {}
    return {
        "target_kind": target["kind"],
        "target_full": bool(params.get("full")),
        "target_webhook_id": params.get("webhook_id", ""),
        "target_timeout_seconds": _count_text(target.get("timeout_seconds")),
    }


def target_of(form: ScheduleForm, errors: Errors) -> dict[str, Any]:
    """The target's JSON shape (docs/jobs.md) from the form: an approval, or a built-in job
    with the params its kind takes; the domain checks it."""
    kind = form.target_kind or APPROVAL
    if not is_job({"kind": kind}):
        return {"kind": kind}
    params: dict[str, Any] = {}
    if kind == AUDIT_VERIFY:
        params["full"] = form.target_full
    if kind == WEBHOOK_PING and form.target_webhook_id:
        params["webhook_id"] = form.target_webhook_id
    timeout = form.target_timeout_seconds
    if timeout and not timeout.isdigit():
        errors["target_timeout_seconds"] = [_("Write a whole number of seconds.")]
    seconds = int(timeout) if timeout.isdigit() else None
    return {"kind": kind, "params": params, "timeout_seconds": seconds}


def approval_of(form: ScheduleForm, errors: Errors) -> dict[str, Any]:
    """The approval's fields from the form; a built-in job takes none (what is typed in them,
    hidden while a job is chosen, is left out)."""
    if is_job({"kind": form.target_kind}):
        return {"definition_id": None, "initiator_id": None, "title_template": "", "form_data": {}}
    return {
        "definition_id": form.definition_id or None,
        "initiator_id": form.initiator_id or None,
        "title_template": form.title_template,
        "form_data": form_data_of(form.form_data, errors),
    }


def _count_text(count: int | None) -> str:
    return "" if count is None else str(count)


def _count_of(text: str) -> int | str | None:
    """A typed count: empty is none; what is not a whole number goes to the schema as it is."""
    return None if not text else int(text) if text.isdigit() else text


def _json(value: Mapping[str, Any]) -> str:
    return json.dumps(dict(value), ensure_ascii=False, indent=2)


def trigger_of(form: ScheduleForm, errors: Errors) -> dict[str, Any]:
    """The trigger's JSON shape (docs/time.md) from the form; what cannot be read goes to
    `errors` under the field's name (the domain checks the rest)."""
    if form.kind != "window-interval":
        return {"kind": "cron", "expression": form.expression}
    windows = []
    for text in form.windows.replace("\n", ",").split(","):
        start, dash, end = text.strip().partition("-")
        if not dash:
            errors["windows"] = [
                Markup(  # noqa: S704 (the catalogue's words, and a code)
                    _(
                        "Write each window as %(format)s, separated by commas.",
                        format=code("HH:MM-HH:MM"),
                    )
                )
            ]
            break
        windows.append({"start": start.strip(), "end": end.strip()})
    if not form.interval_minutes.isdigit():
        errors["interval_minutes"] = [_("Write a whole number of minutes.")]
    return {
        "kind": "window-interval",
        "weekdays": [int(day) for day in form.weekdays if day.isdigit()],
        "windows": windows,
        "interval_minutes": int(form.interval_minutes) if form.interval_minutes.isdigit() else 0,
    }


def form_data_of(text: str, errors: Errors) -> Any:
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError as error:
        errors["form_data"] = [
            _(
                "This is not JSON (line %(line)s, column %(column)s).",
                line=error.lineno,
                column=error.colno,
            )
        ]
        return {}
    if not isinstance(value, dict):
        errors["form_data"] = [_('Write a JSON object, such as {"region": "east"}.')]
        return {}
    return value


def body_of(form: ScheduleForm) -> dict[str, Any]:
    """The API's create or replace body for the form, loaded by its schema; ValidationFailed
    names the form's fields."""
    errors: Errors = {}
    body = {
        "name": form.name,
        **approval_of(form, errors),
        "trigger": trigger_of(form, errors),
        "timezone": form.timezone or None,
        "target": target_of(form, errors),
        "enabled": form.enabled,
        "misfire_policy": form.misfire_policy,
        "overlap_policy": form.overlap_policy,
        **calendar_of(form),
        "group": form.group,
        "auto_pause_after_failures": _count_of(form.auto_pause_after_failures),
    }
    loaded = _loaded(ScheduleFieldsIn(), body, errors)
    if errors:
        raise ValidationFailed(errors)
    return loaded


def calendar_of(form: ScheduleForm) -> dict[str, str | None]:
    """The calendar and its rule as the API takes them: neither when no calendar is picked."""
    if not form.calendar:
        return {"calendar": None, "calendar_rule": None}
    return {"calendar": form.calendar, "calendar_rule": form.calendar_rule or None}


def _loaded(schema: Schema, body: Mapping[str, Any], errors: Errors) -> dict[str, Any]:
    """`body` as `schema` loads it; its complaints join `errors`, field by field."""
    try:
        return dict(schema.load(body))
    except ValidationError as refused:
        said = (
            refused.messages if isinstance(refused.messages, dict) else {"form": refused.messages}
        )
        for name, messages in _flat(said):
            errors.setdefault(name, []).extend(messages)
        return dict(body)


def _flat(messages: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, list[str]]]:
    for name, said in messages.items():
        if isinstance(said, Mapping):
            yield from _flat(said, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", [as_message(message) for message in said]


def on_form(
    errors: Mapping[str, list[str]], kind: str = "cron", inputs: Sequence[str] = FORM_INPUTS
) -> Errors:
    """The domain's and the schema's errors by the form field (of `inputs`) that shows each;
    what belongs to none is under `form`."""
    shown: Errors = {}
    for name, messages in errors.items():
        head, _dot, rest = name.partition(".")
        if head == "trigger" and "expression" in inputs:
            target = rest if rest in TRIGGER_INPUTS else "expression" if kind == "cron" else "kind"
        elif head == "target" and "target_kind" in inputs:
            target = TARGET_FIELDS.get(name, "target_kind")
        else:
            target = name if name in inputs else "form"
        shown.setdefault(target, []).extend(messages)
    return shown


# ---------------------------------------------------------------------------------------------
# Fire times, with the daylight-saving shifts marked


@dataclass(frozen=True)
class Fire:
    """A fire time in UTC (`at`) and in the schedule's zone (`local`); `shift` names the UTC
    offsets before and after when the offset differs from the fire before it; `outcome` says
    what the schedule's calendar does to it (FIRES, MOVED to `moved_to`, SKIPPED) and
    `calendar` why."""

    at: datetime
    local: datetime
    shift: tuple[str, str] | None = None
    outcome: str = FIRES
    moved_to: datetime | None = None
    moved_to_local: datetime | None = None
    calendar: Mapping[str, Any] | None = None

    @property
    def launched_planned_at(self) -> datetime | None:
        """A skipped cycle's: the planned instant of the cycle launched instead of it."""
        text = (self.calendar or {}).get("launched_planned_at")
        return None if text is None else instant(text)


def plain(fires: Sequence[FireTime]) -> list[MarkedFire]:
    """Fire times no calendar marks."""
    return [MarkedFire(fire.at, fire.local, FIRES, None, None, None) for fire in fires]


def marked(fires: Sequence[MarkedFire], zone: tzinfo | None, after: datetime | None) -> list[Fire]:
    """The fires, each whose UTC offset is not the one before it (or the offset at `after`,
    for the first) marked as a daylight-saving shift."""
    before = after.astimezone(zone).utcoffset() if after and zone else None
    shown = []
    for fire in fires:
        offset = fire.local.utcoffset()
        shift = None
        if before is not None and offset != before:
            shift = (offset_text(before), offset_text(offset))
        shown.append(
            Fire(
                fire.at,
                fire.local,
                shift,
                fire.outcome,
                fire.moved_to,
                fire.moved_to_local,
                fire.calendar,
            )
        )
        before = offset
    return shown


@dataclass(frozen=True)
class FormPreview:
    """What the form's preview shows: the next fires, or why there are none yet."""

    fires: list[Fire] = field(default_factory=list)
    problems: Errors = field(default_factory=dict)
    trigger: dict[str, Any] = field(default_factory=dict)
    timezone: str = ""
    calendar: str | None = None


def form_preview(form: ScheduleForm, tenant_id: UUID) -> FormPreview:
    """The next five fires of the form's trigger, as the API's /preview computes them, each
    marked with what the form's calendar does to it."""
    errors: Errors = {}
    trigger = trigger_of(form, errors)
    timezone = form.timezone or services().settings.timezone
    after = _after(form.preview_after, timezone, errors)
    if errors:
        return FormPreview(problems=errors)
    chosen = calendar_of(form)
    try:
        fires = _next_fires(
            trigger, timezone, after, tenant_id, (chosen["calendar"], chosen["calendar_rule"])
        )
    except ValidationFailed as refused:
        return FormPreview(problems=on_form(refused.errors, form.kind))
    if not fires:
        return FormPreview(problems={"expression": [_("It never fires.")]})
    zone = load_zone(timezone)
    return FormPreview(marked(fires, zone, after), {}, trigger, timezone, chosen["calendar"])


def _next_fires(
    trigger: dict[str, Any],
    timezone: str,
    after: datetime | None,
    tenant_id: UUID | None = None,
    calendar: tuple[str | None, str | None] = (None, None),
) -> list[MarkedFire]:
    """The next five fire times, as the API's /preview answers them, marked by the calendar."""
    return (
        services()
        .schedules.preview(trigger, timezone, NEXT_FIRES_SHOWN, after, tenant_id, calendar)
        .fires
    )


def _after(typed: str, timezone: str, errors: Errors) -> datetime | None:
    """The instant a preview starts from: a local time typed in the schedule's zone."""
    if not typed:
        return None
    try:
        zone: tzinfo = load_zone(timezone)
    except TriggerError:
        zone = UTC
    try:
        local = datetime.fromisoformat(typed)
        return local.replace(tzinfo=local.tzinfo or zone).astimezone(UTC)
    except (ValueError, OverflowError):
        errors["preview_after"] = [_("Write a date and time such as 2027-03-27T12:00.")]
        return None


# ---------------------------------------------------------------------------------------------
# What every page of the area shares


@bp.context_processor
def _helpers() -> dict[str, Any]:
    return {
        "in_words": in_words,
        "as_written": as_written,
        "weekday_of": lambda instant: str(WEEKDAYS[instant.isoweekday() - 1]),
        "run_url": run_url,
        "skip_words": skip_words,
        "pause_words": pause_words,
        "status_words": status_words,
        "MISFIRE_POLICIES": MISFIRE_POLICIES,
        "OVERLAP_POLICIES": OVERLAP_POLICIES,
        "DEFAULT_OVERLAP_POLICY": DEFAULT_OVERLAP_POLICY,
        "policy_words": policy_words,
        "CALENDAR_RULES": CALENDAR_RULES,
        "rule_words": rule_words,
        "day_off_words": day_off_words,
        "MOVED": MOVED,
        "SKIPPED": SKIPPED,
        "WEEKDAYS": WEEKDAYS,
        "label_of": label_of,
        "TARGET_KINDS": TARGET_KINDS,
        "target_label": target_label,
        "target_words": target_words,
        "instant": instant,
        "json_text": _json,
    }


def instant(value: str | datetime) -> datetime:
    """An instant a view keeps as ISO 8601 text (a last run's), or already as a datetime."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def label_of(name: str) -> str:
    """A field's label, in the form and beside the errors that name it."""
    labels = {
        "name": _("Name"),
        "definition_id": _("Definition"),
        "preset_id": _("Preset"),
        "kind": _("Trigger"),
        "expression": _("Cron expression"),
        "weekdays": _("Weekdays"),
        "windows": _("Time windows"),
        "interval_minutes": _("Every (minutes)"),
        "timezone": _("Time zone"),
        "initiator_id": _("Initiator"),
        "title_template": _("Title template"),
        "form_data": _("Form data"),
        "misfire_policy": _("Missed cycles"),
        "overlap_policy": _("Overlapping runs"),
        "calendar": _("Working calendar"),
        "calendar_rule": _("On a day off"),
        "group": _("Job group"),
        "auto_pause_after_failures": _("Pause after failed cycles in a row"),
        "target": _("Target"),
        "target_kind": _("Target"),
        "target_full": _("A whole pass"),
        "target_webhook_id": _("Webhook subscription"),
        "target_timeout_seconds": _("Timeout (seconds)"),
        "enabled": _("Enabled"),
        "preview_after": _("Preview from"),
        "version": _("Version"),
    }
    return labels.get(name, name)


def run_url(run_id: str, done: str | None = None) -> str:
    """A run's page (the runs area's); `done="queued"` has it say the run is queued."""
    return url_for("console.runs.detail", run_id=run_id, done=done)


def status_words(status: str) -> str:
    words = {
        "PENDING": _("Queued"),
        "RUNNING": _("Running"),
        "RETRY_WAIT": _("Waiting to retry"),
        "SUCCEEDED": _("Succeeded"),
        "FAILED": _("Failed"),
        "DEAD_LETTER": _("Dead letter"),
        "CANCELLED": _("Cancelled"),
        "SKIPPED_OVERLAP": _("Skipped (overlap)"),
        "SKIPPED_MISSED": _("Skipped (missed)"),
        "SKIPPED_CALENDAR": _("Skipped (not a working day)"),
    }
    return words.get(status, status)


def pause_words(pause: Mapping[str, Any]) -> str:
    """Why the service paused the schedule: the failed cycles' runs and their error codes."""
    runs = pause["runs"]
    return _(
        "%(count)s cycle(s) in a row ended without launching: %(runs)s",
        count=len(runs),
        runs=runs_listed(runs),
    )


def skip_words(reason: Mapping[str, Any] | None) -> str:
    if not reason:
        return "—"
    if reason["code"] == "OVERLAP":
        return blocked_words(reason)
    if reason["code"] == "CALENDAR":
        why = reason.get("holiday") or _("weekend")
        return _(
            "%(day)s is not a working day on calendar %(calendar)s: %(why)s.",
            day=reason.get("day"),
            calendar=reason.get("calendar"),
            why=why,
        )
    return _("%(count)s missed cycle(s), this run standing for them.", count=reason["count"])


def rule_words(rule: str) -> str:
    """A calendar rule in words."""
    words = {
        "working_days_only": _("Working days only: skip a cycle that falls on a day off"),
        "next_working_day": _(
            "Next working day: move a cycle on a day off to the next working day, same time"
        ),
    }
    return words.get(rule, rule)


def day_off_words(found: Mapping[str, Any] | None) -> str:
    """Why a calendar does not work a day: the holiday's name, else a weekend."""
    found = found or {}
    return str(found.get("holiday") or _("weekend"))


def policy_words(policy: str) -> str:
    """`misfire:<policy>` or `overlap:<policy>` in words."""
    kind, _colon, name = policy.partition(":")
    if kind == "overlap":
        return overlap_words(name)
    words = {
        "catch_up": _("Catch up: register every missed cycle"),
        "skip": _("Skip missed cycles"),
        "once": _("Once for all missed cycles"),
    }
    return words.get(name, name)


def problem_lines(refused: DomainError) -> list[str]:
    """What went wrong, in as many lines as the server said."""
    if isinstance(refused, VersionConflict):
        stale = _(
            "Someone changed this schedule after you opened it. Reload the page to see their "
            "change, then apply yours again."
        )
        return [stale, refused.message]
    if isinstance(refused, ValidationFailed):
        return [f"{label_of(name)}: {' '.join(said)}" for name, said in refused.errors.items()]
    return [refused.message]


def _posted_version() -> int | None:
    text = request.form.get("version", "")
    return int(text) if text.isdigit() else None


def _reason() -> str | None:
    """The form's optional reason, checked as the API checks it."""
    errors: Errors = {}
    typed = request.form.get("reason", "").strip()
    loaded = _loaded(ReasonBody(), {"reason": typed} if typed else {}, errors)
    if errors:
        raise ValidationFailed(errors)
    return loaded.get("reason")


# ---------------------------------------------------------------------------------------------
# The list


@bp.get("/")
@signed_in(SCHEDULE_LIST)
def index(principal: Principal) -> Shown:
    return _index_page(principal, request.args)


PICKED_FILTERS = {"definition_id": "definitions", "initiator_id": "accounts"}


def _index_page(
    principal: Principal, args: Mapping[str, str], move_errors: Errors | None = None, **more: Any
) -> Shown:
    """The list as the address's filters, search, sort and page ask for it; a bulk form's
    refusal beside it (422); `more`: more for the page (a bulk action's report)."""
    view = list_view(SCHEDULE_LISTING, ".index", args=args)
    typed, shown_names, errors, query = _filtered(principal, view, args)
    page = None
    if not errors:
        wanted = ScheduleFilter(*(query.get(name) for name in FILTERS))
        page = services().schedules.list_page(principal.tenant_id, wanted, view.window)
        view = view.found(page)
    shown = render_template(
        "console/schedules/index.html",
        typed=typed,
        shown_names=shown_names,
        errors=errors,
        move_errors=move_errors or {},
        page=page,
        view=view,
        initiators=account_names(
            principal, {i.initiator_id for i in page.items if i.initiator_id} if page else ()
        ),
        filters={name: value for name, value in view.args.items() if name != "page"},
        still_open=_count_on(principal, SKIP_WHILE_OPEN),
        request_id=uuid4().hex,
        **more,
    )
    return (shown, 422) if errors or move_errors else shown


LIST_ARGS = ("q", "sort", "page", "page_size")


def _filtered(
    principal: Principal, view: ListView, args: Mapping[str, str], file_format: str | None = None
) -> tuple[dict[str, str], dict[str, str], Errors, dict[str, Any]]:
    """The filters as typed (pickers read), the names the pickers show, what is wrong with
    them, and the query the API's list (or, given a `file_format`, its export) loads."""
    typed = {name: args.get(name, "").strip() for name in FILTERS}
    errors: Errors = {}
    shown_names = {name: _read_picker(principal, name, typed, errors) for name in PICKED_FILTERS}
    kept = LIST_ARGS if file_format is None else ("q",)
    given = {
        **{name: value for name, value in typed.items() if value},
        **{name: value for name, value in view.args.items() if name in kept},
    }
    if file_format is not None:
        given["format"] = file_format
    schema = ScheduleListQuery() if file_format is None else ScheduleExportQuery()
    query = _loaded(schema, given, errors)
    if services().health.phase == REBUILDING:
        abort(503, _("The lists are being rebuilt after an upgrade: try again in a minute."))
    return typed, shown_names, errors, query


@bp.get("/export")
@signed_in(SCHEDULE_LIST)
def export(principal: Principal) -> Shown | Response:
    """The schedules the list's filters and search match, as a file (the API's export); the
    list again, saying why, when the filters are wrong or match too many."""
    file_format = request.args.get("format", "")
    if file_format not in FORMATS:
        abort(404)
    args = {name: value for name, value in request.args.items() if name != "format"}
    view = list_view(SCHEDULE_LISTING, ".index", args=args)
    typed, _names, errors, query = _filtered(principal, view, args, file_format)
    if errors:
        return _index_page(principal, args)
    wanted = ScheduleFilter(*(query.get(name) for name in FILTERS))
    given = {**typed, "q": view.search}
    try:
        found = services().exports.schedules(principal, wanted, asked(query, given))
    except TooManyRows as refused:
        shown = _index_page(principal, args, export_problem=refused.message)
        return (shown if isinstance(shown, str) else shown[0]), 422
    return exported(found)


def _read_picker(principal: Principal, name: str, typed: dict[str, str], errors: Errors) -> str:
    """A picker filter as picked or typed (an id, or a name looked up): its value goes to
    `typed`, and the name it shows is returned."""
    found = read_picker(principal, PICKED_FILTERS[name], typed[name])
    if found.problem:
        errors[name] = [found.problem]
    elif found.value:
        typed[name] = found.value
    return found.shown


def _count_on(principal: Principal, policy: str) -> int:
    """How many of the tenant's schedules are on an overlap policy."""
    wanted = ScheduleFilter(overlap_policy=policy)
    return services().schedules.list_page(principal.tenant_id, wanted, Window(1)).total


@bp.post("/overlap-policy")
@signed_in(SCHEDULE_EDIT)
def move_overlap_policy(principal: Principal) -> Shown | Response:
    """The picked schedules saved with another overlap policy, each as an ordinary edit (the
    API's bulk move); back to the list as it was filtered, saying what became of them."""
    names = (*FILTERS, *LIST_ARGS)
    filters = {name: request.form.get(f"filter_{name}", "").strip() for name in names}
    errors: Errors = {}
    body = {
        "schedule_ids": list(dict.fromkeys(request.form.getlist("schedule_id"))),
        "overlap_policy": request.form.get("to_policy", ""),
    }
    loaded = _loaded(OverlapMoveIn(), body, errors)
    if not body["schedule_ids"]:
        errors = {"schedule_ids": [_("Pick at least one schedule.")]}
    if errors:
        return _index_page(principal, filters, on_move_form(errors))
    moves = services().schedules.move_overlap_policy(
        principal, loaded["schedule_ids"], loaded["overlap_policy"]
    )
    counts = Counter(move.outcome for move in moves)
    moved = _(
        "%(moved)s schedule(s) now %(policy)s; %(unchanged)s had it already; %(missing)s "
        "not found.",
        moved=counts[MOVED],
        policy=code(loaded["overlap_policy"]),
        unchanged=counts[UNCHANGED],
        missing=counts[NOT_FOUND],
    )
    flash(Markup(moved), "good")  # noqa: S704 (the catalogue's words, and a code)
    kept: dict[str, Any] = {name: value for name, value in filters.items() if value}
    return redirect(url_for(".index", **kept), 303)


@bp.post("/bulk")
@signed_in(SCHEDULE_EDIT)
def act_on_picked(principal: Principal) -> Shown:
    """The action pressed, on each picked schedule as its single action (the API's bulk
    action); delete asks first. The list again as it was filtered, with what each got."""
    names = (*FILTERS, *LIST_ARGS)
    filters = {name: request.form.get(f"filter_{name}", "").strip() for name in names}
    action = request.form.get("action", "")
    if action not in SCHEDULE_ACTIONS:
        abort(400, _("Press one of the actions."))
    if action == DELETE and not principal.can(SCHEDULE_DELETE):
        raise Forbidden(_("This page needs the permission %(name)s.", name=SCHEDULE_DELETE))
    chosen = picked(
        "schedule_id",
        _("Pick at least one schedule."),
        _("Pick at most %(count)s schedules at a time.", count=MAX_BULK),
    )
    errors = dict(chosen.errors)
    reason = None if action == RUN else posted_reason(errors)
    if errors:
        return _index_page(principal, filters, errors)
    if action == DELETE and "confirmed" not in request.form:
        return _confirm_bulk_delete(principal, chosen, filters)
    request_id = request.form.get("request_id", "")[:128] or uuid4().hex
    asked = BulkRequest(
        action, chosen.ids, chosen.versions, reason, request_id if action == RUN else None
    )
    items = act_on_schedules(services().schedules, principal, asked)
    linked = None if action == DELETE else (lambda key: url_for(".detail", schedule_id=key))
    return _index_page(principal, filters, bulk_report=report(action, items, linked))


def _confirm_bulk_delete(principal: Principal, chosen: Picked, filters: dict[str, str]) -> str:
    """The picked schedules by name, to delete at the versions the list showed, or not."""
    rows = [
        ConfirmRow(key, _name_or_id(principal, key), chosen.versions.get(key)) for key in chosen.ids
    ]
    kept: dict[str, Any] = {name: value for name, value in filters.items() if value}
    confirm = Confirm(
        title=_("Delete %(count)s schedule(s)?", count=len(rows)),
        lead=_(
            "Each stops firing and leaves the list; its runs and its timeline stay readable. A "
            "schedule with runs still pending, running or waiting to retry is refused until "
            "they finish or are cancelled."
        ),
        button=_("Delete these %(count)s schedule(s)", count=len(rows)),
        url=url_for(".act_on_picked"),
        back=url_for(".index", **kept),
        back_words=_("Schedules"),
        action=DELETE,
        field="schedule_id",
        rows=rows,
        hidden={f"filter_{name}": value for name, value in kept.items()},
        reason=request.form.get("reason", "").strip(),
    )
    return render_template("console/bulk_confirm.html", confirm=confirm)


def _name_or_id(principal: Principal, schedule_id: str) -> str:
    """A live schedule's name; one not found by its id, said so."""
    try:
        return str(services().schedules.view(principal.tenant_id, schedule_id).name)
    except NotFound:
        return _("%(id)s (not found)", id=schedule_id)


def on_move_form(errors: Errors) -> Errors:
    """A bulk move's refusal by the form's field: the picked boxes, or the policy."""
    return {
        ("schedule_id" if name.startswith("schedule_ids") else "to_policy"): said
        for name, said in errors.items()
    }


# ---------------------------------------------------------------------------------------------
# Creating and editing


@bp.get("/new")
@signed_in(SCHEDULE_CREATE)
def new(principal: Principal) -> str:
    form = ScheduleForm(timezone=services().settings.timezone, initiator_id=principal.account_id)
    return _form_page(principal, form, {})


@bp.post("/new")
@signed_in(SCHEDULE_CREATE)
def create(principal: Principal) -> Shown | Response:
    form, not_found = _with_picks(principal, ScheduleForm.posted())
    schedules = services().schedules
    try:
        body = body_of(form)
        created = schedules.create(principal, schedules.settings_from(body), body["enabled"])
    except ValidationFailed as refused:
        errors = {**_everything_wrong(principal, form, refused), **not_found}
        return _form_page(principal, form, errors), 422
    return redirect(url_for(".detail", schedule_id=created.id), 303)


FORM_PICKERS = {"definition_id": "definitions", "initiator_id": "accounts"}


def _with_picks(principal: Principal, form: ScheduleForm) -> tuple[ScheduleForm, Errors]:
    """The form with its pickers' text read: a definition or an account picked (its id) or
    typed (an id, or a name looked up); what matched nothing is left as typed, and said."""
    problems: Errors = {}

    def read(name: str) -> str:
        found = read_picker(principal, FORM_PICKERS[name], getattr(form, name))
        if found.problem:
            problems[name] = [found.problem]
        return found.value or str(getattr(form, name))

    return replace(form, definition_id=read("definition_id"), initiator_id=read("initiator_id")), (
        problems
    )


@bp.post("/preview")
@signed_in(SCHEDULE_LIST)
def preview(principal: Principal) -> str:
    """The form's preview, as htmx asks for it while the user types."""
    return render_template(
        "console/schedules/_preview.html",
        preview=form_preview(ScheduleForm.posted(), principal.tenant_id),
    )


@bp.get("/<schedule_id>/edit")
@signed_in(SCHEDULE_EDIT)
def edit(principal: Principal, schedule_id: str) -> str:
    view = services().schedules.view(principal.tenant_id, schedule_id)
    return _form_page(principal, ScheduleForm.of(view.row), {}, view, view.version)


@bp.post("/<schedule_id>/edit")
@signed_in(SCHEDULE_EDIT)
def update(principal: Principal, schedule_id: str) -> Shown | Response:
    schedules = services().schedules
    view = schedules.view(principal.tenant_id, schedule_id)
    (form, not_found), version = _with_picks(principal, ScheduleForm.posted()), _posted_version()
    try:
        if version is None:
            raise ValidationFailed.of("form", _("The form lost the schedule's version: reload it."))
        body = body_of(form)
        settings = schedules.settings_from(body)
        schedules.update(principal, schedule_id, settings, body["enabled"], version)
    except ValidationFailed as refused:
        errors = {**_everything_wrong(principal, form, refused), **not_found}
        return _form_page(principal, form, errors, view, version), 422
    except VersionConflict as refused:
        errors = {"form": problem_lines(refused)}
        return _form_page(principal, form, errors, view, version, stale=True), 409
    return redirect(url_for(".detail", schedule_id=schedule_id), 303)


def _everything_wrong(
    principal: Principal, form: ScheduleForm, refused: ValidationFailed
) -> Errors:
    """The refusal's errors by field, with those the domain adds when it sees the settings (the
    trigger's and the zone's, the definition's and the initiator's): a refusal by the request's
    own checks comes before the domain's, and the user hears of everything at once."""
    shown = on_form(refused.errors, form.kind)
    launching = (
        {}
        if is_job({"kind": form.target_kind})
        else services().directory.launch_problems_of(
            principal.tenant_id, form.definition_id, form.initiator_id
        )
    )
    previewed = form_preview(form, principal.tenant_id).problems
    for name, said in {**previewed, **launching}.items():
        shown.setdefault(name, said)
    return shown


def _form_page(
    principal: Principal,
    form: ScheduleForm,
    errors: Errors,
    view: ScheduleAnswer | None = None,
    version: int | None = None,
    stale: bool = False,
) -> str:
    shown = {
        name: shown_names(principal, kind, [getattr(form, name)]).get(getattr(form, name), "")
        for name, kind in FORM_PICKERS.items()
    }
    return render_template(
        "console/schedules/form.html",
        form=form,
        errors=errors,
        view=view,
        version=version,
        stale=stale,
        shown=shown,
        zones=sorted(available_timezones()),
        preview=form_preview(form, principal.tenant_id),
        calendars=calendar_choices(principal, form.calendar),
        webhooks=webhook_choices(principal, form.target_webhook_id),
        builder=builder_of(form.expression),
        builder_modes=builder_modes(),
    )


CALENDARS_OFFERED = 200


def calendar_choices(principal: Principal, chosen: str) -> list[tuple[str, str]]:
    """The tenant's calendars (key, name) the form offers; the chosen key too, should it name
    none (it is refused beside the field)."""
    page = services().calendars.calendars(principal.tenant_id, Window(size=CALENDARS_OFFERED))
    offered = [(row.key, row.name) for row in page.items]
    if chosen and chosen not in {key for key, _name in offered}:
        offered.append((chosen, chosen))
    return offered


def webhook_choices(principal: Principal, chosen: str) -> list[tuple[str, str]]:
    """The tenant's webhook subscriptions (id, words) a `webhook.ping` job may ping, for a
    directory manager (who alone may save one); the chosen id too, should it name none."""
    offered: list[tuple[str, str]] = []
    if principal.can(DIRECTORY_MANAGE):
        page = services().webhooks.webhooks(principal.tenant_id, Window(size=CALENDARS_OFFERED))
        offered = [(row.id, row.description or row.url) for row in page.items]
    if chosen and chosen not in {key for key, _words in offered}:
        offered.append((chosen, chosen))
    return offered


def builder_modes() -> list[tuple[str, str]]:
    """The cron builder's choices, each with its words."""
    words = {
        "minutes": _("Every few minutes"),
        "hourly": _("Every hour"),
        "daily": _("Every day"),
        "weekly": _("Every week, on chosen days"),
        "monthly": _("Every month, on one day"),
        "advanced": _("Advanced: the expression as written"),
    }
    return [(mode, words[mode]) for mode in MODES]


# ---------------------------------------------------------------------------------------------
# A schedule's page and what it does


@bp.get("/<schedule_id>")
@signed_in(SCHEDULE_LIST)
def detail(principal: Principal, schedule_id: str) -> str:
    return _detail_page(principal, schedule_id)


def _detail_page(principal: Principal, schedule_id: str, problems: Sequence[str] = ()) -> str:
    view = services().schedules.view(principal.tenant_id, schedule_id)
    return render_template(
        "console/schedules/detail.html",
        view=view,
        definitions=definition_names(principal, [view.definition_id or ""]),
        initiators=account_names(principal, [view.initiator_id or ""]),
        fires=marked(_saved_fires(principal, view), None, None),
        problems=problems,
        request_id=uuid4().hex,
    )


def _saved_fires(principal: Principal, view: ScheduleAnswer) -> list[MarkedFire]:
    """The saved schedule's next fires, marked by its calendar when it names one."""
    if not view.calendar:
        return plain(view.next_fires)
    preview = services().schedules.saved_preview(
        principal.tenant_id, view.id, NEXT_FIRES_SHOWN, None
    )
    return preview.fires


def _acting(
    principal: Principal, schedule_id: str, act: Callable[[], Response]
) -> Shown | Response:
    """Do `act`; a refusal is shown on the schedule's page, above its actions."""
    try:
        return act()
    except NotFound:
        raise
    except DomainError as refused:
        page = _detail_page(principal, schedule_id, problem_lines(refused))
        return page, STATUS_OF_CODE.get(refused.code, 409)


@bp.post("/<schedule_id>/enable")
@signed_in(SCHEDULE_EDIT)
def enable(principal: Principal, schedule_id: str) -> Shown | Response:
    return _switch(principal, schedule_id, True)


@bp.post("/<schedule_id>/disable")
@signed_in(SCHEDULE_EDIT)
def disable(principal: Principal, schedule_id: str) -> Shown | Response:
    return _switch(principal, schedule_id, False)


def _switch(principal: Principal, schedule_id: str, enabled: bool) -> Shown | Response:
    """Enable or disable; back to the list the row's toggle was pressed on, else to the
    schedule's page."""

    def act() -> Response:
        after = services().schedules.set_enabled(
            principal, schedule_id, enabled, _posted_version(), _reason()
        )
        back = _back_to_list()
        if back is None:
            flash(_("Enabled.") if enabled else _("Disabled."), "good")
            return redirect(url_for(".detail", schedule_id=schedule_id), 303)
        name = after.name
        said = (
            _("“%(name)s” enabled.", name=name) if enabled else _("“%(name)s” disabled.", name=name)
        )
        flash(said, "good")
        return redirect(back, 303)

    return _acting(principal, schedule_id, act)


def _back_to_list() -> str | None:
    """The list a row's form was sent from (its `next`), if it is this area's list."""
    back = request.form.get("next", "")
    listed = url_for(".index")
    if back.startswith(listed) and "//" not in back and "\\" not in back:
        return back
    return None


@bp.post("/<schedule_id>/run")
@signed_in(SCHEDULE_EDIT)
def run_now(principal: Principal, schedule_id: str) -> Shown | Response:
    """Run now (立即执行一次): a manual run, then its page, saying it is queued."""
    request_id = request.form.get("request_id", "")[:128] or uuid4().hex

    def act() -> Response:
        requested = services().schedules.request_run(
            principal, schedule_id, request_id, _posted_version()
        )
        return redirect(run_url(requested.value.id, done="queued"), 303)

    return _acting(principal, schedule_id, act)


@bp.get("/<schedule_id>/delete")
@signed_in(SCHEDULE_DELETE)
def confirm_delete(principal: Principal, schedule_id: str) -> str:
    view = services().schedules.view(principal.tenant_id, schedule_id)
    return render_template("console/schedules/delete.html", view=view, problems=[])


@bp.post("/<schedule_id>/delete")
@signed_in(SCHEDULE_DELETE)
def delete(principal: Principal, schedule_id: str) -> Shown | Response:
    schedules = services().schedules
    view = schedules.view(principal.tenant_id, schedule_id)
    try:
        version = _posted_version()
        if version is None:
            raise ValidationFailed.of(
                "version", _("The form lost the schedule's version: reload it.")
            )
        schedules.delete(principal, schedule_id, version, _reason())
    except NotFound:
        raise
    except DomainError as refused:
        page = render_template(
            "console/schedules/delete.html", view=view, problems=problem_lines(refused)
        )
        return page, STATUS_OF_CODE.get(refused.code, 409)
    flash(_("Schedule “%(name)s” deleted; its history stays readable.", name=view.name), "good")
    return redirect(url_for(".index"), 303)


# ---------------------------------------------------------------------------------------------
# From a definition's preset


@bp.get("/from-preset")
@signed_in(SCHEDULE_CREATE)
def presets(principal: Principal) -> str:
    found = read_picker(principal, "definitions", request.args.get("definition_id", ""))
    picked_row = None
    if found.value:
        picked_row = services().directory.definition(principal.tenant_id, found.value)
    offers = picked_row is not None and picked_row.published and bool(picked_row.schedule_presets)
    chosen = picked_row if offers else None
    cards = (
        [(preset, _preset_fires(preset)) for preset in chosen.schedule_presets] if chosen else []
    )
    return render_template(
        "console/schedules/presets.html",
        found=found,
        picked_row=picked_row,
        chosen=chosen,
        cards=cards,
    )


def _preset_fires(preset: Mapping[str, Any]) -> FormPreview:
    timezone = preset.get("timezone") or services().settings.timezone
    try:
        fires = _next_fires(preset["trigger"], timezone, None)
    except ValidationFailed as refused:
        return FormPreview(problems=on_form(refused.errors))
    return FormPreview(marked(fires, None, None), {}, preset["trigger"], timezone)


def _preset(principal: Principal, definition_id: str, preset_id: str) -> tuple[DefinitionRow, Any]:
    definition = services().directory.definition(principal.tenant_id, definition_id)
    for preset in definition.schedule_presets:
        if preset["id"] == preset_id:
            return definition, preset
    raise NotFound("preset", preset_id)


@bp.get("/from-preset/<definition_id>/<preset_id>")
@signed_in(SCHEDULE_CREATE)
def confirm_preset(principal: Principal, definition_id: str, preset_id: str) -> str:
    definition, preset = _preset(principal, definition_id, preset_id)
    typed = {"name": untemplated(preset["title"]), "initiator_id": principal.account_id}
    return _preset_page(definition, preset, typed, {})


@bp.post("/from-preset/<definition_id>/<preset_id>")
@signed_in(SCHEDULE_CREATE)
def create_from_preset(
    principal: Principal, definition_id: str, preset_id: str
) -> Shown | Response:
    definition, preset = _preset(principal, definition_id, preset_id)
    typed = {name: request.form.get(name, "").strip() for name in PRESET_INPUTS}
    errors: Errors = {}
    body = {"definition_id": definition_id, "preset_id": preset_id, **typed}
    loaded = _loaded(ScheduleFromPresetIn(), {k: v for k, v in body.items() if v}, errors)
    try:
        if errors:
            raise ValidationFailed(errors)
        created = services().schedules.create_from_preset(
            principal, definition_id, preset_id, loaded["initiator_id"], loaded.get("name")
        )
    except ValidationFailed as refused:
        errors = on_form(refused.errors, inputs=PRESET_INPUTS)
        return _preset_page(definition, preset, typed, errors), 422
    flash(_("Created disabled: enable it when you are ready."), "good")
    return redirect(url_for(".detail", schedule_id=created.id), 303)


def _preset_page(
    definition: DefinitionRow, preset: Mapping[str, Any], typed: Mapping[str, str], errors: Errors
) -> str:
    return render_template(
        "console/schedules/preset_confirm.html",
        definition=definition,
        preset=preset,
        fires=_preset_fires(preset),
        typed=typed,
        errors=errors,
    )
