"""Groups (部门/用户组) over HTTP (docs/api.md#groups)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from cronledger.application.groups import GroupFields
from cronledger.application.idempotency import once
from cronledger.persistence.ledger import TimelineEntry
from domain.directory import Principal
from domain.idempotency import CREATE_GROUP
from domain.permissions import APPROVAL_LIST, AUDIT_READ, DIRECTORY_MANAGE
from projections.groups import GROUP_LISTING, GROUP_ORDER, GroupRow
from web.api import Answered, MergePatch, endpoint, services
from web.idempotency import keyed_request, replay_headers
from web.paging import listed, window
from web.schemas.audit import TimelineOut
from web.schemas.base import VersionReasonBody, defaults_of, page_of
from web.schemas.groups import (
    GroupCreate,
    GroupFieldsIn,
    GroupOut,
    GroupPatch,
    GroupQuery,
    GroupUpdate,
)

bp = Blueprint("groups", __name__, url_prefix="/api/groups")
TAG = "groups"


def _group(principal: Principal, group_id: str) -> GroupRow:
    """The group as a write reads it: from its log, never behind it."""
    return services().groups.current(principal.tenant_id, group_id)


def group_fields(body: dict[str, Any]) -> GroupFields:
    """A body as the service takes it (the console sends the same)."""
    return GroupFields(
        name=body["name"],
        members=body["members"],
        leader_id=body["leader_id"],
        parent_key=body["parent_key"],
    )


# What a group's fields stand in for when their own are not there to check the others by.
STAND_INS: dict[str, Any] = {"name": "-", "members": [], "leader_id": None, "parent_key": None}


def _meaning(fields: dict[str, Any], principal: Principal, group_id: str | None = None) -> None:
    """The rules a group's fields break, its own and those across the tenant, at once."""
    groups = services().groups
    key = fields.get("key", "") if group_id is None else _group(principal, group_id).key
    groups.check(principal.tenant_id, key, group_fields({**STAND_INS, **fields}))


@bp.post("")
@endpoint(
    "Create a group (a deleted group's key may be created again)",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=GroupCreate,
    idempotent=True,
    versioned=True,
    response=GroupOut,
    status=201,
    location="/api/groups/{id}",
    meaning=_meaning,
)
def create_group(principal: Principal, body: dict[str, Any]) -> Answered:
    keyed = keyed_request(principal, CREATE_GROUP)
    created = once(
        lambda: services().groups.create(principal, body["key"], group_fields(body), keyed),
        lambda group_id: _group(principal, group_id),
    )
    return Answered(created.value, 201, replay_headers(created.replayed))


@bp.get("")
@endpoint(
    "List the tenant's groups",
    tag=TAG,
    permission=APPROVAL_LIST,
    query=GroupQuery,
    response=page_of(GroupOut),
)
def list_groups(principal: Principal, query: dict[str, Any]) -> Answered:
    page = services().groups.groups(principal.tenant_id, window(query, GROUP_LISTING))
    return listed(page, GROUP_ORDER, GroupOut)


@bp.get("/<group_id>")
@endpoint("Read a group", tag=TAG, permission=APPROVAL_LIST, versioned=True, response=GroupOut)
def get_group(principal: Principal, group_id: str) -> GroupRow:
    return services().groups.group(principal.tenant_id, group_id)


@bp.get("/by-key/<key>")
@endpoint(
    "Read a group by its key",
    tag=TAG,
    permission=APPROVAL_LIST,
    versioned=True,
    response=GroupOut,
)
def get_group_by_key(principal: Principal, key: str) -> GroupRow:
    return services().groups.group_by_key(principal.tenant_id, key)


@bp.get("/<group_id>/timeline")
@endpoint("Every event of the group", tag=TAG, permission=AUDIT_READ, response=TimelineOut)
def group_timeline(principal: Principal, group_id: str) -> dict[str, list[TimelineEntry]]:
    return {"items": services().groups.timeline(principal.tenant_id, group_id)}


@bp.put("/<group_id>")
@endpoint(
    "Replace a group's fields (its key stays)",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=GroupUpdate,
    versioned=_group,
    response=GroupOut,
    meaning=_meaning,
)
def update_group(principal: Principal, group_id: str, body: dict[str, Any]) -> GroupRow:
    return _replace(principal, group_id, body)


def _replace(principal: Principal, group_id: str, body: dict[str, Any]) -> GroupRow:
    return services().groups.replace(
        principal, group_id, group_fields(body), body["version"], body.get("reason")
    )


@bp.patch("/<group_id>")
@endpoint(
    "Change some of a group's fields (JSON Merge Patch), saved as a PUT",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=MergePatch(GroupOut, GroupUpdate, GroupPatch, defaults_of(GroupFieldsIn), _group),
    versioned=_group,
    response=GroupOut,
    meaning=_meaning,
)
def patch_group(principal: Principal, group_id: str, body: dict[str, Any]) -> GroupRow:
    return _replace(principal, group_id, body)


@bp.delete("/<group_id>")
@endpoint(
    "Delete a group that no group names as its parent",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=VersionReasonBody,
    versioned=_group,
    status=204,
)
def delete_group(principal: Principal, group_id: str, body: dict[str, Any]) -> None:
    services().groups.delete(principal, group_id, body.get("version"), body["reason"])
