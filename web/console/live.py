"""Live console pages: `/console/live`, the viewer's tenant's new events as Server-Sent Events.

The JSON API's `/api/events/stream` needs a bearer token, which a browser's `EventSource`
cannot send; this stream is opened with the console session instead. It follows the process's
one log tail and takes its place among the same open-stream limits (per account, per tenant,
per process) as the API's streams (web/events.py): a console tab is one more open stream.

Its frames are small and named, so that a page re-fetches a fragment when something it shows
changed, rather than rendering events itself. Each event the viewer may read (the same events
the API's stream shows it) comes as one frame per name it goes by:

- `<kind>`: any event of that kind: `schedule`, `run`, `approval`, `account`, `definition`,
  `tenant`;
- `<kind>-<id>`: an event of that one schedule, run, approval instance... (its id on the log:
  what the API answers as its `id`; an account's is its `aggregate_id`, not its public id);
- `schedule-<schedule id>`: also every event of that schedule's runs.

Each frame carries `id: <log position>` and `data: {"id", "type"}` (plus a run's
`schedule_id`). `resync` says that events were skipped (the page was open too long without a
connection): a page re-fetches everything it shows. A page uses it with htmx's SSE extension:

    {% block head %}<script src="{{ url_for('console.static', filename='live.js') }}"
      defer></script>{% endblock %}
    <div hx-ext="sse" sse-connect="{{ live }}">
      <div hx-get="{{ url_for('.rows') }}" hx-trigger="sse:approval, sse:resync"
           hx-sync="this:queue last">{% include "..._rows.html" %}</div>
    </div>

where the view computes `live = live_url()` BEFORE it reads what the page shows (the stream
replays what was committed since, so nothing slips between the read and the connection), and
the fragment's view calls `caught_up()` first when it reads the read models (lists): live.js
sends the triggering frame's position, and the read models are waited for up to it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import closing

from flask import Blueprint, Response, request, stream_with_context, url_for
from marshmallow import RAISE, ValidationError

from cronledger.application.stream import (
    Checkpoint,
    Clipped,
    EventStream,
    Lifetime,
    StreamedEvent,
    StreamItem,
    never,
    readable_kinds,
)
from domain.directory import Principal
from web.api import services
from web.console.access import session_check, viewer_or_none
from web.events import (
    HEADERS,
    RECONNECT_MILLISECONDS,
    RETRY_AFTER_SECONDS,
    StreamQuery,
    streams,
)
from web.freshness import wait_until_projected, wanted_position
from web.problems import Problem
from web.stream_slots import StreamSlot, TooManyStreams

bp = Blueprint("live", __name__, url_prefix="/live")
LIVE_SECONDS = 900  # then the browser reconnects, with Last-Event-ID: nothing is missed
TOPICS = {
    "Schedule": "schedule",
    "Run": "run",
    "ApprovalInstance": "approval",
    "Account": "account",
    "Definition": "definition",
    "Tenant": "tenant",
}


def live_url() -> str:
    """The address of the stream a page subscribes to. Call it before reading what the page
    shows: the stream starts where the data read after this call is sure to be."""
    return url_for("console.live.stream", after=shown_position())


def shown_position() -> int:
    """A log position that what is read from now on includes: the read models' (they follow
    the log), at most the log's end."""
    end = services().ledger.recorder.max_notification_id() or 0
    return min([end, *services().projector.positions().values()])


def caught_up() -> None:
    """Wait until the read models hold the live event a fragment is fetched for (live.js sends
    its position in `X-Min-Log-Position`); after a short wait, go on with what they hold."""
    try:
        position = wanted_position()
        if position is not None:
            wait_until_projected(services(), position)
    except Problem:
        pass  # a stale fragment for now: the event's next frame, or the next event, refreshes it


@bp.get("")
def stream() -> Response:
    principal = viewer_or_none()
    if principal is None:
        return _refused(401, "sign in to the console first")
    if not readable_kinds(principal):
        return _refused(403, "this account may read no kind of event")
    try:
        query = StreamQuery(unknown=RAISE).load(request.args.to_dict())
        after = _after(query["after"])
    except (ValidationError, ValueError):
        return _refused(400, "after and Last-Event-ID take a log position")
    seconds = query["max_seconds"] if "max_seconds" in request.args else LIVE_SECONDS
    events = EventStream(
        services().ledger,
        principal,
        after,
        replay_positions=services().settings.stream_replay_positions,
        tail=streams().tail,
        should_stop=_until_over(_lifetime(principal, seconds)),
    )
    try:
        slot = streams().slots.take(principal)
    except TooManyStreams as refused:
        answer = _refused(429, f"{refused}; close a console tab, or retry later")
        answer.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return answer
    response = Response(
        stream_with_context(_frames(events, slot)),
        content_type="text/event-stream",
        headers=HEADERS,
    )
    response.call_on_close(slot.release)  # also when closed before the first frame
    return response


def _refused(status: int, detail: str) -> Response:
    """Not an event stream: EventSource gives up (htmx's extension retries later)."""
    return Response(detail, status, content_type="text/plain; charset=utf-8")


def _after(after: int | None) -> int | None:
    """After `Last-Event-ID` (a reconnect), else `?after=` (the page's moment), else the end."""
    header = request.headers.get("Last-Event-ID")
    if header is None:
        return after
    position = int(header)
    if not 0 <= position <= 2**63 - 1:
        raise ValueError("not a log position")
    return position


def _lifetime(principal: Principal, seconds: int) -> Lifetime:
    """Until `seconds` pass, or the session stops standing for this viewer (signed out,
    expired, its token revoked, its account deactivated or its roles changed): checked every
    few seconds, since signing out is no event the log tail counts."""
    return Lifetime(seconds, principal, session_check())


def _until_over(lifetime: Lifetime) -> Callable[[], bool]:
    """Over at the end of its lifetime, once the browser is gone, or once the server drains."""
    gone: Callable[[], bool] = request.environ.get("waitress.client_disconnected", never)
    health = services().health
    return lambda: gone() or health.draining or lifetime()


def _frames(events: EventStream, slot: StreamSlot) -> Iterator[str]:
    health = services().health
    try:
        with closing(events.batches()) as batches:
            for batch in batches:
                yield "".join(_frame(item) for item in batch)
        if health.draining:
            data = json.dumps({"reason": "the server is shutting down"})
            yield (
                f"id: {events.position}\nretry: {RECONNECT_MILLISECONDS}\n"
                f"event: reconnect\ndata: {data}\n\n"
            )
    finally:
        slot.release()


def _frame(item: StreamItem) -> str:
    if isinstance(item, Checkpoint):
        return f"id: {item.position}\n: keep-alive\n\n"
    if isinstance(item, Clipped):
        return f"id: {item.position}\nevent: resync\ndata: {{}}\n\n"
    return "".join(
        f"id: {item.entry.position}\nevent: {name}\ndata: {_data(item)}\n\n"
        for name in names_of(item)
    )


def names_of(item: StreamedEvent) -> list[str]:
    """The names an event's frames go by (see the module's docstring)."""
    topic = TOPICS.get(item.entry.type.partition(".")[0])
    if topic is None:
        return []
    names = [topic, f"{topic}-{item.aggregate_id}"]
    if item.schedule_id is not None:
        names.append(f"schedule-{item.schedule_id}")
    return names


def _data(item: StreamedEvent) -> str:
    data = {"id": str(item.aggregate_id), "type": item.entry.type}
    if item.schedule_id is not None:
        data["schedule_id"] = str(item.schedule_id)
    return json.dumps(data, separators=(",", ":"))
