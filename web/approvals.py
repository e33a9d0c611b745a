"""Approval instances over HTTP (docs/approvals.md)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from flask import Blueprint
from marshmallow import Schema

from cronledger.application.approvals import CommandResult, LinkResult
from cronledger.persistence.ledger import TimelineEntry
from domain.approvals import (
    APPROVE,
    CLAIM,
    COMMENT,
    EXTEND,
    PAUSE,
    REASSIGN,
    REJECT,
    REQUEST_CANCELLATION,
    RESUBMIT,
    RESUME,
    RETURN,
    REVISE,
    SIGN,
    UNCLAIM,
    WITHDRAW,
    Command,
    Submission,
    offset_minutes_of,
)
from domain.directory import Principal
from domain.idempotency import KeyedRequest
from domain.messages import Message
from domain.permissions import (
    APPROVAL_CALLBACK,
    APPROVAL_DECIDE,
    APPROVAL_LIST,
    APPROVAL_SUBMIT,
    AUDIT_READ,
)
from domain.reason_codes import recorded_words
from projections.approvals import APPROVAL_LISTING, APPROVAL_ORDER, ApprovalFilter, ApprovalRow
from web.api import Answered, View, endpoint, services
from web.callback_sources import signed_callback, signed_delivery
from web.idempotency import replay_headers
from web.paging import listed, window
from web.preconditions import InService, etag, if_match_accepts
from web.problems import SOME_FIELDS_INVALID, Problem
from web.schemas.approvals import (
    ApprovalListQuery,
    ApprovalOut,
    ApprovalSubmit,
    ApproveIn,
    ClaimIn,
    ClockIn,
    CommandOut,
    CommandRejection,
    CommentIn,
    ExtendDeadlineIn,
    ReassignIn,
    RejectIn,
    RequestCancellationIn,
    ResubmitIn,
    ReturnIn,
    ReviseIn,
    SignCallbackIn,
    WithdrawIn,
)
from web.schemas.audit import TimelineOut
from web.schemas.base import page_of

bp = Blueprint("approvals", __name__, url_prefix="/api/approvals")
TAG = "approvals"


def _instance(principal: Principal, instance_id: str) -> ApprovalRow:
    return services().approvals.view(principal.tenant_id, instance_id)


# What a submission's fields stand in for when their own are not there to check the others by.
SUBMISSION_STAND_INS: dict[str, Any] = {
    "command_id": "-",
    "definition_id": "",
    "title": "-",
    "form_data": {},
    "material_version": 1,
    "review_deadline_at": None,
}


def _submission_meaning(fields: dict[str, Any], principal: Principal) -> None:
    """The rules a submission's fields break besides their shapes, at once."""
    given = {**SUBMISSION_STAND_INS, **fields}
    deadline, _ = _in_utc(given["review_deadline_at"])
    submission = Submission(**{**given, "review_deadline_at": deadline})
    services().approvals.check_submission(principal, submission)


@bp.post("")
@endpoint(
    "Submit an approval instance (a repeated command_id answers the first instance)",
    tag=TAG,
    permission=APPROVAL_SUBMIT,
    body=ApprovalSubmit,
    idempotent=True,
    versioned=True,
    response=ApprovalOut,
    status=201,
    location="/api/approvals/{id}",
    meaning=_submission_meaning,
)
def submit_approval(principal: Principal, body: dict[str, Any]) -> Answered:
    deadline, offset = _in_utc(body["review_deadline_at"])
    submission = Submission(
        **{**body, "review_deadline_at": deadline}, review_deadline_offset_minutes=offset
    )
    instance, replayed = services().approvals.submit(principal, submission)
    return Answered(instance, 201, replay_headers(replayed))


@bp.get("")
@endpoint(
    "List approval instances, newest first",
    tag=TAG,
    permission=APPROVAL_LIST,
    query=ApprovalListQuery,
    response=page_of(ApprovalOut),
)
def list_approvals(principal: Principal, query: dict[str, Any]) -> Answered:
    wanted = ApprovalFilter(
        state=query["state"],
        applicant_id=query["applicant_id"],
        definition_id=query["definition_id"],
        schedule_id=query["schedule_id"],
        deadline_from=query["deadline_from"],
        deadline_to=query["deadline_to"],
    )
    page = services().approvals.list_page(
        principal.tenant_id, wanted, window(query, APPROVAL_LISTING)
    )
    return listed(page, APPROVAL_ORDER, ApprovalOut)


@bp.get("/<instance_id>")
@endpoint(
    "Read an instance, with its observations",
    tag=TAG,
    permission=APPROVAL_LIST,
    versioned=True,
    response=ApprovalOut,
)
def get_approval(principal: Principal, instance_id: str) -> ApprovalRow:
    return _instance(principal, instance_id)


@bp.get("/<instance_id>/timeline")
@endpoint(
    "Every command the instance got, winners and losers",
    tag=TAG,
    permission=AUDIT_READ,
    response=TimelineOut,
)
def approval_timeline(principal: Principal, instance_id: str) -> dict[str, list[TimelineEntry]]:
    return {"items": services().approvals.timeline(principal.tenant_id, instance_id)}


def _in_utc(moment: datetime | None) -> tuple[datetime | None, int | None]:
    """A deadline as given: in UTC (as fingerprinted and stored), and the offset it had."""
    if moment is None:
        return None, None
    return moment.astimezone(UTC), offset_minutes_of(moment)


def _answer(
    principal: Principal,
    instance_id: str,
    kind: str,
    body: dict[str, Any],
    deadline_offset_minutes: int | None = None,
    keyed: KeyedRequest | None = None,
) -> Answered:
    payload = {k: v for k, v in body.items() if k != "command_id"}
    command = Command(kind, body["command_id"], payload, deadline_offset_minutes)
    result: CommandResult = services().approvals.command(
        principal, instance_id, command, if_match_accepts(), keyed
    )
    headers = {"ETag": etag(result.instance.version), **replay_headers(result.replayed)}
    _refuse(result, headers)
    return Answered(result, 200, headers)


def _refuse(result: CommandResult, headers: dict[str, str]) -> None:
    """A command that lost, answered as its problem (409) with what it got."""
    if not result.accepted:
        rejection = CommandRejection().dump({**vars(result), "approval": result.instance})
        why = recorded_words(result.reason_code, result.reason_params, result.reason)
        raise Problem("COMMAND_REJECTED", why, extensions=rejection, headers=headers)


def _linked(principal: Principal, instance_id: str, kind: str, body: dict[str, Any]) -> Answered:
    """A resubmit or a cancellation request: 201 with the instance it started (again, for a
    repeat), or 409 with what it got on the original."""
    payload = {k: v for k, v in body.items() if k != "command_id"}
    command = Command(kind, body["command_id"], payload)
    result: LinkResult = services().approvals.link(principal, instance_id, command)
    replayed = replay_headers(result.command.replayed)
    _refuse(result.command, {"ETag": etag(result.command.instance.version), **replayed})
    assert result.linked is not None  # an accepted command started it
    return Answered(result.linked, 201, replayed)


def _link_endpoint(summary: str, body: type[Schema]) -> Callable[[View], View]:
    """The declaration of the commands that start a linked instance (201 with it)."""
    return endpoint(
        summary,
        tag=TAG,
        permission=APPROVAL_SUBMIT,
        seen_with=APPROVAL_LIST,
        body=body,
        idempotent=True,
        response=ApprovalOut,
        status=201,
        location="/api/approvals/{id}",
    )


def _command_endpoint(
    summary: str, body: type[Schema], permission: str = APPROVAL_DECIDE, kind: str | None = None
) -> Callable[[View], View]:
    """The declaration every command on an instance shares: its summary, body and permission
    differ; a command of a `kind` with a rule of its own is checked by it with its shape."""
    return endpoint(
        summary,
        tag=TAG,
        permission=permission,
        seen_with=APPROVAL_LIST,
        body=body,
        idempotent=True,
        versioned=InService(_instance),
        response=CommandOut,
        meaning=None if kind is None else functools.partial(_command_meaning, kind=kind),
    )


def _command_meaning(
    fields: dict[str, Any], principal: Principal, instance_id: str, kind: str
) -> None:
    """The rule a command's fields break besides their shapes (nothing decided or recorded)."""
    payload = {**fields}
    if isinstance(payload.get("new_deadline_at"), datetime):
        payload["new_deadline_at"] = payload["new_deadline_at"].astimezone(UTC)
    services().approvals.check_command(principal, instance_id, kind, payload)


@bp.post("/<instance_id>/approve")
@_command_endpoint("Approve (200 APPROVED, or 409 with the losing outcome)", ApproveIn)
def approve(principal: Principal, instance_id: str, body: dict[str, Any]) -> Answered:
    return _answer(principal, instance_id, APPROVE, body)


@bp.post("/<instance_id>/withdraw")
@_command_endpoint("Withdraw your own instance", WithdrawIn, APPROVAL_SUBMIT)
def withdraw(principal: Principal, instance_id: str, body: dict[str, Any]) -> Answered:
    return _answer(principal, instance_id, WITHDRAW, body)


@bp.post("/<instance_id>/extend-deadline")
@_command_endpoint(
    "Move the deadline later (at most 30 days from now)", ExtendDeadlineIn, kind=EXTEND
)
def extend_deadline(principal: Principal, instance_id: str, body: dict[str, Any]) -> Answered:
    if ("new_deadline_at" in body) == ("working_days" in body):
        raise Problem(
            "VALIDATION_FAILED",
            SOME_FIELDS_INVALID,
            {"new_deadline_at": [Message("give new_deadline_at or working_days, not both")]},
        )
    if "working_days" in body:
        return _answer(principal, instance_id, EXTEND, body)
    deadline, offset = _in_utc(body["new_deadline_at"])
    return _answer(principal, instance_id, EXTEND, {**body, "new_deadline_at": deadline}, offset)


@bp.post("/<instance_id>/pause-deadline")
@_command_endpoint(
    "Pause the review clock (whoever may extend): no expiry, reminders nor escalation until "
    "resumed; reviewers still decide",
    ClockIn,
)
def pause_deadline(principal: Principal, instance_id: str, body: dict[str, Any]) -> Answered:
    return _answer(principal, instance_id, PAUSE, body)


@bp.post("/<instance_id>/resume-deadline")
@_command_endpoint(
    "Resume the review clock: the deadline, reminders and escalation move by the paused time",
    ClockIn,
)
def resume_deadline(principal: Principal, instance_id: str, body: dict[str, Any]) -> Answered:
    return _answer(principal, instance_id, RESUME, body)


@bp.post("/<instance_id>/return")
@_command_endpoint(
    "Return to the applicant for changes (退回), with a comment: RETURNED, the clock stopped",
    ReturnIn,
)
def return_for_changes(principal: Principal, instance_id: str, body: dict[str, Any]) -> Answered:
    return _answer(principal, instance_id, RETURN, body)


@bp.post("/<instance_id>/callbacks/sign")
@endpoint(
    "Record an external signing callback as an observation (signed, or with a token)",
    tag=TAG,
    permission=APPROVAL_CALLBACK,
    seen_with=APPROVAL_LIST,
    body=SignCallbackIn,
    idempotent=True,
    versioned=InService(_instance),
    response=CommandOut,
    verifier=signed_callback,
)
def sign_callback(principal: Principal, instance_id: str, body: dict[str, Any]) -> Answered:
    return _answer(principal, instance_id, SIGN, body, keyed=signed_delivery())


@bp.post("/<instance_id>/reject")
@_command_endpoint("Reject with a comment (200 REJECTED, or 409 with the losing outcome)", RejectIn)
def reject(principal: Principal, instance_id: str, body: dict[str, Any]) -> Answered:
    return _answer(principal, instance_id, REJECT, body)


@bp.post("/<instance_id>/revise")
@_command_endpoint(
    "Revise the material (the applicant): earlier approvals lapse, review back to level 1",
    ReviseIn,
    APPROVAL_SUBMIT,
    REVISE,
)
def revise(principal: Principal, instance_id: str, body: dict[str, Any]) -> Answered:
    payload = {**body, "form_data": body.get("form_data")}
    return _answer(principal, instance_id, REVISE, payload)


@bp.post("/<instance_id>/claim")
@_command_endpoint("Claim the review task: only its assignee may then decide", ClaimIn)
def claim(principal: Principal, instance_id: str, body: dict[str, Any]) -> Answered:
    return _answer(principal, instance_id, CLAIM, body)


@bp.post("/<instance_id>/unclaim")
@_command_endpoint(
    "Give the review task back to its candidates (the assignee, or an admin)", ClaimIn
)
def unclaim(principal: Principal, instance_id: str, body: dict[str, Any]) -> Answered:
    return _answer(principal, instance_id, UNCLAIM, body)


@bp.post("/<instance_id>/reassign")
@_command_endpoint(
    "Hand the review task to another eligible reviewer (the assignee, or an admin)",
    ReassignIn,
    kind=REASSIGN,
)
def reassign(principal: Principal, instance_id: str, body: dict[str, Any]) -> Answered:
    return _answer(principal, instance_id, REASSIGN, body)


@bp.post("/<instance_id>/resubmit")
@_link_endpoint(
    "Resubmit your withdrawn, expired or rejected instance as a new one (201 with it)", ResubmitIn
)
def resubmit(principal: Principal, instance_id: str, body: dict[str, Any]) -> Answered:
    return _linked(principal, instance_id, RESUBMIT, body)


@bp.post("/<instance_id>/request-cancellation")
@_link_endpoint(
    "Ask to cancel your approved instance: starts an instance of its definition's "
    "cancellation definition (201 with it)",
    RequestCancellationIn,
)
def request_cancellation(principal: Principal, instance_id: str, body: dict[str, Any]) -> Answered:
    return _linked(principal, instance_id, REQUEST_CANCELLATION, body)


@bp.post("/<instance_id>/comments")
@_command_endpoint(
    "Comment on a waiting instance (a reviewer, or its applicant)", CommentIn, APPROVAL_LIST
)
def comment(principal: Principal, instance_id: str, body: dict[str, Any]) -> Answered:
    return _answer(principal, instance_id, COMMENT, body)
