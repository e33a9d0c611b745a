"""Shapes of the operations audit, timelines and the evidence a third party can check
(docs/api.md#operations-audit, docs/api.md#evidence-for-third-parties)."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, validates_schema

from cronledger.application.evidence import MAX_CHECKPOINTS
from domain.evidence import BUNDLE_FORMAT, CHECKPOINT_FORMAT
from domain.messages import Message
from projections.operations import (
    APPROVAL,
    DEFINITION,
    OPERATION_LISTING,
    RUN,
    SCHEDULE,
    Operation,
)
from web.schemas import validate
from web.schemas.base import (
    OMITTED_WHEN,
    Choice,
    OutSchema,
    PageQuery,
    QueryInteger,
    UtcDateTime,
    instant_text,
    reason_code_field,
    reason_params_field,
    search_field,
    server_uuid,
    sort_choices,
    sort_field,
)
from web.schemas.enums import AGGREGATE_TYPE, OPERATION_KIND
from web.schemas.exports import export_query


class TimelineEntryOut(OutSchema):
    position = fields.Integer(metadata={"description": "the event's place in the whole log"})
    log_version = fields.Integer(
        metadata={
            "description": "the event's place in its resource's log (1, 2, ...); not the "
            "`version` a PUT, PATCH or command takes (0.1.0 named this `version`)"
        }
    )
    type = fields.String()
    at = UtcDateTime()
    actor = fields.String(allow_none=True)
    command_id = fields.String(allow_none=True)
    outcome = fields.String(allow_none=True)
    reason = fields.String(allow_none=True)
    reason_code = reason_code_field()
    reason_params = reason_params_field()
    data = fields.Dict(
        keys=fields.String(),
        metadata={
            "description": "the event's own fields, which depend on its `type` and may grow in "
            "later releases: an open object (docs/api.md#timelines)"
        },
    )


class TimelineOut(OutSchema):
    items = fields.List(fields.Nested(TimelineEntryOut))


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


OPERATION_SORT = sort_choices("OperationSort", OPERATION_LISTING)


class OperationsQuery(PageQuery):
    q = search_field("summary or actor")
    sort = sort_field(OPERATION_SORT)
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
            raise ValidationError({name: [Message("unknown parameter")] for name in unknown})

    @validates_schema
    def _window(self, data: dict[str, Any], **kwargs: Any) -> None:
        since, until = data.get("since"), data.get("until")
        if since is not None and until is not None and until < since:
            raise ValidationError(Message("must not be before {field}", field="from"), "to")


OperationExportQuery = export_query(OperationsQuery, "OperationExportQuery")


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
    linked = fields.Boolean(
        load_default=False,
        metadata={
            "description": "an approval instance's bundle also holds the bundles of the "
            "instances it links to (docs/audit.md#linked-instances)"
        },
    )


class ConsistencyQuery(Schema):
    from_size = tree_size("the older signed checkpoint's tree size", required=True)
    to_size = tree_size("the newer one's (not smaller than `from_size`)", required=True)

    @validates_schema
    def _older_first(self, data: dict[str, Any], **kwargs: Any) -> None:
        if data.get("from_size", 0) > data.get("to_size", MAX_TREE_SIZE):
            raise ValidationError(
                Message("must not be smaller than {field}", field="from_size"), "to_size"
            )


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


class BundleFields(OutSchema):
    """What a bundle holds, alone or linked to another's."""

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


class LinkedBundleOut(BundleFields):
    """The bundle of an instance another links to."""

    relation = fields.String(
        metadata={
            "description": "how it is linked: `resubmits`, `resubmitted_as`, "
            "`cancellation_of` or `cancellation`"
        }
    )


class BundleOut(BundleFields):
    linked = fields.List(
        fields.Nested(LinkedBundleOut),
        metadata={
            "description": "the bundles of the instances an approval instance links to, one "
            "step, each with its `relation` (docs/audit.md#linked-instances)",
            OMITTED_WHEN: "`linked=true` was not asked for",
        },
    )


class ConsistencyOut(OutSchema):
    from_checkpoint = fields.Nested(CheckpointOut, attribute="from")
    to_checkpoint = fields.Nested(CheckpointOut, attribute="to")
    proof = hashes("the RFC 6962 consistency proof (empty for the same size)")
