"""Get-act-save retried when another writer won: in turn within a process, and a clear answer
when other writers win every try."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from eventsourcing.persistence import IntegrityError

from cronledger.application.services import Services
from cronledger.persistence.ledger import TooManyWriters


def test_commands_on_one_aggregate_run_in_turn_and_others_alongside(services: Services) -> None:
    ledger = services.ledger
    inside = {1: 0, 2: 0}  # two aggregates' keys (ints: their lock stripes differ in any process)
    most = {1: 0, 2: 0}
    both = threading.Event()
    guard = threading.Lock()

    def command(key: int) -> None:
        with guard:
            inside[key] += 1
            most[key] = max(most[key], inside[key])
            if inside[1] and inside[2]:
                both.set()
        both.wait(30)  # the other aggregate's command comes in beside this one
        time.sleep(0.01)  # a window for another command of this aggregate to come in
        with guard:
            inside[key] -= 1

    with ThreadPoolExecutor(8) as pool:
        keys = [1, 2] * 8
        list(pool.map(lambda k: ledger.retrying(lambda: command(k), one_at_a_time=k), keys))
    assert most == {1: 1, 2: 1}
    assert both.is_set()  # two aggregates' commands did run side by side


def test_a_command_other_writers_beat_at_every_try_is_refused_as_unavailable(
    services: Services,
) -> None:
    tries = []

    def always_beaten() -> None:
        tries.append(1)
        raise IntegrityError("another writer won")

    with pytest.raises(TooManyWriters) as refused:
        services.ledger.retrying(always_beaten, attempts=3)
    assert len(tries) == 3
    assert refused.value.code == "UNAVAILABLE"
    assert "3 tries" in refused.value.message
