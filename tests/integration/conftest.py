"""Fixtures of the integration tests: a store after a busy day of work."""

from __future__ import annotations

from typing import Any

import pytest

from domain.approvals import Command
from tests.support import T0, FakeClock, Opener, World
from tick.ticker import Ticker
from tick.worker import Worker


@pytest.fixture
def busy(open_with: Opener) -> World:
    """A tenant after a day of work: cycles, launches, a failure, decisions, an expiry."""
    clock = FakeClock(T0)
    world = World(open_with(clock, retry_base_seconds=1, max_attempts=2), clock)
    services = world.services
    schedule = services.schedules.schedule(world.root.tenant_id, world.schedule)
    body = {"trigger": {"kind": "cron", "expression": "*/10 * * * *"}, "enabled": True}
    settings = services.schedules.settings_from({**_settings_of(schedule), **body})
    clock.advance(60)
    services.schedules.update(world.root, world.schedule, settings, True, schedule.revision)
    for _ in range(6):
        clock.advance(600)
        Ticker.of(services).scan()
        Worker.of(services).drain()
    world.run_now("manual-1")
    world.set_ann_active(False)
    for _ in range(3):
        Worker.of(services).drain()
        clock.advance(2)
    world.set_ann_active(True)
    instances = world.instances()
    services.approvals.command(
        world.root, str(instances[0].id), Command("approve", "a1", {"material_version": 1})
    )
    clock.advance(3600)
    services.approvals.sweep()
    services.projector.catch_up()
    return world


def _settings_of(schedule: Any) -> dict[str, Any]:
    settings = schedule.settings
    return {
        "name": settings.name,
        "definition_id": settings.definition_id,
        "trigger": settings.trigger,
        "timezone": settings.timezone,
        "initiator_id": settings.initiator_id,
        "title_template": settings.title_template,
        "form_data": settings.form_data,
        "overlap_policy": settings.overlap_policy,
    }
