"""Connections cut: `pg_terminate_backend` on the service's connections at the worst moments.

PostgreSQL only: terminating a server's backends is a PostgreSQL fault (a SQLite file has no
connection to lose). The services run in the test's process with an `application_name` of
their own (`cut_support.own_services`), so only their connections are cut; a step is held
(`Paused`) while its transaction is open, after its insert and before its commit, or at the
start of a read, the connections are cut, and the step is let go. Then the same objects (no
restart) carry on, and the log shows: each cycle registered once, each run launched once (one
instance per run), no attempt left RUNNING, no outcome rejected.

A commit whose answer is lost (`answer_lost`: the commit happens, the caller hears the
connection fail) is retried once by the recorder, finds its own events there (a conflict),
and is re-read rather than repeated.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import psycopg
import pytest
from eventsourcing.persistence import OperationalError
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services
from cronledger.application.stream import LogTail
from domain.runs import Run
from projections.engine import Projector
from tests.faults.cut_support import Background, Paused, cut, own_services
from tests.support import FakeClock, World, wait_until
from tests.two_commits import TwoCommitWorker

pytestmark = pytest.mark.usefixtures("postgres_ready")
IN_TRANSACTION = (PostgresApplicationRecorder, "_fetch_ids_after_insert_events")
CYCLES = 4


@pytest.fixture
def world() -> Iterator[tuple[World, str]]:
    clock = FakeClock()
    with own_services(clock) as (services, application_name):
        every_minute = {"kind": "cron", "expression": "* * * * *"}
        made = World(services, clock, trigger=every_minute)
        services.schedules.set_enabled(made.root, made.schedule, True, None)
        yield made, application_name


def recovered(work: Callable[[], Any], what: str) -> Any:
    """`work()`'s result once it succeeds: the pools drop the cut connections as they meet
    them, and open new ones, without a restart."""
    outcome: list[Any] = []

    def attempt() -> bool:
        try:
            outcome.append(work())
        except (OperationalError, psycopg.OperationalError):
            return False
        return True

    wait_until(attempt, what)
    return outcome[0]


def settled(world: World) -> None:
    """Work until nothing is due, past every lease: what a cut left behind is taken up."""
    services, clock = world.services, world.clock
    worker = Worker.of(services, "settler")
    clock.advance(2 * 3600)
    recovered(worker.drain, "the worker working")
    recovered(services.projector.catch_up, "the projections caught up")


def check_exactly_once(services: Services) -> list[Run]:
    """Each cycle registered once, each run launched once and finished, no outcome rejected."""
    log = services.ledger.recorder.select_notifications(start=1, limit=100_000)
    events = [services.ledger.decode(notification) for notification in log]
    types = Counter(type(event).__qualname__ for event in events)
    assert types["Run.OutcomeRejected"] == 0
    runs = [
        run
        for run in services.ledger.get_many(
            [e.originator_id for e in events if type(e).__qualname__ == "Run.Registered"]
        ).values()
        if isinstance(run, Run)
    ]
    cycles = Counter((run.schedule_id, run.planned_at) for run in runs)
    assert cycles
    assert max(cycles.values()) == 1, cycles
    created = Counter(
        e.originator_id for e in events if type(e).__qualname__ == "ApprovalInstance.Submitted"
    )
    assert max(created.values(), default=1) == 1
    for run in runs:
        assert run.status == "SUCCEEDED", (run.id, run.status, run.attempts)
        # One attempt: none was left holding a lease that had to run out.
        assert [a["outcome"] for a in run.attempts] == ["SUCCEEDED"], run.attempts
        assert UUID(run.attempts[0]["instance_id"]) in created
    assert len(created) == len(runs)
    return runs


def test_a_tick_batch_cut_before_its_commit(
    world: tuple[World, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    world_, application_name = world
    world_.clock.advance(CYCLES * 60)
    ticker = Ticker.of(world_.services)
    held = Paused(monkeypatch, *IN_TRANSACTION)
    scan = Background(ticker.scan)
    held.wait()
    assert cut(application_name) > 0
    held.release()
    scan.ended_as_a_cut_allows()  # failed as a cut fails, or its retry committed
    recovered(ticker.scan, "the tick scanning again")
    settled(world_)
    assert len(check_exactly_once(world_.services)) == CYCLES


@pytest.mark.parametrize("step", ["poll", "claim"])
def test_a_worker_cut_before_its_commit(
    world: tuple[World, str], monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    world_, application_name = world
    world_.clock.advance(CYCLES * 60)
    assert Ticker.of(world_.services).scan().registered == CYCLES
    world_.services.projector.catch_up()  # the tick leaves it to the projections runner
    worker = TwoCommitWorker.of(world_.services, "cut")
    work: dict[str, Callable[[], Any]] = {"poll": worker.poll, "claim": worker.claim}
    held = Paused(monkeypatch, *IN_TRANSACTION)
    background = Background(work[step])
    held.wait()
    assert cut(application_name) > 0
    held.release()
    background.ended_as_a_cut_allows()
    if step == "claim" and background.error is None:
        recovered(lambda: worker.launch(background.result), "the claimed attempts launched")
    recovered(worker.drain, "the worker working again")
    settled(world_)
    assert len(check_exactly_once(world_.services)) == CYCLES


def test_a_projection_batch_cut_while_it_applies(
    world: tuple[World, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    world_, application_name = world
    services = world_.services
    world_.clock.advance(CYCLES * 60)
    with services.ledger.projections_deferred():
        Ticker.of(services).scan()
    held = Paused(monkeypatch, Projector, "_run_batch")
    catching_up = Background(services.projector.catch_up)
    held.wait()
    assert cut(application_name) > 0
    held.release()
    catching_up.ended_as_a_cut_allows()
    recovered(services.projector.catch_up, "the projections catching up again")
    end = services.ledger.recorder.max_notification_id()
    assert set(services.projector.positions().values()) == {end}
    assert services.audit.replay(lambda _: None) == []
    assert services.audit.verify(lambda _: None).found is None


def test_an_event_stream_cut_while_it_follows(world: tuple[World, str]) -> None:
    world_, application_name = world
    services = world_.services
    tail = LogTail(services.ledger, services.health)
    with tail.following():
        start = services.ledger.recorder.max_notification_id() or 0
        wait_until(lambda: tail.position == start, "the tail at the log's end")
        assert cut(application_name) > 0
        run_id = recovered(lambda: world_.run_now("after the cut"), "a command accepted")
        end = services.ledger.recorder.max_notification_id() or 0
        wait_until(lambda: (tail.position or 0) >= end, "the tail past the cut")
        streamed = {event.full.aggregate_id for event in tail.read(start, 1000)[0]}
    assert UUID(run_id) in streamed


@contextmanager
def answer_lost(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The first append on another thread commits, and its caller hears the connection fail
    instead of the answer (as when the server's reply to COMMIT never arrives)."""
    committed = threading.Event()
    test_thread = threading.get_ident()
    inserted = threading.local()
    fetch_ids = PostgresApplicationRecorder._fetch_ids_after_insert_events
    get_connection = PostgresDatastore.get_connection

    def noting(self: Any, *args: Any, **kwargs: Any) -> Any:
        inserted.yes = True
        return fetch_ids(self, *args, **kwargs)

    @contextmanager
    def losing(self: Any) -> Iterator[Any]:
        inserted.yes = False
        with get_connection(self) as conn:
            yield conn
        lose = inserted.yes and threading.get_ident() != test_thread
        if lose and not committed.is_set():
            committed.set()
            raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(PostgresApplicationRecorder, "_fetch_ids_after_insert_events", noting)
    monkeypatch.setattr(PostgresDatastore, "get_connection", losing)
    yield committed


@pytest.mark.parametrize("step", ["tick", "poll", "claim", "launch"])
def test_a_commit_whose_answer_was_lost_is_read_again_not_repeated(
    world: tuple[World, str], monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    world_, _ = world
    services = world_.services
    world_.clock.advance(CYCLES * 60)
    ticker, worker = Ticker.of(services), TwoCommitWorker.of(services, "lost")
    if step != "tick":
        assert ticker.scan().registered == CYCLES
        services.projector.catch_up()
    claims = worker.claim() if step == "launch" else []
    work: dict[str, Callable[[], Any]] = {
        "tick": ticker.scan,
        "poll": worker.poll,
        "claim": worker.claim,
        "launch": lambda: worker.launch(claims),
    }
    with answer_lost(monkeypatch) as lost:
        done = Background(work[step]).join()
    assert lost.is_set()
    assert done.error is None, done.error
    if step == "claim":
        assert len(done.result) == CYCLES  # the attempts it started, though it never heard so
        assert worker.launch(done.result).succeeded == CYCLES
    settled(world_)
    assert len(check_exactly_once(services)) == CYCLES
