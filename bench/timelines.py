"""Issue 31's readable history: a page of a schedule's 10,000-event timeline in the console,
on each store. Only the page's 100 events are read from the log, so a page costs the same
wherever it lies in the timeline; a jump to an instant halves the log to find its page.

The schedule is switched off and on 10,000 times, a minute apart, saved straight through the
ledger; the console's pages are asked for through Flask's test client, signed in as the
tenant's admin. Goal: every page served in under 300 ms at p95 (of BENCH_TIMELINE_ROUNDS
requests of each).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from uuid import UUID

from bench._results import Figure, Result, percentile
from bench._stores import empty_store
from bench.projections import T0
from cronledger.application.services import Services, open_services
from cronledger.clock import ManualClock
from cronledger.config import Settings
from domain.directory import Principal
from domain.schedules import Schedule, ScheduleSettings
from domain.values import FormData

EVENTS = 10_000
SAVED_TOGETHER = 1_000  # switches per commit while seeding
ROUNDS = int(os.environ.get("BENCH_TIMELINE_ROUNDS", "40"))
GOAL_MS = 300.0
CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)">')


def run() -> Iterator[Result]:
    for kind in ("sqlite", "postgresql"):
        yield from _measure(kind)


def _measure(kind: str) -> Iterator[Result]:
    with empty_store(kind) as url:
        clock = ManualClock(T0)
        services = open_services(Settings(database_url=url), clock)
        try:
            token, schedule_id = _seed(services, clock)
            client = _signed_in(services, token)
            path = f"/console/timelines/schedule/{schedule_id}"
            middle = (T0 + timedelta(minutes=EVENTS // 2)).isoformat()
            cases = {
                "first page": f"{path}?page=1",
                "middle page": f"{path}?page={EVENTS // 200}",
                "last page": f"{path}?page={EVENTS // 100}",
                "jump to an instant": f"{path}?jump={middle.replace('+00:00', 'Z')}",
            }
            for case, asked in cases.items():
                took = _timed(client, asked)
                yield Result(
                    "timelines",
                    f"{kind}, console timeline of {EVENTS:,} events, {case}",
                    (
                        Figure("p95", percentile(took, 0.95), "ms", at_most=GOAL_MS),
                        Figure("median", percentile(took, 0.5), "ms"),
                    ),
                    settings={"rounds": ROUNDS, "page size": 100},
                )
        finally:
            services.close()


def _seed(services: Services, clock: ManualClock) -> tuple[str, UUID]:
    """A tenant, and one schedule with EVENTS events (created, then switched off and on)."""
    token = services.directory.bootstrap("bench", "root").token
    root = services.directory.authenticate(token)
    assert isinstance(root, Principal)
    trigger = {"kind": "cron", "expression": "0 9 * * *"}
    settings = ScheduleSettings("timeline", "d", trigger, "UTC", "root", "T", FormData.of({}))
    schedule = Schedule.create(root.tenant_id, settings, False, clock.now, "root")
    services.ledger.save(schedule)
    for switched in range(1, EVENTS):
        clock.advance(60)
        schedule.switch(switched % 2 == 1, clock.now, "root", services.schedules.policy)
        if switched % SAVED_TOGETHER == 0 or switched == EVENTS - 1:
            services.ledger.save(schedule)
    services.projector.catch_up()
    return token, schedule.id


def _signed_in(services: Services, token: str) -> Any:
    from web import create_app  # only here: seeding needs no web app

    client = create_app({"SERVICES": services, "TESTING": True}).test_client()
    found = CSRF.search(client.get("/console/sign-in").get_data(as_text=True))
    assert found, "the sign-in page has no CSRF token"
    signed = client.post("/console/sign-in", data={"token": token, "csrf_token": found[1]})
    assert signed.status_code == 302, signed.status_code
    return client


def _timed(client: Any, path: str) -> list[float]:
    """How long each of ROUNDS requests for the page took, in ms (after one warm-up)."""
    assert client.get(path).status_code == 200, path
    took = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        answer = client.get(path)
        took.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, path
    return took


if __name__ == "__main__":
    for result in run():
        print(result.line)
