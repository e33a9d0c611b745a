"""`GET /api/events/stream`: a tenant's new events as Server-Sent Events, live and resumable.

Every stream a test opens ends by itself after `SECONDS` (`?max_seconds=`; the 300 of the
limits' test after `HUNDREDS_SECONDS`), and every read has a deadline, so a missing event fails
the test instead of hanging it.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from typing import Any
from uuid import uuid4

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from cronledger.application.launches import Worker
from cronledger.application.services import Services
from cronledger.application.stream import (
    Checkpoint,
    EventStream,
    Lifetime,
    LogTail,
    StreamedEvent,
    StreamItem,
)
from cronledger.health import DRAINING
from domain.directory import Principal
from domain.permissions import SCHEDULE_LIST
from tests.e2e.helpers import account, answers, assert_problem, other_tenant, request, submit
from tests.processes import free_port, started
from tests.sent_shapes import sent_shapes
from tests.support import DECIDERS, Api, FakeClock, FakeTime, principal_of, wait_until
from web import create_app

SECONDS = 5
# Opening 300 streams takes seconds on a loaded machine: none may end by itself before the
# test has read the last.
HUNDREDS_SECONDS = 60
RUN_TYPES = ["Run.Registered", "Run.AttemptStarted", "Run.AttemptSucceeded"]


@dataclass
class Frame:
    id: int | None = None
    event: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)
    arrived: float = 0.0
    retry: int | None = None


def parse(text: str) -> Frame:
    frame = Frame(arrived=time.monotonic())
    for line in text.split("\n"):
        name, _, value = line.partition(": ")
        if name == "id":
            frame.id = int(value)
        elif name == "event":
            frame.event = value
        elif name == "data":
            frame.data = json.loads(value)
        elif name == "retry":
            frame.retry = int(value)
        else:
            assert name == "", f"unexpected line {line!r}"
            frame.comments.append(value)
    return frame


class Stream:
    """An open stream, read frame by frame; it ends by itself after `SECONDS`."""

    def __init__(self, response: TestResponse) -> None:
        self.raw = ""
        self._chunks = response.iter_encoded()
        self._pending = ""

    def next_frame(self) -> Frame | None:
        while "\n\n" not in self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                return None
            self._pending += chunk.decode()
            self.raw += chunk.decode()
        text, self._pending = self._pending.split("\n\n", 1)
        frame = parse(text)
        if frame.event is not None:  # as the document's schema of its kind says
            sent_shapes().check_frame(frame.event, frame.data)
        return frame

    def events_until(self, done: Callable[[Frame], bool], timeout: float = SECONDS) -> list[Frame]:
        """The event frames up to and including the first that is `done`."""
        deadline = time.monotonic() + timeout
        events: list[Frame] = []
        while time.monotonic() < deadline and (frame := self.next_frame()) is not None:
            if frame.event is not None:
                events.append(frame)
                if done(frame):
                    return events
        raise AssertionError(f"not seen in {timeout}s; got {[f.event for f in events]}")


@contextmanager
def open_stream(api: Api, query: str = "", **headers: str) -> Iterator[Stream]:
    sent_shapes()  # read before the stream opens, so that no frame waits for the document
    response = api.get(
        f"/api/events/stream?max_seconds={SECONDS}{query}", headers=headers, buffered=False
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    try:
        yield Stream(response)
    finally:
        response.close()


def opening(stream: Stream) -> int:
    """The checkpoint every stream opens with: the position it starts after."""
    frame = stream.next_frame()
    assert frame is not None
    assert (frame.event, frame.comments) == (None, ["keep-alive"])
    assert frame.id is not None
    return frame.id


def types_of(frames: list[Frame]) -> list[str | None]:
    return [f.event for f in frames]


def is_type(name: str) -> Callable[[Frame], bool]:
    return lambda frame: frame.event == name


def is_account(account_id: str) -> Callable[[Frame], bool]:
    """The frame of that account's registration."""
    return lambda frame: (
        frame.event == "Account.Registered" and frame.data["data"]["account_id"] == account_id
    )


def body_of(response: TestResponse) -> dict[str, Any]:
    answer = response.json
    assert isinstance(answer, dict), response.status_code
    return answer


@pytest.fixture
def schedule_id(admin: Api, body: dict[str, Any]) -> str:
    """A schedule whose runs all launch, even while earlier instances wait for review."""
    created = admin.post("/api/workflows/schedules", {**body, "overlap_policy": "allow"})
    assert created.status_code == 201
    return str(body_of(created)["id"])


def run_now(admin: Api, schedule_id: str, request_id: str) -> str:
    accepted = admin.post(f"/api/workflows/schedules/{schedule_id}/run", {"request_id": request_id})
    assert accepted.status_code == 202
    return str(body_of(accepted)["id"])


def polled_again(services: Services, monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """A wait until the stream reads the log again: its client is waiting for what comes next."""
    polled = threading.Event()
    read = services.ledger.recorder.select_notifications

    def noting_the_poll(*args: Any, **kwargs: Any) -> Any:
        polled.set()
        return read(*args, **kwargs)

    monkeypatch.setattr(services.ledger.recorder, "select_notifications", noting_the_poll)

    def wait() -> None:
        polled.clear()
        polled.wait(SECONDS)

    return wait


def test_a_connected_client_sees_a_runs_events_within_a_second(
    admin: Api, schedule_id: str, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    committed: dict[str, float] = {}  # just before each commit: latencies are upper bounds
    client_waiting = polled_again(services, monkeypatch)

    def run_and_launch() -> None:
        caller = services.directory.authenticate(admin.token)
        assert caller is not None
        client_waiting()
        committed["run"] = time.monotonic()
        services.schedules.run_now(caller, schedule_id, "ops-1")
        client_waiting()
        committed["launch"] = time.monotonic()
        Worker.of(services).poll()

    with open_stream(admin) as stream:
        start = opening(stream)
        writer = threading.Thread(target=run_and_launch)
        writer.start()
        frames = stream.events_until(is_type("Run.AttemptSucceeded"))
        writer.join(SECONDS)
    run = [f for f in frames if f.event and f.event.startswith("Run.")]
    assert types_of(run) == RUN_TYPES
    assert "ApprovalInstance.Submitted" in types_of(frames)
    assert run[0].arrived - committed["run"] < 1.0
    assert all(f.arrived - committed["launch"] < 1.0 for f in run[1:])
    ids = [f.id or 0 for f in frames]
    assert ids == sorted(set(ids))
    assert ids[0] > start
    assert [f.data["position"] for f in frames] == ids
    first = run[0].data
    assert (first["type"], first["log_version"], first["actor"]) == ("Run.Registered", 1, "root")
    assert first["data"]["schedule_id"] == schedule_id
    assert {f.data["aggregate_id"] for f in run} == {first["aggregate_id"]}


def test_a_reconnect_with_last_event_id_resumes_without_gap_or_repeat(
    admin: Api, schedule_id: str, services: Services
) -> None:
    with open_stream(admin) as first:
        start = opening(first)
        run_now(admin, schedule_id, "ops-1")
        Worker.of(services).poll()
        seen = first.events_until(is_type("Run.AttemptStarted"))
    second_run = run_now(admin, schedule_id, "ops-2")  # while disconnected
    Worker.of(services).poll()
    last = str(seen[-1].id)
    with open_stream(admin, "&after=0", **{"Last-Event-ID": last}) as resumed:
        assert opening(resumed) == seen[-1].id  # the header wins over ?after=
        rest = resumed.events_until(
            lambda f: f.event == "Run.AttemptSucceeded" and f.data["aggregate_id"] == second_run
        )
    with open_stream(admin, f"&after={start}") as replay:
        assert opening(replay) == start
        everything = replay.events_until(lambda f: f.id == rest[-1].id)
    assert [f.id for f in seen + rest] == [f.id for f in everything]
    assert [f.data for f in seen + rest] == [f.data for f in everything]
    assert types_of(rest).count("Run.Registered") == 1  # ops-2's; ops-1's came before


def test_without_a_position_the_stream_starts_at_the_logs_end(
    admin: Api, schedule_id: str, services: Services
) -> None:
    run_now(admin, schedule_id, "before")
    end = services.ledger.recorder.max_notification_id()
    with open_stream(admin) as stream:
        assert opening(stream) == end
    with open_stream(admin, f"&after={10**9}") as beyond:
        assert opening(beyond) == end  # never past the end
    for bad in ("-1", "x", "1.5"):
        answer = admin.get("/api/events/stream", headers={"Last-Event-ID": bad})
        assert "Last-Event-ID" in assert_problem(answer, 422, "VALIDATION_FAILED")["errors"]
    assert_problem(admin.get("/api/events/stream?max_seconds=3601"), 422, "VALIDATION_FAILED")


def test_each_tenant_sees_its_own_events_only(
    admin: Api, schedule_id: str, services: Services, client: FlaskClient
) -> None:
    globex = other_tenant(services, client)
    with open_stream(admin) as acme_stream, open_stream(globex) as globex_stream:
        opening(acme_stream)
        opening(globex_stream)
        run_id = run_now(admin, schedule_id, "ops-1")
        Worker.of(services).poll()
        admin.post(f"/api/workflows/schedules/{schedule_id}/enable")  # an aggregate made before
        globex.post("/api/accounts", {"id": "gina", "name": "Gina", "roles": ["operator"]})
        admin.post("/api/accounts", {"id": "marker", "name": "M", "roles": []})
        acme = acme_stream.events_until(is_account("marker"))
        globex_own = globex_stream.events_until(is_account("gina"))
    assert types_of(globex_own) == ["Account.Registered"]  # nothing of acme's came before it
    assert schedule_id not in globex_stream.raw
    assert run_id not in globex_stream.raw
    assert "Schedule.Enabled" in types_of(acme)
    assert run_id in {f.data["aggregate_id"] for f in acme}
    assert "gina" not in acme_stream.raw


def test_permissions_decide_who_streams_what(
    admin: Api, schedule_id: str, services: Services, client: FlaskClient
) -> None:
    assert_problem(client.get("/api/events/stream"), 401, "UNAUTHENTICATED")
    assert_problem(Api(client, "clt_forged").get("/api/events/stream"), 401, "UNAUTHENTICATED")
    hook = account(admin, "hook", ["integration"])
    forbidden = assert_problem(hook.get("/api/events/stream"), 403, "FORBIDDEN")
    assert "workflow:approval:list" in forbidden["detail"]
    requester = account(admin, "req", ["requester"])
    with open_stream(requester) as stream:
        opening(stream)
        admin.post("/api/accounts", {"id": "late", "name": "L", "roles": []})
        run_now(admin, schedule_id, "ops-1")
        Worker.of(services).poll()
        seen = stream.events_until(is_type("ApprovalInstance.Submitted"))
    assert types_of(seen) == ["ApprovalInstance.Submitted"]  # no Account, Schedule or Run


def test_tokens_and_the_tenant_registry_are_never_streamed(admin: Api) -> None:
    with open_stream(admin, "&after=0") as stream:
        assert opening(stream) == 0
        admin.post("/api/accounts", {"id": "ann", "name": "Ann", "roles": ["operator"]})
        issued = body_of(admin.post("/api/accounts/ann/tokens"))
        admin.delete(f"/api/accounts/ann/tokens/{issued['token_id']}")
        admin.post("/api/accounts", {"id": "marker", "name": "M", "roles": []})
        frames = stream.events_until(is_account("marker"))
    types = set(types_of(frames))
    assert {"Tenant.Registered", "Account.Registered", "Tenant.AccountAdded"} <= types
    assert not {t for t in types if t and t.startswith(("ApiToken.", "TenantRegistry."))}
    assert not types & {"Account.TokenIssued", "Account.TokenRevoked"}
    assert issued["token_id"] not in stream.raw
    assert issued["token"] not in stream.raw
    assert admin.token not in stream.raw


def test_a_revoked_token_ends_its_stream(admin: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Lifetime, "RECHECK_SECONDS", 0.2)
    monkeypatch.setattr(EventStream, "CHECK_SECONDS", 0.2)  # it looks as often as it may check
    admin.post("/api/accounts", {"id": "ops", "name": "Ops", "roles": ["auditor"]})
    issued = body_of(admin.post("/api/accounts/ops/tokens"))
    ops = Api(admin.client, issued["token"])
    with open_stream(ops) as stream:
        opening(stream)
        admin.delete(f"/api/accounts/ops/tokens/{issued['token_id']}")
        revoked = time.monotonic()
        assert stream.next_frame() is None  # ended, long before `max_seconds`
        assert time.monotonic() - revoked < 1.0
    assert_problem(ops.get("/api/events/stream"), 401, "UNAUTHENTICATED")


# -- the stream itself, without HTTP ------------------------------------------------------


def test_a_server_shutting_down_tells_its_streams_to_reconnect(
    admin: Api, services: Services
) -> None:
    with open_stream(admin) as stream:
        position = opening(stream)
        services.health.enter(DRAINING, "shutting down")
        last = stream.next_frame()
        assert last is not None
        assert (last.id, last.event, last.retry) == (position, "reconnect", 2000)
        assert last.data == {"reason": "the server is shutting down"}
        assert stream.next_frame() is None  # the stream has ended


def test_a_quiet_stream_sends_a_checkpoint_every_fifteen_seconds(
    admin: Api, services: Services
) -> None:
    fake = FakeTime()
    end = services.ledger.recorder.max_notification_id() or 0
    stream = EventStream(
        services.ledger,
        principal_of(services, admin),
        end,
        sleep=fake.sleep,
        should_stop=lambda: fake.now >= 31,
        clock=fake,
    )
    items: list[tuple[float, StreamItem]] = [(fake.now, item) for item in stream]
    assert [item for _, item in items] == [Checkpoint(end)] * 3
    assert [round(at) for at, _ in items] == [0, 15, 30]
    assert fake.sleeps == pytest.approx(31 / EventStream.POLL_SECONDS, abs=1)


def test_the_stream_reads_a_backlog_in_batches_without_waiting(
    admin: Api, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(5):
        admin.post("/api/accounts", {"id": f"a{n}", "name": "A", "roles": []})
    monkeypatch.setattr(EventStream, "BATCH", 2)
    fake = FakeTime()
    stream = EventStream(
        services.ledger,
        principal_of(services, admin),
        0,
        sleep=fake.sleep,
        should_stop=lambda: fake.sleeps > 0,
        clock=fake,
    )
    events = [item for item in stream if isinstance(item, StreamedEvent)]
    registered = [e for e in events if e.entry.type == "Account.Registered"]
    assert [e.entry.data["account_id"] for e in registered] == [
        "root",
        *(f"a{n}" for n in range(5)),
    ]
    assert fake.sleeps == 1  # full batches are read back to back


def test_a_lifetime_ends_once_the_token_stops_standing_for_the_caller() -> None:
    fake = FakeTime()
    caller = Principal(uuid4(), "ann", frozenset({SCHEDULE_LIST}))
    answers = [caller, replace(caller, permissions=frozenset())]
    lifetime = Lifetime(60, caller, lambda: answers.pop(0), clock=fake)
    while not lifetime():
        fake.sleep(1)
    assert fake.now == 2 * Lifetime.RECHECK_SECONDS  # the second check found the roles changed


def test_a_lifetime_told_of_caller_changes_authenticates_again_only_after_one() -> None:
    fake = FakeTime()
    caller = Principal(uuid4(), "ann", frozenset({SCHEDULE_LIST}))
    checked: list[float] = []
    changes = [0]

    def authenticate() -> Principal:
        checked.append(fake.now)
        return caller

    lifetime = Lifetime(60, caller, authenticate, clock=fake, caller_changes=lambda: changes[0])
    while fake.now < 30:
        if fake.now == 13:
            changes[0] += 1  # e.g. an account's roles changed: maybe this caller's
        assert not lifetime()
        fake.sleep(1)
    assert checked == [5, 13]  # the first check, then once after the change


def test_streams_of_a_process_share_one_reading_of_the_log(
    admin: Api, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    readers: list[str] = []
    read = services.ledger.recorder.select_notifications

    def noting_the_reader(*args: Any, **kwargs: Any) -> Any:
        readers.append(threading.current_thread().name)
        return read(*args, **kwargs)

    monkeypatch.setattr(services.ledger.recorder, "select_notifications", noting_the_reader)
    tail = LogTail(services.ledger, services.health)
    deadline = time.monotonic() + SECONDS
    caller = principal_of(services, admin)
    streams = [
        EventStream(
            services.ledger,
            caller,
            None,
            tail=tail,
            should_stop=lambda: time.monotonic() > deadline,
        ).batches()
        for _ in range(3)
    ]
    for stream in streams:
        assert next(stream) == [Checkpoint(services.ledger.recorder.max_notification_id() or 0)]
    admin.post("/api/accounts", {"id": "ann", "name": "Ann", "roles": []})  # projections read
    readers.clear()
    seen = [next(stream) for stream in streams]  # the streams, in this thread
    assert [[e.entry.type for e in batch if isinstance(e, StreamedEvent)] for batch in seen] == [
        ["Account.Registered", "Tenant.AccountAdded"]
    ] * 3
    assert all(batch[0] is seen[0][0] for batch in seen)  # one object for every stream
    assert set(readers) <= {"log-tail"}  # no stream read the log itself
    for stream in streams:
        stream.close()
    assert tail.position is None  # the tail stopped with its last stream
    readers.clear()
    admin.post("/api/accounts", {"id": "bob", "name": "Bob", "roles": []})
    assert "log-tail" not in readers


def test_a_lifetime_ends_at_its_deadline() -> None:
    fake = FakeTime()
    caller = Principal(uuid4(), "ann", frozenset({SCHEDULE_LIST}))
    lifetime = Lifetime(12, caller, lambda: caller, clock=fake)
    while not lifetime():
        fake.sleep(1)
    assert fake.now == 12


def test_a_served_stream_delivers_within_a_second(server: str, token: str) -> None:
    stream = urllib.request.Request(
        f"{server}/api/events/stream?max_seconds={SECONDS}",
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(stream, timeout=SECONDS) as response:
        assert response.headers["Content-Type"] == "text/event-stream"
        assert response.headers["Cache-Control"] == "no-cache"
        assert response.readline().startswith(b"id: ")
        status, _ = request(
            f"{server}/api/definitions",
            token,
            {
                "key": "k",
                "name": "K",
                "external": False,
                "review_window_seconds": 60,
                "reviewers": DECIDERS,
            },
        )
        committed = time.monotonic()
        assert status == 201
        deadline = committed + SECONDS
        while time.monotonic() < deadline:
            if response.readline() == b"event: Definition.Registered\n":
                break
        assert time.monotonic() - committed < 1.0


# -- limits: open streams, replay, what a caller without audit:read is shown ---------------


def hold(api: Api, held: ExitStack, seconds: int = SECONDS) -> TestResponse:
    """A stream left open until `held` closes it (or the test, if it was the last opened), or
    until its `seconds` are up.

    The test client runs every stream in this thread, each in its own Flask request context:
    they are closed in the reverse order of their opening.
    """
    response = api.get(f"/api/events/stream?max_seconds={seconds}", buffered=False)
    assert response.status_code == 200, response.get_data(as_text=True)
    held.callback(response.close)
    return response


def refused(api: Api) -> str:
    """The detail of a 429 answered to one stream too many, which says when to retry."""
    answer = api.get(f"/api/events/stream?max_seconds={SECONDS}")
    problem = assert_problem(answer, 429, "TOO_MANY_STREAMS")
    assert int(answer.headers["Retry-After"]) > 0
    return str(problem["detail"])


@pytest.fixture
def limited(open_with: Callable[..., Services], clock: FakeClock) -> tuple[Services, Api]:
    """An app allowing 2 open streams per account, 3 per tenant and 4 in the process, and
    its tenant's admin."""
    services = open_with(clock, streams_per_account=2, streams_per_tenant=3, streams_per_process=4)
    client = create_app({"SERVICES": services, "TESTING": True}).test_client()
    return services, Api(client, services.directory.bootstrap("acme", "root").token)


def test_open_streams_are_limited_per_account_tenant_and_server(
    limited: tuple[Services, Api],
) -> None:
    services, admin = limited
    auditor = account(admin, "aud", ["auditor"])
    globex = other_tenant(services, admin.client)
    with ExitStack() as held:
        hold(admin, held)
        hold(auditor, held)  # another account of the tenant
        hold(globex, held)  # another tenant
        last = hold(admin, held)
        assert "account" in refused(admin)  # 2 per account
        assert "tenant" in refused(auditor)  # 3 per tenant
        assert "server" in refused(globex)  # 4 per server process
        assert Stream(last).next_frame() is not None  # a stream in use, then closed
        last.close()
        hold(admin, held)  # its place is free again
        assert "account" in refused(admin)


def test_the_limits_can_allow_hundreds_of_streams_to_one_account(
    open_with: Callable[..., Services], clock: FakeClock
) -> None:
    limits = {f"streams_per_{of}": 300 for of in ("account", "tenant", "process")}
    services = open_with(clock, **limits)
    client = create_app({"SERVICES": services, "TESTING": True}).test_client()
    admin = Api(client, services.directory.bootstrap("acme", "root").token)
    with ExitStack() as held:
        streams = [Stream(hold(admin, held, HUNDREDS_SECONDS)) for _ in range(300)]
        assert "account" in refused(admin)
        admin.post("/api/accounts", {"id": "marker", "name": "M", "roles": []})
        for stream in (streams[0], streams[-1]):
            opening(stream)
            assert types_of(stream.events_until(is_account("marker")))[-1] == "Account.Registered"


def test_a_replay_from_far_back_is_clipped_and_says_so(
    open_with: Callable[..., Services], clock: FakeClock
) -> None:
    services = open_with(clock, stream_replay_positions=10)
    client = create_app({"SERVICES": services, "TESTING": True}).test_client()
    admin = Api(client, services.directory.bootstrap("acme", "root").token)
    for n in range(12):
        admin.post("/api/accounts", {"id": f"a{n}", "name": "A", "roles": []})
    end = services.ledger.recorder.max_notification_id() or 0
    with open_stream(admin, "&after=0") as stream:
        assert opening(stream) == end - 10
        clipped = stream.next_frame()
        assert clipped is not None
        assert (clipped.event, clipped.id) == ("replay-clipped", None)
        assert clipped.data == {"requested_after": 0, "starts_after": end - 10}
        replayed = stream.events_until(is_account("a11"))
    assert 0 < len(replayed) <= 10
    assert all((f.id or 0) > end - 10 for f in replayed)
    with open_stream(admin, f"&after={end - 3}") as near:
        assert opening(near) == end - 3
        assert (frame := near.next_frame()) is not None
        assert frame.event != "replay-clipped"  # within the limit, nothing is skipped


@contextmanager
def serving(store_url: str, *args: str, **env: str) -> Iterator[int]:
    """`cronledger serve ARGS` with `env`, once it answers: its port."""
    port = free_port()
    with started(store_url, "serve", "--port", str(port), *args, **env) as child:
        child.wait_for(lambda: answers(f"http://127.0.0.1:{port}/healthz"), "answering")
        yield port


def connect(port: int, token: str, held: ExitStack) -> http.client.HTTPResponse:
    """A stream that would outlive the test: only its client leaving can free its place."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=SECONDS)
    held.callback(connection.close)
    path = "/api/events/stream?max_seconds=600"
    connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    response = connection.getresponse()
    held.callback(response.close)
    return response


def test_open_streams_leave_every_api_thread_to_the_api(store_url: str, token: str) -> None:
    env = {f"CRONLEDGER_STREAMS_PER_{of}": "3" for of in ("ACCOUNT", "TENANT", "PROCESS")}
    with serving(store_url, "--threads", "1", **env) as port, ExitStack() as held:
        for _ in range(3):
            assert connect(port, token, held).readline().startswith(b"id: ")
        assert request(f"http://127.0.0.1:{port}/api/accounts", token)[0] == 200
        assert connect(port, token, held).status == 429  # no fourth stream


def test_a_served_stream_frees_its_place_when_its_client_leaves(store_url: str, token: str) -> None:
    def accepted() -> bool:
        with ExitStack() as probe:
            return connect(port, token, probe).status == 200

    with (
        serving(store_url, CRONLEDGER_STREAMS_PER_ACCOUNT="2") as port,
        ExitStack() as held,
        ExitStack() as leaving,
    ):
        assert connect(port, token, leaving).readline().startswith(b"id: ")
        assert connect(port, token, held).readline().startswith(b"id: ")
        with ExitStack() as probe:
            response = connect(port, token, probe)
            assert (response.status, response.headers["Retry-After"]) == (429, "10")
        leaving.close()  # the client goes away without a word
        wait_until(accepted, "a stream accepted in the place it left", timeout=SECONDS)


def approval_frames(stream: Stream) -> list[Frame]:
    frames = stream.events_until(is_type("ApprovalInstance.Approved"))
    return [f for f in frames if (f.event or "").startswith("ApprovalInstance.")]


def test_only_audit_read_streams_refused_commands_and_others_command_detail(
    admin: Api, definition_id: str
) -> None:
    applicant = account(admin, "sales", ["requester"])
    colleague = account(admin, "sales2", ["requester"])
    auditor = account(admin, "aud", ["auditor"])
    with (
        open_stream(applicant) as own,
        open_stream(colleague) as others,
        open_stream(auditor) as audit,
    ):
        for stream in (own, others, audit):
            opening(stream)
        instance = body_of(submit(applicant, definition_id, "sub-1"))
        approve = f"/api/approvals/{instance['id']}/approve"
        stale = admin.post(approve, {"command_id": "cmd-stale", "material_version": 1})
        assert stale.status_code == 409
        assert (
            admin.post(approve, {"command_id": "cmd-ok", "material_version": 2}).status_code == 200
        )
        audited, applicants, colleagues = (approval_frames(s) for s in (audit, own, others))
    submitted, rejected, approved = (f.data for f in audited)
    assert types_of(audited) == [
        "ApprovalInstance.Submitted",
        "ApprovalInstance.CommandRejected",
        "ApprovalInstance.Approved",
    ]
    assert (rejected["command_id"], rejected["outcome"]) == ("cmd-stale", "STALE_MATERIAL")
    assert "material version 1" in rejected["reason"]
    assert (approved["command_id"], approved["reason"]) == (
        "cmd-ok",
        "approved before the deadline",
    )
    assert "fingerprint" in approved["data"]
    for frames in (applicants, colleagues):
        assert types_of(frames) == ["ApprovalInstance.Submitted", "ApprovalInstance.Approved"]
        state_change = frames[1].data
        assert (state_change["actor"], state_change["outcome"]) == ("root", "APPROVED")
        assert (state_change["command_id"], state_change["reason"]) == (None, None)
        assert "fingerprint" not in state_change["data"]
    assert applicants[0].data == submitted  # the applicant's own submission, in full
    assert (colleagues[0].data["command_id"], colleagues[0].data["actor"]) == (None, "sales")
    for stream in (own, others):
        assert "cmd-stale" not in stream.raw
        assert "cmd-ok" not in stream.raw
        assert "material version" not in stream.raw


def test_run_frames_name_their_schedule_and_account_frames_the_public_id(
    admin: Api, schedule_id: str, services: Services
) -> None:
    start = services.ledger.recorder.max_notification_id()
    run_now(admin, schedule_id, "ops-1")
    Worker.of(services).poll()
    account(admin, "ann", ["operator"])
    assert admin.post("/api/accounts/ann/deactivate").status_code == 200
    with open_stream(admin, f"&after={start}") as stream:
        frames = stream.events_until(is_type("Account.Deactivated"))
    runs = [f for f in frames if str(f.event).startswith("Run.")]
    assert types_of(runs) == RUN_TYPES
    assert {f.data["schedule_id"] for f in runs} == {schedule_id}
    accounts = [(f.event, f.data["account_id"]) for f in frames if "account_id" in f.data]
    assert accounts == [("Account.Registered", "ann"), ("Account.Deactivated", "ann")]
    assert all("schedule_id" not in f.data for f in frames if f not in runs)
