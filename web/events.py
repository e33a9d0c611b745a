"""`GET /api/events/stream`: the caller's tenant's new events as Server-Sent Events.

Not an `endpoint` view: the answer is a stream, not a schema's dump, and any one of several
permissions opens it. It authenticates with the same `authorize` and answers problems alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from functools import partial

from flask import Blueprint, Response, g, request, stream_with_context
from marshmallow import Schema, fields, validate

from cronledger.stream import READERS, Checkpoint, EventStream, Lifetime, StreamItem, readable_kinds
from domain.directory import Principal
from domain.permissions import SCHEDULE_LIST
from web.api import authorize, load, services
from web.problems import Problem
from web.schemas import TimelineEntryOut

bp = Blueprint("events", __name__, url_prefix="/api/events")
MAX_SECONDS = 3600
MAX_POSITION = 2**63 - 1
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
STREAM_PERMISSIONS = sorted(set().union(*READERS.values()))


class StreamQuery(Schema):
    after = fields.Integer(validate=validate.Range(0, MAX_POSITION), load_default=None)
    max_seconds = fields.Integer(validate=validate.Range(1, MAX_SECONDS), load_default=MAX_SECONDS)


@bp.get("/stream")
def stream() -> Response:
    principal = _caller()
    query = load(StreamQuery(unknown="exclude"), request.args.to_dict())
    lifetime = _lifetime(principal, query["max_seconds"])
    events = EventStream(services().ledger, principal, _start(query["after"]), should_stop=lifetime)
    return Response(
        stream_with_context(_frames(events)), content_type="text/event-stream", headers=HEADERS
    )


stream.openapi_operation = {  # type: ignore[attr-defined]
    "summary": "The tenant's new events as Server-Sent Events",
    "tags": ["operations"],
    "description": (
        "Frames `id: <log position>`, `event: <type>`, `data: <timeline entry JSON>`. Resume with "
        "the `Last-Event-ID` header (or `?after=`). Needs any of the permissions "
        + ", ".join(f"`{p}`" for p in STREAM_PERMISSIONS)
        + ": each one opens the events it can already read."
    ),
    "security": [{"bearer": []}],
    "parameters": [
        {"in": "query", "name": "after", "schema": {"type": "integer", "minimum": 0}},
        {
            "in": "query",
            "name": "max_seconds",
            "schema": {"type": "integer", "minimum": 1, "maximum": MAX_SECONDS},
        },
        {"in": "header", "name": "Last-Event-ID", "schema": {"type": "integer", "minimum": 0}},
    ],
    "responses": {"200": {"description": "the stream", "content": {"text/event-stream": {}}}},
}


def _caller() -> Principal:
    """The authenticated caller (401 as everywhere); 403 if it may read no kind of event."""
    try:
        return authorize(SCHEDULE_LIST)
    except Problem as problem:
        if problem.code != "FORBIDDEN":
            raise
    principal: Principal = g.principal  # set by `authorize` before it checks the permission
    if not readable_kinds(principal):
        raise Problem(
            "FORBIDDEN", f"this needs one of the permissions {', '.join(STREAM_PERMISSIONS)}"
        )
    return principal


def _start(after: int | None) -> int:
    """Strictly after `Last-Event-ID` (a reconnect), else `?after=`, else the log's end.

    A position past the end (a store restored from a backup) starts at the end.
    """
    end = services().ledger.recorder.max_notification_id() or 0
    header = request.headers.get("Last-Event-ID")
    if header is not None:
        after = _position(header)
    return end if after is None else min(after, end)


def _position(header: str) -> int:
    try:
        position = int(header)
    except ValueError:
        position = -1
    if not 0 <= position <= MAX_POSITION:
        raise Problem(
            "VALIDATION_FAILED",
            "some fields are invalid",
            {"Last-Event-ID": ["must be a log position: an id this stream sent"]},
        )
    return position


def _lifetime(principal: Principal, seconds: int) -> Lifetime:
    """Until `max_seconds` pass, or the request's token stops standing for this caller."""
    token = request.headers["Authorization"].partition(" ")[2].strip()
    return Lifetime(seconds, principal, partial(services().directory.authenticate, token))


def _frames(items: Iterable[StreamItem]) -> Iterator[str]:
    for item in items:
        yield _frame(item)


def _frame(item: StreamItem) -> str:
    """A checkpoint moves the client's last event id without an event; an event carries JSON."""
    if isinstance(item, Checkpoint):
        return f"id: {item.position}\n: keep-alive\n\n"
    body = {**TimelineEntryOut().dump(item.entry), "aggregate_id": str(item.aggregate_id)}
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return f"id: {item.entry.position}\nevent: {item.entry.type}\ndata: {data}\n\n"
