"""A reason's words in the viewer's language, made from its code and parameters
(domain/reason_codes.py, and a launch's errors in domain/launch.py); a reason recorded before
its parameters were kept (approvals before release 0.11.0, a run's errors before 0.12.0) is
shown in the words it was recorded with."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from flask_babel import gettext
from markupsafe import Markup

from domain import jobs, launch
from domain import reason_codes as codes
from domain.runs import INTERRUPTED
from domain.schedules import AUTO_PAUSED
from web.console.clock import local_text

INSTANTS = ("deadline", "at", "since")  # parameters that hold an instant, as ISO 8601 text

WORDS: dict[str, Callable[..., str]] = {
    codes.APPROVED_IN_TIME: lambda: gettext("approved before the deadline"),
    codes.WITHDRAWN_IN_TIME: lambda: gettext("withdrawn before the deadline"),
    codes.CALLBACK_OBSERVED: lambda: gettext("callback recorded as an observation"),
    codes.DEADLINE_NOT_DUE: lambda: gettext("the deadline has not come"),
    codes.DEADLINE_PASSED: lambda deadline, at: gettext(
        "the review deadline %(deadline)s had passed at %(at)s", deadline=deadline, at=at
    ),
    codes.DEADLINE_EXTENDED: lambda reason: reason,  # the reviewer's own words
    codes.ALREADY_DECIDED: lambda state: gettext("the instance is already %(state)s", state=state),
    codes.PERMISSION_MISSING: lambda actor, permission: gettext(
        "%(actor)s lacks the permission %(permission)s", actor=actor, permission=permission
    ),
    codes.NOT_THE_APPLICANT: lambda: gettext("only the applicant may withdraw an instance"),
    codes.SELF_APPROVAL_APPLICANT: lambda actor: gettext(
        "no self-approval: %(actor)s is the instance's applicant", actor=actor
    ),
    codes.SELF_APPROVAL_SCHEDULE_SAVER: lambda actor: gettext(
        "no self-approval: %(actor)s last saved the schedule that launched the instance",
        actor=actor,
    ),
    codes.SELF_APPROVAL_SAVER_UNKNOWN: lambda: gettext(
        "no self-approval: the launch did not record who saved the schedule, so nobody may approve"
    ),
    codes.MATERIAL_STALE: lambda offered, current: gettext(
        "material version %(offered)s is not the current %(current)s",
        offered=offered,
        current=current,
    ),
    codes.CONTRACT_MISMATCH: lambda offered, bound: gettext(
        "contract %(offered)s is not the instance's %(bound)s", offered=offered, bound=bound
    ),
    codes.EXTENSION_NOT_LATER: lambda deadline: gettext(
        "the new deadline must be later than the current one, %(deadline)s", deadline=deadline
    ),
    codes.EXTENSION_TOO_FAR: lambda: gettext("the new deadline must be within 30 days of now"),
    codes.NOT_A_REVIEWER: lambda actor: gettext(
        "%(actor)s is not a reviewer of this instance", actor=actor
    ),
    codes.NOT_THE_ASSIGNEE: lambda command: gettext(
        "only the task's assignee or an admin may %(command)s it", command=command
    ),
    codes.CLAIMED_BY_OTHER: lambda assignee: gettext(
        "the task is claimed by %(assignee)s", assignee=assignee
    ),
    codes.REVIEWER_INELIGIBLE: lambda account: gettext(
        "%(account)s may not review this instance", account=account
    ),
    codes.CLAIMED_IN_TIME: lambda: gettext("the task was claimed"),
    codes.UNCLAIMED_IN_TIME: lambda: gettext("the task may be claimed again"),
    codes.REASSIGNED_IN_TIME: lambda assignee: gettext(
        "the task was reassigned to %(assignee)s", assignee=assignee
    ),
    codes.REJECTED_IN_TIME: lambda: gettext("rejected before the deadline"),
    codes.COMMENTED_IN_TIME: lambda: gettext("comment added"),
    codes.ASSIGNEE_MAY_NOT_DECIDE: lambda account: gettext(
        "%(account)s may no longer decide (deactivated, or without the permission): "
        "the task may be claimed again",
        account=account,
    ),
    codes.DEADLINE_PAUSED: lambda reason: reason,  # the words of whoever paused the clock
    codes.DEADLINE_RESUMED: lambda reason: reason,
    codes.CLOCK_ALREADY_PAUSED: lambda since: gettext(
        "the review clock is already paused since %(since)s", since=since
    ),
    codes.CLOCK_NOT_PAUSED: lambda: gettext("the review clock is not paused"),
    codes.CLOCK_RESUMED_AT_MAX_PAUSE: lambda max_pause_seconds: gettext(
        "the review clock resumed by itself after the longest pause, %(seconds)s s",
        seconds=max_pause_seconds,
    ),
    codes.RETURNED_FOR_CHANGES: lambda: gettext("returned to the applicant for changes"),
    codes.INSTANCE_RETURNED: lambda state: gettext(
        "the instance was returned to its applicant for changes"
    ),
    codes.NOT_WAITING_FOR_REVIEW: lambda state: gettext(
        "the instance is %(state)s, not waiting for review", state=state
    ),
    codes.APPROVAL_COUNTED: lambda level, required, approvals: gettext(
        "approval %(approvals)s of %(required)s counted on level %(level)s",
        approvals=approvals,
        required=required,
        level=level,
    ),
    codes.REJECTION_COUNTED: lambda level, required, possible: gettext(
        "a reject counted on level %(level)s: %(possible)s approvals are still possible of "
        "%(required)s",
        level=level,
        possible=possible,
        required=required,
    ),
    codes.ALREADY_VOTED_ON_LEVEL: lambda actor, level: gettext(
        "%(actor)s already decided or holds a task on level %(level)s: each needs a distinct "
        "reviewer",
        actor=actor,
        level=level,
    ),
    codes.TASK_CLOSED: lambda task_id: gettext(
        "task %(task_id)s is already closed", task_id=task_id
    ),
    codes.LEVEL_CANNOT_REACH: lambda level, required, possible: gettext(
        "level %(level)s can no longer reach %(required)s approvals (%(possible)s still possible)",
        level=level,
        required=required,
        possible=possible,
    ),
    codes.MATERIAL_REVISED: lambda old, new, reason: gettext(
        "material revised from version %(old)s to %(new)s: %(reason)s",
        old=old,
        new=new,
        reason=reason,
    ),
    codes.MATERIAL_NOT_NEWER: lambda offered, current: gettext(
        "material version %(offered)s must be greater than the current %(current)s",
        offered=offered,
        current=current,
    ),
    codes.NOT_THE_APPLICANT_REVISE: lambda: gettext("only the applicant may revise the material"),
    codes.RESUBMITTED_AS: lambda instance_id: gettext(
        "resubmitted as %(instance_id)s", instance_id=instance_id
    ),
    codes.NOT_RESUBMITTABLE: lambda state: gettext(
        "only a withdrawn, expired or rejected instance may be resubmitted; this one is %(state)s",
        state=state,
    ),
    codes.ALREADY_RESUBMITTED: lambda instance_id: gettext(
        "the instance was already resubmitted as %(instance_id)s", instance_id=instance_id
    ),
    codes.RESUBMIT_BY_APPLICANT_ONLY: lambda: gettext(
        "only the applicant may resubmit an instance"
    ),
    codes.CANCELLATION_REQUESTED_AS: lambda instance_id: gettext(
        "cancellation requested as %(instance_id)s", instance_id=instance_id
    ),
    codes.NOT_APPROVED: lambda state: gettext(
        "only an approved instance may be cancelled; this one is %(state)s", state=state
    ),
    codes.NO_CANCELLATION_DEFINITION: lambda: gettext(
        "the instance's definition names no cancellation definition, so it cannot be cancelled"
    ),
    codes.CANCELLATION_PENDING: lambda instance_id: gettext(
        "a cancellation is already requested: %(instance_id)s", instance_id=instance_id
    ),
    codes.ALREADY_CANCELLED: lambda instance_id: gettext(
        "the instance was already cancelled by %(instance_id)s", instance_id=instance_id
    ),
    codes.CANCELLATION_BY_APPLICANT_ONLY: lambda: gettext(
        "only the applicant may request an instance's cancellation"
    ),
    launch.INITIATOR_NOT_FOUND: lambda: gettext("the initiator is not in the tenant"),
    launch.INITIATOR_INACTIVE: lambda subject: gettext(
        "initiator %(subject)s is inactive", subject=subject
    ),
    launch.INITIATOR_NOT_PERMITTED: lambda subject: gettext(
        "initiator %(subject)s may not submit approval instances", subject=subject
    ),
    launch.DEFINITION_NOT_FOUND: lambda: gettext("the definition is not in the tenant"),
    launch.DEFINITION_UNPUBLISHED: lambda subject: gettext(
        "definition %(subject)s is unpublished", subject=subject
    ),
    launch.DEFINITION_EXTERNAL: lambda subject: gettext(
        "definition %(subject)s is external: its business system starts it", subject=subject
    ),
    launch.SAVER_INACTIVE: lambda: gettext("the account that saved the schedule is inactive"),
    launch.SAVER_NOT_PERMITTED: lambda subject: gettext(
        "account %(subject)s, which saved the schedule, may no longer edit schedules",
        subject=subject,
    ),
    launch.NO_ELIGIBLE_REVIEWER: lambda: gettext(
        "the definition's reviewers name nobody who may approve this instance"
    ),
    launch.NOT_ENOUGH_REVIEWERS: lambda level, found, required: gettext(
        "level %(level)s has %(found)s eligible reviewer(s); it requires %(required)s approvals",
        level=level,
        found=found,
        required=required,
    ),
    INTERRUPTED: lambda: gettext("the worker's lease ran out"),
    AUTO_PAUSED: lambda count, runs: gettext(
        "%(count)s cycle(s) in a row ended without launching: %(runs)s", count=count, runs=runs
    ),
    jobs.JOB_TIMEOUT: lambda seconds: gettext(
        "the job did not finish within %(seconds)s s", seconds=seconds
    ),
    jobs.JOB_FAILED: lambda: gettext("the job stopped on an unexpected error"),
    jobs.JOB_CHANGED: lambda kind: gettext("the schedule no longer runs %(kind)s", kind=kind),
    jobs.STORE_UNAVAILABLE: lambda: gettext("the store did not answer"),
    jobs.LOOP_STOPPED: lambda loops: gettext(
        "loop(s) %(loops)s stopped or missed their heartbeat", loops=loops
    ),
    jobs.AUDIT_BROKEN: lambda position: gettext(
        "the log fails its verification at position %(position)s", position=position
    ),
    jobs.NO_SIGNING_KEY: lambda: gettext("this process has no signing key"),
    jobs.WEBHOOK_NOT_FOUND: lambda: gettext("the webhook subscription is not in the tenant"),
    jobs.WEBHOOK_DISABLED: lambda: gettext("the webhook subscription is disabled"),
    jobs.WEBHOOK_UNREACHABLE: lambda: gettext("the receiver gave no answer in time"),
    jobs.WEBHOOK_REFUSED: lambda status: gettext("the receiver answered %(status)s", status=status),
}


def reason_words(code: str | None, params: Mapping[str, Any] | None, recorded: str | None) -> str:
    """The reason in the viewer's language; the recorded words for one without a code (or a
    code this release does not know), marked as recorded (`as_recorded`)."""
    said = WORDS.get(code or "")
    if said is None or (params is None and recorded is not None):
        return as_recorded(recorded) if recorded else ""
    given = {name: _shown(name, value) for name, value in (params or {}).items()}
    mismatches = given.pop(codes.MISMATCHES, None) or []
    text = str(said(**given))
    if mismatches:
        listed = "; ".join(reason_words(m["code"], m["params"], None) for m in mismatches)
        text = str(gettext("%(reason)s; mismatch: %(mismatches)s", reason=text, mismatches=listed))
    return text


def _shown(name: str, value: Any) -> Any:
    """A parameter as the reason shows it: an instant in the viewer's zone, the rest as kept."""
    if name not in INSTANTS or not isinstance(value, str):
        return value
    try:
        instant = datetime.fromisoformat(value)
    except ValueError:
        return value
    return local_text(instant) if instant.tzinfo else value


def as_recorded(words: str) -> Markup:
    """Words an earlier release recorded, shown as they were and marked so: …（原文）. The
    service's own words then were English (`lang="en"`); a person's may be in any language."""
    language = ' lang="en"' if words.isascii() else ""
    shown = Markup(f'<span class="as-recorded"{language}>%s</span>') % words  # noqa: S704
    return Markup(gettext("%(words)s (as recorded)")) % {"words": shown}  # noqa: S704
