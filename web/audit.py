"""The operations audit and any aggregate's timeline over HTTP (docs/api.md#operations-audit),
and the evidence a third party can check: signed checkpoints of the log's Merkle tree, one
aggregate's evidence bundle, and consistency proofs (docs/api.md#evidence-for-third-parties)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, request

from cronledger.persistence.ledger import TimelineEntry
from domain.directory import Principal
from domain.permissions import AUDIT_READ
from projections.operations import (
    OPERATION_LISTING,
    OPERATION_ORDER,
    OperationFilter,
)
from web.api import Answered, endpoint, services
from web.exports import DOWNLOAD, asked, exported
from web.freshness import read_models_ready
from web.paging import listed, window
from web.schemas.audit import (
    BundleOut,
    BundleQuery,
    CheckpointsOut,
    CheckpointsQuery,
    ConsistencyOut,
    ConsistencyQuery,
    OperationExportQuery,
    OperationOut,
    OperationsQuery,
    TimelineOut,
)
from web.schemas.base import page_of

bp = Blueprint("audit", __name__, url_prefix="/api/audit")
TAG = "audit"


@bp.get("/operations")
@endpoint(
    "The tenant's operations audit: configuration changes and work started, newest first",
    tag=TAG,
    permission=AUDIT_READ,
    query=OperationsQuery,
    response=page_of(OperationOut),
)
def list_operations(principal: Principal, query: dict[str, Any]) -> Answered:
    wanted = operation_filter_of(principal, query)
    page = services().operations.list_page(wanted, window(query, OPERATION_LISTING))
    return listed(page, OPERATION_ORDER)


@bp.get("/operations/export")
@endpoint(
    "The operations audit as a file (CSV or XLSX): the audit's filters and search, newest "
    "first, at most 100,000 operations; the export is an operation itself",
    tag=TAG,
    permission=AUDIT_READ,
    query=OperationExportQuery,
    download=DOWNLOAD,
)
def export_operations(principal: Principal, query: dict[str, Any]) -> Response:
    read_models_ready(services())
    wanted = operation_filter_of(principal, query)
    return exported(services().exports.operations(principal, wanted, asked(query, request.args)))


def operation_filter_of(principal: Principal, query: dict[str, Any]) -> OperationFilter:
    """The audit's filters, as its query (or its export's) loaded them: the caller's
    tenant's operations only."""
    return OperationFilter(
        principal.tenant_id, query["actor"], query["kind"], query["since"], query["until"]
    )


@bp.get("/timeline/<aggregate_id>")
@endpoint(
    "Every event of one of the tenant's schedules, runs, instances, accounts or definitions",
    tag=TAG,
    permission=AUDIT_READ,
    response=TimelineOut,
)
def aggregate_timeline(principal: Principal, aggregate_id: str) -> dict[str, list[TimelineEntry]]:
    return {"items": services().operations.timeline(principal.tenant_id, aggregate_id)}


@bp.get("/checkpoints")
@endpoint(
    "The signed checkpoints of the log's Merkle tree (sizes and hashes only), oldest first",
    tag=TAG,
    permission=AUDIT_READ,
    query=CheckpointsQuery,
    response=CheckpointsOut,
)
def list_checkpoints(principal: Principal, query: dict[str, Any]) -> dict[str, Any]:
    listed = services().evidence.checkpoints(query["since"], query["limit"])
    return {"items": [checkpoint.as_json() for checkpoint in listed]}


@bp.get("/bundles/<aggregate_id>")
@endpoint(
    "The evidence bundle of the tenant or one of its schedules, runs, instances, accounts or "
    "definitions: its events, each proven against a signed checkpoint",
    tag=TAG,
    permission=AUDIT_READ,
    query=BundleQuery,
    response=BundleOut,
)
def aggregate_bundle(
    principal: Principal, aggregate_id: str, query: dict[str, Any]
) -> dict[str, Any]:
    since = () if query["since"] is None else (query["since"],)
    return services().evidence.bundle_in_tenant(
        principal.tenant_id, aggregate_id, since, query["linked"]
    )


@bp.get("/consistency")
@endpoint(
    "The proof that the signed checkpoint of `to_size` extends that of `from_size`",
    tag=TAG,
    permission=AUDIT_READ,
    query=ConsistencyQuery,
    response=ConsistencyOut,
)
def checkpoint_consistency(principal: Principal, query: dict[str, Any]) -> dict[str, Any]:
    return services().evidence.consistency(query["from_size"], query["to_size"])
