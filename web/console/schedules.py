"""The console's schedules pages (定时发起): the list, a schedule's page, the create and edit
forms with a live preview of the next fires, creation from a definition's preset, enable and
disable, delete, and run now (docs/console/schedules.md).

Every change goes through the application service the API uses (web/schedules.py, web/runs.py);
the API's request schemas check the typed fields, so no rule is written twice.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, NamedTuple
from uuid import uuid4
from zoneinfo import available_timezones

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from markupsafe import Markup
from marshmallow import Schema, ValidationError
from werkzeug.wrappers import Response

from cronledger.application.schedules import (
    MOVED,
    NEXT_FIRES_SHOWN,
    NOT_FOUND,
    UNCHANGED,
    FireTime,
    ScheduleAnswer,
)
from cronledger.health import REBUILDING
from domain.directory import Principal
from domain.errors import DomainError, NotFound, ValidationFailed, VersionConflict
from domain.overlap import DEFAULT_OVERLAP_POLICY, OVERLAP_POLICIES, SKIP_WHILE_OPEN
from domain.permissions import (
    SCHEDULE_CREATE,
    SCHEDULE_DELETE,
    SCHEDULE_EDIT,
    SCHEDULE_LIST,
)
from domain.schedules import MISFIRE_POLICIES, untemplated
from domain.triggers import TriggerError, load_zone
from projections.directory import DefinitionRow
from projections.keyset import Window
from projections.schedules import ScheduleFilter, ScheduleRow
from web.api import services
from web.console.access import signed_in
from web.console.overlap_words import blocked_words, overlap_words
from web.console.schedule_words import WEEKDAYS, _, as_written, in_words
from web.problems import STATUS_OF_CODE
from web.schemas.base import ReasonBody
from web.schemas.schedules import (
    OverlapMoveIn,
    ScheduleFieldsIn,
    ScheduleFromPresetIn,
    ScheduleListQuery,
)

bp = Blueprint("schedules", __name__, url_prefix="/schedules")

PAGE_SIZE = 20
DEFINITIONS_SHOWN = 200  # the definitions a form offers
FILTERS = ("name", "enabled", "definition_id", "initiator_id", "overlap_policy")
TRIGGER_INPUTS = ("kind", "expression", "weekdays", "windows", "interval_minutes")
FORM_INPUTS = (
    "name",
    "definition_id",
    *TRIGGER_INPUTS,
    "timezone",
    "initiator_id",
    "title_template",
    "form_data",
    "misfire_policy",
    "overlap_policy",
    "enabled",
    "preview_after",
)
TEXT_INPUTS = tuple(name for name in FORM_INPUTS if name not in ("weekdays", "enabled"))
PRESET_INPUTS = ("name", "initiator_id")
Errors = dict[str, list[str]]
Shown = str | tuple[str, int]


# ---------------------------------------------------------------------------------------------
# What the form holds, and the API's body it stands for


@dataclass
class ScheduleForm:
    """The create and edit form's fields, as the user typed them."""

    name: str = ""
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
    enabled: bool = False
    preview_after: str = ""

    @classmethod
    def posted(cls) -> ScheduleForm:
        typed = request.form
        text: dict[str, Any] = {name: typed.get(name, "").strip() for name in TEXT_INPUTS}
        return cls(**text, weekdays=typed.getlist("weekdays"), enabled="enabled" in typed)

    @classmethod
    def of(cls, row: ScheduleRow) -> ScheduleForm:
        """The form filled with a saved schedule's settings."""
        trigger = row.trigger
        form = cls(
            name=row.name,
            definition_id=row.definition_id,
            kind=trigger["kind"],
            timezone=row.timezone,
            initiator_id=row.initiator_id,
            title_template=row.title_template,
            form_data=_json(row.form_data),
            misfire_policy=row.misfire_policy,
            overlap_policy=row.overlap_policy,
            enabled=row.enabled,
        )
        if trigger["kind"] == "cron":
            return replace(form, expression=trigger["expression"])
        windows = ", ".join(f"{w['start']}-{w['end']}" for w in trigger["windows"])
        weekdays = [str(day) for day in trigger["weekdays"]]
        interval = str(trigger["interval_minutes"])
        return replace(form, weekdays=weekdays, windows=windows, interval_minutes=interval)


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
            errors["windows"] = [_("Write each window as HH:MM-HH:MM, separated by commas.")]
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
    except ValueError as error:
        errors["form_data"] = [_("This is not JSON: %(problem)s", problem=str(error))]
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
        "definition_id": form.definition_id,
        "trigger": trigger_of(form, errors),
        "timezone": form.timezone or None,
        "initiator_id": form.initiator_id,
        "title_template": form.title_template,
        "form_data": form_data_of(form.form_data, errors),
        "enabled": form.enabled,
        "misfire_policy": form.misfire_policy,
        "overlap_policy": form.overlap_policy,
    }
    loaded = _loaded(ScheduleFieldsIn(), body, errors)
    if errors:
        raise ValidationFailed(errors)
    return loaded


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
            yield f"{prefix}{name}", [str(message) for message in said]


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
        else:
            target = name if name in inputs else "form"
        shown.setdefault(target, []).extend(messages)
    return shown


# ---------------------------------------------------------------------------------------------
# Fire times, with the daylight-saving shifts marked


@dataclass(frozen=True)
class Fire:
    """A fire time in UTC (`at`) and in the schedule's zone (`local`); `shift` names the UTC
    offsets before and after when the offset differs from the fire before it."""

    at: datetime
    local: datetime
    shift: tuple[str, str] | None = None


def marked(fires: Sequence[FireTime], zone: tzinfo | None, after: datetime | None) -> list[Fire]:
    """The fires, each whose UTC offset is not the one before it (or the offset at `after`,
    for the first) marked as a daylight-saving shift."""
    before = after.astimezone(zone).utcoffset() if after and zone else None
    shown = []
    for fire in fires:
        offset = fire.local.utcoffset()
        shift = None
        if before is not None and offset != before:
            shift = (offset_text(before), offset_text(offset))
        shown.append(Fire(fire.at, fire.local, shift))
        before = offset
    return shown


def offset_text(offset: timedelta | None) -> str:
    minutes = int((offset or timedelta()).total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


@dataclass(frozen=True)
class FormPreview:
    """What the form's preview shows: the next fires, or why there are none yet."""

    fires: list[Fire] = field(default_factory=list)
    problems: Errors = field(default_factory=dict)
    trigger: dict[str, Any] = field(default_factory=dict)
    timezone: str = ""


def form_preview(form: ScheduleForm) -> FormPreview:
    """The next five fires of the form's trigger, as the API's /preview computes them."""
    errors: Errors = {}
    trigger = trigger_of(form, errors)
    timezone = form.timezone or services().settings.timezone
    after = _after(form.preview_after, timezone, errors)
    if errors:
        return FormPreview(problems=errors)
    try:
        fires = _next_fires(trigger, timezone, after)
    except ValidationFailed as refused:
        return FormPreview(problems=on_form(refused.errors, form.kind))
    if not fires:
        return FormPreview(problems={"expression": [_("It never fires.")]})
    return FormPreview(marked(fires, load_zone(timezone), after), {}, trigger, timezone)


def _next_fires(trigger: dict[str, Any], timezone: str, after: datetime | None) -> list[FireTime]:
    """The next five fire times, as the API's /preview answers them."""
    preview = services().schedules.preview(trigger, timezone, NEXT_FIRES_SHOWN, after)
    return [
        FireTime(at, local)
        for at, local in zip(preview.fire_times, preview.local_times, strict=True)
    ]


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
        "zoned": zoned,
        "weekday_of": lambda instant: str(WEEKDAYS[instant.isoweekday() - 1]),
        "offset_of": lambda instant: offset_text(instant.utcoffset()),
        "run_url": run_url,
        "skip_words": skip_words,
        "status_words": status_words,
        "MISFIRE_POLICIES": MISFIRE_POLICIES,
        "OVERLAP_POLICIES": OVERLAP_POLICIES,
        "DEFAULT_OVERLAP_POLICY": DEFAULT_OVERLAP_POLICY,
        "policy_words": policy_words,
        "WEEKDAYS": WEEKDAYS,
        "label_of": label_of,
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
        "enabled": _("Enabled"),
        "preview_after": _("Preview from"),
        "version": _("Version"),
    }
    return labels.get(name, name)


def zoned(instant: datetime | None, timezone: str) -> Markup:
    """An instant in a schedule's zone, with UTC beside it."""
    if instant is None:
        return Markup("—")
    local = instant.astimezone(load_zone(timezone))
    return Markup(
        '<time datetime="{}">{} <span class="offset">{}</span></time> <small class="utc">{}</small>'
    ).format(
        instant.astimezone(UTC).isoformat(),
        local.strftime("%Y-%m-%d %H:%M:%S"),
        offset_text(local.utcoffset()),
        instant.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
    )


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
    }
    return words.get(status, status)


def skip_words(reason: Mapping[str, Any] | None) -> str:
    if not reason:
        return "—"
    if reason["code"] == "OVERLAP":
        return blocked_words(reason)
    return _("%(count)s missed cycle(s), this run standing for them.", count=reason["count"])


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


def _definitions(principal: Principal) -> list[DefinitionRow]:
    """The tenant's definitions (the first DEFINITIONS_SHOWN), for the forms' choices."""
    window = Window(DEFINITIONS_SHOWN)
    return services().directory.definitions(principal.tenant_id, window).items


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
    typed = {name: request.args.get(name, "").strip() for name in (*FILTERS, "page")}
    return _index_page(principal, typed)


def _index_page(
    principal: Principal, typed: dict[str, str], move_errors: Errors | None = None
) -> Shown:
    """The list as `typed` filters it; a bulk move's refusal beside its form (422)."""
    errors: Errors = {}
    query = _loaded(ScheduleListQuery(), {k: v for k, v in typed.items() if v}, errors)
    if services().health.phase == REBUILDING:
        abort(503, _("The lists are being rebuilt after an upgrade: try again in a minute."))
    page = None
    if not errors:
        wanted = ScheduleFilter(*(query.get(name) for name in FILTERS))
        window = Window(PAGE_SIZE, query.get("page") or 1)
        page = services().schedules.list_page(principal.tenant_id, wanted, window)
    shown = render_template(
        "console/schedules/index.html",
        typed=typed,
        errors=errors,
        move_errors=move_errors or {},
        page=page,
        pages=math.ceil(page.total / PAGE_SIZE) if page else 0,
        definitions={d.id: d.name for d in _definitions(principal)},
        filters={name: value for name, value in typed.items() if value and name != "page"},
        still_open=_count_on(principal, SKIP_WHILE_OPEN),
    )
    return (shown, 422) if errors or move_errors else shown


def _count_on(principal: Principal, policy: str) -> int:
    """How many of the tenant's schedules are on an overlap policy."""
    wanted = ScheduleFilter(overlap_policy=policy)
    return services().schedules.list_page(principal.tenant_id, wanted, Window(1)).total


@bp.post("/overlap-policy")
@signed_in(SCHEDULE_EDIT)
def move_overlap_policy(principal: Principal) -> Shown | Response:
    """The picked schedules saved with another overlap policy, each as an ordinary edit (the
    API's bulk move); back to the list as it was filtered, saying what became of them."""
    filters = {name: request.form.get(f"filter_{name}", "").strip() for name in FILTERS}
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
    flash(
        _(
            "%(moved)s schedule(s) now %(policy)s; %(unchanged)s had it already; %(missing)s "
            "not found.",
            moved=counts[MOVED],
            policy=loaded["overlap_policy"],
            unchanged=counts[UNCHANGED],
            missing=counts[NOT_FOUND],
        ),
        "good",
    )
    kept: dict[str, Any] = {name: value for name, value in filters.items() if value}
    return redirect(url_for(".index", **kept), 303)


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
    form = ScheduleForm.posted()
    schedules = services().schedules
    try:
        body = body_of(form)
        created = schedules.create(principal, schedules.settings_from(body), body["enabled"])
    except ValidationFailed as refused:
        return _form_page(principal, form, _everything_wrong(principal, form, refused)), 422
    return redirect(url_for(".detail", schedule_id=created.id), 303)


@bp.post("/preview")
@signed_in(SCHEDULE_LIST)
def preview(principal: Principal) -> str:
    """The form's preview, as htmx asks for it while the user types."""
    return render_template(
        "console/schedules/_preview.html", preview=form_preview(ScheduleForm.posted())
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
    form, version = ScheduleForm.posted(), _posted_version()
    try:
        if version is None:
            raise ValidationFailed.of("form", _("The form lost the schedule's version: reload it."))
        body = body_of(form)
        settings = schedules.settings_from(body)
        schedules.update(principal, schedule_id, settings, body["enabled"], version)
    except ValidationFailed as refused:
        errors = _everything_wrong(principal, form, refused)
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
    launching = services().directory.launch_problems_of(
        principal.tenant_id, form.definition_id, form.initiator_id
    )
    for name, said in {**form_preview(form).problems, **launching}.items():
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
    definitions = [Option(d.id, d.name) for d in _definitions(principal) if d.published]
    if form.definition_id and form.definition_id not in {d.id for d in definitions}:
        definitions.append(_definition_or_id(principal, form.definition_id))
    return render_template(
        "console/schedules/form.html",
        form=form,
        errors=errors,
        view=view,
        version=version,
        stale=stale,
        definitions=definitions,
        zones=sorted(available_timezones()),
        preview=form_preview(form),
    )


class Option(NamedTuple):
    """A choice of a select: the value sent, and the name shown."""

    id: str
    name: str


def _definition_or_id(principal: Principal, definition_id: str) -> Option:
    """A definition the form names that is not among the published ones (by its id if none)."""
    found = services().directory.find_definition(principal.tenant_id, definition_id)
    return Option(definition_id, found.name if found else definition_id)


# ---------------------------------------------------------------------------------------------
# A schedule's page and what it does


@bp.get("/<schedule_id>")
@signed_in(SCHEDULE_LIST)
def detail(principal: Principal, schedule_id: str) -> str:
    return _detail_page(principal, schedule_id)


def _detail_page(principal: Principal, schedule_id: str, problems: Sequence[str] = ()) -> str:
    view = services().schedules.view(principal.tenant_id, schedule_id)
    definition = services().directory.find_definition(principal.tenant_id, view.definition_id)
    return render_template(
        "console/schedules/detail.html",
        view=view,
        definition_name=definition.name if definition else view.definition_id,
        fires=marked(view.next_fires, None, None),
        problems=problems,
        request_id=uuid4().hex,
    )


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
    def act() -> Response:
        services().schedules.set_enabled(
            principal, schedule_id, enabled, _posted_version(), _reason()
        )
        flash(_("Enabled.") if enabled else _("Disabled."), "good")
        return redirect(url_for(".detail", schedule_id=schedule_id), 303)

    return _acting(principal, schedule_id, act)


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
    offered = [d for d in _definitions(principal) if d.published and d.schedule_presets]
    chosen_id = request.args.get("definition_id", "")
    chosen = next((d for d in offered if d.id == chosen_id), None)
    cards = (
        [(preset, _preset_fires(preset)) for preset in chosen.schedule_presets] if chosen else []
    )
    return render_template(
        "console/schedules/presets.html", offered=offered, chosen=chosen, cards=cards
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
