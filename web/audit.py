"""The operations audit and any aggregate's timeline over HTTP (docs/api.md#operations-audit)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint
from marshmallow import ValidationError, fields, validate, validates_schema

from cronledger.persistence.ledger import TimelineEntry
from domain.directory import Principal
from domain.permissions import AUDIT_READ
from projections.operations import (
    APPROVAL,
    DEFINITION,
    OPERATION_ORDER,
    RUN,
    SCHEDULE,
    Operation,
    OperationFilter,
)
from web.api import Answered, endpoint, services
from web.paging import listed, window
from web.schemas import (
    AGGREGATE_TYPE,
    OPERATION_KIND,
    Choice,
    OutSchema,
    PageQuery,
    TimelineOut,
    UtcDateTime,
    page_of,
    server_uuid,
)

bp = Blueprint("audit", __name__, url_prefix="/api/audit")
TAG = "audit"
MAX_ACTOR = 64
# Aggregates with a timeline of their own resource; the others' is `/api/audit/timeline/{id}`.
OWN_TIMELINES = {
    SCHEDULE: "/api/workflows/schedules/{id}/timeline",
    APPROVAL: "/api/approvals/{id}/timeline",
    RUN: "/api/workflows/runs/{id}/timeline",
    DEFINITION: "/api/definitions/{id}/timeline",
}
TIMELINE = "/api/audit/timeline/{id}"


def timeline_of(operation: Operation) -> str:
    """The path of the timeline of the operation's aggregate."""
    path = OWN_TIMELINES.get(operation.aggregate_type, TIMELINE)
    return path.format(id=operation.aggregate_id)


class OperationsQuery(PageQuery):
    actor = fields.String(
        validate=validate.Length(1, MAX_ACTOR),
        load_default=None,
        metadata={"description": "who did it: an account id, or `system:...`"},
    )
    kind = Choice(OPERATION_KIND, load_default=None, metadata={"description": "what was done"})
    since = UtcDateTime(data_key="from", load_default=None, metadata={"description": "inclusive"})
    until = UtcDateTime(data_key="to", load_default=None, metadata={"description": "exclusive"})

    @validates_schema(pass_original=True)
    def _known_parameters(self, data: dict[str, Any], original: Any, **kwargs: Any) -> None:
        known = {field.data_key or name for name, field in self.fields.items()}
        unknown = sorted(set(original) - known)
        if unknown:
            raise ValidationError({name: ["unknown parameter"] for name in unknown})

    @validates_schema
    def _window(self, data: dict[str, Any], **kwargs: Any) -> None:
        since, until = data.get("since"), data.get("until")
        if since is not None and until is not None and until < since:
            raise ValidationError("must not be before from", "to")


class OperationOut(OutSchema):
    position = fields.Integer(metadata={"description": "the event's position on the log"})
    at = UtcDateTime()
    actor = fields.String()
    kind = Choice(OPERATION_KIND)
    aggregate_type = Choice(AGGREGATE_TYPE)
    aggregate_id = fields.String(metadata={"description": "`cronledger audit timeline ID`"})
    schedule_id = server_uuid(
        allow_none=True, metadata={"description": "the schedule, of a schedule's or run's"}
    )
    summary = fields.String()
    timeline = fields.Function(
        timeline_of,
        metadata={"type": "string", "description": "the aggregate's timeline (`audit:read`)"},
    )


@bp.get("/operations")
@endpoint(
    "The tenant's operations audit: configuration changes and work started, newest first",
    tag=TAG,
    permission=AUDIT_READ,
    query=OperationsQuery,
    response=page_of(OperationOut),
)
def list_operations(principal: Principal, query: dict[str, Any]) -> Answered:
    wanted = OperationFilter(
        principal.tenant_id, query["actor"], query["kind"], query["since"], query["until"]
    )
    page = services().operations.list_page(wanted, window(query, OPERATION_ORDER))
    return listed(page, OPERATION_ORDER)


@bp.get("/timeline/<aggregate_id>")
@endpoint(
    "Every event of one of the tenant's schedules, runs, instances, accounts or definitions",
    tag=TAG,
    permission=AUDIT_READ,
    response=TimelineOut,
)
def aggregate_timeline(principal: Principal, aggregate_id: str) -> dict[str, list[TimelineEntry]]:
    return {"items": services().operations.timeline(principal.tenant_id, aggregate_id)}
