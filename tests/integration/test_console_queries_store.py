"""What the console's operations and directory pages read, against real stores: the last day
hour by hour, the operations audit of one aggregate, an account's tokens."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import pytest

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from domain.directory import account_uuid
from projections.hourly import LagHour, OutcomeHour
from projections.keyset import Window
from projections.operations import OperationFilter
from projections.tasks import CLAIMABLE, in_scope
from tests.support import REVIEWER, T0, FakeClock, Opener, World

HOURLY = {"kind": "cron", "expression": "0 * * * *"}


@pytest.fixture
def world(open_with: Opener) -> World:
    clock = FakeClock(T0)
    return World(open_with(clock), clock, trigger=HOURLY)


def test_the_last_day_counts_registration_lag_and_launch_outcomes_per_hour(world: World) -> None:
    services, clock = world.services, world.clock
    world.run_now("succeeds")
    assert Worker.of(services).poll().succeeded == 1
    world.run_now("dead-letters")
    world.set_ann_active(False)  # the initiator: every attempt of that run fails
    for step in (0, 30, 60, 120, 240):  # five attempts, the retry delays between them
        clock.advance(step)
        assert Worker.of(services).poll().failed == 1
    world.set_ann_active(True)
    services.schedules.set_enabled(world.root, world.schedule, True, None)
    clock.now = T0 + timedelta(hours=1, seconds=42)  # the 10:00 cycle, registered 42 s late
    Ticker.of(services).scan()
    assert Worker.of(services).poll().succeeded == 1

    services.projector.catch_up()  # the worker's last events, into the read models
    hours = services.operations.last_day(world.root.tenant_id)

    assert len(hours) == 24
    assert [hour.start for hour in hours[-2:]] == [T0, T0 + timedelta(hours=1)]
    assert hours[0].start == T0 - timedelta(hours=22)
    nine, ten = hours[-2], hours[-1]
    assert nine.lag == LagHour(runs=2, mean_seconds=0, max_seconds=0)
    assert nine.outcomes == OutcomeHour(succeeded=1, failed=4, dead_lettered=1)
    assert ten.lag == LagHour(runs=1, mean_seconds=42, max_seconds=42)
    assert ten.outcomes == OutcomeHour(succeeded=1, failed=0, dead_lettered=0)
    assert all(h.lag == LagHour() and h.outcomes == OutcomeHour() for h in hours[:-2])


def test_a_retried_dead_letter_counts_its_last_failure_as_failed(world: World) -> None:
    services, clock = world.services, world.clock
    run_id = world.run_now()
    world.set_ann_active(False)
    for step in (0, 30, 60, 120, 240):
        clock.advance(step)
        Worker.of(services).poll()
    world.set_ann_active(True)
    services.runs.retry(world.root, UUID(world.schedule), run_id, None)
    assert Worker.of(services).poll().succeeded == 1
    services.projector.catch_up()
    (nine,) = services.operations.last_day(world.root.tenant_id)[-1:]
    assert nine.outcomes == OutcomeHour(succeeded=1, failed=5, dead_lettered=0)


def test_the_operations_audit_filters_by_aggregate(world: World) -> None:
    services = world.services
    tenant_id = world.root.tenant_id
    services.schedules.set_enabled(world.root, world.schedule, True, None)
    world.run_now()
    of_schedule = OperationFilter(tenant_id, aggregate_id=world.schedule)
    page = services.operations.list_page(of_schedule, Window(50))
    assert [op.kind for op in page.items] == ["schedule.enabled", "schedule.created"]
    ann = str(account_uuid(tenant_id, "ann"))
    page = services.operations.list_page(OperationFilter(tenant_id, aggregate_id=ann), Window(50))
    assert [op.kind for op in page.items] == ["account.registered"]


def test_an_accounts_tokens_are_listed_without_their_secrets(world: World) -> None:
    directory = world.services.directory
    first = directory.issue_token(world.root, "ann")
    world.clock.advance(60)
    second = directory.issue_token(world.root, "ann")
    world.clock.advance(60)
    directory.revoke_token(world.root, "ann", first.token_id, "lost")

    tokens = directory.tokens(world.root.tenant_id, "ann")

    assert [t.token_id for t in tokens] == [first.token_id, second.token_id]
    assert [t.issued_at for t in tokens] == [T0, T0 + timedelta(seconds=60)]
    assert [t.issued_by for t in tokens] == ["root", "root"]
    assert [t.revoked_at for t in tokens] == [T0 + timedelta(seconds=120), None]
    assert first.token not in repr(tokens)


def test_the_claimable_list_finds_each_tasks_level_by_index_not_by_reading_every_task(
    world: World,
) -> None:
    """A reviewer's claimable list looks up each task's level among its instance's tasks: a
    scan of every task for each would take 150-400 ms at 1,000 waiting (bench/lists.py)."""
    where, params = in_scope(CLAIMABLE, world.root.tenant_id, REVIEWER, True)
    statement, values = world.services.store.native(f"SELECT id FROM tasks WHERE {where}", params)
    with world.services.store.connect() as conn:
        if world.services.store.kind == "sqlite":
            plan = [row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {statement}", values)]
        else:
            conn.execute("SET enable_seqscan = off")  # tiny tables: force the index if it exists
            plan = [row[0] for row in conn.execute(f"EXPLAIN {statement}", values)]
            conn.execute("RESET enable_seqscan")
    lookups = [step for step in plan if " o " in f"{step} " or step.endswith(" o")]
    assert lookups
    assert all("tasks_by_instance" in step for step in lookups)
