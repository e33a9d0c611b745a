"""The projections loop's wake-up: PostgreSQL's NOTIFY ends the wait; stopping always does."""

from __future__ import annotations

import threading

from cronledger.application.services import Services
from cronledger.persistence.wakeup import AppendWakeup

LONG = 30.0  # a wait that would outlast the test if nothing ended it


def waiting(wakeup: AppendWakeup) -> threading.Thread:
    thread = threading.Thread(target=wakeup.wait, args=(LONG,), daemon=True)
    thread.start()
    return thread


def test_an_append_or_a_stop_ends_the_wait(services: Services) -> None:
    stop = threading.Event()
    wakeup = AppendWakeup(services.ledger, stop)
    if services.store.kind == "postgresql":
        wakeup._listening(wakeup.channel or "")  # listening before the append
        thread = waiting(wakeup)
        services.directory.bootstrap("acme", "root")
        thread.join(timeout=10)
        assert not thread.is_alive(), "the append's NOTIFY did not wake the waiter"
        wakeup.close()
    else:
        thread = waiting(wakeup)
        stop.set()
        thread.join(timeout=10)
        assert not thread.is_alive(), "stopping did not end the wait"
