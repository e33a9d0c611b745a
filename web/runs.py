"""Runs (定时发起的运行) over HTTP: a schedule's, and the tenant's execution log
(docs/api.md#runs)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from cronledger.application.directory import Page
from cronledger.application.runs import RunView
from cronledger.persistence.ledger import TimelineEntry
from domain.directory import Principal
from domain.permissions import AUDIT_READ, SCHEDULE_EDIT, SCHEDULE_LIST
from projections.runs import RunFilter
from web.api import endpoint, services
from web.schemas import (
    RunDetailOut,
    RunListQuery,
    RunLogQuery,
    RunNowIn,
    RunOut,
    TimelineOut,
    VersionReasonBody,
    page_of,
)

bp = Blueprint("runs", __name__, url_prefix="/api/workflows/schedules/<schedule_id>")
log_bp = Blueprint("run_log", __name__, url_prefix="/api/workflows/runs")
TAG = "schedules"
RUN_PAGE = page_of(RunOut)


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
    return services().schedules.run_now(
        principal, schedule_id, body["request_id"], body.get("version")
    )


@bp.get("/runs")
@endpoint(
    "The schedule's runs, newest planned first (a deleted schedule's too)",
    tag=TAG,
    permission=SCHEDULE_LIST,
    query=RunListQuery,
    response=RUN_PAGE,
)
def list_runs(principal: Principal, schedule_id: str, query: dict[str, Any]) -> Page[RunView]:
    schedule = services().schedules.find(principal.tenant_id, schedule_id)
    run_filter = RunFilter(schedule_id=schedule.id, status=query["status"])
    return services().runs.list_page(
        principal.tenant_id, run_filter, query["page"], query["page_size"]
    )


@log_bp.get("")
@endpoint(
    "The execution log: the tenant's runs across schedules, deleted ones' included, "
    "newest planned first",
    tag=TAG,
    permission=SCHEDULE_LIST,
    query=RunLogQuery,
    response=RUN_PAGE,
)
def run_log(principal: Principal, query: dict[str, Any]) -> Page[RunView]:
    run_filter = RunFilter(
        schedule_id=query["schedule_id"],
        status=query["status"],
        trigger=query["trigger"],
        planned_from=query["planned_from"],
        planned_to=query["planned_to"],
    )
    return services().runs.list_page(
        principal.tenant_id, run_filter, query["page"], query["page_size"]
    )


@log_bp.get("/<run_id>")
@endpoint(
    "A run of the tenant by its id alone, with its attempts",
    tag=TAG,
    permission=SCHEDULE_LIST,
    response=RunDetailOut,
)
def get_run_by_id(principal: Principal, run_id: str) -> RunView:
    return services().runs.view_by_id(principal.tenant_id, run_id)


@log_bp.get("/<run_id>/timeline")
@endpoint("Every event of the run", tag=TAG, permission=AUDIT_READ, response=TimelineOut)
def run_timeline(principal: Principal, run_id: str) -> dict[str, list[TimelineEntry]]:
    return {"items": services().runs.timeline(principal.tenant_id, run_id)}


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
    body=VersionReasonBody,
    response=RunDetailOut,
    status=202,
)
def retry_run(principal: Principal, schedule_id: str, run_id: str, body: dict[str, Any]) -> RunView:
    schedule = services().schedules.find(principal.tenant_id, schedule_id)
    return services().runs.retry(
        principal, schedule.id, run_id, body.get("version"), body["reason"]
    )


@bp.post("/runs/<run_id>/cancel")
@endpoint(
    "Cancel a PENDING or RETRY_WAIT run: no further attempts",
    tag=TAG,
    permission=SCHEDULE_EDIT,
    body=VersionReasonBody,
    response=RunDetailOut,
    status=202,
)
def cancel_run(
    principal: Principal, schedule_id: str, run_id: str, body: dict[str, Any]
) -> RunView:
    schedule = services().schedules.find(principal.tenant_id, schedule_id)
    return services().runs.cancel(
        principal, schedule.id, run_id, body.get("version"), body["reason"]
    )
