"""Business time on both stores: the read models' local date, hour, ISO week and ISO year in
`CRONLEDGER_TIMEZONE` (runs, attempts, approvals and their commands, tasks, operations),
`schedule_daily` and `activity` by business day, and a change of zone rebuilding them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker, WorkReport
from cronledger.application.services import Services
from domain.approvals import Command
from domain.directory import Principal
from domain.permissions import ROLES
from projections.business import BusinessTime
from tests.support import REVIEWER, FakeClock, Opener, World

SHANGHAI = "Asia/Shanghai"
# 07:00 on Friday 2026-12-04 in Shanghai is still Thursday 2026-12-03 in UTC.
PLANNED = datetime(2026, 12, 3, 23, 0, tzinfo=UTC)
# 01:30 on Friday 2026-12-04 in Shanghai, 17:30 on Thursday in UTC.
AFTER_MIDNIGHT = datetime(2026, 12, 3, 17, 30, tzinfo=UTC)
SEVEN_EVERY_MORNING = {"kind": "cron", "expression": "0 7 * * *"}


def launched_world(open_with: Opener, zone: str) -> World:
    """A Shanghai schedule firing at 07:00, its 2026-12-04 cycle registered and launched."""
    clock = FakeClock(PLANNED - timedelta(hours=1))
    world = World(
        open_with(clock, timezone=zone), clock, trigger=SEVEN_EVERY_MORNING, timezone=SHANGHAI
    )
    world.services.schedules.set_enabled(world.root, world.schedule, True, None)
    clock.now = PLANNED + timedelta(seconds=1)
    assert Ticker.of(world.services).scan().registered == 1
    assert Worker.of(world.services).drain() == WorkReport(claimed=1, succeeded=1)
    world.services.projector.catch_up()
    return world


def rows(services: Services, sql: str) -> list[tuple[Any, ...]]:
    services.projector.catch_up()
    return services.store.query(sql)


TASKS = (
    "SELECT submitted_local_date, submitted_local_hour, submitted_iso_week, submitted_iso_year, "
    "decided_local_date, decided_local_hour, decided_iso_week, decided_iso_year FROM tasks"
)
OPERATIONS = (
    "SELECT DISTINCT kind, local_date, local_hour, iso_week, iso_year FROM operations "
    "WHERE kind IN ('schedule.created', 'schedule.enabled', 'run.manual') ORDER BY kind"
)
TASKS_SUBMITTED = "SELECT submitted_local_date, submitted_local_hour FROM tasks"
SCHEDULE_CREATED = "SELECT local_date, local_hour FROM operations WHERE kind = 'schedule.created'"


def test_a_shanghai_morning_counts_on_its_business_day_in_every_table(open_with: Opener) -> None:
    world = launched_world(open_with, SHANGHAI)
    services = world.services
    friday = ("2026-12-04", 7, 49, 2026)
    assert rows(services, "SELECT day, cycles, iso_week, iso_year FROM schedule_daily") == [
        ("2026-12-04", 1, 49, 2026)
    ]
    assert rows(
        services,
        "SELECT planned_local_date, planned_local_hour, planned_iso_week, planned_iso_year "
        "FROM runs",
    ) == [friday]
    assert rows(
        services,
        "SELECT started_local_date, started_local_hour, started_iso_week, started_iso_year "
        "FROM attempts",
    ) == [friday]
    approval = (
        "SELECT submitted_local_date, submitted_local_hour, submitted_iso_week, "
        "submitted_iso_year, decided_local_date, decided_local_hour, decided_iso_week, "
        "decided_iso_year FROM approvals"
    )
    assert rows(services, approval) == [(*friday, None, None, None, None)]
    assert rows(
        services, "SELECT local_date, local_hour, iso_week, iso_year FROM approval_commands"
    ) == [friday]
    assert rows(
        services,
        "SELECT day, hour, iso_week, iso_year FROM activity WHERE aggregate_type = 'approval'",
    ) == [("2026-12-04", "2026-12-04 07:00", 49, 2026)]
    assert rows(services, TASKS) == [(*friday, None, None, None, None)]
    configured = ("2026-12-04", 6, 49, 2026)  # the schedule, made and enabled an hour before
    assert rows(services, OPERATIONS) == [
        ("schedule.created", *configured),
        ("schedule.enabled", *configured),
    ]

    world.clock.now = PLANNED + timedelta(hours=1, seconds=2)  # an hour's review window
    assert services.approvals.sweep() == 1
    assert rows(services, approval) == [(*friday, "2026-12-04", 8, 49, 2026)]
    assert rows(services, TASKS) == [(*friday, "2026-12-04", 8, 49, 2026)]


def test_a_task_and_an_operation_after_midnight_count_on_the_next_business_day(
    open_with: Opener,
) -> None:
    """A manual run at 17:30 UTC on Thursday is 01:30 on Friday in Shanghai: the operation,
    the task its instance opened and the task's decision all count on Friday, week 49."""
    clock = FakeClock(AFTER_MIDNIGHT)
    world = World(open_with(clock, timezone=SHANGHAI), clock)
    services = world.services
    world.run_now()
    assert Worker.of(services).drain() == WorkReport(claimed=1, succeeded=1)
    early_friday = ("2026-12-04", 1, 49, 2026)
    assert rows(services, TASKS) == [(*early_friday, None, None, None, None)]
    assert rows(services, OPERATIONS) == [
        ("run.manual", *early_friday),
        ("schedule.created", *early_friday),
    ]

    (instance,) = world.instances()
    clock.now = AFTER_MIDNIGHT + timedelta(minutes=40)  # 02:10 in Shanghai
    vera = Principal(world.root.tenant_id, REVIEWER, ROLES["operator"])
    approve = Command("approve", "a-1", {"material_version": 1})
    assert services.approvals.command(vera, str(instance.id), approve).outcome == "APPROVED"
    assert rows(services, TASKS) == [(*early_friday, "2026-12-04", 2, 49, 2026)]


def test_a_new_business_zone_rebuilds_the_business_columns(open_with: Opener) -> None:
    """The zone is part of the tables' layout: a process started with another rebuilds them
    from the log, and every row moves to its new business day."""
    world = launched_world(open_with, "UTC")
    assert rows(world.services, "SELECT day FROM schedule_daily") == [("2026-12-03",)]
    assert rows(world.services, "SELECT planned_local_date, planned_local_hour FROM runs") == [
        ("2026-12-03", 23)
    ]
    assert rows(world.services, TASKS_SUBMITTED) == [("2026-12-03", 23)]
    assert rows(world.services, SCHEDULE_CREATED) == [("2026-12-03", 22)]
    world.services.close()

    reopened = open_with(world.clock, timezone=SHANGHAI)
    assert rows(reopened, "SELECT day FROM schedule_daily") == [("2026-12-04",)]
    assert rows(reopened, "SELECT planned_local_date, planned_local_hour FROM runs") == [
        ("2026-12-04", 7)
    ]
    assert rows(reopened, TASKS_SUBMITTED) == [("2026-12-04", 7)]
    assert rows(reopened, SCHEDULE_CREATED) == [("2026-12-04", 6)]


def test_the_iso_week_and_year_of_new_year_s_day_are_the_old_year_s() -> None:
    """Friday 2027-01-01 is in week 53 of ISO year 2026; Monday 2026-12-28 starts that week."""
    business = BusinessTime(SHANGHAI)
    assert business.of(datetime(2026, 12, 31, 23, tzinfo=UTC)) == ("2027-01-01", 7, 53, 2026)
    assert business.of(datetime(2026, 12, 27, 16, tzinfo=UTC)) == ("2026-12-28", 0, 53, 2026)
    assert business.values(None) == (None, None, None, None)
