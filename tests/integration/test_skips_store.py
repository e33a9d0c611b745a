"""Skipped cycles on real stores: the overlap policies over every-second cycles, overlap at the
same instant, why each run was skipped, and schedules saved with `skip` by release 0.10.0."""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker, WorkReport
from cronledger.application.services import Services
from domain.runs import run_uuid
from projections.runs import RunRow
from tests.release_stores import WORKING, facts
from tests.support import T0, FakeClock, Opener, World

EVERY_MINUTE = {"kind": "cron", "expression": "* * * * *"}
EVERY_SECOND = {"kind": "cron", "expression": "* * * * * *"}
REVIEW_WINDOW = 3600  # World's definition: every instance waits an hour for review


def enabled_world(open_with: Opener, **schedule: object) -> World:
    clock = FakeClock(T0)
    fields = {"trigger": EVERY_MINUTE, "overlap_policy": "skip_while_open", **schedule}
    world = World(open_with(clock), clock, **fields)
    world.services.schedules.set_enabled(world.root, world.schedule, True, None)
    return world


def skip_row(world: World, run_id: str) -> tuple[str, str | None, int]:
    world.services.projector.catch_up()
    rows = world.services.store.query(
        "SELECT skip_reason, blocking_run_id, skipped_count FROM runs WHERE id = ?", (run_id,)
    )
    return rows[0]  # type: ignore[no-any-return]


def seconds_pass(world: World, seconds: int) -> WorkReport:
    """Each second: the tick registers the cycle due, the worker launches or skips it."""
    report = WorkReport()
    for _ in range(seconds):
        world.clock.advance(1)
        Ticker.of(world.services).scan()
        report.add(Worker.of(world.services).drain())
    return report


def statuses(world: World) -> list[str]:
    """Every run's status, oldest planned first."""
    world.services.projector.catch_up()
    rows = world.services.store.query("SELECT status FROM runs ORDER BY planned_at, id")
    return [str(status) for (status,) in rows]


def test_the_default_launches_every_cycle_while_every_instance_waits_for_review(
    open_with: Opener,
) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock), clock, trigger=EVERY_SECOND)
    world.services.schedules.set_enabled(world.root, world.schedule, True, None)
    assert seconds_pass(world, 10) == WorkReport(claimed=10, succeeded=10)
    assert statuses(world) == ["SUCCEEDED"] * 10
    assert {i.state for i in world.instances()} == {"WAITING_REVIEW"}
    assert len(world.instances()) == 10
    assert world.services.schedules.view(world.root.tenant_id, world.schedule).last_skip is None


def test_skip_while_open_skips_naming_the_waiting_instance_until_its_deadline(
    open_with: Opener,
) -> None:
    world = enabled_world(open_with, trigger=EVERY_SECOND, misfire_policy="skip")
    assert seconds_pass(world, 5) == WorkReport(claimed=1, succeeded=1, skipped=4)
    first, *skipped = world.services.store.query("SELECT id FROM runs ORDER BY planned_at")
    (waiting,) = world.instances()
    for (run_id,) in skipped:
        assert RunRow.of_aggregate(world.run(run_id)).skip_reason == {
            "code": "OVERLAP",
            "blocking_run_id": first[0],
            "blocking_status": "SUCCEEDED",
            "blocking_instance_id": str(waiting.id),
            "count": None,
        }
    world.clock.advance(REVIEW_WINDOW - 6)  # missed cycles summarised, then one before the deadline
    before_the_deadline = seconds_pass(world, 1)  # the instance is due at T0 + 1 s + 1 hour
    assert (before_the_deadline.claimed, before_the_deadline.skipped > 0) == (0, True)
    world.services.projector.catch_up()
    assert (
        world.services.store.query("SELECT COUNT(*) FROM approvals WHERE state = 'EXPIRED'")[0][0]
        == 0
    )  # the sweeper has not run: the passed deadline alone closes the instance
    assert seconds_pass(world, 1) == WorkReport(claimed=1, succeeded=1)


def test_skip_while_launching_skips_while_a_cycle_waits_to_retry_and_not_after(
    open_with: Opener,
) -> None:
    world = enabled_world(
        open_with,
        trigger=EVERY_SECOND,
        misfire_policy="skip",
        overlap_policy="skip_while_launching",
    )
    world.set_ann_active(False)
    assert seconds_pass(world, 3) == WorkReport(claimed=1, failed=1, skipped=2)
    blocked = world.run(str(run_uuid(UUID(world.schedule), T0 + timedelta(seconds=2))))
    assert blocked.skip_reason is not None
    assert (
        blocked.skip_reason["blocking_status"],
        blocked.skip_reason["blocking_instance_id"],
    ) == (
        "RETRY_WAIT",
        None,
    )
    world.set_ann_active(True)
    world.clock.advance(60)  # the retry is due; the cycles missed meanwhile are summarised
    Ticker.of(world.services).scan()
    Worker.of(world.services).drain()
    retried = world.run(str(run_uuid(UUID(world.schedule), T0 + timedelta(seconds=1))))
    assert retried.status == "SUCCEEDED"
    assert seconds_pass(world, 3) == WorkReport(claimed=3, succeeded=3)
    assert statuses(world)[-3:] == ["SUCCEEDED"] * 3


def test_a_manual_run_blocks_the_scheduled_run_planned_at_the_same_instant(
    open_with: Opener,
) -> None:
    world = enabled_world(open_with)
    world.clock.advance(60)  # 09:01:00, a fire instant
    manual = world.run_now("r1")
    world.clock.advance(0.5)
    assert Ticker.of(world.services).scan().registered == 1
    planned_at = world.run(manual).planned_at
    scheduled = str(run_uuid(UUID(world.schedule), planned_at))
    assert world.run(scheduled).planned_at == planned_at
    assert Worker.of(world.services).poll() == WorkReport(claimed=1, succeeded=1, skipped=1)
    assert world.run(manual).status == "SUCCEEDED"
    skipped = world.run(scheduled)
    assert (skipped.status, skipped.blocked_by) == ("SKIPPED_OVERLAP", manual)
    assert skip_row(world, scheduled) == ("OVERLAP", manual, 0)


def test_cycles_registered_at_the_same_instant_launch_one(open_with: Opener) -> None:
    world = enabled_world(open_with)
    world.clock.advance(60)
    world.run_now("r1")
    Ticker.of(world.services).scan()
    assert Worker.of(world.services).poll() == WorkReport(claimed=1, succeeded=1, skipped=1)
    assert len(world.instances()) == 1


def test_the_schedule_shows_its_last_skip_next_to_its_last_run(open_with: Opener) -> None:
    world = enabled_world(open_with, misfire_policy="skip")
    world.clock.advance(600.5)  # 09:01 … 09:09 missed, 09:10 on time
    Ticker.of(world.services).scan()
    world.services.projector.catch_up()
    view = world.services.schedules.view(world.root.tenant_id, world.schedule)
    assert view.last_run is not None
    assert view.last_run["status"] == "PENDING"
    assert view.last_skip is not None
    summary_id = view.last_skip["run_id"]
    assert view.last_skip == {
        "run_id": summary_id,
        "planned_at": datetime.fromisoformat("2026-10-01T09:01:00+00:00"),
        "skipped_at": datetime.fromisoformat("2026-10-01T09:10:00.500000+00:00"),
        "skip_reason": {
            "code": "MISSED",
            "blocking_run_id": None,
            "blocking_status": None,
            "blocking_instance_id": None,
            "count": 9,
        },
    }
    assert skip_row(world, summary_id) == ("MISSED", None, 9)
    assert RunRow.of_aggregate(world.run(summary_id)).skip_reason == view.last_skip["skip_reason"]

    world.clock.advance(1)
    manual = world.run_now("r1")  # planned after the 09:10 cycle, launched in the same poll
    assert Worker.of(world.services).poll().skipped == 1
    world.services.projector.catch_up()
    on_time = str(run_uuid(UUID(world.schedule), datetime.fromisoformat("2026-10-01T09:10Z")))
    last_skip = world.services.schedules.view(world.root.tenant_id, world.schedule).last_skip
    assert last_skip is not None
    assert (last_skip["run_id"], last_skip["skip_reason"]) == (
        manual,
        {
            "code": "OVERLAP",
            "blocking_run_id": on_time,
            "blocking_status": "PENDING",  # checked in the poll that launched it
            "blocking_instance_id": None,
            "count": None,
        },
    )


def test_schedules_of_release_0_1_0_keep_allowing_overlap(upgraded: Services) -> None:
    for schedule_id in facts(WORKING)["schedules"].values():
        schedule = upgraded.ledger.repository.get(UUID(schedule_id))
        assert schedule.settings.overlap_policy == "allow"
    upgraded.projector.catch_up()
    stored = upgraded.store.query("SELECT DISTINCT overlap_policy FROM schedules")
    assert stored == [("allow",)]
