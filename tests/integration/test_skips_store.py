"""Skipped cycles on real stores: overlap at the same instant, and why each run was skipped."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from cronledger.application.runs import RunView
from cronledger.application.services import Services
from domain.runs import run_uuid
from tests.release_stores import WORKING, facts
from tests.support import T0, FakeClock, Opener, World
from tick.ticker import Ticker
from tick.worker import Worker, WorkReport

EVERY_MINUTE = {"kind": "cron", "expression": "* * * * *"}


def enabled_world(open_with: Opener, **schedule: object) -> World:
    clock = FakeClock(T0)
    world = World(open_with(clock), clock, trigger=EVERY_MINUTE, overlap_policy="skip", **schedule)
    world.services.schedules.set_enabled(world.root, world.schedule, True, None)
    return world


def skip_row(world: World, run_id: str) -> tuple[str, str | None, int]:
    world.services.projector.catch_up()
    rows = world.services.store.query(
        "SELECT skip_reason, blocking_run_id, skipped_count FROM runs WHERE id = ?", (run_id,)
    )
    return rows[0]  # type: ignore[no-any-return]


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
        "skip_reason": {"code": "MISSED", "blocking_run_id": None, "count": 9},
    }
    assert skip_row(world, summary_id) == ("MISSED", None, 9)
    assert RunView.of(world.run(summary_id)).skip_reason == view.last_skip["skip_reason"]

    world.clock.advance(1)
    manual = world.run_now("r1")  # planned after the 09:10 cycle, launched in the same poll
    assert Worker.of(world.services).poll().skipped == 1
    world.services.projector.catch_up()
    on_time = str(run_uuid(UUID(world.schedule), datetime.fromisoformat("2026-10-01T09:10Z")))
    last_skip = world.services.schedules.view(world.root.tenant_id, world.schedule).last_skip
    assert last_skip is not None
    assert (last_skip["run_id"], last_skip["skip_reason"]) == (
        manual,
        {"code": "OVERLAP", "blocking_run_id": on_time, "count": None},
    )


def test_schedules_of_release_0_1_0_keep_allowing_overlap(upgraded: Services) -> None:
    for schedule_id in facts(WORKING)["schedules"].values():
        schedule = upgraded.ledger.repository.get(UUID(schedule_id))
        assert schedule.settings.overlap_policy == "allow"
    upgraded.projector.catch_up()
    stored = upgraded.store.query("SELECT DISTINCT overlap_policy FROM schedules")
    assert stored == [("allow",)]
