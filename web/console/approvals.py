"""The console's approvals (审批): the inbox of instances, an instance's page, and its commands.

The pages call the same application service as web/approvals.py, with the API's own input
schemas: the instance's one rule decides every command, and the page shows what it decided
(a lost race as lost, naming the command that won).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext
from marshmallow import Schema, ValidationError
from werkzeug.wrappers import Response

from cronledger.application.approvals import CommandResult
from domain.approvals import (
    APPROVE,
    APPROVED,
    CONFLICT,
    EXPIRED,
    EXTEND,
    EXTENDED,
    FORBIDDEN,
    LATE_OR_CONFLICT,
    NOT_DUE,
    OBSERVED,
    RULE_BROKEN,
    SELF_APPROVAL,
    SIGN,
    STALE_MATERIAL,
    SWEEP,
    WAITING_REVIEW,
    WITHDRAW,
    WITHDRAWN,
    Command,
    Parties,
    offset_minutes_of,
    refusal_of,
)
from domain.directory import Principal
from domain.errors import DomainError, ValidationFailed
from domain.permissions import APPROVAL_LIST
from projections.approvals import APPROVAL_ORDER, ApprovalFilter, ApprovalRow
from web.api import services
from web.console.access import signed_in
from web.console.clock import viewer_zone
from web.console.live import caught_up, live_url, shown_position
from web.console.reason_words import reason_words
from web.freshness import wanted_position
from web.paging import window
from web.problems import STATUS_OF_CODE, Problem
from web.schemas.approvals import ApprovalListQuery, ApproveIn, ExtendDeadlineIn, WithdrawIn

bp = Blueprint("approvals", __name__, url_prefix="/approvals")

STATES = (WAITING_REVIEW, APPROVED, WITHDRAWN, EXPIRED)
STATE_LABELS = {
    WAITING_REVIEW: lazy_gettext("Waiting for review"),
    APPROVED: lazy_gettext("Approved"),
    WITHDRAWN: lazy_gettext("Withdrawn"),
    EXPIRED: lazy_gettext("Expired"),
}
OUTCOME_LABELS = {
    APPROVED: lazy_gettext("Approved"),
    WITHDRAWN: lazy_gettext("Withdrawn"),
    EXPIRED: lazy_gettext("Expired: the deadline had passed"),
    EXTENDED: lazy_gettext("Deadline extended"),
    OBSERVED: lazy_gettext("Recorded as an observation"),
    NOT_DUE: lazy_gettext("Not due"),
    CONFLICT: lazy_gettext("Lost: the instance was already decided"),
    LATE_OR_CONFLICT: lazy_gettext("Late: the instance was already decided"),
    STALE_MATERIAL: lazy_gettext("Refused: the material has changed"),
    SELF_APPROVAL: lazy_gettext("Refused: no self-approval"),
    FORBIDDEN: lazy_gettext("Refused: not allowed"),
    RULE_BROKEN: lazy_gettext("Refused: breaks a deadline rule"),
}
COMMAND_LABELS = {
    APPROVE: lazy_gettext("approve"),
    WITHDRAW: lazy_gettext("withdraw"),
    EXTEND: lazy_gettext("extend the deadline"),
    SIGN: lazy_gettext("signing callback"),
    SWEEP: lazy_gettext("deadline expiry"),
}
DEADLINE_SOURCES = {
    "definition": lazy_gettext("the definition's review window"),
    "explicit": lazy_gettext("given at submission"),
    "extended": lazy_gettext("extended"),
}
FILTERS = ("state", "applicant_id", "definition_id", "schedule_id", "deadline_from", "deadline_to")
INSTANTS = ("deadline_from", "deadline_to")
PAGING = ("page", "page_size")
ANY_STATE = ""  # the state filter's "any" choice
FIELDS = ("new_deadline_at", "reason")  # the command forms' fields a message is shown beside
BEHIND = "inbox-behind"  # the event that has the inbox fetch its rows again (index.html)


@bp.context_processor
def _labels() -> dict[str, Any]:
    return {
        "state_label": lambda state: STATE_LABELS.get(state, state),
        "outcome_label": lambda outcome: OUTCOME_LABELS.get(outcome, outcome),
        "command_label": lambda kind: COMMAND_LABELS.get(kind, kind),
        "deadline_source": lambda source: DEADLINE_SOURCES.get(source, source),
        "time_left": time_left,
        "states": STATES,
    }


# -- the inbox ----------------------------------------------------------------


@bp.get("/")
@signed_in(APPROVAL_LIST)
def index(principal: Principal) -> tuple[str, int]:
    """The inbox: the waiting instances (or as filtered), newest submitted first; it updates
    live, as instances come and are decided."""
    live = live_url()  # before the read: the stream starts where the rows read are sure to be
    chosen = _chosen_filters()
    rows, status = _rows(principal, chosen)
    page = render_template(
        "console/approvals/index.html",
        **rows,
        chosen=chosen,
        live=live,
        rows_url=url_for(".rows", **_kept(chosen)),
    )
    return page, status


@bp.get("/rows")
@signed_in(APPROVAL_LIST)
def rows(principal: Principal) -> tuple[str, int, dict[str, str]]:
    """The inbox's rows alone: what its live updates fetch (its errors are shown, with 200)."""
    caught_up()
    found = _rows(principal, _chosen_filters())[0]
    return render_template("console/approvals/_rows.html", **found), 200, _again_if_behind()


def _again_if_behind() -> dict[str, str]:
    """If the read models did not reach the live event in time, have the page fetch the rows
    again shortly, for the same event (else the update would wait for the next event)."""
    try:
        wanted = wanted_position()
    except Problem:
        return {}
    end = services().ledger.recorder.max_notification_id() or 0
    if wanted is None or wanted > end or shown_position() >= wanted:
        return {}
    return {"HX-Trigger": json.dumps({BEHIND: {"lastEventId": str(wanted)}})}


def _rows(principal: Principal, chosen: dict[str, str]) -> tuple[dict[str, Any], int]:
    """The page of instances the filters ask for (or the filters' errors), as _rows.html
    shows them, and the answer's status."""
    query, errors = _inbox_query(chosen)
    page = None
    if query is not None:
        wanted = ApprovalFilter(**{name: query[name] for name in FILTERS})
        page = services().approvals.list_page(
            principal.tenant_id, wanted, window(query, APPROVAL_ORDER)
        )
    found = {
        "page": page,
        "errors": errors,
        "now": services().ledger.clock(),
        "zone": viewer_zone().key,
        "pages": _page_links(chosen, page),
        "may": lambda view, kind: may(principal, view, kind),
        "new_command_id": new_command_id,
    }
    return found, 422 if errors else 200


def _chosen_filters() -> dict[str, str]:
    """The filters as typed (blank ones left out); the state is "waiting" unless chosen."""
    chosen = {
        name: request.args.get(name, "").strip()
        for name in (*FILTERS, *PAGING)
        if request.args.get(name, "").strip()
    }
    if "state" not in request.args:
        chosen["state"] = WAITING_REVIEW
    return chosen


def _inbox_query(chosen: dict[str, str]) -> tuple[dict[str, Any] | None, dict[str, list[str]]]:
    """The filters checked by the API's own list query; or the messages by field."""
    given: dict[str, Any] = {k: v for k, v in chosen.items() if v != ANY_STATE}
    for name in INSTANTS:
        if name in given:
            given[name] = aware_text(given[name])
    try:
        return ApprovalListQuery().load(given), {}
    except ValidationError as error:
        return None, _messages(error)


def _kept(chosen: dict[str, str]) -> dict[str, Any]:
    """The filters as a link keeps them ("any state" too)."""
    return {**chosen, "state": chosen.get("state", ANY_STATE)}


def _page_links(chosen: dict[str, str], page: Any) -> dict[str, str | None]:
    """The previous and the next page's addresses, with the same filters."""
    if page is None or page.page is None:
        return {"previous": None, "next": None}
    number, last = page.page, max(1, -(-page.total // page.page_size))

    def link(to: int) -> str:
        kept: dict[str, Any] = {**_kept(chosen), "page": to}
        return url_for(".index", **kept)

    return {
        "previous": link(number - 1) if number > 1 else None,
        "next": link(number + 1) if number < last else None,
    }


# -- an instance --------------------------------------------------------------


@bp.get("/<instance_id>")
@signed_in(APPROVAL_LIST)
def detail(principal: Principal, instance_id: str) -> tuple[str, int]:
    return _detail(principal, _view(principal, instance_id))


@bp.get("/<instance_id>/<any(approve, withdraw, extend):action>")
def after_command(instance_id: str, action: str) -> Response:
    """A command's address opened again (a bookmark, a reload after the answer): the page."""
    return redirect(url_for(".detail", instance_id=instance_id))


@bp.post("/<instance_id>/approve")
@signed_in(APPROVAL_LIST)  # as the API: a caller who sees it may ask; the service decides
def approve(principal: Principal, instance_id: str) -> tuple[str, int]:
    body = {
        "command_id": request.form.get("command_id", ""),
        "material_version": whole_number(request.form.get("material_version", "")),
    }
    return _command(principal, instance_id, APPROVE, ApproveIn, body)


@bp.post("/<instance_id>/withdraw")
@signed_in(APPROVAL_LIST)
def withdraw(principal: Principal, instance_id: str) -> tuple[str, int]:
    body = {"command_id": request.form.get("command_id", "")}
    return _command(principal, instance_id, WITHDRAW, WithdrawIn, body)


@bp.post("/<instance_id>/extend")
@signed_in(APPROVAL_LIST)
def extend(principal: Principal, instance_id: str) -> tuple[str, int]:
    body = {
        "command_id": request.form.get("command_id", ""),
        "new_deadline_at": aware_text(request.form.get("new_deadline_at", "").strip()),
        "reason": request.form.get("reason", "").strip(),
    }
    return _command(principal, instance_id, EXTEND, ExtendDeadlineIn, body)


def _command(
    principal: Principal, instance_id: str, kind: str, schema: type[Schema], body: dict[str, Any]
) -> tuple[str, int]:
    """Check the form as the API checks its body, send the command, show what it got."""
    view = _view(principal, instance_id)
    try:
        loaded = schema().load({k: v for k, v in body.items() if v != ""})
    except ValidationError as error:
        return _detail(principal, view, errors=_messages(error), typed=request.form, status=422)
    offset = None
    if kind == EXTEND:  # kept in UTC, with the offset it was given at (as web/approvals.py)
        offset = offset_minutes_of(loaded["new_deadline_at"])
        loaded["new_deadline_at"] = loaded["new_deadline_at"].astimezone(UTC)
    payload = {k: v for k, v in loaded.items() if k != "command_id"}
    command = Command(kind, loaded["command_id"], payload, offset)
    try:
        result = services().approvals.command(principal, instance_id, command)
    except ValidationFailed as error:  # a deadline rule, recorded: beside its field
        fresh = _view(principal, instance_id)
        return _detail(principal, fresh, errors=error.errors, typed=request.form, status=422)
    except DomainError as error:  # refused before deciding, e.g. not allowed (recorded too)
        fresh = _view(principal, instance_id)
        return _detail(principal, fresh, problem=error.message, status=_status(error))
    return _detail(
        principal,
        result.instance,
        result=result,
        sent=command,
        status=200 if result.accepted else 409,
    )


def _detail(
    principal: Principal,
    view: ApprovalRow,
    *,
    result: CommandResult | None = None,
    sent: Command | None = None,
    errors: dict[str, list[str]] | None = None,
    typed: Any = None,
    problem: str | None = None,
    status: int = 200,
) -> tuple[str, int]:
    page = render_template(
        "console/approvals/detail.html",
        instance=view,
        result=result,
        sent=sent,
        lost=result is not None and lost_to_another(result, sent),
        errors=errors or {},
        other_errors=[m for name, ms in (errors or {}).items() if name not in FIELDS for m in ms],
        typed=typed or {},
        problem=problem,
        now=services().ledger.clock(),
        zone=viewer_zone().key,
        may=lambda kind: may(principal, view, kind),
        not_yours=approval_interest(principal, view),
        new_command_id=new_command_id,
        observations=[with_instants(o, "occurred_at", "recorded_at") for o in view.observations],
        extensions=[
            with_instants(e, "old_deadline_at", "new_deadline_at", "at") for e in view.extensions
        ],
        reminders_sent={
            r["before_seconds"]: with_instants(r, "due_at", "at") for r in view.reminders_sent
        },
        scheduled_for=instant((view.origin or {}).get("scheduled_for")),
        form_json=json.dumps(view.form_data, ensure_ascii=False, indent=2),
    )
    return page, status


def _view(principal: Principal, instance_id: str) -> ApprovalRow:
    """The instance as it stands now (another tenant's, or none: NotFound, a 404 page)."""
    return services().approvals.view(principal.tenant_id, instance_id)


# -- what the pages show ------------------------------------------------------


def parties(view: ApprovalRow) -> Parties:
    """Who asked for the instance (as `ApprovalInstance.parties` reads it)."""
    saver = view.origin.get("saved_by") if view.origin else None
    return Parties(view.applicant_id, view.origin is not None, saver, view.allow_self_approval)


def may(principal: Principal, view: ApprovalRow, kind: str) -> bool:
    """Whether the page offers `kind`: the instance waits and the rule would not refuse the
    caller outright (permissions, withdraw-your-own, self-approval: the domain's rules)."""
    if view.state != WAITING_REVIEW:
        return False
    refused = refusal_of(
        Command(kind, None), principal.account_id, parties(view), principal.permissions
    )
    if refused is not None:
        return False
    return kind != APPROVE or approval_interest(principal, view) is None


def approval_interest(principal: Principal, view: ApprovalRow) -> str | None:
    """Why the caller may not approve this instance (the self-approval rule), in words, or None."""
    interest = parties(view).interest_of(principal.account_id)
    return None if interest is None else reason_words(interest.code, interest.params, None)


def lost_to_another(result: CommandResult, sent: Command | None) -> bool:
    """The command found the instance decided by another command (a race lost)."""
    winner = result.winning_command
    if result.accepted or winner is None or sent is None:
        return False
    return winner.get("command_id") != sent.command_id


def time_left(deadline: datetime, now: datetime) -> str:
    """How long until the deadline: "in 2 h 5 min", or "overdue" once it has come."""
    minutes = int((deadline - now).total_seconds()) // 60
    if deadline <= now:
        return str(_("overdue"))
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    if days:
        return str(_("in %(days)d d %(hours)d h", days=days, hours=hours))
    if hours:
        return str(_("in %(hours)d h %(minutes)d min", hours=hours, minutes=minutes))
    if minutes:
        return str(_("in %(minutes)d min", minutes=minutes))
    return str(_("in under a minute"))


def new_command_id() -> str:
    """A form's command id: sending the same form twice is one command, answered twice."""
    return f"console-{uuid.uuid4()}"


def aware_text(text: str) -> str:
    """A datetime-local value as an instant in the viewer's zone; other text as typed (an
    instant with its offset is kept, and the schema reports anything it cannot read)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return text
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=viewer_zone())
    return moment.isoformat()


def whole_number(text: str) -> int | str:
    """A form's number as the API's strict integer fields take it; other text as typed."""
    return int(text) if text.isascii() and text.isdigit() else text


def instant(text: Any) -> datetime | None:
    """An instant the service wrote as text (ISO 8601), as a datetime; None if absent."""
    if isinstance(text, datetime):
        return text
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def with_instants(item: dict[str, Any], *names: str) -> dict[str, Any]:
    return {**item, **{name: instant(item.get(name)) for name in names}}


def _messages(error: ValidationError) -> dict[str, list[str]]:
    messages = error.messages
    if not isinstance(messages, dict):
        return {"_schema": [str(m) for m in messages]}
    return {
        name: [str(m) for m in (v if isinstance(v, list) else [v])] for name, v in messages.items()
    }


def _status(error: DomainError) -> int:
    return STATUS_OF_CODE.get(error.code, 409)
