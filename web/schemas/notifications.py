"""Shapes of notifications (docs/api.md#notifications)."""

from __future__ import annotations

from marshmallow import fields

from domain.notices import KINDS
from projections.notifications import NOTIFICATION_LISTING
from web.schemas.base import (
    OutSchema,
    PageQuery,
    UtcDateTime,
    page_of,
    search_field,
    server_uuid,
    sort_choices,
    sort_field,
)

NOTIFICATION_SORT = sort_choices("NotificationSort", NOTIFICATION_LISTING)


class NotificationListQuery(PageQuery):
    q = search_field("instance's title")
    sort = sort_field(NOTIFICATION_SORT)
    unread = fields.Boolean(
        truthy={"true"},
        falsy={"false"},
        load_default=False,
        metadata={"description": "`true`: only the notices not read yet"},
    )


class NotificationOut(OutSchema):
    id = server_uuid(metadata={"description": "derived from the event and the account"})
    kind = fields.String(
        metadata={"description": f"what happened, as a stable code: {', '.join(KINDS)}"}
    )
    instance_id = fields.String(metadata={"description": "the approval instance it is about"})
    params = fields.Dict(
        keys=fields.String(),
        metadata={"description": "an open object: the values the kind's words name"},
    )
    created_at = UtcDateTime(metadata={"description": "when the event happened"})
    read_at = UtcDateTime(allow_none=True, metadata={"description": "null while unread"})


NotificationPage = page_of(
    NotificationOut,
    unread=fields.Integer(metadata={"description": "how many of all the caller's are unread"}),
)
