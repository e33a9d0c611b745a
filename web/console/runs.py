"""The console's runs pages (执行记录): the execution log, a run with its attempts, retry and
cancel, and the dead letters with bulk retry. They update live (web/console/live.py).

They call the services the API's run log calls (web/runs.py): the same filters, the same
checks, the same refusals.
"""

from __future__ import annotations

import math
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

from cronledger.application.directory import Page
from domain.directory import Principal
from domain.errors import DomainError, NotFound, ValidationFailed
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
    SKIPPED_MISSED,
    SKIPPED_OVERLAP,
    SUCCEEDED,
)
from projections.keyset import Window
from projections.runs import RUN_ORDER, RunDetail, RunFilter, RunRow
from projections.schedules import ScheduleFilter
from web.api import flatten, services
from web.console.access import signed_in
from web.console.clock import viewer_zone
from web.console.live import caught_up, live_url
from web.console.overlap_words import blocked_words, overlap_words
from web.paging import window
from web.problems import STATUS_OF_CODE, Problem
from web.schemas.base import VersionReasonBody
from web.schemas.runs import RunLogQuery

bp = Blueprint("runs", __name__, url_prefix="/runs")
PAGE_SIZE = 20
SCHEDULE_CHOICES = 200  # the schedules the filter offers by name (any other by its id)
MAX_BULK = 100
FILTERS = ("schedule_id", "status", "trigger", "planned_from", "planned_to")
LOCAL_TIMES = ("planned_from", "planned_to")  # typed in the viewer's zone


@dataclass(frozen=True)
class Pager:
    number: int
    pages: int
    total: int
    previous: str | None
    next: str | None


@dataclass
class Listing:
    """A run list as a page shows it: the filters as typed, their errors, the page read, and
    the schedules' names by id."""

    typed: dict[str, str]
    errors: dict[str, list[str]] = field(default_factory=dict)
    runs: list[RunRow] = field(default_factory=list)
    pager: Pager | None = None
    names: dict[str, str] = field(default_factory=dict)

    @property
    def schedule_id(self) -> str:
        return self.typed.get("schedule_id", "")


@dataclass(frozen=True)
class Outcome:
    """What became of one run of a bulk retry: its new status, or why it was refused."""

    run_id: str
    title: str
    status: str | None = None
    refused: str | None = None


@bp.get("/")
@signed_in(SCHEDULE_LIST)
def index(principal: Principal) -> str:
    live = live_url()
    listing = _listing(principal, request.args, "console.runs.index")
    asked: dict[str, Any] = request.args.to_dict()
    rows_url = url_for("console.runs.rows", **asked)
    schedule_name = None if listing.errors else listing.names.get(listing.schedule_id)
    return render_template(
        "console/runs/index.html",
        live=live,
        listing=listing,
        rows_url=rows_url,
        schedule_name=schedule_name,
    )


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
    """Retry each run picked, one by one: each is retried or refused on its own."""
    picked = list(dict.fromkeys(request.form.getlist("run_id")))
    reason, errors = _reason()
    if not picked:
        errors["run_id"] = [_("Pick at least one run.")]
    elif len(picked) > MAX_BULK:
        errors["run_id"] = [_("Pick at most %(count)s runs at a time.", count=MAX_BULK)]
    outcomes = [] if errors else [_retried(principal, run_id, reason) for run_id in picked]
    live = live_url()
    page = render_template(
        "console/runs/dead_letters.html",
        live=live,
        listing=_dead_letters(principal),
        outcomes=outcomes,
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
    return render_template("console/runs/_panel.html", run=run, errors={}, reason="")


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
        return None, {"reason": [_(m) for m in flatten(error.messages).get("reason", [])]}
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


def _retried(principal: Principal, run_id: str, reason: str | None) -> Outcome:
    try:
        run, _frozen = services().runs.frozen_by_id(principal.tenant_id, run_id)
    except NotFound:
        return Outcome(run_id, run_id, refused=_("There is no such run."))
    try:
        after = services().runs.retry(principal, UUID(run.schedule_id), run.id, None, reason)
    except DomainError as refused:
        return Outcome(run.id, run.title, refused=_refusal(refused))
    return Outcome(run.id, run.title, status=after.status)


def _refusal(refused: DomainError) -> str:
    """A refusal in one line: each field's problems, or the message."""
    if isinstance(refused, ValidationFailed):
        return "; ".join(f"{name}: {', '.join(m)}" for name, m in sorted(refused.errors.items()))
    return refused.message


def _dead_letters(principal: Principal) -> Listing:
    wanted = {"status": DEAD_LETTER}
    page = request.args.get("page", "")
    return _listing(principal, {**wanted, "page": page}, "console.runs.dead_letters", wanted)


def _listing(
    principal: Principal,
    args: Mapping[str, str],
    endpoint: str,
    fixed: Mapping[str, str] | None = None,
) -> Listing:
    """The tenant's runs that the filters in `args` ask for, a page of them; the filters'
    errors instead if they are invalid."""
    listing = Listing({name: args.get(name, "").strip() for name in FILTERS})
    listing.names = _schedule_names(principal)
    query = _query(listing, args.get("page", "").strip())
    if query is None:
        return listing
    _check_schedule(principal, listing)
    if listing.errors:
        return listing
    run_filter = RunFilter(
        schedule_id=query["schedule_id"],
        status=query["status"],
        trigger=query["trigger"],
        planned_from=query["planned_from"],
        planned_to=query["planned_to"],
    )
    try:
        page = services().runs.list_page(principal.tenant_id, run_filter, window(query, RUN_ORDER))
    except Problem as unavailable:  # the read models are being rebuilt after an upgrade
        listing.errors["_schema"] = [unavailable.detail]
        return listing
    listing.runs = page.items
    kept: dict[str, Any] = {} if fixed else {k: v for k, v in listing.typed.items() if v}
    listing.pager = _pager(page, endpoint, kept)
    return listing


def _query(listing: Listing, page: str) -> dict[str, Any] | None:
    """The filters as the API's run log takes them (its checks, its messages), or None."""
    given: dict[str, Any] = {"page_size": PAGE_SIZE}
    if page:
        given["page"] = page
    for name, value in listing.typed.items():
        if not value:
            continue
        if name in LOCAL_TIMES:
            try:
                given[name] = _instant(value)
            except ValueError:
                listing.errors[name] = [_("Enter a date and time, e.g. 2026-10-01 09:00.")]
        else:
            given[name] = value
    try:
        query: dict[str, Any] = RunLogQuery().load(given)
    except ValidationError as error:
        for name, messages in flatten(error.messages).items():
            listing.errors.setdefault(name, [_(m) for m in messages])
        return None
    if query["schedule_id"] is not None:
        listing.typed["schedule_id"] = str(query["schedule_id"])
    return None if listing.errors else query


def _instant(typed: str) -> str:
    """A time typed in the viewer's zone (or with an offset), as an instant with its offset."""
    instant = datetime.fromisoformat(typed.replace(" ", "T"))
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=viewer_zone())
    return instant.isoformat()


def _check_schedule(principal: Principal, listing: Listing) -> None:
    """A schedule asked for is the tenant's (a deleted one included); named by its name."""
    schedule_id = listing.schedule_id
    if not schedule_id or schedule_id in listing.names:
        return
    try:
        schedule = services().schedules.find(principal.tenant_id, schedule_id)
    except NotFound:
        listing.errors["schedule_id"] = [_("There is no such schedule.")]
        return
    name = schedule.settings.name
    listing.names[schedule_id] = _("%(name)s (deleted)", name=name) if schedule.deleted else name


def _schedule_names(principal: Principal) -> dict[str, str]:
    """The names of the tenant's first live schedules, by id."""
    page = services().schedules.list_page(
        principal.tenant_id, ScheduleFilter(), Window(SCHEDULE_CHOICES, 1)
    )
    return {view.id: view.name for view in page.items}


def _schedule_name(principal: Principal, schedule_id: str, frozen: dict[str, Any]) -> str:
    """The schedule's name now, else (deleted) the one frozen with the run."""
    try:
        schedule = services().schedules.find(principal.tenant_id, schedule_id)
    except NotFound:
        return str(frozen.get("schedule_name", schedule_id))
    name = schedule.settings.name
    return _("%(name)s (deleted)", name=name) if schedule.deleted else name


def _pager(page: Page[RunRow], endpoint: str, kept: dict[str, Any]) -> Pager:
    number = page.page or 1
    pages = max(1, math.ceil(page.total / page.page_size))

    def link(to: int) -> str | None:
        if not 1 <= to <= pages or to == number:
            return None
        return url_for(endpoint, **{**kept, "page": to})

    return Pager(number, pages, page.total, link(number - 1), link(number + 1))


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
}
TRIGGER_LABELS = {"schedule": lazy_gettext("Scheduled"), "manual": lazy_gettext("Manual")}
OUTCOME_LABELS = {
    ATTEMPT_SUCCEEDED: lazy_gettext("Succeeded"),
    ATTEMPT_FAILED: lazy_gettext("Failed"),
    INTERRUPTED: lazy_gettext("Interrupted"),
}


@bp.context_processor
def _runs_context() -> dict[str, Any]:
    return {
        "status_labels": STATUS_LABELS,
        "trigger_labels": TRIGGER_LABELS,
        "outcome_labels": OUTCOME_LABELS,
        "retryable": RETRYABLE,
        "cancellable": CANCELLABLE,
        "seconds": seconds,
        "instant": instant,
        "blocked_words": blocked_words,
        "overlap_words": overlap_words,
    }


def seconds(value: float | None) -> str:
    """A duration as the pages show it."""
    return "—" if value is None else _("%(seconds).1f s", seconds=value)


def instant(text: str | None) -> datetime | None:
    """An attempt's instant (kept as ISO 8601 text) as an instant, for the `when` filter."""
    return None if text is None else datetime.fromisoformat(text)
