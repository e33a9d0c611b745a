"""`GET /api/events/stream`: the caller's tenant's new events as Server-Sent Events.

Not an `endpoint` view: the answer is a stream, not a schema's dump, and any one of several
permissions opens it. It authenticates with the same `authorize` and answers problems alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import cast

from flask import Blueprint, Response, current_app, g, request, stream_with_context
from marshmallow import RAISE, Schema

from cronledger.application.services import Services
from cronledger.application.stream import (
    READERS,
    REFUSALS,
    Checkpoint,
    Clipped,
    EventStream,
    Lifetime,
    LogTail,
    StreamedEvent,
    StreamItem,
    never,
    readable_kinds,
)
from cronledger.health import Health
from domain.directory import Principal
from domain.messages import Message
from domain.permissions import AUDIT_READ, SCHEDULE_LIST
from web.api import authorize, load, services
from web.language import ANSWER_HEADERS
from web.problems import SOME_FIELDS_INVALID, Problem, problem
from web.schemas import validate
from web.schemas.audit import TimelineEntryOut
from web.schemas.base import QUERY_INTEGER, QueryInteger
from web.schemas.messages import FRAMES
from web.stream_slots import StreamLimits, StreamSlot, StreamSlots, TooManyStreams

bp = Blueprint("events", __name__, url_prefix="/api/events")
MAX_SECONDS = 3600
MAX_POSITION = 2**63 - 1
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
STREAM_PERMISSIONS = sorted(set().union(*READERS.values()))
RETRY_AFTER_SECONDS = 10
RECONNECT_MILLISECONDS = 2000  # the `retry:` of the last frame a stopping server sends


class StreamQuery(Schema):
    after = QueryInteger(validate=validate.Range(0, MAX_POSITION), load_default=None)
    max_seconds = QueryInteger(validate=validate.Range(1, MAX_SECONDS), load_default=MAX_SECONDS)


@bp.get("/stream")
def stream_events() -> Response:
    principal = _caller()
    query = load(StreamQuery(unknown=RAISE), request.args.to_dict())
    events = EventStream(
        services().ledger,
        principal,
        _after(query["after"]),
        replay_positions=services().settings.stream_replay_positions,
        tail=streams().tail,
        should_stop=_until_over(_lifetime(principal, query["max_seconds"])),
    )
    try:
        slot = streams().slots.take(principal)
    except TooManyStreams as refused:
        return _too_many(refused.args[0])
    response = Response(
        stream_with_context(_frames(events, slot, services().health)),
        content_type="text/event-stream",
        headers=HEADERS,
    )
    response.call_on_close(slot.release)  # also when closed before the first frame
    return response


stream_events.openapi_operation = {  # type: ignore[attr-defined]
    "summary": "The tenant's new events as Server-Sent Events",
    "tags": ["events"],
    "description": (
        "Frames `id: <log position>`, `event: <type>`, `data: <timeline entry JSON>`. Resume with "
        "the `Last-Event-ID` header (or `?after=`). Needs any of the permissions "
        + ", ".join(f"`{p}`" for p in STREAM_PERMISSIONS)
        + ": each one opens the events it can already read. Without `"
        + AUDIT_READ
        + "`, refused commands ("
        + ", ".join(f"`{t}`" for t in sorted(REFUSALS))
        + ") are not streamed, and events someone else caused come as state changes: "
        "`command_id` and `reason` null, no `data.fingerprint`, no `data.payload.reason`.\n\n"
        "A stream replays at most `CRONLEDGER_STREAM_REPLAY_POSITIONS` (default 1000) log "
        "positions: asked to start further back, it starts that many positions before the "
        "log's end, and after its opening `: keep-alive` sends `event: replay-clipped` with "
        '`data: {"requested_after": N, "starts_after": M}`; positions N+1..M are skipped.\n\n'
        "Each open stream holds a server thread of its own, beside the API's, so open streams "
        "are limited per account (`CRONLEDGER_STREAMS_PER_ACCOUNT`, default 10), per tenant "
        "(`CRONLEDGER_STREAMS_PER_TENANT`, default 50) and per server process "
        "(`CRONLEDGER_STREAMS_PER_PROCESS`, default 100); beyond a limit the answer is 429 "
        "`TOO_MANY_STREAMS` with `Retry-After`. A stream's place is freed as soon as it ends "
        "or its client disconnects.\n\n"
        "A server that is shutting down ends its streams with `id: <position>`, "
        f"`retry: {RECONNECT_MILLISECONDS}`, `event: reconnect` and "
        '`data: {"reason": "the server is shutting down"}`: reconnect (with '
        "`Last-Event-ID`), and another server carries on from there, missing nothing."
    ),
    "security": [{"bearer": []}],
    "parameters": [
        {
            "in": "query",
            "name": "after",
            "description": "start after this log position; default: the log's end",
            "schema": {"type": "integer", "minimum": 0, "maximum": MAX_POSITION},
        },
        {
            "in": "query",
            "name": "max_seconds",
            "description": f"end the stream after this many seconds (default {MAX_SECONDS})",
            "schema": {"type": "integer", "minimum": 1, "maximum": MAX_SECONDS},
        },
        {
            "in": "header",
            "name": "Last-Event-ID",
            "description": "a reconnect: start after this `id:` of a frame (before `?after=`)",
            "schema": {"type": "integer", "minimum": 0, "maximum": MAX_POSITION},
        },
    ],
    "responses": {
        "200": {
            "description": "the stream, until `max_seconds` pass or the token stops working",
            "headers": {
                name: {
                    "description": "for proxies: pass frames on as they come",
                    "schema": {"type": "string", "enum": [value]},
                    "required": True,
                }
                for name, value in HEADERS.items()
            },
            "content": {
                "text/event-stream": {
                    # each frame's `data`, by its `event:` name (`*`: an event's type)
                    "x-sse-frames": {
                        name: {"$ref": f"#/components/schemas/{frame.__name__}"}
                        for name, frame in FRAMES.items()
                    }
                }
            },
        },
        "401": "Unauthenticated",
        "403": "Forbidden",
        "422": {
            "description": "an invalid or unknown query parameter, or an invalid "
            "`Last-Event-ID`, named in `errors`",
            "headers": {name: name for name in ANSWER_HEADERS},
            "content": {"application/problem+json": {"schema": "Problem"}},
        },
        "429": {
            "description": "`TOO_MANY_STREAMS`: too many open streams; or `TOO_MANY_REQUESTS`: "
            "too many of this caller's requests were refused within a minute. Retry after "
            "`Retry-After` seconds.",
            "headers": {"Retry-After": "Retry-After", **{name: name for name in ANSWER_HEADERS}},
            "content": {"application/problem+json": {"schema": "Problem"}},
        },
    },
}


def _caller() -> Principal:
    """The authenticated caller (401 as everywhere); 403 if it may read no kind of event."""
    try:
        return authorize(SCHEDULE_LIST, fresh=True)  # a stream lasts: never a remembered token
    except Problem as problem:
        if problem.code != "FORBIDDEN":
            raise
    principal: Principal = g.principal  # set by `authorize` before it checks the permission
    if not readable_kinds(principal):
        raise Problem(
            "FORBIDDEN",
            Message(
                "this needs one of the permissions {permissions}",
                permissions=", ".join(STREAM_PERMISSIONS),
            ),
        )
    return principal


@dataclass(frozen=True)
class Streams:
    """An app's open streams: their count, and the tail of the log they follow."""

    slots: StreamSlots
    tail: LogTail


def streams_for(services: Services) -> Streams:
    limits = StreamLimits.of(services.settings)
    return Streams(StreamSlots(limits), LogTail(services.ledger, services.health))


def streams() -> Streams:
    return cast(Streams, current_app.extensions["streams"])


def _too_many(detail: Message) -> Response:
    answer = problem(
        "TOO_MANY_STREAMS", Message("{detail}; close one, or retry later", detail=detail)
    )
    answer.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return answer


def _after(after: int | None) -> int | None:
    """Strictly after `Last-Event-ID` (a reconnect), else `?after=`, else None: the log's end.

    The stream itself keeps the start within the log (a store restored from a backup may
    have ended earlier) and within its replay limit.
    """
    header = request.headers.get("Last-Event-ID")
    return after if header is None else _position(header)


def _position(header: str) -> int:
    position = int(header) if QUERY_INTEGER.fullmatch(header.strip()) else -1
    if not 0 <= position <= MAX_POSITION:
        raise Problem(
            "VALIDATION_FAILED",
            SOME_FIELDS_INVALID,
            {"Last-Event-ID": [Message("must be a log position: an id this stream sent")]},
        )
    return position


def _lifetime(principal: Principal, seconds: int) -> Lifetime:
    """Until `max_seconds` pass, or the request's token stops standing for this caller."""
    token = request.headers["Authorization"].partition(" ")[2].strip()
    authenticate = partial(services().directory.authenticate, token)
    tail = streams().tail
    return Lifetime(seconds, principal, authenticate, caller_changes=lambda: tail.caller_changes)


def _until_over(lifetime: Lifetime) -> Callable[[], bool]:
    """Over at the end of its lifetime, once the client is gone (waitress tells), or once the
    server is shutting down."""
    gone: Callable[[], bool] = request.environ.get("waitress.client_disconnected", never)
    health = services().health
    return lambda: gone() or health.draining or lifetime()


def _frames(events: EventStream, slot: StreamSlot, health: Health) -> Iterator[str]:
    """The stream's frames; its slot is given back when they end or the server closes them.

    A server shutting down says so last, so that the client reconnects (to another server).
    """
    try:
        with closing(events.batches()) as batches:
            for batch in batches:
                yield "".join(_frame(item) for item in batch)  # one write for what came together
        if health.draining:
            yield _reconnect(events.position)
    finally:
        slot.release()


def _reconnect(position: int) -> str:
    """Every position up to `position` was examined: the client resumes after it."""
    data = json.dumps({"reason": "the server is shutting down"})
    return f"id: {position}\nretry: {RECONNECT_MILLISECONDS}\nevent: reconnect\ndata: {data}\n\n"


def _frame(item: StreamItem) -> str:
    """A checkpoint moves the client's last event id without an event; an event carries JSON."""
    if isinstance(item, Checkpoint):
        return f"id: {item.position}\n: keep-alive\n\n"
    if isinstance(item, Clipped):
        clipped = {"requested_after": item.requested, "starts_after": item.position}
        return f"event: replay-clipped\ndata: {json.dumps(clipped)}\n\n"
    return _event_frame(item)


@lru_cache(maxsize=1024)
def _event_frame(item: StreamedEvent) -> str:
    """An event's frame, written once for every stream shown the same view of it."""
    body = {**TimelineEntryOut().dump(item.entry), "aggregate_id": str(item.aggregate_id)}
    if item.schedule_id is not None:
        body["schedule_id"] = str(item.schedule_id)
    if item.account_id is not None:
        body["account_id"] = item.account_id
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return f"id: {item.entry.position}\nevent: {item.entry.type}\ndata: {data}\n\n"
