"""A reviewer's tasks (我的待办 / 待领取 / 我已处理): the approvals area opens here.

Each list is `GET /api/tasks` in a page; a reviewer picks tasks and claims them, or approves
or rejects them all with one comment, each as its own command through the one rule (each
recorded), and reads what each got.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from flask import Blueprint, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext
from marshmallow import ValidationError

from cronledger.application.bulk import DONE, MAX_BULK, REFUSED, UNCHANGED
from domain.approvals import APPROVE, CLAIM, REJECT, Command
from domain.directory import Principal
from domain.errors import DomainError, NotFound, ValidationFailed
from domain.permissions import APPROVAL_LIST
from projections.approvals import ApprovalRow
from projections.tasks import ASSIGNED_TO_ME, CLAIMABLE, DECIDED, SCOPES, TASK_LISTINGS
from web.api import services
from web.console.access import signed_in
from web.console.approvals import time_left
from web.console.bulk import Picked, ReportRow, code_label, picked, refusal_detail
from web.console.clock import viewer_zone, zone_name
from web.console.code_words import OUTCOME_LABELS
from web.console.lists import account_names, list_view
from web.console.reason_words import reason_words
from web.schemas.tasks import TaskListQuery

bp = Blueprint("tasks", __name__, url_prefix="/tasks")

SCOPE_LABELS = {
    ASSIGNED_TO_ME: lazy_gettext("My tasks"),
    CLAIMABLE: lazy_gettext("To claim"),
    DECIDED: lazy_gettext("Decided by me"),
}
MAX_COMMENT = 2000  # as the API's comments


@bp.get("/")
@signed_in(APPROVAL_LIST)
def index(principal: Principal) -> tuple[str, int]:
    return _page(principal, request.args.get("scope", ASSIGNED_TO_ME))


def _page(
    principal: Principal,
    scope: str,
    results: list[ReportRow] | None = None,
    errors: dict[str, list[str]] | None = None,
    status: int = 200,
) -> tuple[str, int]:
    try:
        query = TaskListQuery().load({"scope": scope})
    except ValidationError:
        query = TaskListQuery().load({})
    asked = {**request.args.to_dict(), "scope": query["scope"]}  # a form's answer keeps it
    view = list_view(TASK_LISTINGS[query["scope"]], ".index", args=asked)
    page, counts = services().approvals.tasks(principal, query["scope"], view.window)
    people = {task.applicant_id for task in page.items} | {
        task.assignee_id for task in page.items if task.assignee_id
    }
    return render_template(
        "console/tasks/index.html",
        scope=query["scope"],
        scopes=[(s, SCOPE_LABELS[s], counts[s], url_for(".index", scope=s)) for s in SCOPES],
        page=page,
        view=view.found(page),
        names=account_names(principal, people),
        now=services().ledger.clock(),
        zone=zone_name(viewer_zone()),
        time_left=time_left,
        results=results,
        errors=errors or {},
        batch=uuid4().hex,
    ), status


@bp.post("/decide")
@signed_in(APPROVAL_LIST)
def decide(principal: Principal) -> tuple[str, int]:
    """Approve or reject every picked task with the one comment, each its own command through
    the instance's one rule (each recorded, a refusal too); what each got is listed."""
    kind = REJECT if request.form.get("decision") == REJECT else APPROVE
    comment = request.form.get("comment", "").strip()
    chosen = _picked()
    if chosen.errors:
        return _page(principal, ASSIGNED_TO_ME, errors=chosen.errors, status=422)
    if kind == REJECT and not 1 <= len(comment) <= MAX_COMMENT:
        refused = str(_("Rejecting needs a comment of 1 to 2,000 characters."))
        return _page(principal, ASSIGNED_TO_ME, errors={"comment": [refused]}, status=422)
    results = [_sent(principal, key, kind, comment) for key in chosen.ids]
    return _page(principal, ASSIGNED_TO_ME, results)


@bp.post("/claim")
@signed_in(APPROVAL_LIST)
def claim(principal: Principal) -> tuple[str, int]:
    """Claim every picked task, each its own command (as the task's Claim button sends it)."""
    chosen = _picked()
    if chosen.errors:
        return _page(principal, CLAIMABLE, errors=chosen.errors, status=422)
    results = [_sent(principal, key, CLAIM, "") for key in chosen.ids]
    return _page(principal, CLAIMABLE, results)


def _picked() -> Picked:
    return picked(
        "instance_id",
        _("Pick at least one task."),
        _("Pick at most %(count)s tasks at a time.", count=MAX_BULK),
    )


def _sent(principal: Principal, instance_id: str, kind: str, comment: str) -> ReportRow:
    """What the command on one instance got: its command id is the form's batch and the
    command's kind, so the same form sent twice is answered, not decided, again."""
    href = url_for("console.approvals.detail", instance_id=instance_id)
    try:
        view = services().approvals.view(principal.tenant_id, instance_id)
    except NotFound as missing:
        return _refused(instance_id, instance_id, None, missing)
    command = Command(kind, _command_id(kind), _payload(kind, view, comment))
    try:
        result = services().approvals.command(principal, instance_id, command)
    except DomainError as error:  # refused before deciding, e.g. not allowed (recorded too)
        return _refused(instance_id, view.title, href, error)
    words = str(OUTCOME_LABELS.get(result.outcome, result.outcome))
    detail = reason_words(result.reason_code, result.reason_params, result.reason)
    outcome = UNCHANGED if result.replayed else DONE if result.accepted else REFUSED
    title = result.instance.title
    return ReportRow(instance_id, title, href, outcome, words, result.outcome, detail)


def _payload(kind: str, view: ApprovalRow, comment: str) -> dict[str, Any]:
    """An approve or a reject names the instance's material version as it is now (the list
    shows none), and the comment."""
    if kind == CLAIM:
        return {}
    payload: dict[str, Any] = {"material_version": view.material_version}
    if comment:
        payload["comment"] = comment
    return payload


def _command_id(kind: str) -> str:
    batch = request.form.get("batch", "")[:64] or uuid4().hex
    return f"console-{batch}-{kind}"


def _refused(key: str, name: str, href: str | None, error: DomainError) -> ReportRow:
    errors = error.errors if isinstance(error, ValidationFailed) else {}
    detail = refusal_detail(error.message, errors)
    return ReportRow(key, name, href, REFUSED, code_label(error.code), error.code, detail)
