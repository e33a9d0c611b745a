"""Shapes of the bulk actions on schedules and runs (docs/api.md#bulk-actions)."""

from __future__ import annotations

from marshmallow import fields

from cronledger.application.bulk import MAX_BULK
from web.schemas import validate
from web.schemas.base import (
    PROBLEM_CODE,
    Choice,
    OutSchema,
    StrictSchema,
    reason_field,
    server_uuid,
    strict_int,
)
from web.schemas.enums import BULK_OUTCOME, RUN_BULK_ACTION, RUN_STATUS, SCHEDULE_BULK_ACTION

MAX_ID = 64  # characters of an id a bulk action takes (a UUID is 36)


def _ids(what: str) -> fields.List[str]:
    return fields.List(
        fields.String(validate=validate.Length(1, MAX_ID)),
        required=True,
        validate=validate.Length(1, MAX_BULK),
        metadata={
            "description": f"1 to {MAX_BULK} {what} ids, acted on in this order; a repeated id "
            "counts once"
        },
    )


def _versions(what: str) -> fields.Dict:
    return fields.Dict(
        keys=fields.String(validate=validate.Length(1, MAX_ID)),
        values=strict_int(1, 2**31),
        validate=validate.Length(max=MAX_BULK),
        load_default=dict,
        metadata={
            "description": f"optional: the `version` of each {what} as last read, by id; an item "
            "changed since is refused `VERSION_CONFLICT`"
        },
    )


class ScheduleBulkIn(StrictSchema):
    """One action on each schedule named, each as its single action."""

    action = Choice(SCHEDULE_BULK_ACTION, required=True)
    ids = _ids("schedule")
    versions = _versions("schedule")
    reason = reason_field()
    request_id = fields.String(
        validate=validate.Length(1, 128),
        load_default=None,
        metadata={
            "description": "`run` only, and required there: with the caller's account and each "
            "schedule, the repeat key of its run (the same request again answers the same runs)"
        },
    )


class RunBulkIn(StrictSchema):
    """One action on each run named (any schedule's), each as its single action."""

    action = Choice(RUN_BULK_ACTION, required=True)
    ids = _ids("run")
    versions = _versions("run")
    reason = reason_field()


class BulkItemOut(OutSchema):
    """What the action did to one item."""

    id = fields.String(metadata={"description": "the id as asked"})
    outcome = Choice(BULK_OUTCOME)
    status = fields.Integer(
        metadata={"description": "the status the single action's request would have answered"}
    )
    code = Choice(PROBLEM_CODE, allow_none=True, metadata={"description": "`REFUSED`: why"})
    detail = fields.String(allow_none=True, metadata={"description": "`REFUSED`: in words"})
    errors = fields.Dict(
        keys=fields.String(),
        values=fields.List(fields.String()),
        metadata={"description": "`VALIDATION_FAILED`: the messages by field; else empty"},
    )
    name = fields.String(
        allow_none=True,
        metadata={
            "description": "the schedule's name or the run's title; null when there is no such "
            "item in the tenant"
        },
    )
    version = fields.Integer(
        allow_none=True,
        metadata={
            "description": "the item's version after `enable`, `disable`, `retry` or `cancel`; "
            "else null"
        },
    )
    run_id = server_uuid(
        allow_none=True,
        metadata={"description": "the run acted on, or (`run`) the run registered; else null"},
    )
    run_status = Choice(
        RUN_STATUS, allow_none=True, metadata={"description": "that run's status after"}
    )


class BulkOut(OutSchema):
    action = fields.String(metadata={"description": "the action asked"})
    items = fields.List(fields.Nested(BulkItemOut), metadata={"description": "in the order asked"})
