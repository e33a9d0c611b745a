"""`cronledger tick pause|resume|status` and `cronledger schedules pause|resume`: recorded with
who and why, and obeyed by the tick of another process."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from cronledger.application.cycles import Ticker
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from projections.keyset import Window
from projections.operations import OperationFilter
from tests.processes import run_cli
from tests.support import FakeClock, World

EVERY_MINUTE = {"kind": "cron", "expression": "* * * * *"}


@pytest.fixture
def world(store_url: str) -> Iterator[World]:
    """Tenant `acme` with an enabled every-minute schedule, on a clock ahead of the console's."""
    clock = FakeClock(datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1))
    services = open_services(Settings(database_url=store_url), clock)
    made = World(services, clock, trigger=EVERY_MINUTE)
    services.schedules.set_enabled(made.root, made.schedule, True, None)
    yield made
    services.close()


def cli(store_url: str, *args: str) -> str:
    result = run_cli(store_url, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def registered_after_a_minute(world: World) -> int:
    world.clock.advance(60)
    return Ticker.of(world.services).scan().registered


def test_the_whole_tick_pauses_and_resumes_from_the_console(store_url: str, world: World) -> None:
    paused = cli(store_url, "tick", "pause", "--reason", "INC-9: failing over the store")
    assert paused.startswith("the tick is paused since ")
    assert paused.rstrip().endswith(": INC-9: failing over the store")
    assert registered_after_a_minute(world) == 0
    assert "the tick is paused since" in cli(store_url, "tick", "status")

    assert cli(store_url, "tick", "resume", "--reason", "failover done") == "the tick is running\n"
    assert registered_after_a_minute(world) == 2  # the minute held and this one (catch_up)
    status = cli(store_url, "tick", "status").splitlines()
    assert status[0] == "the tick is running"
    assert [line.split("  ")[3] for line in status[1:]] == [
        "Service.Started",
        "Service.TickPaused",
        "Service.TickResumed",
    ]
    assert "reason=failover done" in status[-1]


def test_a_tenants_schedules_pause_from_the_console(store_url: str, world: World) -> None:
    said = cli(store_url, "schedules", "pause", "--tenant", "acme", "--reason", "INC-10")
    assert said.startswith("the schedules of tenant acme are paused since ")
    assert registered_after_a_minute(world) == 0
    cli(store_url, "schedules", "resume", "--tenant", "acme", "--reason", "INC-10 closed")
    assert registered_after_a_minute(world) == 2

    services: Services = world.services
    services.projector.catch_up()
    found = services.operations.list_page(OperationFilter(world.root.tenant_id), Window(size=5))
    rows = [(o.kind, o.actor.startswith("system:cli"), o.summary) for o in found.items[:2]]
    assert rows == [
        ("tenant.schedules_resumed", True, "every schedule of the tenant resumed: INC-10 closed"),
        ("tenant.schedules_paused", True, "every schedule of the tenant paused: INC-10"),
    ]


def test_the_console_refuses_no_reason_and_an_unknown_tenant(store_url: str, world: World) -> None:
    assert run_cli(store_url, "tick", "pause", "--reason", " ").returncode == 2
    unknown = run_cli(store_url, "schedules", "pause", "--tenant", "nobody", "--reason", "x")
    assert (unknown.returncode, "tenant" in unknown.stderr) == (1, True)
    assert registered_after_a_minute(world) == 1  # nothing was paused
