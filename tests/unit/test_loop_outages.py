"""A loop's outage in its log (issue 32, item 10): one line when its iterations start failing,
with the first error's trace, and one when one succeeds again, with how many failed."""

from __future__ import annotations

import logging

import pytest

from cronledger.health import Health
from tests.support import wait_until
from tick.loops import Loop


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, int, int | None, int | None]]:
    return [
        (r.getMessage(), r.levelno, getattr(r, "failures", None), getattr(r, "suppressed", None))
        for r in caplog.records
        if r.name == "cronledger.loops" and r.getMessage().startswith("loop ")
    ]


def test_failures_in_a_row_are_one_line_and_the_recovery_another(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    health = Health(monotonic=lambda: now[0])
    outcomes = iter([False, False, False, True, False, True])

    def work() -> None:
        now[0] += 1.0
        if not next(outcomes):
            raise OSError("the store went away")

    loop = Loop("tick", 1.0, work, health=health)
    health.register("tick", 1.0)
    with caplog.at_level(logging.INFO, logger="cronledger.loops"):
        for _ in range(6):
            loop._iterate()

    assert lines(caplog) == [
        ("loop iteration failed", logging.ERROR, None, None),
        ("loop recovered", logging.WARNING, 3, 2),
        ("loop iteration failed", logging.ERROR, None, None),
        ("loop recovered", logging.WARNING, 1, 0),
    ]
    first = caplog.records[0]
    assert first.exc_info is not None
    assert "the store went away" in str(first.exc_info[1])
    recovered = next(r for r in caplog.records if r.getMessage() == "loop recovered")
    assert recovered.outage_seconds == 3.0  # type: ignore[attr-defined]  # from the first failure
    assert health.loops["tick"].failures == 4  # every failure counted all the same


def failures(loop: Loop) -> int:
    beat = loop.health.loops.get(loop.name)
    return 0 if beat is None else beat.failures


def test_a_loop_stopped_while_failing_says_how_many_failed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = Loop("worker", 0.01, lambda: 1 / 0)
    with caplog.at_level(logging.INFO, logger="cronledger.loops"):
        thread = loop.start()
        wait_until(lambda: failures(loop) >= 3, "three failures")
        loop.stop.set()
        thread.join()
    said = [message for message, *_ in lines(caplog)]
    assert said.count("loop iteration failed") == 1
    assert said[-2] == "loop stopped while failing"
    stopped = next(r for r in caplog.records if r.getMessage() == "loop stopped while failing")
    assert stopped.failures >= 3  # type: ignore[attr-defined]
