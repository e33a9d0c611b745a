"""The caller's tenant: pausing the tick for all its schedules, and its default calendar
(docs/api.md#the-tenant)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from cronledger.application.pauses import TenantView
from domain.directory import Principal
from domain.permissions import DIRECTORY_MANAGE, SCHEDULE_EDIT, SCHEDULE_LIST
from web.api import endpoint, services
from web.command_keys import Replays
from web.schemas.directory import DefaultCalendarBody, PauseBody, TenantOut

bp = Blueprint("tenant", __name__, url_prefix="/api/tenant")
OPERATIONS = "operations"


def _tenant(principal: Principal) -> TenantView:
    """The tenant as a repeated pause or resume answers it."""
    return services().pauses.tenant(principal.tenant_id)


@bp.get("")
@endpoint(
    "The caller's tenant: whether the tick holds its schedules",
    tag=OPERATIONS,
    permission=SCHEDULE_LIST,
    response=TenantOut,
)
def get_tenant(principal: Principal) -> TenantView:
    return services().pauses.tenant(principal.tenant_id)


@bp.post("/pause-schedules")
@endpoint(
    "Pause every schedule of the tenant: the tick registers none of its cycles until resumed",
    tag=OPERATIONS,
    permission=SCHEDULE_EDIT,
    body=PauseBody,
    response=TenantOut,
    idempotent=Replays(_tenant),
)
def pause_schedules(principal: Principal, body: dict[str, Any]) -> TenantView:
    return services().pauses.pause_tenant(principal, body["reason"])


@bp.post("/resume-schedules")
@endpoint(
    "Resume the tenant's schedules: cycles missed while paused follow each misfire policy",
    tag=OPERATIONS,
    permission=SCHEDULE_EDIT,
    body=PauseBody,
    response=TenantOut,
    idempotent=Replays(_tenant),
)
def resume_schedules(principal: Principal, body: dict[str, Any]) -> TenantView:
    return services().pauses.resume_tenant(principal, body["reason"])


@bp.put("/default-calendar")
@endpoint(
    "Choose the tenant's default working calendar, whose days analysts' tables are marked by",
    tag=OPERATIONS,
    permission=DIRECTORY_MANAGE,
    body=DefaultCalendarBody,
    response=TenantOut,
)
def choose_default_calendar(principal: Principal, body: dict[str, Any]) -> TenantView:
    return services().calendars.choose_default(principal, body["calendar"])
