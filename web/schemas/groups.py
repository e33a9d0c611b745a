"""Shapes of groups (部门/用户组) (docs/api.md#groups)."""

from __future__ import annotations

from typing import Any

from marshmallow import fields

from domain.directory import PUBLIC_ID
from domain.groups import GROUP_KEY, GROUP_KEY_RULE, MAX_GROUP_NAME, MAX_MEMBERS
from projections.groups import GROUP_LISTING
from web.schemas import validate
from web.schemas.base import (
    OutSchema,
    PageQuery,
    StrictSchema,
    UtcDateTime,
    merge_patch_of,
    replacing,
    search_field,
    server_uuid,
    sort_choices,
    sort_field,
    with_reason,
)


def _key_field(**kwargs: Any) -> fields.String:
    return fields.String(
        validate=validate.Regexp(f"^{GROUP_KEY.pattern}$", error=GROUP_KEY_RULE), **kwargs
    )


class GroupFieldsIn(StrictSchema):
    name = fields.String(required=True, validate=validate.Length(1, MAX_GROUP_NAME))
    members = fields.List(
        fields.String(validate=validate.Regexp(PUBLIC_ID)),
        load_default=list,
        validate=validate.Length(max=MAX_MEMBERS),
        metadata={"description": "account ids of the tenant, each once"},
    )
    leader_id = fields.String(
        validate=validate.Regexp(PUBLIC_ID),
        allow_none=True,
        load_default=None,
        metadata={"description": "one of the members; null: the group has no leader"},
    )
    parent_key = _key_field(
        allow_none=True,
        load_default=None,
        metadata={
            "description": "the key of the live group this one belongs under; null: a top "
            "group. Parents never form a cycle"
        },
    )


class GroupCreate(GroupFieldsIn):
    key = _key_field(
        required=True,
        metadata={"description": "unique among the tenant's live groups; never changes"},
    )


GroupUpdate = with_reason(replacing(GroupFieldsIn, "GroupUpdate"))

GroupPatch = merge_patch_of(GroupUpdate, "GroupPatch", GroupFieldsIn)


GROUP_SORT = sort_choices("GroupSort", GROUP_LISTING)


class GroupQuery(PageQuery):
    q = search_field("key or name")
    sort = sort_field(GROUP_SORT)


class GroupOut(OutSchema):
    id = server_uuid()
    key = fields.String()
    name = fields.String()
    members = fields.List(fields.String(), metadata={"description": "account ids, sorted"})
    leader_id = fields.String(allow_none=True)
    parent_key = fields.String(allow_none=True)
    created_at = UtcDateTime(
        metadata={"description": "when the group was created (its key created again: then)"}
    )
    updated_at = UtcDateTime(metadata={"description": "when the group last changed"})
    version = fields.Integer()
