"""Schedules (定时任务) over HTTP (docs/api.md, docs/time.md)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, request

from cronledger.application.idempotency import once
from cronledger.application.schedules import PolicyMove, Preview, ScheduleAnswer
from cronledger.persistence.ledger import TimelineEntry
from domain.directory import Principal
from domain.errors import ValidationFailed
from domain.idempotency import CREATE_SCHEDULE, KeyedRequest
from domain.messages import Message
from domain.permissions import (
    AUDIT_READ,
    SCHEDULE_CREATE,
    SCHEDULE_DELETE,
    SCHEDULE_EDIT,
    SCHEDULE_LIST,
)
from projections.schedules import SCHEDULE_LISTING, SCHEDULE_ORDER, ScheduleFilter
from web.api import Answered, Either, MergePatch, endpoint, json_object, services
from web.command_keys import Replays
from web.exports import DOWNLOAD, asked, exported
from web.freshness import read_models_ready
from web.idempotency import keyed_request, replay_headers
from web.paging import listed, window
from web.schemas.audit import TimelineOut
from web.schemas.base import ReasonBody, VersionQuery, VersionReasonBody, defaults_of, page_of
from web.schemas.schedules import (
    LATER_FIELDS,
    OverlapMoveIn,
    OverlapMovesOut,
    PreviewIn,
    PreviewOut,
    SavedPreviewQuery,
    ScheduleExportQuery,
    ScheduleFieldsIn,
    ScheduleFromPresetIn,
    ScheduleListQuery,
    ScheduleOut,
    SchedulePatch,
    ScheduleUpdate,
)

bp = Blueprint("schedules", __name__, url_prefix="/api/workflows/schedules")
TAG = "schedules"


def _schedule(principal: Principal, schedule_id: str) -> ScheduleAnswer:
    """The schedule as a write finds it: what its If-Match and merge patch compare, and what a
    repeated create answers (from the log, as the write's answer is)."""
    return services().schedules.from_log(principal.tenant_id, schedule_id)


def _meaning(fields: dict[str, Any], principal: Principal, **path: str) -> None:
    """The rules of meaning of a schedule's fields (or of one from a preset)."""
    if "preset_id" in json_object():
        services().schedules.check_preset_fields(principal, fields)
    else:
        services().schedules.check_fields(principal, fields)


@bp.post("")
@endpoint(
    "Create a schedule (disabled unless `enabled` is true), or one from a definition's preset",
    tag=TAG,
    permission=SCHEDULE_CREATE,
    body=Either("preset_id", ScheduleFromPresetIn, ScheduleFieldsIn),
    versioned=True,
    response=ScheduleOut,
    status=201,
    location="/api/workflows/schedules/{id}",
    idempotent=True,
    meaning=_meaning,
)
def create_schedule(principal: Principal, body: dict[str, Any]) -> Answered:
    request = keyed_request(principal, CREATE_SCHEDULE)
    created = once(
        lambda: _create(principal, body, request),
        lambda schedule_id: _schedule(principal, schedule_id),
    )
    return Answered(created.value, 201, replay_headers(created.replayed))


def _create(
    principal: Principal, body: dict[str, Any], request: KeyedRequest | None
) -> ScheduleAnswer:
    schedules = services().schedules
    if "preset_id" in body:
        return schedules.create_from_preset(
            principal,
            body["definition_id"],
            body["preset_id"],
            body["initiator_id"],
            body["name"],
            request,
        )
    return schedules.create(principal, schedules.settings_from(body), body["enabled"], request)


@bp.get("")
@endpoint(
    "List schedules",
    tag=TAG,
    permission=SCHEDULE_LIST,
    query=ScheduleListQuery,
    response=page_of(ScheduleOut),
)
def list_schedules(principal: Principal, query: dict[str, Any]) -> Answered:
    page = services().schedules.list_page(
        principal.tenant_id, schedule_filter_of(query), window(query, SCHEDULE_LISTING)
    )
    return listed(page, SCHEDULE_ORDER, ScheduleOut)


@bp.get("/export")
@endpoint(
    "The schedules as a file (CSV or XLSX): the list's filters and search, oldest created "
    "first, at most 100,000; recorded in the operations audit",
    tag=TAG,
    permission=SCHEDULE_LIST,
    query=ScheduleExportQuery,
    download=DOWNLOAD,
)
def export_schedules(principal: Principal, query: dict[str, Any]) -> Response:
    read_models_ready(services())
    wanted = schedule_filter_of(query)
    return exported(services().exports.schedules(principal, wanted, asked(query, request.args)))


def schedule_filter_of(query: dict[str, Any]) -> ScheduleFilter:
    """The schedules' filters, as the list's query (or its export's) loaded them."""
    return ScheduleFilter(
        query["name"],
        query["enabled"],
        query["definition_id"],
        query["initiator_id"],
        query["overlap_policy"],
        query["group"],
        query["name_contains"],
    )


@bp.post("/preview")
@endpoint(
    "The next fire times of a trigger, in UTC and in local time",
    tag=TAG,
    permission=SCHEDULE_LIST,
    body=PreviewIn,
    response=PreviewOut,
    keyless=True,
)
def preview_trigger(principal: Principal, body: dict[str, Any]) -> Preview:
    return services().schedules.preview(
        body["trigger"],
        body["timezone"],
        body["count"],
        body["after"],
        principal.tenant_id,
        (body["calendar"], body["calendar_rule"]),
    )


@bp.post("/move-overlap-policy")
@endpoint(
    "Save schedules with another overlap policy, each as an ordinary edit: the step that moves "
    "schedules saved with `skip` (now `skip_while_open`) to the default `skip_while_launching`",
    tag=TAG,
    permission=SCHEDULE_EDIT,
    body=OverlapMoveIn,
    response=OverlapMovesOut,
    keyless=True,
)
def move_overlap_policy(principal: Principal, body: dict[str, Any]) -> dict[str, list[PolicyMove]]:
    moves = services().schedules.move_overlap_policy(
        principal, body["schedule_ids"], body["overlap_policy"]
    )
    return {"items": moves}


@bp.get("/<schedule_id>")
@endpoint(
    "Read a schedule", tag=TAG, permission=SCHEDULE_LIST, versioned=True, response=ScheduleOut
)
def get_schedule(principal: Principal, schedule_id: str) -> ScheduleAnswer:
    return services().schedules.view(principal.tenant_id, schedule_id)


@bp.get("/<schedule_id>/preview")
@endpoint(
    "The next fire times of a saved schedule's trigger, enabled or not",
    tag=TAG,
    permission=SCHEDULE_LIST,
    query=SavedPreviewQuery,
    response=PreviewOut,
)
def preview_schedule(principal: Principal, schedule_id: str, query: dict[str, Any]) -> Preview:
    return services().schedules.saved_preview(
        principal.tenant_id, schedule_id, query["count"], query["after"]
    )


@bp.put("/<schedule_id>")
@endpoint(
    "Replace a schedule's settings: every settable field is required",
    tag=TAG,
    permission=SCHEDULE_EDIT,
    body=ScheduleUpdate,
    versioned=_schedule,
    response=ScheduleOut,
    meaning=_meaning,
)
def update_schedule(principal: Principal, schedule_id: str, body: dict[str, Any]) -> ScheduleAnswer:
    return _replace(principal, schedule_id, body)


def _replace(principal: Principal, schedule_id: str, body: dict[str, Any]) -> ScheduleAnswer:
    """The fields given; those added after the PUT was published, left out of a PUT (an
    older client's), as they are (the version checked with the write makes sure they are what
    was read)."""
    schedules = services().schedules
    if not set(LATER_FIELDS) <= body.keys():
        current = _schedule(principal, schedule_id)
        body = {**{field: getattr(current, field) for field in LATER_FIELDS}, **body}
    return schedules.update(
        principal, schedule_id, schedules.settings_from(body), body["enabled"], body["version"]
    )


@bp.patch("/<schedule_id>")
@endpoint(
    "Change some of a schedule's settings (JSON Merge Patch), saved as a PUT of the result",
    tag=TAG,
    permission=SCHEDULE_EDIT,
    body=MergePatch(
        ScheduleOut, ScheduleUpdate, SchedulePatch, defaults_of(ScheduleFieldsIn), _schedule
    ),
    versioned=_schedule,
    response=ScheduleOut,
    meaning=_meaning,
)
def patch_schedule(principal: Principal, schedule_id: str, body: dict[str, Any]) -> ScheduleAnswer:
    return _replace(principal, schedule_id, body)


@bp.post("/<schedule_id>/enable")
@endpoint(
    "Enable a schedule: its first fire is strictly after now",
    tag=TAG,
    permission=SCHEDULE_EDIT,
    body=VersionReasonBody,
    versioned=_schedule,
    response=ScheduleOut,
    idempotent=Replays(_schedule),
)
def enable_schedule(principal: Principal, schedule_id: str, body: dict[str, Any]) -> ScheduleAnswer:
    return services().schedules.set_enabled(
        principal, schedule_id, True, body.get("version"), body["reason"]
    )


@bp.post("/<schedule_id>/disable")
@endpoint(
    "Disable a schedule: it stops planning",
    tag=TAG,
    permission=SCHEDULE_EDIT,
    body=VersionReasonBody,
    versioned=_schedule,
    response=ScheduleOut,
    idempotent=Replays(_schedule),
)
def disable_schedule(
    principal: Principal, schedule_id: str, body: dict[str, Any]
) -> ScheduleAnswer:
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
    versioned=_schedule,
    status=204,
)
def delete_schedule(
    principal: Principal, schedule_id: str, query: dict[str, Any], body: dict[str, Any]
) -> None:
    if query["version"] is None:  # If-Match names it when sent
        raise ValidationFailed.of("version", Message("send ?version=N or an If-Match header"))
    services().schedules.delete(principal, schedule_id, query["version"], body["reason"])


@bp.get("/<schedule_id>/timeline")
@endpoint("Every event of the schedule", tag=TAG, permission=AUDIT_READ, response=TimelineOut)
def schedule_timeline(principal: Principal, schedule_id: str) -> dict[str, list[TimelineEntry]]:
    return {"items": services().schedules.timeline(principal.tenant_id, schedule_id)}
