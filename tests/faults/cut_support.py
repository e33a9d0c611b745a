"""Cutting a process's PostgreSQL connections at a chosen step, in the test's own process.

The services under test connect as `cronledger-<kind>` with a kind of their own
(`cut-<random>`), so that `pg_terminate_backend` reaches their connections and nobody else's
(other tests, and other helpers' processes, share the server). A step is a method: while a
thread runs it, `Paused` holds that thread at its start until the test releases it.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from eventsourcing import persistence

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.support import POSTGRES_URL, WAIT_SECONDS, FakeClock, fresh_postgres_url, wait_until


@contextmanager
def own_services(clock: FakeClock, **settings: Any) -> Iterator[tuple[Services, str]]:
    """Services on a fresh PostgreSQL schema, and the `application_name` of all their
    connections (theirs alone)."""
    kind = f"cut-{uuid.uuid4().hex[:10]}"
    for url in fresh_postgres_url():
        services = open_services(Settings(database_url=url, **settings), clock, kind=kind)
        try:
            yield services, f"cronledger-{kind}"
        finally:
            services.close()


def backends(application_name: str, waiting_for_lock: bool = False) -> list[int]:
    """The server processes of connections named `application_name` (only those waiting for a
    lock, if asked)."""
    condition = " AND wait_event_type = 'Lock'" if waiting_for_lock else ""
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s" + condition,
            (application_name,),
        ).fetchall()
    return [row[0] for row in rows]


def cut(application_name: str) -> int:
    """Terminate every connection named `application_name`; how many there were."""
    pids = backends(application_name)
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        for pid in pids:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    wait_until(lambda: not set(pids) & set(backends(application_name)), "connections ended")
    return len(pids)


class Paused:
    """Holds the first call of `owner.name` (made on a thread other than the test's) at its
    start, until `release`; later calls and the test's own thread go through."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> None:
        self.arrived, self.released = threading.Event(), threading.Event()
        self.test_thread = threading.get_ident()
        self.armed = True
        original: Callable[..., Any] = getattr(owner, name)
        paused = self

        def held(*args: Any, **kwargs: Any) -> Any:
            if paused.armed and threading.get_ident() != paused.test_thread:
                paused.armed = False
                paused.arrived.set()
                paused.released.wait(WAIT_SECONDS)
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, held)

    def wait(self) -> None:
        wait_until(self.arrived.is_set, "the step reached")

    def release(self) -> None:
        self.released.set()


# What work on a connection that was cut (pg_terminate_backend) fails with, in psycopg and as
# eventsourcing's recorders wrap it.
CUT_ERRORS = (
    psycopg.OperationalError,
    psycopg.InterfaceError,
    persistence.OperationalError,
    persistence.InterfaceError,
)


class Background:
    """`work()` on a thread of its own; its result or error once it ends."""

    def __init__(self, work: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(work,), daemon=True)
        self.thread.start()

    def _run(self, work: Callable[[], Any]) -> None:
        try:
            self.result = work()
        except BaseException as error:  # handed to the test
            self.error = error

    def join(self) -> Background:
        self.thread.join(WAIT_SECONDS)
        assert not self.thread.is_alive(), "the background work did not end"
        return self

    def ended_as_a_cut_allows(self) -> Background:
        """Joined: it committed (its retry on a new connection), or it failed as work on a cut
        connection fails; any other error is the test's (raised here)."""
        self.join()
        if self.error is not None and not isinstance(self.error, CUT_ERRORS):
            raise self.error
        return self
