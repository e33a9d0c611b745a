"""The projections loop's wake-up: PostgreSQL's NOTIFY ends the wait; stopping always does."""

from __future__ import annotations

import itertools
import threading

from cronledger.application.services import Services
from cronledger.persistence.wakeup import AppendWakeup
from tests.support import wait_until

LONG = 30.0  # a wait that would outlast the test if nothing ended it


def waiting(wakeup: AppendWakeup) -> threading.Thread:
    thread = threading.Thread(target=wakeup.wait, args=(LONG,), daemon=True)
    thread.start()
    return thread


def test_an_append_or_a_stop_ends_the_wait(services: Services) -> None:
    stop = threading.Event()
    wakeup = AppendWakeup(services.ledger, stop)
    if services.store.kind == "postgresql":
        thread = waiting(wakeup)
        tenants = itertools.count()

        def woken_by_an_append() -> bool:
            """Append again until the waiter, listening by then, has been woken."""
            services.directory.bootstrap(f"tenant-{next(tenants)}", "root")
            return not thread.is_alive()

        wait_until(woken_by_an_append, "woken by an append's NOTIFY", timeout=10, interval=0.1)
        wakeup.close()
    else:
        thread = waiting(wakeup)
        stop.set()
        thread.join(timeout=10)
        assert not thread.is_alive(), "stopping did not end the wait"
