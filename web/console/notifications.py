"""The console's notifications: the signed-in person's own notices, newest first, in their
language, each marked read with one button; the shell's bell shows how many are unread."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Blueprint, redirect, render_template, url_for
from flask_babel import gettext as _
from werkzeug.wrappers import Response

from domain.directory import Principal
from domain.notices import (
    APPLICATION_DECIDED,
    CALLBACK_LATE_OR_MISMATCHED,
    DEADLINE_ASSUMED,
    LEVEL_BLOCKED,
    TASK_ASSIGNED,
    TASK_CLAIMABLE,
    TASK_ESCALATED_AWAY,
    TASK_ESCALATED_TO,
    TASK_REMINDER,
)
from domain.permissions import APPROVAL_LIST
from projections.notifications import NOTIFICATION_LISTING, NotificationRow
from web.api import services
from web.console.access import signed_in
from web.console.lists import list_view

bp = Blueprint("notifications", __name__, url_prefix="/notifications")
PAGE_SIZE = 50


@bp.get("/")
@signed_in(APPROVAL_LIST)
def index(principal: Principal) -> str:
    view = list_view(NOTIFICATION_LISTING, size=PAGE_SIZE)
    inbox = services().notifications.inbox(principal, view.window)
    return render_template(
        "console/notifications/index.html",
        inbox=inbox,
        view=view.found(inbox.page),
        words=notice_words,
    )


@bp.post("/<notification_id>/read")
@signed_in(APPROVAL_LIST)
def read(principal: Principal, notification_id: str) -> Response:
    services().notifications.mark_read(principal, notification_id)
    return redirect(url_for(".index"))


def notice_words(notice: NotificationRow) -> str:
    """What a notice says, in the page's language, from its kind and params."""
    params: dict[str, Any] = notice.params
    if notice.kind == APPLICATION_DECIDED:
        outcome = {
            "APPROVED": _("approved"),
            "REJECTED": _("rejected"),
            "WITHDRAWN": _("withdrawn"),
            "EXPIRED": _("expired"),
        }.get(params["outcome"], params["outcome"])
        return str(
            _(
                "Your application %(title)s was %(outcome)s (%(actor)s).",
                title=params["title"],
                outcome=outcome,
                actor=params["actor"],
            )
        )
    if notice.kind == CALLBACK_LATE_OR_MISMATCHED:
        if params["late"]:
            return str(_("A signing callback on %(title)s came late.", title=params["title"]))
        return str(_("A signing callback on %(title)s did not match it.", title=params["title"]))
    task_words = TASK_WORDS.get(notice.kind)
    if task_words is not None:
        return task_words(params)
    return str(_("A new notice (%(kind)s).", kind=notice.kind))


TASK_WORDS: dict[str, Callable[[dict[str, Any]], str]] = {
    TASK_ASSIGNED: lambda p: str(
        _("%(actor)s handed you %(title)s to review.", actor=p["actor"], title=p["title"])
    ),
    TASK_CLAIMABLE: lambda p: str(_("%(title)s may be claimed.", title=p["title"])),
    TASK_REMINDER: lambda p: str(_("%(title)s is due soon.", title=p["title"])),
    LEVEL_BLOCKED: lambda p: str(
        _(
            "Level %(level)s of %(title)s can no longer reach %(required)s approvals.",
            level=p["level"],
            title=p["title"],
            required=p["required"],
        )
    ),
    DEADLINE_ASSUMED: lambda p: str(
        _(
            "Calendar %(calendar)s does not cover the year: the deadline of %(title)s was "
            "counted on weekdays only.",
            calendar=p["calendar"],
            title=p["title"],
        )
    ),
    TASK_ESCALATED_TO: lambda p: str(
        _("%(title)s waited too long and was escalated to you.", title=p["title"])
    ),
    TASK_ESCALATED_AWAY: lambda p: str(
        _("%(title)s waited too long and went to %(target)s.", title=p["title"], target=p["target"])
    ),
}
