"""Runs (执行日志) over HTTP: a schedule's, and the tenant's execution log
(docs/api.md#runs)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, request

from cronledger.application.schedules import ScheduleAnswer
from cronledger.persistence.ledger import TimelineEntry
from domain.directory import Principal
from domain.permissions import AUDIT_READ, SCHEDULE_EDIT, SCHEDULE_LIST
from domain.runs import Run
from projections.runs import RUN_LISTING, RUN_ORDER, RunDetail, RunFilter
from web.api import Answered, endpoint, services
from web.command_keys import Replays
from web.exports import DOWNLOAD, asked, exported
from web.freshness import read_models_ready
from web.idempotency import replay_headers
from web.paging import listed, window
from web.schemas.audit import TimelineOut
from web.schemas.base import VersionReasonBody, page_of
from web.schemas.runs import (
    RunDetailOut,
    RunExportQuery,
    RunListQuery,
    RunLogQuery,
    RunNowIn,
    RunOut,
)

bp = Blueprint("runs", __name__, url_prefix="/api/workflows/schedules/<schedule_id>")
log_bp = Blueprint("run_log", __name__, url_prefix="/api/workflows/runs")
TAG = "runs"
RUN_PAGE = page_of(RunOut)


def _schedule(principal: Principal, schedule_id: str) -> ScheduleAnswer:
    """The schedule run-now acts on: its `version` is the one run-now's If-Match names."""
    return services().schedules.from_log(principal.tenant_id, schedule_id)


def _run(principal: Principal, schedule_id: str, run_id: str) -> Run:
    """The run retry and cancel act on: its `version` is the one their If-Match names."""
    schedule = services().schedules.find(principal.tenant_id, schedule_id)
    return services().runs.run(principal.tenant_id, schedule.id, run_id)


def _run_detail(principal: Principal, schedule_id: str, run_id: str) -> RunDetail:
    """The run with its attempts, as a repeated retry or cancel answers it."""
    return services().schedules.run(principal.tenant_id, schedule_id, run_id)


@bp.post("/run")
@endpoint(
    "Run now: a manual cycle at the accepted time (the plan does not move)",
    tag=TAG,
    permission=SCHEDULE_EDIT,
    body=RunNowIn,
    versioned=_schedule,
    response=RunDetailOut,
    status=202,
    idempotent=True,
)
def run_now(principal: Principal, schedule_id: str, body: dict[str, Any]) -> Answered:
    requested = services().schedules.request_run(
        principal, schedule_id, body["request_id"], body.get("version")
    )
    return Answered(requested.value, 202, replay_headers(requested.replayed))


@bp.get("/runs")
@endpoint(
    "The schedule's runs, newest planned first (a deleted schedule's too)",
    tag=TAG,
    permission=SCHEDULE_LIST,
    query=RunListQuery,
    response=RUN_PAGE,
)
def list_runs(principal: Principal, schedule_id: str, query: dict[str, Any]) -> Answered:
    page = services().schedules.runs_page(
        principal.tenant_id, schedule_id, query["status"], window(query, RUN_LISTING)
    )
    return listed(page, RUN_ORDER, RunOut)


@log_bp.get("")
@endpoint(
    "The execution log: the tenant's runs across schedules, deleted ones' included, "
    "newest planned first",
    tag=TAG,
    permission=SCHEDULE_LIST,
    query=RunLogQuery,
    response=RUN_PAGE,
)
def list_run_log(principal: Principal, query: dict[str, Any]) -> Answered:
    window_asked = window(query, RUN_LISTING)
    page = services().runs.list_page(principal.tenant_id, run_filter_of(query), window_asked)
    return listed(page, RUN_ORDER, RunOut)


@log_bp.get("/export")
@endpoint(
    "The execution log as a file (CSV or XLSX): the log's filters and search, newest planned "
    "first, at most 100,000 runs; recorded in the operations audit",
    tag=TAG,
    permission=SCHEDULE_LIST,
    query=RunExportQuery,
    download=DOWNLOAD,
)
def export_run_log(principal: Principal, query: dict[str, Any]) -> Response:
    read_models_ready(services())
    wanted = run_filter_of(query)
    return exported(services().exports.runs(principal, wanted, asked(query, request.args)))


def run_filter_of(query: dict[str, Any]) -> RunFilter:
    """The execution log's filters, as its query (or its export's) loaded them."""
    return RunFilter(
        schedule_id=query["schedule_id"],
        status=query["status"],
        trigger=query["trigger"],
        planned_from=query["planned_from"],
        planned_to=query["planned_to"],
        group=query["group"],
        schedule_name=query["schedule_name"],
    )


@log_bp.get("/<run_id>")
@endpoint(
    "A run of the tenant by its id alone, with its attempts",
    tag=TAG,
    permission=SCHEDULE_LIST,
    versioned=True,
    response=RunDetailOut,
)
def get_run_by_id(principal: Principal, run_id: str) -> RunDetail:
    return services().runs.view_by_id(principal.tenant_id, run_id)


@log_bp.get("/<run_id>/timeline")
@endpoint("Every event of the run", tag=TAG, permission=AUDIT_READ, response=TimelineOut)
def run_timeline(principal: Principal, run_id: str) -> dict[str, list[TimelineEntry]]:
    return {"items": services().runs.timeline(principal.tenant_id, run_id)}


@bp.get("/runs/<run_id>")
@endpoint(
    "A run with its attempts",
    tag=TAG,
    permission=SCHEDULE_LIST,
    versioned=True,
    response=RunDetailOut,
)
def get_run(principal: Principal, schedule_id: str, run_id: str) -> RunDetail:
    return services().schedules.run(principal.tenant_id, schedule_id, run_id)


@bp.post("/runs/<run_id>/retry")
@endpoint(
    "Retry a FAILED, DEAD_LETTER or CANCELLED run: a new round of attempts",
    tag=TAG,
    permission=SCHEDULE_EDIT,
    body=VersionReasonBody,
    versioned=_run,
    response=RunDetailOut,
    status=202,
    idempotent=Replays(_run_detail),
)
def retry_run(
    principal: Principal, schedule_id: str, run_id: str, body: dict[str, Any]
) -> RunDetail:
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
    versioned=_run,
    response=RunDetailOut,
    status=202,
    idempotent=Replays(_run_detail),
)
def cancel_run(
    principal: Principal, schedule_id: str, run_id: str, body: dict[str, Any]
) -> RunDetail:
    schedule = services().schedules.find(principal.tenant_id, schedule_id)
    return services().runs.cancel(
        principal, schedule.id, run_id, body.get("version"), body["reason"]
    )
