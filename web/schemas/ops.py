"""Shapes of health, liveness and the backlog (docs/operations.md)."""

from __future__ import annotations

from dataclasses import Field
from dataclasses import fields as dataclass_fields
from typing import Any, get_origin, get_type_hints

from marshmallow import (
    fields,
)

from cronledger.application.approvals import ERROR as SWEEP_ERROR
from cronledger.application.approvals import EXPIRY_LAG_BOUNDS
from cronledger.application.approvals import UNREADABLE as SWEEP_UNREADABLE
from cronledger.application.approvals import VERSION_CONFLICT as SWEEP_VERSION_CONFLICT
from cronledger.application.backlog import GAUGE, Backlog
from web.schemas.base import Choice, OutSchema
from web.schemas.enums import PHASE, STORE


class HealthOut(OutSchema):
    status = fields.String(metadata={"description": "`ok` (an unreachable store is 503)"})
    store = Choice(STORE)
    version = fields.String(metadata={"description": "the release running (CHANGELOG.md)"})


class LivenessOut(OutSchema):
    status = fields.String(metadata={"description": "`ok` (a stopped or stalled loop is 503)"})
    phase = Choice(
        PHASE,
        metadata={
            "description": "where the process is: starting, migrating, rebuilding (the start "
            "waits), ready, draining (asked to stop, still serving), stopped (about to exit)"
        },
    )
    loops = fields.List(
        fields.String(),
        metadata={"description": "the loops this process runs, each beating (none in `web`)"},
    )


# The labels of the backlog figures that are numbers by label: every one is always there.
BACKLOG_LABELS = {
    "expiry_lag_buckets": (*map(str, EXPIRY_LAG_BOUNDS), "+Inf"),
    "sweep_failures": (SWEEP_VERSION_CONFLICT, SWEEP_UNREADABLE, SWEEP_ERROR),
}

BACKLOG_HELP = {
    "projection_lag_events": "events on the log the read models have not applied yet",
    "expiry_lag_buckets": "expiries recorded at most this many seconds after their deadline, "
    "by bound (`+Inf`: all)",
    "expiry_lag_sum_seconds": "the sum of those delays",
    "sweep_failures": "this process's failed sweeps, by reason",
}


def _backlog_field(figure: Field[Any], kind: Any) -> fields.Field[Any]:
    """A backlog figure's field: a number, or numbers by label (e.g. by reason)."""
    text = figure.metadata.get(GAUGE) or BACKLOG_HELP[figure.name]
    if get_origin(kind) is not dict:
        number = fields.Float if kind is float else fields.Integer
        return number(metadata={"description": text})
    labels = BACKLOG_LABELS[figure.name]
    return fields.Dict(
        keys=fields.String(),
        values=fields.Integer(),
        metadata={
            "description": text,
            "properties": {label: {"type": "integer"} for label in labels},
            "required": list(labels),
        },
    )


BacklogOut = OutSchema.from_dict(
    {
        figure.name: _backlog_field(figure, get_type_hints(Backlog)[figure.name])
        for figure in dataclass_fields(Backlog)
    },
    name="BacklogOut",
)
