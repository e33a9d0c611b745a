"""A schedule's runs (定时发起的运行) over HTTP (docs/api.md#runs)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from cronledger.application.directory import Page
from cronledger.application.runs import RunView
from domain.directory import Principal
from domain.permissions import SCHEDULE_EDIT, SCHEDULE_LIST
from web.api import endpoint, services
from web.schemas import RunDetailOut, RunListQuery, RunNowIn, RunOut, VersionBody, page_of

bp = Blueprint("runs", __name__, url_prefix="/api/workflows/schedules/<schedule_id>")
TAG = "schedules"


@bp.post("/run")
@endpoint(
    "Run now: a manual cycle at the accepted time (the plan does not move)",
    tag=TAG,
    permission=SCHEDULE_EDIT,
    body=RunNowIn,
    response=RunDetailOut,
    status=202,
)
def run_now(principal: Principal, schedule_id: str, body: dict[str, Any]) -> RunView:
    return services().schedules.run_now(principal, schedule_id, body["request_id"])


@bp.get("/runs")
@endpoint(
    "The schedule's runs, newest planned first",
    tag=TAG,
    permission=SCHEDULE_LIST,
    query=RunListQuery,
    response=page_of(RunOut),
)
def list_runs(principal: Principal, schedule_id: str, query: dict[str, Any]) -> Page[RunView]:
    schedule = services().schedules.schedule(principal.tenant_id, schedule_id)
    return services().runs.list_page(
        schedule.id, query["status"], query["page"], query["page_size"]
    )


@bp.get("/runs/<run_id>")
@endpoint("A run with its attempts", tag=TAG, permission=SCHEDULE_LIST, response=RunDetailOut)
def get_run(principal: Principal, schedule_id: str, run_id: str) -> RunView:
    schedule = services().schedules.find(principal.tenant_id, schedule_id)
    return services().runs.view(principal.tenant_id, schedule.id, run_id)


@bp.post("/runs/<run_id>/retry")
@endpoint(
    "Retry a FAILED, DEAD_LETTER or CANCELLED run: a new round of attempts",
    tag=TAG,
    permission=SCHEDULE_EDIT,
    body=VersionBody,
    response=RunDetailOut,
    status=202,
)
def retry_run(principal: Principal, schedule_id: str, run_id: str, body: dict[str, Any]) -> RunView:
    schedule = services().schedules.find(principal.tenant_id, schedule_id)
    return services().runs.retry(principal, schedule.id, run_id, body.get("version"))


@bp.post("/runs/<run_id>/cancel")
@endpoint(
    "Cancel a PENDING or RETRY_WAIT run: no further attempts",
    tag=TAG,
    permission=SCHEDULE_EDIT,
    body=VersionBody,
    response=RunDetailOut,
    status=202,
)
def cancel_run(
    principal: Principal, schedule_id: str, run_id: str, body: dict[str, Any]
) -> RunView:
    schedule = services().schedules.find(principal.tenant_id, schedule_id)
    return services().runs.cancel(principal, schedule.id, run_id, body.get("version"))
