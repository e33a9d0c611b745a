"""A reviewer's tasks over HTTP (docs/approvals.md#my-tasks)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from domain.directory import Principal
from domain.permissions import APPROVAL_LIST
from projections.tasks import TASK_LISTINGS
from web.api import Answered, endpoint, services
from web.paging import listed, window
from web.schemas.tasks import TaskCountsOut, TaskListQuery, TaskOut, TaskPageOut

bp = Blueprint("tasks", __name__, url_prefix="/api/tasks")
TAG = "tasks"


@bp.get("")
@endpoint(
    "The caller's tasks: assigned, claimable or decided (latest deadline first)",
    tag=TAG,
    permission=APPROVAL_LIST,
    query=TaskListQuery,
    response=TaskPageOut,
)
def list_tasks(principal: Principal, query: dict[str, Any]) -> Answered:
    spec = TASK_LISTINGS[query["scope"]]
    page, counts = services().approvals.tasks(principal, query["scope"], window(query, spec))
    answered = listed(page, spec.default, TaskOut)
    answered.body["counts"] = TaskCountsOut().dump(counts)
    return answered
