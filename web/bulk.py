"""Bulk actions over HTTP (docs/api.md#bulk-actions): one action on up to 100 schedules or runs,
each item one ordinary command (cronledger/application/bulk.py), answered item by item with
the status, code and detail its single request would have had. The console's bulk forms call
the same service."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from flask import Blueprint

from cronledger.application.bulk import (
    CANCEL,
    DELETE,
    DISABLE,
    ENABLE,
    RETRY,
    RUN,
    BulkItem,
    BulkRequest,
    act_on_runs,
    act_on_schedules,
)
from domain.directory import Principal
from domain.permissions import SCHEDULE_DELETE, SCHEDULE_EDIT
from web.api import endpoint, services
from web.problems import STATUS_OF_CODE, Problem
from web.schemas.bulk import BulkOut, RunBulkIn, ScheduleBulkIn

bp = Blueprint("bulk", __name__, url_prefix="/api/workflows")
# What each action's single request answers when it is done.
DONE_STATUS = {ENABLE: 200, DISABLE: 200, RUN: 202, DELETE: 204, RETRY: 202, CANCEL: 202}


@bp.post("/schedules/bulk")
@endpoint(
    "One action on many schedules: enable, disable, run now or delete each (`delete` needs "
    "`workflow:schedule:delete` too), one by one as its single action, each done or refused "
    "on its own",
    tag="schedules",
    permission=SCHEDULE_EDIT,
    body=ScheduleBulkIn,
    response=BulkOut,
    keyless=True,
)
def bulk_schedules(principal: Principal, body: dict[str, Any]) -> dict[str, Any]:
    if body["action"] == DELETE and not principal.can(SCHEDULE_DELETE):
        raise Problem("FORBIDDEN", f"deleting needs the permission {SCHEDULE_DELETE}")
    items = act_on_schedules(services().schedules, principal, bulk_request(body))
    return answered(body["action"], items)


@bp.post("/runs/bulk")
@endpoint(
    "One action on many runs of any schedule: retry or cancel each, one by one as its single "
    "action, each done or refused on its own",
    tag="runs",
    permission=SCHEDULE_EDIT,
    body=RunBulkIn,
    response=BulkOut,
    keyless=True,
)
def bulk_runs(principal: Principal, body: dict[str, Any]) -> dict[str, Any]:
    items = act_on_runs(services().runs, principal, bulk_request(body))
    return answered(body["action"], items)


def bulk_request(body: dict[str, Any]) -> BulkRequest:
    return BulkRequest(
        body["action"], body["ids"], body["versions"], body["reason"], body.get("request_id")
    )


def answered(action: str, items: list[BulkItem]) -> dict[str, Any]:
    """The answer: each item with the status its single request would have had."""
    return {
        "action": action,
        "items": [{**asdict(item), "status": item_status(action, item)} for item in items],
    }


def item_status(action: str, item: BulkItem) -> int:
    return DONE_STATUS[action] if item.code is None else STATUS_OF_CODE.get(item.code, 409)
