"""The console's runs pages (执行日志): the execution log, a run with its attempts, retry and
cancel, and the dead letters with bulk retry. They update live (web/console/live.py).

They call the services the API's run log calls (web/runs.py): the same filters, the same
checks, the same refusals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from flask import Blueprint, abort, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext
from marshmallow import ValidationError
from werkzeug.wrappers import Response

from cronledger.application.bulk import (
    CANCEL,
    MAX_BULK,
    RETRY,
    RUN_ACTIONS,
    BulkRequest,
    act_on_runs,
)
from domain.directory import Principal
from domain.errors import DomainError, NotFound, ValidationFailed
from domain.exports import FORMATS, TooManyRows
from domain.messages import Joined, Message
from domain.permissions import SCHEDULE_EDIT, SCHEDULE_LIST
from domain.runs import (
    ATTEMPT_FAILED,
    ATTEMPT_SUCCEEDED,
    CANCELLABLE,
    CANCELLED,
    DEAD_LETTER,
    FAILED,
    INTERRUPTED,
    PENDING,
    RETRY_WAIT,
    RETRYABLE,
    RUNNING,
    SKIPPED_CALENDAR,
    SKIPPED_MISSED,
    SKIPPED_OVERLAP,
    SUCCEEDED,
    UNFINISHED,
)
from projections.runs import RUN_LISTING, RunDetail, RunRow
from web.api import flatten, services
from web.console.access import signed_in
from web.console.bulk import (
    Confirm,
    ConfirmRow,
    Picked,
    ReportRow,
    picked,
    posted_reason,
    report,
)
from web.console.clock import typed_instant
from web.console.job_words import result_words, target_words
from web.console.lists import (
    ListView,
    Named,
    account_names,
    definition_names,
    list_view,
    lists_ready,
    read_picker,
    schedule_names,
)
from web.console.live import caught_up, live_url
from web.console.overlap_words import blocked_words, overlap_words
from web.exports import asked, exported
from web.paging import window
from web.problems import STATUS_OF_CODE, Problem
from web.runs import run_filter_of
from web.schemas.base import VersionReasonBody
from web.schemas.runs import RunExportQuery, RunLogQuery

bp = Blueprint("runs", __name__, url_prefix="/runs")
FILTERS = (
    "schedule_id",
    "schedule_name",
    "status",
    "trigger",
    "planned_from",
    "planned_to",
    "group",
)
LOCAL_TIMES = ("planned_from", "planned_to")  # typed in the viewer's zone
LIST_ARGS = ("q", "sort", "page", "page_size")  # a bulk form's answer keeps them


@dataclass
class Listing:
    """A run list as a page shows it: the filters as typed, their errors, the page read (its
    search, sort and paging in `view`), and the names of its runs' schedules by id.

    The schedule filter is a picker: `schedule_id` is the schedule's id once picked (or
    typed: a name is looked up), `schedule_shown` its name.
    """

    typed: dict[str, str]
    view: ListView
    errors: dict[str, list[str]] = field(default_factory=dict)
    runs: list[RunRow] = field(default_factory=list)
    names: dict[str, Named] = field(default_factory=dict)
    schedule_shown: str = ""

    @property
    def schedule_id(self) -> str:
        return self.typed.get("schedule_id", "")


@bp.get("/")
@signed_in(SCHEDULE_LIST)
def index(principal: Principal) -> str:
    return _log_page(principal, request.args.to_dict())


def _log_page(principal: Principal, asked: dict[str, Any], **more: Any) -> str:
    """The execution log as `asked` filters it; `more`: more for the page (a bulk action's
    report, its form's errors)."""
    live = live_url()
    listing = _listing(principal, asked, "console.runs.index")
    rows_url = url_for("console.runs.rows", **asked)
    schedule_name = None if listing.errors or not listing.schedule_id else listing.schedule_shown
    return render_template(
        "console/runs/index.html",
        live=live,
        listing=listing,
        rows_url=rows_url,
        schedule_name=schedule_name,
        **more,
    )


@bp.get("/export")
@signed_in(SCHEDULE_LIST)
def export(principal: Principal) -> Response | tuple[str, int]:
    """The execution log as the page's filters and search ask for it, as a file (the API's
    export); the page again, saying why, when the filters are wrong or match too many runs."""
    file_format = request.args.get("format", "")
    if file_format not in FORMATS:
        abort(404)
    lists_ready()
    asked_for = {name: value for name, value in request.args.items() if name != "format"}
    listing = _listing_of(principal, asked_for, "console.runs.index")
    query = _query(listing, file_format)
    if query is None:
        return _log_page(principal, asked_for), 422
    given = {**listing.typed, "q": listing.view.search}
    try:
        found = services().exports.runs(principal, run_filter_of(query), asked(query, given))
    except TooManyRows as refused:
        return _log_page(principal, asked_for, export_problem=refused.message), 422
    return exported(found)


@bp.post("/bulk")
@signed_in(SCHEDULE_EDIT)
def act_on_picked(principal: Principal) -> tuple[str, int]:
    """Retry or cancel each picked run, one by one (the API's bulk action); cancel asks first.
    The log again as it was filtered, with what each got."""
    action = request.form.get("action", "")
    if action not in RUN_ACTIONS:
        abort(400, _("Press one of the actions."))
    asked = {
        name: value
        for name in (*FILTERS, *LIST_ARGS)
        if (value := request.form.get(f"filter_{name}", "").strip())
    }
    chosen, reason, errors = _picked_runs()
    if errors:
        return _log_page(principal, asked, errors=errors, reason=reason or ""), 422
    if action == CANCEL and "confirmed" not in request.form:
        return _confirm_cancel(principal, chosen, asked), 200
    rows = _acted(principal, action, chosen, reason)
    return _log_page(principal, asked, bulk_report=rows), 200


def _picked_runs() -> tuple[Picked, str | None, dict[str, list[str]]]:
    """The runs a bulk form picked, its reason, and what is wrong with the form."""
    chosen = picked(
        "run_id",
        _("Pick at least one run."),
        _("Pick at most %(count)s runs at a time.", count=MAX_BULK),
    )
    errors = dict(chosen.errors)
    reason = posted_reason(errors)
    return chosen, reason, errors


def _acted(
    principal: Principal, action: str, chosen: Picked, reason: str | None
) -> list[ReportRow]:
    """Each picked run acted on; what each got, as the report shows it."""
    asked = BulkRequest(action, chosen.ids, chosen.versions, reason)
    items = act_on_runs(services().runs, principal, asked)
    return report(action, items, lambda key: url_for("console.runs.detail", run_id=key))


def _confirm_cancel(principal: Principal, chosen: Picked, asked: dict[str, Any]) -> str:
    """The picked runs by title, to cancel, or not."""
    rows = [ConfirmRow(key, _title_or_id(principal, key), None) for key in chosen.ids]
    confirm = Confirm(
        title=_("Cancel %(count)s run(s)?", count=len(rows)),
        lead=_(
            "A cancelled run is not attempted again (a retry starts it again). Only runs "
            "pending or waiting to retry can be cancelled: any other is refused."
        ),
        button=_("Cancel these %(count)s run(s)", count=len(rows)),
        url=url_for("console.runs.act_on_picked"),
        back=url_for("console.runs.index", **asked),
        back_words=_("Execution log"),
        action=CANCEL,
        field="run_id",
        rows=rows,
        hidden={f"filter_{name}": value for name, value in asked.items()},
        reason=request.form.get("reason", "").strip(),
    )
    return render_template("console/bulk_confirm.html", confirm=confirm)


def _title_or_id(principal: Principal, run_id: str) -> str:
    """A run's title; one not found by its id, said so."""
    try:
        return str(services().runs.view_by_id(principal.tenant_id, run_id).title)
    except NotFound:
        return str(_("%(id)s (not found)", id=run_id))


@bp.get("/rows")
@signed_in(SCHEDULE_LIST)
def rows(principal: Principal) -> str:
    """The execution log's table alone, re-fetched when a run changes."""
    caught_up()
    listing = _listing(principal, request.args, "console.runs.index")
    return render_template("console/runs/_rows.html", listing=listing)


@bp.get("/dead-letters")
@signed_in(SCHEDULE_LIST)
def dead_letters(principal: Principal) -> str:
    live = live_url()
    listing = _dead_letters(principal)
    return render_template("console/runs/dead_letters.html", live=live, listing=listing)


@bp.get("/dead-letters/rows")
@signed_in(SCHEDULE_LIST)
def dead_letter_rows(principal: Principal) -> str:
    caught_up()
    return render_template("console/runs/_dead_rows.html", listing=_dead_letters(principal))


@bp.post("/dead-letters/retry")
@signed_in(SCHEDULE_EDIT)
def retry_dead_letters(principal: Principal) -> tuple[str, int]:
    """Retry each run picked, one by one (the API's bulk retry): each is retried or refused
    on its own."""
    chosen, reason, errors = _picked_runs()
    rows = [] if errors else _acted(principal, RETRY, chosen, reason)
    live = live_url()
    page = render_template(
        "console/runs/dead_letters.html",
        live=live,
        listing=_dead_letters(principal),
        bulk_report=rows,
        errors=errors,
        reason=request.form.get("reason", ""),
    )
    return page, 422 if errors else 200


@bp.get("/<run_id>")
@signed_in(SCHEDULE_LIST)
def detail(principal: Principal, run_id: str) -> tuple[str, int]:
    return _detail_page(principal, run_id)


@bp.get("/<run_id>/panel")
@signed_in(SCHEDULE_LIST)
def panel(principal: Principal, run_id: str) -> str:
    """The run's state, actions and attempts alone, re-fetched when the run changes."""
    run, _frozen = _found(principal, run_id)
    done = request.args.get("done")
    return render_template("console/runs/_panel.html", run=run, errors={}, reason="", done=done)


@bp.post("/<run_id>/retry")
@signed_in(SCHEDULE_EDIT)
def retry(principal: Principal, run_id: str) -> Response | tuple[str, int]:
    return _act(principal, run_id, services().runs.retry, "retried")


@bp.post("/<run_id>/cancel")
@signed_in(SCHEDULE_EDIT)
def cancel(principal: Principal, run_id: str) -> Response | tuple[str, int]:
    return _act(principal, run_id, services().runs.cancel, "cancelled")


Command = Callable[[Principal, UUID, str, int | None, str | None], RunDetail]


def _act(
    principal: Principal, run_id: str, command: Command, done: str
) -> Response | tuple[str, int]:
    """Retry or cancel, as the API does; a refusal is shown on the run's page."""
    run, _frozen = _found(principal, run_id)
    reason, errors = _reason()
    version = _version(errors)
    if errors:
        return _detail_page(principal, run_id, errors=errors, status=422)
    try:
        command(principal, UUID(run.schedule_id), run.id, version, reason)
    except DomainError as refused:
        errors = refused.errors if isinstance(refused, ValidationFailed) else {}
        status = STATUS_OF_CODE.get(refused.code, 409)
        return _detail_page(
            principal, run_id, errors=errors, problem=_refusal(refused), status=status
        )
    return redirect(url_for("console.runs.detail", run_id=run.id, done=done))


def _detail_page(
    principal: Principal,
    run_id: str,
    *,
    errors: dict[str, list[str]] | None = None,
    problem: str | None = None,
    status: int = 200,
) -> tuple[str, int]:
    live = live_url()
    run, frozen = _found(principal, run_id)
    page = render_template(
        "console/runs/detail.html",
        live=live,
        run=run,
        frozen=frozen,
        errors=errors or {},
        problem=problem,
        done=request.args.get("done") if status == 200 else None,
        reason=request.form.get("reason", ""),
        schedule_name=_schedule_name(principal, run.schedule_id, frozen),
        schedules=schedule_names(principal, [run.schedule_id]),
        definitions=definition_names(principal, [str(frozen.get("definition_id", ""))]),
        initiators=account_names(principal, [run.initiator_id]),
    )
    return page, status


def _found(principal: Principal, run_id: str) -> tuple[RunDetail, dict[str, Any]]:
    """The tenant's run and its frozen values; 404 for another tenant's or an unknown one."""
    try:
        return services().runs.frozen_by_id(principal.tenant_id, run_id)
    except NotFound:
        abort(404, description=_("There is no such run."))


def _reason() -> tuple[str | None, dict[str, list[str]]]:
    """The optional reason typed, checked as the API checks it."""
    reason = request.form.get("reason", "").strip() or None
    try:
        VersionReasonBody().load({"reason": reason} if reason else {})
    except ValidationError as error:
        return None, {"reason": flatten(error.messages).get("reason", [])}
    return reason, {}


def _version(errors: dict[str, list[str]]) -> int | None:
    """The run's version the page showed: a change since is refused as stale (409)."""
    text = request.form.get("version", "")
    if not text:
        return None
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 2**31:
        errors["version"] = [_("Reload the page: the form was not sent as shown.")]
        return None
    return int(text)


def _refusal(refused: DomainError) -> str:
    """A refusal in one line: each field's problems, or the message."""
    if isinstance(refused, ValidationFailed):
        return Joined(
            "; ",
            (
                Message("{field}: {messages}", field=name, messages=Joined(", ", messages))
                for name, messages in sorted(refused.errors.items())
            ),
        )
    return refused.message


def _dead_letters(principal: Principal) -> Listing:
    return _listing(principal, request.args, "console.runs.dead_letters", {"status": DEAD_LETTER})


def _listing(
    principal: Principal,
    args: Mapping[str, str],
    endpoint: str,
    fixed: Mapping[str, str] | None = None,
) -> Listing:
    """The tenant's runs that the filters in `args` (and the `fixed` ones) ask for, a page of
    them, searched and sorted as asked; the filters' errors instead if they are invalid."""
    listing = _listing_of(principal, args, endpoint, fixed)
    query = _query(listing)
    if query is None:
        return listing
    try:
        page = services().runs.list_page(
            principal.tenant_id, run_filter_of(query), window(query, RUN_LISTING)
        )
    except Problem as unavailable:  # the read models are being rebuilt after an upgrade
        listing.errors["_schema"] = [unavailable.detail]
        return listing
    listing.runs = page.items
    listing.view = listing.view.found(page)
    listing.names = schedule_names(principal, {run.schedule_id for run in page.items})
    return listing


def _listing_of(
    principal: Principal,
    args: Mapping[str, str],
    endpoint: str,
    fixed: Mapping[str, str] | None = None,
) -> Listing:
    """The filters as typed in `args` (and the `fixed` ones), the schedule picked, no page
    read yet."""
    view = list_view(RUN_LISTING, endpoint, args=args)
    typed = {name: args.get(name, "").strip() for name in FILTERS}
    listing = Listing({**typed, **(fixed or {})}, view)
    _pick_schedule(principal, listing)
    return listing


def _pick_schedule(principal: Principal, listing: Listing) -> None:
    """The schedule filter as picked or typed: a schedule of the tenant (a deleted one's id
    too), by its id or its name."""
    found = read_picker(principal, "schedules", listing.schedule_id)
    listing.schedule_shown = found.shown
    if found.problem:
        listing.errors["schedule_id"] = [found.problem]
    elif found.value:
        listing.typed["schedule_id"] = found.value


def _query(listing: Listing, file_format: str | None = None) -> dict[str, Any] | None:
    """The filters as the API's run log takes them (its checks, its messages), or None;
    given a `file_format`, as its export takes them (no paging, no sort)."""
    view = listing.view
    given: dict[str, Any] = {"page_size": view.size, "page": view.number}
    if file_format is not None:
        given = {"format": file_format}
    if view.search:
        given["q"] = view.search
    if view.sort and file_format is None:
        given["sort"] = view.sort
    for name, value in listing.typed.items():
        if not value:
            continue
        if name in LOCAL_TIMES:
            try:
                given[name] = typed_instant(value).isoformat()
            except ValueError:
                listing.errors[name] = [_("Enter a date and time, e.g. 2026-10-01 09:00.")]
        else:
            given[name] = value
    schema = RunLogQuery() if file_format is None else RunExportQuery()
    try:
        query: dict[str, Any] = schema.load(given)
    except ValidationError as error:
        for name, messages in flatten(error.messages).items():
            listing.errors.setdefault(name, messages)
        return None
    return None if listing.errors else query


def _schedule_name(principal: Principal, schedule_id: str, frozen: dict[str, Any]) -> str:
    """The schedule's name now, else (deleted) the one frozen with the run."""
    try:
        schedule = services().schedules.find(principal.tenant_id, schedule_id)
    except NotFound:
        return str(frozen.get("schedule_name", schedule_id))
    name = schedule.settings.name
    return _("%(name)s (deleted)", name=name) if schedule.deleted else name


STATUS_LABELS = {
    PENDING: lazy_gettext("Pending"),
    RUNNING: lazy_gettext("Running"),
    RETRY_WAIT: lazy_gettext("Waiting to retry"),
    SUCCEEDED: lazy_gettext("Succeeded"),
    FAILED: lazy_gettext("Failed"),
    DEAD_LETTER: lazy_gettext("Dead letter"),
    CANCELLED: lazy_gettext("Cancelled"),
    SKIPPED_OVERLAP: lazy_gettext("Skipped: overlap"),
    SKIPPED_MISSED: lazy_gettext("Skipped: missed"),
    SKIPPED_CALENDAR: lazy_gettext("Skipped: not a working day"),
}
TRIGGER_LABELS = {"schedule": lazy_gettext("Scheduled"), "manual": lazy_gettext("Manual")}
OUTCOME_LABELS = {
    ATTEMPT_SUCCEEDED: lazy_gettext("Succeeded"),
    ATTEMPT_FAILED: lazy_gettext("Failed"),
    INTERRUPTED: lazy_gettext("Interrupted"),
}


# What a run's page says was just done, and the statuses in which that is still news.
DONE_WHILE = {
    "queued": frozenset({PENDING}),
    "retried": UNFINISHED,
    "cancelled": frozenset({CANCELLED}),
}


def still_news(done: str | None, status: str) -> bool:
    """Whether the run is still as `done` (queued, retried, cancelled) left it."""
    return status in DONE_WHILE.get(done or "", frozenset())


@bp.context_processor
def _runs_context() -> dict[str, Any]:
    return {
        "still_news": still_news,
        "status_labels": STATUS_LABELS,
        "trigger_labels": TRIGGER_LABELS,
        "outcome_labels": OUTCOME_LABELS,
        "retryable": RETRYABLE,
        "cancellable": CANCELLABLE,
        "seconds": seconds,
        "instant": instant,
        "blocked_words": blocked_words,
        "overlap_words": overlap_words,
        "target_words": target_words,
        "result_words": result_words,
    }


def seconds(value: float | None) -> str:
    """A duration as the pages show it."""
    return "—" if value is None else _("%(seconds).1f s", seconds=value)


def instant(text: str | None) -> datetime | None:
    """An attempt's instant (kept as ISO 8601 text) as an instant, for the `when` filter."""
    return None if text is None else datetime.fromisoformat(text)
