"""The tick against real stores: downtime, misfire policies, edits, several tick processes."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from cronledger.application.cycles import Ticker
from cronledger.application.directory import DefinitionFields
from cronledger.application.services import Services
from cronledger.persistence.store import as_instant
from domain.directory import Principal
from domain.schedules import Schedule
from domain.triggers import fire_times, load_zone, parse_trigger
from projections.keyset import Window
from projections.runs import RunFilter
from tests.support import DECIDERS, FakeClock, Opener

T0 = datetime(2026, 10, 1, 0, 0, 30, tzinfo=UTC)


@pytest.fixture
def world(open_with: Opener) -> tuple[Services, FakeClock, Principal, str]:
    clock = FakeClock(T0)
    services = open_with(clock)
    root = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    assert root is not None
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
    enabled: bool = True,
    **fields: Any,
) -> str:
    body = {
        "name": fields.pop("name", expression),
        "definition_id": definition_id,
        "trigger": {"kind": "cron", "expression": expression},
        "timezone": "UTC",
        "initiator_id": "root",
        "title_template": "Check {{datetime}}",
        **fields,
    }
    return services.schedules.create(root, services.schedules.settings_from(body), enabled).id


def planned(services: Services, schedule_id: str) -> list[datetime | None]:
    services.projector.catch_up()
    rows = services.store.query(
        "SELECT planned_at FROM runs WHERE schedule_id = ? AND trigger = 'schedule' "
        "ORDER BY planned_at",
        (schedule_id,),
    )
    return [as_instant(row[0]) for row in rows]


def runs_of(services: Services, schedule_id: str) -> list[Any]:
    services.projector.catch_up()
    schedule = services.ledger.find(Schedule, UUID(schedule_id), "schedule", schedule_id)
    return services.runs.list_page(
        schedule.tenant_id, RunFilter(schedule_id=schedule.id), Window(size=200)
    ).items


def every_minute_between(start: datetime, end: datetime) -> list[datetime]:
    first = start.replace(second=0, microsecond=0) + timedelta(minutes=1)
    count = int((end - first).total_seconds() // 60) + 1
    return [first + timedelta(minutes=n) for n in range(count)]


def test_three_hours_down_catches_up_in_bounded_rounds_without_starving_others(
    world: tuple[Services, FakeClock, Principal, str],
) -> None:
    services, clock, root, definition_id = world
    backlog = schedule(services, root, definition_id, "* * * * *", name="backlog")
    clock.advance(3 * 3600)
    fresh = schedule(services, root, definition_id, "* * * * *", name="fresh")
    rounds = 0
    while True:
        clock.advance(60)
        rounds += 1
        before = len(planned(services, fresh))
        report = Ticker.of(services).scan()
        assert report.registered <= 100
        assert len(planned(services, fresh)) == before + 1, "the fresh schedule missed a round"
        if services.schedules.view(root.tenant_id, backlog).next_fire_at > clock.now:
            break
    instants = planned(services, backlog)
    assert instants == every_minute_between(T0, clock.now)
    assert len(instants) >= 180
    assert rounds == 10  # 180 + rounds minutes at 20 per round
    first = runs_of(services, backlog)[-1]
    assert (first.planned_at, first.title) == (T0 + timedelta(seconds=30), "Check 2026-10-01 00:01")


def test_skip_records_one_summary_and_moves_to_the_future(
    world: tuple[Services, FakeClock, Principal, str],
) -> None:
    services, clock, root, definition_id = world
    skipping = schedule(services, root, definition_id, "* * * * *", misfire_policy="skip")
    clock.advance(3 * 3600)
    Ticker.of(services).scan()
    runs = runs_of(services, skipping)
    assert [(r.status, r.skipped_count) for r in runs] == [("SKIPPED_MISSED", 180)]
    assert (runs[0].planned_at, runs[0].missed_until) == (
        datetime(2026, 10, 1, 0, 1, tzinfo=UTC),
        datetime(2026, 10, 1, 3, 0, tzinfo=UTC),
    )
    view = services.schedules.view(root.tenant_id, skipping)
    assert view.next_fire_at == datetime(2026, 10, 1, 3, 1, tzinfo=UTC)
    assert view.last_run is not None
    assert view.last_run["status"] == "SKIPPED_MISSED"


def test_once_registers_the_newest_and_summarises_the_rest(
    world: tuple[Services, FakeClock, Principal, str],
) -> None:
    services, clock, root, definition_id = world
    once = schedule(services, root, definition_id, "* * * * *", misfire_policy="once")
    clock.advance(3 * 3600)
    Ticker.of(services).scan()
    runs = runs_of(services, once)
    assert [(r.status, r.skipped_count, r.planned_at.hour, r.planned_at.minute) for r in runs] == [
        ("PENDING", 0, 3, 0),
        ("SKIPPED_MISSED", 179, 0, 1),
    ]


def test_a_cron_change_registers_the_old_due_cycles_first(
    world: tuple[Services, FakeClock, Principal, str],
) -> None:
    services, clock, root, definition_id = world
    hourly = schedule(services, root, definition_id, "0 * * * *")
    clock.advance(3 * 3600)  # 01:00, 02:00, 03:00 are due under the old rule
    settings = services.schedules.schedule(root.tenant_id, hourly).settings
    new = replace(settings, trigger={"kind": "cron", "expression": "30 * * * *"})
    edited = services.schedules.update(root, hourly, new, True, 1)
    assert [i.hour for i in planned(services, hourly)] == [1, 2, 3]
    assert edited.next_fire_at == datetime(2026, 10, 1, 3, 30, tzinfo=UTC)
    assert edited.version == 2


def test_renaming_a_due_schedule_does_not_delay_its_cycle(
    world: tuple[Services, FakeClock, Principal, str],
) -> None:
    services, clock, root, definition_id = world
    hourly = schedule(services, root, definition_id, "0 * * * *")
    clock.advance(3600)
    settings = services.schedules.schedule(root.tenant_id, hourly).settings
    services.schedules.update(root, hourly, replace(settings, name="renamed"), True, 1)
    Ticker.of(services).scan()
    assert planned(services, hourly) == [datetime(2026, 10, 1, 1, 0, tzinfo=UTC)]
    assert runs_of(services, hourly)[0].title == "Check 2026-10-01 01:00"


def test_enabling_after_a_week_disabled_registers_nothing_for_that_week(
    world: tuple[Services, FakeClock, Principal, str],
) -> None:
    services, clock, root, definition_id = world
    hourly = schedule(services, root, definition_id, "0 * * * *", enabled=False)
    clock.advance(7 * 24 * 3600)
    Ticker.of(services).scan()
    enabled = services.schedules.set_enabled(root, hourly, True, None)
    Ticker.of(services).scan()
    assert planned(services, hourly) == []
    assert enabled.next_fire_at == T0.replace(second=0) + timedelta(days=7, hours=1)


def test_disabling_keeps_registered_cycles_and_stops_planning(
    world: tuple[Services, FakeClock, Principal, str],
) -> None:
    services, clock, root, definition_id = world
    hourly = schedule(services, root, definition_id, "0 * * * *")
    clock.advance(3600 + 60)
    Ticker.of(services).scan()
    services.schedules.set_enabled(root, hourly, False, None)
    clock.advance(5 * 3600)
    Ticker.of(services).scan()
    assert len(planned(services, hourly)) == 1


def test_manual_runs_leave_the_plan_alone_and_are_idempotent(
    world: tuple[Services, FakeClock, Principal, str],
) -> None:
    services, clock, root, definition_id = world
    hourly = schedule(services, root, definition_id, "0 * * * *")
    before = services.schedules.view(root.tenant_id, hourly).next_fire_at
    clock.advance(5)
    first = services.schedules.run_now(root, hourly, "req-1")
    again = services.schedules.run_now(root, hourly, "req-1")
    other = services.schedules.run_now(root, hourly, "req-2")
    assert first.id == again.id != other.id
    assert (first.trigger, first.status, first.planned_at) == ("manual", "PENDING", clock.now)
    assert services.schedules.view(root.tenant_id, hourly).next_fire_at == before


def day_of_schedules(
    services: Services, root: Principal, definition_id: str, count: int
) -> list[str]:
    return [
        schedule(services, root, definition_id, f"{n % 60} */{1 + n % 3} * * *", name=f"s{n}")
        for n in range(count)
    ]


def expected_instants(expression: str, start: datetime, end: datetime) -> list[datetime]:
    times = fire_times(
        parse_trigger({"kind": "cron", "expression": expression}), load_zone("UTC"), start
    )
    found = []
    for instant in times:
        if instant > end:
            return found
        found.append(instant)
    return found


def test_two_tick_processes_with_skewed_clocks_register_each_cycle_once(
    world: tuple[Services, FakeClock, Principal, str],
    open_with: Opener,
) -> None:
    services, _clock, root, definition_id = world
    # About 730 cycles a day, 5 due in each of the 144 rounds both ticks scan at once: the
    # rounds are the races (capacity is bench/'s: 10,000 cycles due at once, bench/tick.py).
    ids = day_of_schedules(services, root, definition_id, 50)
    clocks = [FakeClock(T0), FakeClock(T0 + timedelta(seconds=4))]
    ticks = [open_with(c, catchup_per_scan=2000, catchup_per_schedule=50) for c in clocks]
    for _ in range(24 * 6):
        for tick_clock in clocks:
            tick_clock.advance(600)
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(lambda t: Ticker.of(t).scan(), ticks))
    while any(Ticker.of(t).scan().registered for t in ticks):
        pass
    services.projector.catch_up()
    end = clocks[0].now
    rows = services.store.query("SELECT schedule_id, planned_at FROM runs")
    assert len(rows) == len({(r[0], str(r[1])) for r in rows})
    by_schedule: dict[str, int] = {}
    for schedule_id, _ in rows:
        by_schedule[schedule_id] = by_schedule.get(schedule_id, 0) + 1
    for n, schedule_id in enumerate(ids):
        expected = expected_instants(f"{n % 60} */{1 + n % 3} * * *", T0, end)
        assert by_schedule.get(schedule_id, 0) == len(expected), schedule_id


def test_a_cron_change_after_a_long_outage_registers_the_whole_backlog(
    world: tuple[Services, FakeClock, Principal, str],
) -> None:
    services, clock, root, definition_id = world
    minutely = schedule(services, root, definition_id, "* * * * *")
    clock.advance(2 * 24 * 3600)
    settings = services.schedules.schedule(root.tenant_id, minutely).settings
    new = replace(settings, trigger={"kind": "cron", "expression": "0 0 * * *"})
    services.schedules.update(root, minutely, new, True, 1)
    assert planned(services, minutely) == every_minute_between(T0, clock.now)
    assert len(planned(services, minutely)) == 2880


def test_the_tick_uses_a_schedule_edited_since_its_last_scan(
    world: tuple[Services, FakeClock, Principal, str],
    open_with: Opener,
) -> None:
    services, clock, root, definition_id = world
    hourly = schedule(services, root, definition_id, "0 * * * *")
    tick = open_with(clock)  # a separate tick process, with its own copies of schedules
    clock.advance(3600)
    Ticker.of(tick).scan()
    settings = services.schedules.schedule(root.tenant_id, hourly).settings
    services.schedules.update(root, hourly, replace(settings, title_template="Edited"), True, 1)
    clock.advance(3600)
    Ticker.of(tick).scan()
    assert [r.title for r in runs_of(services, hourly)] == ["Edited", "Check 2026-10-01 01:00"]


def test_a_running_tick_reads_the_schedules_due_soon_before_their_instant(
    world: tuple[Services, FakeClock, Principal, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    services, clock, root, definition_id = world
    read: list[UUID] = []
    get_many = services.ledger.get_many
    monkeypatch.setattr(
        services.ledger, "get_many", lambda wanted: read.extend(wanted) or get_many(wanted)
    )

    def read_to_register(minute: int, scanned_before: float) -> bool:
        """Whether a tick read two schedules due at 00:0`minute` from the log at their instant,
        when it had last scanned `scanned_before` seconds before it."""
        ids = {
            UUID(schedule(services, root, definition_id, f"{minute} 0 * * *", name=f"{minute}{n}"))
            for n in "ab"
        }
        ticker = Ticker.of(services)
        instant = datetime(2026, 10, 1, 0, minute, tzinfo=UTC)
        clock.now = instant - timedelta(seconds=scanned_before)
        assert ticker.scan().registered == 0
        clock.now = instant
        read.clear()
        assert ticker.scan().registered == 2
        return bool(ids & set(read))

    assert read_to_register(minute=1, scanned_before=30)  # too early to read them ahead
    assert not read_to_register(minute=2, scanned_before=2)


@pytest.mark.parametrize(
    ("now", "tick_seconds", "waits"),
    [
        (datetime(2026, 10, 1, 9, 0, 0, 300_000, tzinfo=UTC), 1.0, 0.71),
        (datetime(2026, 10, 1, 9, 0, 0, tzinfo=UTC), 1.0, 1.01),
        (datetime(2026, 10, 1, 9, 0, 30, tzinfo=UTC), 60.0, 30.01),
        (datetime(2026, 10, 1, 9, 0, 0, 400_000, tzinfo=UTC), 0.25, 0.11),
    ],
)
def test_a_tick_scans_just_past_each_whole_multiple_of_its_interval(
    world: tuple[Services, FakeClock, Principal, str],
    now: datetime,
    tick_seconds: float,
    waits: float,
) -> None:
    services, clock, _, _ = world
    clock.now = now
    settings = replace(services.settings, tick_seconds=tick_seconds)
    ticker = Ticker(services.ledger, services.projector, settings)
    assert ticker.until_next_scan() == pytest.approx(waits)


def test_a_tick_that_registered_cycles_wakes_its_process_worker(
    world: tuple[Services, FakeClock, Principal, str],
) -> None:
    services, clock, root, definition_id = world
    schedule(services, root, definition_id, "1 0 * * *")
    ticker, woken = Ticker.of(services), services.registration.wait_for_cycles
    stop = threading.Event()
    assert ticker.scan().registered == 0
    started = time.monotonic()
    woken(0.3, stop)
    assert time.monotonic() - started >= 0.3  # nothing registered: nobody woken
    clock.now = datetime(2026, 10, 1, 0, 1, tzinfo=UTC)
    assert ticker.scan().registered == 1
    started = time.monotonic()
    woken(30, stop)
    assert time.monotonic() - started < 30
