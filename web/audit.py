"""The operations audit and any aggregate's timeline over HTTP (docs/api.md#operations-audit),
and the evidence a third party can check: signed checkpoints of the log's Merkle tree, one
aggregate's evidence bundle, and consistency proofs (docs/api.md#evidence-for-third-parties)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from cronledger.application.evidence import MAX_CHECKPOINTS
from cronledger.persistence.ledger import TimelineEntry
from domain.directory import Principal
from domain.evidence import BUNDLE_FORMAT, CHECKPOINT_FORMAT
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
    QueryInteger,
    TimelineOut,
    UtcDateTime,
    instant_text,
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


# Evidence for third parties (docs/api.md#evidence-for-third-parties).
MAX_TREE_SIZE = 2**53 - 1  # a tree size every JSON reader takes as it is
HEX_HASH = "^[0-9a-f]{64}$"
DEFAULT_CHECKPOINTS = 100


def tree_size(description: str, **kwargs: Any) -> QueryInteger:
    return QueryInteger(
        validate=validate.Range(1, MAX_TREE_SIZE), metadata={"description": description}, **kwargs
    )


def hashes(description: str) -> fields.List[str]:
    """A proof: SHA-256 hashes in hex, in the order RFC 6962 combines them."""
    return fields.List(
        fields.String(metadata={"pattern": HEX_HASH}), metadata={"description": description}
    )


def only(value: str, description: str) -> fields.String:
    return fields.String(validate=validate.OneOf([value]), metadata={"description": description})


class CheckpointsQuery(Schema):
    since = QueryInteger(
        validate=validate.Range(0, MAX_TREE_SIZE),
        load_default=0,
        metadata={"description": "the checkpoints of larger trees than this size"},
    )
    limit = QueryInteger(
        validate=validate.Range(1, MAX_CHECKPOINTS),
        load_default=DEFAULT_CHECKPOINTS,
        metadata={"description": "at most this many, oldest first: ask again `since` the last"},
    )


class BundleQuery(Schema):
    since = tree_size(
        "the tree size of a checkpoint you saved earlier: the bundle then also holds the "
        "consistency proof from it to the bundle's checkpoint (one size; ask once per size for "
        "more). Larger than the bundle's checkpoint: 422",
        load_default=None,
    )


class ConsistencyQuery(Schema):
    from_size = tree_size("the older signed checkpoint's tree size", required=True)
    to_size = tree_size("the newer one's (not smaller than `from_size`)", required=True)

    @validates_schema
    def _older_first(self, data: dict[str, Any], **kwargs: Any) -> None:
        if data.get("from_size", 0) > data.get("to_size", MAX_TREE_SIZE):
            raise ValidationError("must not be smaller than from_size", "to_size")


class CheckpointOut(OutSchema):
    format = only(CHECKPOINT_FORMAT, "what this object is")
    tree_size = fields.Integer(metadata={"description": "the tree holds the log's first events"})
    root_hash = fields.String(
        metadata={"pattern": HEX_HASH, "description": "the tree's RFC 6962 root, in hex"}
    )
    position = fields.Integer(
        metadata={"description": "the log position of the tree's last event (not signed)"}
    )
    signed_at = instant_text(
        metadata={"description": "ISO 8601, UTC, exactly as signed: keep the text as it is"}
    )
    key_id = fields.String(
        metadata={"description": "the first 8 bytes of SHA-256 of the raw public key, in hex"}
    )
    signature = fields.String(
        metadata={
            "format": "byte",
            "description": "Ed25519 over the format, tree size, root, signed_at and key_id, "
            "one a line (docs/audit.md)",
        }
    )


class CheckpointsOut(OutSchema):
    items = fields.List(fields.Nested(CheckpointOut), metadata={"description": "oldest first"})


class ProvenEventOut(OutSchema):
    leaf_index = fields.Integer(metadata={"description": "the event's leaf in the tree"})
    position = fields.Integer(metadata={"description": "the event's position on the log"})
    aggregate_id = server_uuid()
    version = fields.Integer(metadata={"description": "the event's place in its aggregate's log"})
    topic = fields.String()
    state = fields.String(
        metadata={"format": "byte", "description": "the event's stored bytes, in base64"}
    )
    inclusion_proof = hashes("from the leaf up to the checkpoint's root")


class DeletedEventOut(OutSchema):
    leaf_index = fields.Integer()
    position = fields.Integer()
    version = fields.Integer()


class UnprovenEventOut(OutSchema):
    position = fields.Integer()
    version = fields.Integer()


class GrownFromOut(OutSchema):
    from_size = fields.Integer(metadata={"description": "the `since` asked for"})
    proof = hashes("the consistency proof from that tree size to the checkpoint's")


class BundleOut(OutSchema):
    format = only(BUNDLE_FORMAT, "what this object is")
    aggregate_id = server_uuid()
    checkpoint = fields.Nested(CheckpointOut)
    events = fields.List(
        fields.Nested(ProvenEventOut),
        metadata={"description": "each event the checkpoint's tree holds, with its proof"},
    )
    deleted = fields.List(
        fields.Nested(DeletedEventOut),
        metadata={"description": "leaves of the aggregate the log no longer holds"},
    )
    inserted = fields.List(
        fields.Nested(UnprovenEventOut),
        metadata={"description": "events the log holds that the signed tree should, and does not"},
    )
    later = fields.List(
        fields.Nested(UnprovenEventOut),
        metadata={"description": "events after the checkpoint: not proven by this bundle"},
    )
    consistency = fields.List(
        fields.Nested(GrownFromOut),
        metadata={"description": "the proof from `since`, when it is given"},
    )


class ConsistencyOut(OutSchema):
    from_checkpoint = fields.Nested(CheckpointOut, attribute="from")
    to_checkpoint = fields.Nested(CheckpointOut, attribute="to")
    proof = hashes("the RFC 6962 consistency proof (empty for the same size)")


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
    return services().evidence.bundle_in_tenant(principal.tenant_id, aggregate_id, since)


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
