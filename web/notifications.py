"""A person's own notices over HTTP (docs/api.md#notifications).

Every role whose accounts notices reach (requester, operator, auditor, admin) holds
`workflow:approval:list`: the notices are about approval instances, so that is the permission
an inbox asks for. Integration accounts hold only the callback permission: no person reads them.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from domain.directory import Principal
from domain.permissions import APPROVAL_LIST
from projections.notifications import NOTIFICATION_LISTING, NOTIFICATION_ORDER, NotificationRow
from web.api import Answered, endpoint, services
from web.command_keys import Replays
from web.paging import listed, window
from web.schemas.notifications import NotificationListQuery, NotificationOut, NotificationPage

bp = Blueprint("notifications", __name__, url_prefix="/api/notifications")
TAG = "notifications"


@bp.get("")
@endpoint(
    "List the caller's own notices, newest first, with how many are unread",
    tag=TAG,
    permission=APPROVAL_LIST,
    query=NotificationListQuery,
    response=NotificationPage,
)
def list_notifications(principal: Principal, query: dict[str, Any]) -> Answered:
    inbox = services().notifications.inbox(
        principal, window(query, NOTIFICATION_LISTING), unread_only=query["unread"]
    )
    answered = listed(inbox.page, NOTIFICATION_ORDER, NotificationOut)
    answered.body["unread"] = inbox.unread
    return answered


def _read(principal: Principal, notification_id: str) -> NotificationRow:
    """The notice as a repeated read answers it (read as of the first time)."""
    return services().notifications.mark_read(principal, notification_id)


@bp.post("/<notification_id>/read")
@endpoint(
    "Mark one of the caller's notices read (again: it stays read as of the first time)",
    tag=TAG,
    permission=APPROVAL_LIST,
    response=NotificationOut,
    idempotent=Replays(_read),
)
def read_notification(principal: Principal, notification_id: str) -> NotificationRow:
    return services().notifications.mark_read(principal, notification_id)
