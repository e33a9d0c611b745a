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

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext
from marshmallow import Schema, ValidationError
from werkzeug.wrappers import Response

from cronledger.application.approvals import CommandResult
from domain.approvals import (
    APPROVE,
    APPROVED,
    CANCELLED,
    CLAIM,
    COMMENT,
    EXPIRED,
    EXTEND,
    PAUSE,
    REASSIGN,
    REFUSED,
    REJECT,
    REJECTED,
    REQUEST_CANCELLATION,
    REQUESTED,
    RESUBMIT,
    RESUBMITTABLE,
    RESUME,
    RETURN,
    RETURNED,
    REVIEWING,
    REVISE,
    SIGN,
    SWEEP,
    UNCLAIM,
    WAITING_REVIEW,
    WITHDRAW,
    WITHDRAWN,
    Command,
    Parties,
    Review,
    offset_minutes_of,
    refusal_of,
)
from domain.directory import Principal
from domain.errors import DomainError, ValidationFailed
from domain.levels import current_task_id
from domain.permissions import APPROVAL_LIST, DIRECTORY_MANAGE
from domain.reviewers import (
    ASSIGNED,
    BY_ANYONE,
    BY_CANDIDATE,
    CLOSED,
    FIRST_TASK,
    HIGH,
    NORMAL,
    OPEN,
    Task,
)
from projections.approvals import APPROVAL_LISTING, ApprovalFilter, ApprovalRow
from web.api import as_message, services
from web.console.access import signed_in
from web.console.clock import relative, typed_instant, viewer_zone, zone_name
from web.console.code_words import OUTCOME_LABELS
from web.console.lists import (
    account_names,
    definition_names,
    list_view,
    read_picker,
    schedule_names,
)
from web.console.live import caught_up, live_url, shown_position
from web.console.reason_words import reason_words
from web.console.runs import TRIGGER_LABELS
from web.freshness import wanted_position
from web.paging import window
from web.problems import STATUS_OF_CODE, Problem
from web.schemas.approvals import (
    ApprovalListQuery,
    ApproveIn,
    ClaimIn,
    ClockIn,
    CommentIn,
    ExtendDeadlineIn,
    ReassignIn,
    RejectIn,
    RequestCancellationIn,
    ResubmitIn,
    ReturnIn,
    ReviseIn,
    WithdrawIn,
)

bp = Blueprint("approvals", __name__, url_prefix="/approvals")

STATES = (WAITING_REVIEW, RETURNED, APPROVED, REJECTED, WITHDRAWN, EXPIRED)
STATE_LABELS = {
    WAITING_REVIEW: lazy_gettext("Waiting for review"),
    RETURNED: lazy_gettext("Returned for changes"),
    APPROVED: lazy_gettext("Approved"),
    REJECTED: lazy_gettext("Rejected"),
    WITHDRAWN: lazy_gettext("Withdrawn"),
    EXPIRED: lazy_gettext("Expired"),
}
COMMAND_LABELS = {
    APPROVE: lazy_gettext("approve"),
    WITHDRAW: lazy_gettext("withdraw"),
    EXTEND: lazy_gettext("extend the deadline"),
    SIGN: lazy_gettext("signing callback"),
    SWEEP: lazy_gettext("deadline expiry"),
    REJECT: lazy_gettext("reject"),
    CLAIM: lazy_gettext("claim"),
    UNCLAIM: lazy_gettext("unclaim"),
    REASSIGN: lazy_gettext("reassign"),
    COMMENT: lazy_gettext("comment"),
    PAUSE: lazy_gettext("pause the clock"),
    RESUME: lazy_gettext("resume the clock"),
    RETURN: lazy_gettext("return for changes"),
    REVISE: lazy_gettext("revise the material"),
    RESUBMIT: lazy_gettext("resubmit"),
    REQUEST_CANCELLATION: lazy_gettext("request cancellation"),
}
LEVEL_STATES = {
    "waiting": lazy_gettext("not reached"),
    "open": lazy_gettext("in review"),
    "completed": lazy_gettext("passed"),
    "failed": lazy_gettext("failed"),
}
# An approved instance's cancellation, as its page says it (docs/approvals.md).
CANCELLATION_LABELS = {
    REQUESTED: lazy_gettext("requested"),
    CANCELLED: lazy_gettext("cancelled"),
    REFUSED: lazy_gettext("not approved"),
}
PAUSE_KINDS = {"pause": lazy_gettext("paused"), "return": lazy_gettext("returned")}
# What a RETURNED instance's page still offers (as the rule's WHILE_RETURNED).
WHILE_RETURNED = frozenset({WITHDRAW, COMMENT, REVISE})
TASK_STATES = {
    OPEN: lazy_gettext("claimable"),
    ASSIGNED: lazy_gettext("claimed"),
    CLOSED: lazy_gettext("closed"),
}
PRIORITIES = {NORMAL: lazy_gettext("normal"), HIGH: lazy_gettext("high")}
DEADLINE_SOURCES = {
    "definition": lazy_gettext("the definition's review window"),
    "explicit": lazy_gettext("given at submission"),
    "extended": lazy_gettext("extended"),
}
FILTERS = ("state", "applicant_id", "definition_id", "schedule_id", "deadline_from", "deadline_to")
INSTANTS = ("deadline_from", "deadline_to")
PAGING = ("q", "sort", "page", "page_size")
PICKED = {"applicant_id": "accounts", "definition_id": "definitions", "schedule_id": "schedules"}
ANY_STATE = ""  # the state filter's "any" choice
# The command forms' fields a message is shown beside.
FIELDS = ("new_deadline_at", "reason", "comment", "assignee_id", "material_version", "form_data")
BEHIND = "inbox-behind"  # the event that has the inbox fetch its rows again (index.html)


@bp.context_processor
def _labels() -> dict[str, Any]:
    return {
        "state_label": lambda state: STATE_LABELS.get(state, state),
        "outcome_label": lambda outcome: OUTCOME_LABELS.get(outcome, outcome),
        "command_label": lambda kind: COMMAND_LABELS.get(kind, kind),
        "deadline_source": lambda source: DEADLINE_SOURCES.get(source, source),
        "task_state_label": lambda state: TASK_STATES.get(state, state),
        "priority_label": lambda priority: PRIORITIES.get(priority, priority),
        "level_state_label": lambda state: LEVEL_STATES.get(state, state),
        "cancellation_label": lambda state: CANCELLATION_LABELS.get(state, state),
        "time_left": time_left,
        "trigger_labels": TRIGGER_LABELS,
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
    view = list_view(APPROVAL_LISTING, ".index", args=_kept(chosen), blank_kept=("state",))
    shown, picked_errors = _read_pickers(principal, chosen)
    query, errors = _inbox_query(chosen)
    errors = {**errors, **picked_errors}
    page = None
    if query is not None and not errors:
        wanted = ApprovalFilter(**{name: query[name] for name in FILTERS})
        page = services().approvals.list_page(
            principal.tenant_id, wanted, window(query, APPROVAL_LISTING)
        )
        view = view.found(page)
    items = page.items if page else []
    found = {
        "page": page,
        "view": view,
        "chosen": chosen,
        "shown": shown,
        "errors": errors,
        "now": services().ledger.clock(),
        "zone": zone_name(viewer_zone()),
        "applicants": account_names(principal, {item.applicant_id for item in items}),
        "schedules": schedule_names(principal, {_origin(item, "schedule_id") for item in items}),
        "may": lambda view, kind: may(principal, view, kind),
        "new_command_id": new_command_id,
    }
    return found, 422 if errors else 200


def _origin(item: ApprovalRow, name: str) -> str:
    """The schedule or run that launched the instance (blank if none did)."""
    return str((item.origin or {}).get(name) or "")


def _read_pickers(
    principal: Principal, chosen: dict[str, str]
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The pickers' filters as picked or typed (an id, or a name looked up): their values go
    to `chosen`; the names they show, and what matched nothing, are returned."""
    shown, errors = {}, {}
    for name, kind in PICKED.items():
        found = read_picker(principal, kind, chosen.get(name, ""))
        shown[name] = found.shown
        if found.problem:
            errors[name] = [found.problem]
        elif found.value:
            chosen[name] = found.value
    return shown, errors


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


# -- an instance --------------------------------------------------------------


@bp.get("/<instance_id>")
@signed_in(APPROVAL_LIST)
def detail(principal: Principal, instance_id: str) -> tuple[str, int]:
    return _detail(principal, _view(principal, instance_id))


COMMAND_PAGES = (
    "approve, withdraw, extend, reject, claim, unclaim, reassign, comment, pause, resume, return, "
    "revise, resubmit, 'request-cancellation'"
)


@bp.get(f"/<instance_id>/<any({COMMAND_PAGES}):action>")
def after_command(instance_id: str, action: str) -> Response:
    """A command's address opened again (a bookmark, a reload after the answer): the page."""
    return redirect(url_for(".detail", instance_id=instance_id))


@bp.post("/<instance_id>/approve")
@signed_in(APPROVAL_LIST)  # as the API: a caller who sees it may ask; the service decides
def approve(principal: Principal, instance_id: str) -> tuple[str, int]:
    return _command(principal, instance_id, APPROVE, ApproveIn, _decision_form())


@bp.post("/<instance_id>/reject")
@signed_in(APPROVAL_LIST)
def reject(principal: Principal, instance_id: str) -> tuple[str, int]:
    return _command(principal, instance_id, REJECT, RejectIn, _decision_form())


@bp.post("/<instance_id>/<any(claim, unclaim):action>")
@signed_in(APPROVAL_LIST)
def claim(principal: Principal, instance_id: str, action: str) -> tuple[str, int]:
    body = {"command_id": request.form.get("command_id", "")}
    return _command(principal, instance_id, action, ClaimIn, body)


@bp.post("/<instance_id>/reassign")
@signed_in(APPROVAL_LIST)
def reassign(principal: Principal, instance_id: str) -> tuple[str, int]:
    assignee = read_picker(principal, "accounts", request.form.get("assignee_id", ""))
    body = {
        "command_id": request.form.get("command_id", ""),
        "assignee_id": assignee.value or assignee.shown,
        "reason": request.form.get("reason", "").strip(),
    }
    return _command(principal, instance_id, REASSIGN, ReassignIn, body)


@bp.post("/<instance_id>/comment")
@signed_in(APPROVAL_LIST)
def comment(principal: Principal, instance_id: str) -> tuple[str, int]:
    body = {
        "command_id": request.form.get("command_id", ""),
        "comment": request.form.get("comment", "").strip(),
    }
    return _command(principal, instance_id, COMMENT, CommentIn, body)


@bp.post("/<instance_id>/revise")
@signed_in(APPROVAL_LIST)
def revise(principal: Principal, instance_id: str) -> tuple[str, int]:
    """The applicant's revise: a greater material version, why, and the form data (JSON, or
    left empty to keep it)."""
    typed = request.form.get("form_data", "").strip()
    body: dict[str, Any] = {
        "command_id": request.form.get("command_id", ""),
        "material_version": whole_number(request.form.get("material_version", "")),
        "reason": request.form.get("reason", "").strip(),
    }
    if typed:
        try:
            body["form_data"] = json.loads(typed)
        except ValueError:
            errors = {"form_data": [_('not JSON: write an object such as {"amount": 100}')]}
            view = _view(principal, instance_id)
            return _detail(principal, view, errors=errors, typed=request.form, status=422)
    return _command(principal, instance_id, REVISE, ReviseIn, body)


@bp.post("/<instance_id>/resubmit")
@signed_in(APPROVAL_LIST)
def resubmit(principal: Principal, instance_id: str) -> tuple[str, int] | Response:
    body = {
        "command_id": request.form.get("command_id", ""),
        "reason": request.form.get("reason", "").strip(),
        "material_version": whole_number(request.form.get("material_version", "")),
    }
    return _link(principal, instance_id, RESUBMIT, ResubmitIn, body)


@bp.post("/<instance_id>/request-cancellation")
@signed_in(APPROVAL_LIST)
def request_cancellation(principal: Principal, instance_id: str) -> tuple[str, int] | Response:
    body = {
        "command_id": request.form.get("command_id", ""),
        "reason": request.form.get("reason", "").strip(),
    }
    return _link(principal, instance_id, REQUEST_CANCELLATION, RequestCancellationIn, body)


def _link(
    principal: Principal, instance_id: str, kind: str, schema: type[Schema], body: dict[str, Any]
) -> tuple[str, int] | Response:
    """A resubmit or a cancellation request: the new instance's page when accepted, else this
    one's with what the command got."""
    view = _view(principal, instance_id)
    try:
        loaded = schema().load({k: v for k, v in body.items() if v != ""})
    except ValidationError as error:
        return _detail(principal, view, errors=_messages(error), typed=request.form, status=422)
    payload = {k: v for k, v in loaded.items() if k != "command_id"}
    command = Command(kind, loaded["command_id"], payload)
    try:
        linked = services().approvals.link(principal, instance_id, command)
    except DomainError as error:  # an unpublished definition, or not allowed (recorded)
        fresh = _view(principal, instance_id)
        return _detail(principal, fresh, problem=error.message, status=_status(error))
    if linked.linked is None:
        result = linked.command
        return _detail(principal, result.instance, result=result, sent=command, status=409)
    flash(str(LINKED_NOTICE[kind]), "good")
    return redirect(url_for(".detail", instance_id=linked.linked.id), 303)


LINKED_NOTICE = {
    RESUBMIT: lazy_gettext("Resubmitted: this is the new application."),
    REQUEST_CANCELLATION: lazy_gettext("Cancellation requested: this is its application."),
}


def _decision_form() -> dict[str, Any]:
    """An approve's or a reject's form: the material version seen, and the comment typed."""
    return {
        "command_id": request.form.get("command_id", ""),
        "material_version": whole_number(request.form.get("material_version", "")),
        "comment": request.form.get("comment", "").strip(),
    }


@bp.post("/<instance_id>/<any(pause, resume):action>")
@signed_in(APPROVAL_LIST)
def clock(principal: Principal, instance_id: str, action: str) -> tuple[str, int]:
    """Pause or resume the review clock, with the reason typed."""
    body = {
        "command_id": request.form.get("command_id", ""),
        "reason": request.form.get("reason", "").strip(),
    }
    return _command(principal, instance_id, PAUSE if action == "pause" else RESUME, ClockIn, body)


@bp.post("/<instance_id>/return")
@signed_in(APPROVAL_LIST)
def send_back(principal: Principal, instance_id: str) -> tuple[str, int]:
    """Return the instance to its applicant for changes (退回), with the comment typed."""
    body = {
        "command_id": request.form.get("command_id", ""),
        "comment": request.form.get("comment", "").strip(),
    }
    return _command(principal, instance_id, RETURN, ReturnIn, body)


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
        zone=zone_name(viewer_zone()),
        may=lambda kind: may(principal, view, kind),
        not_yours=approval_interest(principal, view),
        new_command_id=new_command_id,
        observations=[with_instants(o, "occurred_at", "recorded_at") for o in view.observations],
        extensions=[
            with_instants(e, "old_deadline_at", "new_deadline_at", "at") for e in view.extensions
        ],
        pauses=[
            with_instants(p, "from", "to", "old_deadline_at", "new_deadline_at")
            for p in view.pauses
        ],
        pause_kind=lambda kind: PAUSE_KINDS.get(kind, kind),
        paused_minutes=round(view.paused_seconds / 60),
        reminders_sent={
            r["before_seconds"]: with_instants(r, "due_at", "at") for r in view.reminders_sent
        },
        scheduled_for=instant((view.origin or {}).get("scheduled_for")),
        comments=[with_instants(c, "at") for c in view.comments],
        levels=[
            {**level, "votes": [with_instants(v, "at") for v in level["votes"]]}
            for level in view.review_levels
        ],
        shown_tasks=current_tasks(view),
        people=account_names(principal, _people(view)),
        definitions=definition_names(principal, [view.definition_id]),
        schedules=schedule_names(principal, [_origin(view, "schedule_id")]),
        form_json=json.dumps(view.form_data, ensure_ascii=False, indent=2),
        may_link=lambda kind: may_link(principal, view, kind),
    )
    return page, status


def _people(view: ApprovalRow) -> set[str]:
    """Whom the instance's page names: its applicant, and its tasks' assignees and
    candidates."""
    people = {view.applicant_id, *(vote["actor"] for vote in view.votes)}
    for task in view.tasks:
        people.update(task.get("candidates") or ())
        if task.get("assignee_id"):
            people.add(task["assignee_id"])
    return people


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
    caller outright (permissions, reviewers, who holds the task, withdraw-your-own,
    self-approval: the domain's rules, with the task's candidates as the reviewers)."""
    if view.state != WAITING_REVIEW and not (view.state == RETURNED and kind in WHILE_RETURNED):
        return False
    if kind in (PAUSE, RESUME) and (view.paused_since is None) != (kind == PAUSE):
        return False
    review = review_of(principal, view)
    refused = refusal_of(
        Command(kind, None), principal.account_id, parties(view), principal.permissions, review
    )
    if refused is not None:
        return False
    if kind in REVIEWING and review.task.held_by_other(principal.account_id):
        return False
    if kind == CLAIM and review.task.assignee_id == principal.account_id:
        return False
    if kind in REVIEWING and voted_on_level(principal, view):
        return False
    return kind not in REVIEWING or approval_interest(principal, view) is None


def voted_on_level(principal: Principal, view: ApprovalRow) -> bool:
    """Whether the caller's vote already counts on the current level (one per reviewer)."""
    return any(
        v["actor"] == principal.account_id and v["level"] == view.current_level and not v["lapsed"]
        for v in view.votes
    )


def current_tasks(view: ApprovalRow) -> list[dict[str, Any]]:
    """The tasks of the level under review (every task, once the instance is decided)."""
    if view.state != WAITING_REVIEW:
        return [t for t in view.tasks if t.get("level", 1) == view.current_level]
    return [
        t for t in view.tasks if t.get("level", 1) == view.current_level and t["state"] != CLOSED
    ]


def may_link(principal: Principal, view: ApprovalRow, kind: str) -> bool:
    """Whether the page offers a resubmit (a decided instance not yet resubmitted, but an
    approved one) or a cancellation request (an approved instance whose definition names a
    cancellation definition, with no cancellation requested or done): to its applicant."""
    refused = refusal_of(
        Command(kind, None), principal.account_id, parties(view), principal.permissions
    )
    if refused is not None:
        return False
    if kind == RESUBMIT:
        return view.state in RESUBMITTABLE and view.resubmitted_as is None
    if view.state != APPROVED or (view.cancellation or {}).get("state") in (REQUESTED, CANCELLED):
        return False
    definition = services().directory.find_definition(principal.tenant_id, view.definition_id)
    return definition is not None and definition.cancellation_definition is not None


def review_of(principal: Principal, view: ApprovalRow) -> Review:
    """The review as the page can tell it: the caller is a reviewer when the task names them
    (or names nobody: an instance from before reviewers)."""
    chosen = current_task_id(view.tasks, view.current_level, principal.account_id)
    found = [t for t in view.tasks if t["id"] == chosen]
    task = Task.of(found[0]) if found else Task(FIRST_TASK, None)
    if task.candidates is None:
        admission: dict[str, str] | None = {"rule": BY_ANYONE}
    else:
        admission = {"rule": BY_CANDIDATE} if principal.account_id in task.candidates else None
    return Review(
        task,
        admission,
        admin=DIRECTORY_MANAGE in principal.permissions,
    )


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
    """How long until the deadline ("in 2 hours", "2小时后"), or "overdue" once it has come."""
    if deadline <= now:
        return str(_("overdue"))
    return relative(deadline, now)


def new_command_id() -> str:
    """A form's command id: sending the same form twice is one command, answered twice."""
    return f"console-{uuid.uuid4()}"


def aware_text(text: str) -> str:
    """A datetime-local value as an instant in the viewer's zone; other text as typed (an
    instant with its offset is kept, and the schema reports anything it cannot read)."""
    try:
        return typed_instant(text).isoformat()
    except ValueError:
        return text


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
        return {"_schema": [as_message(m) for m in messages]}
    return {
        name: [as_message(m) for m in (v if isinstance(v, list) else [v])]
        for name, v in messages.items()
    }


def _status(error: DomainError) -> int:
    return STATUS_OF_CODE.get(error.code, 409)
