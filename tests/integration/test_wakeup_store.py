"""The projections loop's wake-up: PostgreSQL's NOTIFY ends the wait; stopping always does."""

from __future__ import annotations

import itertools
import threading
from uuid import uuid4

import pytest

from cronledger.application.services import Services
from cronledger.persistence.wakeup import AppendWakeup
from tests.support import wait_until

LONG = 30.0  # a wait that would outlast the test if nothing ended it


def waiting(wakeup: AppendWakeup) -> threading.Thread:
    thread = threading.Thread(target=wakeup.wait, args=(LONG,), daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)  # SQLite sends none
def test_an_append_ends_the_wait(services: Services) -> None:
    wakeup = AppendWakeup(services.ledger, threading.Event())
    thread = waiting(wakeup)
    tenants = itertools.count()

    def woken_by_an_append() -> bool:
        """Append again until the waiter, listening by then, has been woken."""
        services.directory.bootstrap(f"tenant-{next(tenants)}", "root")
        return not thread.is_alive()

    wait_until(woken_by_an_append, "woken by an append's NOTIFY", timeout=10, interval=0.1)
    wakeup.close()


def test_a_stop_ends_the_wait(services: Services) -> None:
    """On each store, and on PostgreSQL while the waiter listens for notifications."""
    stop = threading.Event()
    wakeup = AppendWakeup(services.ledger, stop)
    if services.store.kind == "postgresql":  # a channel nobody notifies: only the stop ends it
        wakeup.channel = f"nobody_{uuid4().hex}"
    thread = waiting(wakeup)
    if services.store.kind == "postgresql":
        wait_until(lambda: wakeup.listening, "the waiter listening")
    stop.set()
    thread.join(timeout=10)
    assert not thread.is_alive(), "stopping did not end the wait"
    wakeup.close()
