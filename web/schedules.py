"""Schedules (定时发起) over HTTP (docs/api.md, docs/time.md)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from cronledger.application.directory import Page
from cronledger.application.schedules import Preview, ScheduleView
from cronledger.persistence.ledger import TimelineEntry
from domain.directory import Principal
from domain.permissions import (
    AUDIT_READ,
    SCHEDULE_CREATE,
    SCHEDULE_DELETE,
    SCHEDULE_EDIT,
    SCHEDULE_LIST,
)
from projections.schedules import ScheduleFilter
from web.api import Either, MergePatch, endpoint, services
from web.schemas import (
    PreviewIn,
    PreviewOut,
    ReasonBody,
    SavedPreviewQuery,
    ScheduleFieldsIn,
    ScheduleFromPresetIn,
    ScheduleListQuery,
    ScheduleOut,
    SchedulePatch,
    ScheduleUpdate,
    TimelineOut,
    VersionQuery,
    VersionReasonBody,
    defaults_of,
    page_of,
)

bp = Blueprint("schedules", __name__, url_prefix="/api/workflows/schedules")
TAG = "schedules"


@bp.post("")
@endpoint(
    "Create a schedule (disabled unless `enabled` is true), or one from a definition's preset",
    tag=TAG,
    permission=SCHEDULE_CREATE,
    body=Either("preset_id", ScheduleFromPresetIn, ScheduleFieldsIn),
    response=ScheduleOut,
    status=201,
)
def create_schedule(principal: Principal, body: dict[str, Any]) -> ScheduleView:
    schedules = services().schedules
    if "preset_id" in body:
        return schedules.create_from_preset(
            principal, body["definition_id"], body["preset_id"], body["initiator_id"], body["name"]
        )
    return schedules.create(principal, schedules.settings_from(body), body["enabled"])


@bp.get("")
@endpoint(
    "List schedules",
    tag=TAG,
    permission=SCHEDULE_LIST,
    query=ScheduleListQuery,
    response=page_of(ScheduleOut),
)
def list_schedules(principal: Principal, query: dict[str, Any]) -> Page[ScheduleView]:
    wanted = ScheduleFilter(
        query["name"], query["enabled"], query["definition_id"], query["initiator_id"]
    )
    return services().schedules.list_page(
        principal.tenant_id, wanted, query["page"], query["page_size"]
    )


@bp.post("/preview")
@endpoint(
    "The next fire times of a trigger, in UTC and in local time",
    tag=TAG,
    permission=SCHEDULE_LIST,
    body=PreviewIn,
    response=PreviewOut,
)
def preview(principal: Principal, body: dict[str, Any]) -> Preview:
    return services().schedules.preview(
        body["trigger"], body["timezone"], body["count"], body["after"]
    )


@bp.get("/<schedule_id>")
@endpoint("Read a schedule", tag=TAG, permission=SCHEDULE_LIST, response=ScheduleOut)
def get_schedule(principal: Principal, schedule_id: str) -> ScheduleView:
    return services().schedules.view(principal.tenant_id, schedule_id)


@bp.get("/<schedule_id>/preview")
@endpoint(
    "The next fire times of a saved schedule's trigger, enabled or not",
    tag=TAG,
    permission=SCHEDULE_LIST,
    query=SavedPreviewQuery,
    response=PreviewOut,
)
def saved_preview(principal: Principal, schedule_id: str, query: dict[str, Any]) -> Preview:
    return services().schedules.saved_preview(
        principal.tenant_id, schedule_id, query["count"], query["after"]
    )


@bp.put("/<schedule_id>")
@endpoint(
    "Replace a schedule's settings: every settable field is required",
    tag=TAG,
    permission=SCHEDULE_EDIT,
    body=ScheduleUpdate,
    response=ScheduleOut,
)
def update_schedule(principal: Principal, schedule_id: str, body: dict[str, Any]) -> ScheduleView:
    return _replace(principal, schedule_id, body)


def _replace(principal: Principal, schedule_id: str, body: dict[str, Any]) -> ScheduleView:
    schedules = services().schedules
    return schedules.update(
        principal, schedule_id, schedules.settings_from(body), body["enabled"], body["version"]
    )


def _schedule(principal: Principal, schedule_id: str) -> ScheduleView:
    return services().schedules.view(principal.tenant_id, schedule_id)


@bp.patch("/<schedule_id>")
@endpoint(
    "Change some of a schedule's settings (JSON Merge Patch), saved as a PUT of the result",
    tag=TAG,
    permission=SCHEDULE_EDIT,
    body=MergePatch(
        ScheduleOut, ScheduleUpdate, SchedulePatch, defaults_of(ScheduleFieldsIn), _schedule
    ),
    response=ScheduleOut,
)
def patch_schedule(principal: Principal, schedule_id: str, body: dict[str, Any]) -> ScheduleView:
    return _replace(principal, schedule_id, body)


@bp.post("/<schedule_id>/enable")
@endpoint(
    "Enable a schedule: its first fire is strictly after now",
    tag=TAG,
    permission=SCHEDULE_EDIT,
    body=VersionReasonBody,
    response=ScheduleOut,
)
def enable_schedule(principal: Principal, schedule_id: str, body: dict[str, Any]) -> ScheduleView:
    return services().schedules.set_enabled(
        principal, schedule_id, True, body.get("version"), body["reason"]
    )


@bp.post("/<schedule_id>/disable")
@endpoint(
    "Disable a schedule: it stops planning",
    tag=TAG,
    permission=SCHEDULE_EDIT,
    body=VersionReasonBody,
    response=ScheduleOut,
)
def disable_schedule(principal: Principal, schedule_id: str, body: dict[str, Any]) -> ScheduleView:
    return services().schedules.set_enabled(
        principal, schedule_id, False, body.get("version"), body["reason"]
    )


@bp.delete("/<schedule_id>")
@endpoint(
    "Delete a schedule (its history stays readable)",
    tag=TAG,
    permission=SCHEDULE_DELETE,
    query=VersionQuery,
    body=ReasonBody,
    status=204,
)
def delete_schedule(
    principal: Principal, schedule_id: str, query: dict[str, Any], body: dict[str, Any]
) -> None:
    services().schedules.delete(principal, schedule_id, query["version"], body["reason"])


@bp.get("/<schedule_id>/timeline")
@endpoint("Every event of the schedule", tag=TAG, permission=AUDIT_READ, response=TimelineOut)
def schedule_timeline(principal: Principal, schedule_id: str) -> dict[str, list[TimelineEntry]]:
    return {"items": services().schedules.timeline(principal.tenant_id, schedule_id)}
