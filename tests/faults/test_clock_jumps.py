"""Clock jumps under the real tick and sweeper code, on both stores (docs/reliability.md).

The service reads an injected clock (FakeClock), set back and forward by hand between scans:
back an hour, forward an hour (each misfire policy), and across the daylight-saving changes
of Europe/Berlin, America/New_York and Australia/Lord_Howe (a half-hour shift). Checked: no
cycle is registered twice, none before its planned instant, missed ones by the schedule's
misfire policy, and approval deadlines stay inclusive whichever way the clock moved.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from itertools import takewhile
from typing import Any

import pytest

from cronledger.application.cycles import Ticker
from cronledger.application.directory import DefinitionFields
from cronledger.application.services import Services
from cronledger.persistence.store import as_instant
from domain.approvals import APPROVE, Command, Submission
from domain.directory import Principal
from domain.permissions import ROLES
from domain.triggers import CronTrigger, fire_times, load_zone
from tests.support import DECIDERS, REVIEWER, FakeClock, Opener

T0 = datetime(2026, 6, 1, 0, 0, 30, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


@pytest.fixture
def world(open_with: Opener) -> tuple[Services, FakeClock, Principal, str]:
    clock = FakeClock(T0)
    services = open_with(clock)
    root = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    assert root is not None
    services.directory.create_account(root, REVIEWER, "Vera", ["operator"])
    definition = services.directory.create_definition(
        root,
        "daily",
        DefinitionFields("Daily", False, 3600, [], reviewers=DECIDERS),
    )
    services.directory.set_published(root, definition.id, True, None)
    return services, clock, root, definition.id


def schedule(
    services: Services,
    root: Principal,
    definition_id: str,
    expression: str,
    timezone: str = "UTC",
    **fields: Any,
) -> str:
    body = {
        "name": f"{expression} {timezone} {fields}",
        "definition_id": definition_id,
        "trigger": {"kind": "cron", "expression": expression},
        "timezone": timezone,
        "initiator_id": "root",
        "title_template": "Check {{datetime}}",
        **fields,
    }
    return services.schedules.create(root, services.schedules.settings_from(body), True).id


def registered(services: Services, schedule_id: str) -> list[tuple[datetime, datetime, str, int]]:
    """(planned_at, registered_at, status, skipped_count) of each scheduled cycle, by plan."""
    services.projector.catch_up()
    rows = services.store.query(
        "SELECT planned_at, registered_at, status, skipped_count FROM runs "
        "WHERE schedule_id = ? AND trigger = 'schedule' ORDER BY planned_at",
        (schedule_id,),
    )
    return [(as_instant(r[0]), as_instant(r[1]), r[2], r[3]) for r in rows]  # type: ignore[misc]


def check_once_and_never_early(services: Services, schedule_id: str) -> list[datetime]:
    """The planned instants: each once, each registered at or after it (by the service's clock)."""
    runs = registered(services, schedule_id)
    twice = [at for at, count in Counter(run[0] for run in runs).items() if count > 1]
    assert twice == [], f"registered twice: {twice}"
    early = [(planned, at) for planned, at, _, _ in runs if at < planned]
    assert early == [], f"registered before the planned instant: {early}"
    return [run[0] for run in runs]


def scan_every(services: Services, clock: FakeClock, step: timedelta, until: datetime) -> None:
    ticker = Ticker.of(services)
    while clock.now < until:
        clock.now = min(clock.now + step, until)
        ticker.scan()


def test_clock_back_an_hour_registers_nothing_twice_and_nothing_early(
    world: tuple[Services, FakeClock, Principal, str],
) -> None:
    services, clock, root, definition_id = world
    minutely = schedule(services, root, definition_id, "* * * * *")
    quarterly = schedule(services, root, definition_id, "*/15 * * * *")
    scan_every(services, clock, MINUTE, T0 + timedelta(minutes=90))
    before = {sid: check_once_and_never_early(services, sid) for sid in (minutely, quarterly)}
    jumped_at = clock.now
    clock.now -= timedelta(hours=1)  # an NTP step back, or a host restored from a snapshot
    scan_every(services, clock, MINUTE, jumped_at)  # the hour again: nothing is due in it
    for sid in (minutely, quarterly):
        assert check_once_and_never_early(services, sid) == before[sid]
    scan_every(services, clock, MINUTE, jumped_at + timedelta(minutes=30))  # new time again
    expected = list(
        takewhile(
            lambda fire: fire <= clock.now,
            fire_times(CronTrigger("* * * * *"), load_zone("UTC"), T0),
        )
    )
    assert check_once_and_never_early(services, minutely) == expected
    assert len(check_once_and_never_early(services, quarterly)) == 8  # 00:15 .. 02:00


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("catch_up", [("PENDING", 0)] * 61),  # in bounded rounds, oldest first
        ("skip", [("PENDING", 0), ("SKIPPED_MISSED", 59), ("PENDING", 0)]),
        ("once", [("PENDING", 0), ("SKIPPED_MISSED", 58), ("PENDING", 0), ("PENDING", 0)]),
    ],
)
def test_clock_forward_an_hour_handles_the_missed_cycles_by_policy(
    world: tuple[Services, FakeClock, Principal, str],
    policy: str,
    expected: list[tuple[str, int]],
) -> None:
    services, clock, root, definition_id = world
    minutely = schedule(services, root, definition_id, "* * * * *", misfire_policy=policy)
    clock.now = T0 + timedelta(seconds=30)  # 00:01:00 is due, within the grace
    Ticker.of(services).scan()
    clock.now += timedelta(hours=1)  # 00:02 .. 01:00 are missed; 01:01 is on time
    while Ticker.of(services).scan().registered:  # the clock stands still meanwhile
        pass
    runs = registered(services, minutely)
    check_once_and_never_early(services, minutely)
    assert [(status, count) for _, _, status, count in runs] == expected
    assert runs[0][0] == datetime(2026, 6, 1, 0, 1, tzinfo=UTC)
    assert runs[-1][0] == datetime(2026, 6, 1, 1, 1, tzinfo=UTC)
    scan_every(services, clock, MINUTE, clock.now + timedelta(minutes=5))
    after = check_once_and_never_early(services, minutely)
    assert after[-6:] == [datetime(2026, 6, 1, 1, 1 + n, tzinfo=UTC) for n in range(6)]


# (zone, a UTC instant a few hours before its change, the schedules' expressions)
DAYLIGHT_SAVING = [
    ("Europe/Berlin", datetime(2026, 3, 28, 22, 0, tzinfo=UTC)),  # 02:00 -> 03:00 on 29 March
    ("Europe/Berlin", datetime(2026, 10, 24, 22, 0, tzinfo=UTC)),  # 03:00 -> 02:00 on 25 October
    ("America/New_York", datetime(2026, 3, 8, 4, 0, tzinfo=UTC)),  # 02:00 -> 03:00 on 8 March
    ("America/New_York", datetime(2026, 11, 1, 3, 0, tzinfo=UTC)),  # 02:00 -> 01:00, 1 November
    ("Australia/Lord_Howe", datetime(2026, 4, 4, 12, 0, tzinfo=UTC)),  # 02:00 -> 01:30, 5 April
    ("Australia/Lord_Howe", datetime(2026, 10, 3, 12, 0, tzinfo=UTC)),  # 02:00 -> 02:30, 4 Oct
]
EXPRESSIONS = ("30 1 * * *", "0 2 * * *", "15 2 * * *", "45 1 * * *", "*/20 * * * *")


@pytest.mark.parametrize(("zone", "start"), DAYLIGHT_SAVING, ids=lambda v: str(v)[:16])
def test_across_a_daylight_saving_change_each_cycle_once_on_time(
    world: tuple[Services, FakeClock, Principal, str], zone: str, start: datetime
) -> None:
    services, clock, root, definition_id = world
    clock.now = start
    ids = {e: schedule(services, root, definition_id, e, zone) for e in EXPRESSIONS}
    end = start + timedelta(hours=8)
    scan_every(services, clock, timedelta(minutes=7), end - timedelta(hours=2))
    clock.now -= timedelta(hours=1)  # and the host's clock steps back an hour on top
    scan_every(services, clock, timedelta(minutes=7), end)
    for expression, sid in ids.items():
        fires = fire_times(CronTrigger(expression), load_zone(zone), start)
        expected = list(takewhile(lambda fire: fire <= end, fires))
        assert check_once_and_never_early(services, sid) == expected, expression


def test_deadlines_stay_inclusive_whichever_way_the_clock_jumps(
    world: tuple[Services, FakeClock, Principal, str],
) -> None:
    services, clock, root, definition_id = world
    services.directory.create_account(root, "rev", "Reviewer", ["operator"])
    reviewer = Principal(root.tenant_id, "rev", ROLES["operator"])
    deadline = T0 + timedelta(hours=1)
    early, exact = (
        services.approvals.submit(root, Submission(k, definition_id, k, {}, 1, deadline))[0].id
        for k in ("early", "exact")
    )
    clock.now = deadline + timedelta(hours=1)  # forward past the deadline...
    clock.now = deadline - timedelta(seconds=1)  # ...and back before it, before any sweep
    assert services.approvals.sweep() == 0
    approved = services.approvals.command(reviewer, early, Command(APPROVE, "a-1", {}))
    assert approved.outcome == "APPROVED"
    clock.now = deadline  # exactly at the deadline the instance has expired
    late = services.approvals.command(reviewer, exact, Command(APPROVE, "a-2", {}))
    assert (late.outcome, late.accepted, late.state) == ("EXPIRED", False, "EXPIRED")
    clock.now = deadline - timedelta(hours=1)  # back an hour: terminal states stay as they are
    assert services.approvals.sweep() == 0
    again = services.approvals.command(reviewer, exact, Command(APPROVE, "a-3", {}))
    assert (again.outcome, again.accepted, again.state) == ("CONFLICT", False, "EXPIRED")
    repeat = services.approvals.command(reviewer, exact, Command(APPROVE, "a-2", {}))
    assert (repeat.outcome, repeat.replayed) == ("EXPIRED", True)
    states = {i: services.approvals.view(root.tenant_id, i).state for i in (early, exact)}
    assert states == {early: "APPROVED", exact: "EXPIRED"}
    timeline = services.approvals.timeline(root.tenant_id, exact)
    assert [(e.type.split(".")[-1], e.at) for e in timeline][1:] == [
        ("Expired", deadline),
        ("CommandRejected", deadline),
        ("CommandRejected", deadline - timedelta(hours=1)),
    ]


def test_the_sweeper_expires_at_exactly_the_deadline_not_a_second_before(
    world: tuple[Services, FakeClock, Principal, str],
) -> None:
    services, clock, root, definition_id = world
    deadline = T0 + timedelta(minutes=10)
    view, _ = services.approvals.submit(root, Submission("k", definition_id, "k", {}, 1, deadline))
    clock.now = deadline - timedelta(seconds=1)
    assert services.approvals.sweep() == 0
    clock.now = deadline
    assert services.approvals.sweep() == 1
    clock.now = deadline - timedelta(minutes=5)  # back: nothing more, nothing undone
    assert services.approvals.sweep() == 0
    assert services.approvals.view(root.tenant_id, view.id).state == "EXPIRED"
