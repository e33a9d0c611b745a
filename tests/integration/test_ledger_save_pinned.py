"""`Ledger.save` re-implements eventsourcing's `Application.save` for speed: pinned to it here.

The same changes to aggregates of every kind are saved by `Ledger.save` into one store and by
the library's own `Application.save` into another; both logs and their snapshots must hold the
same thing. An eventsourcing upgrade that changes what `save` does fails this test instead of
quietly writing a different log.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.application import Application

from cronledger.persistence.ledger import Ledger
from cronledger.persistence.store import Store
from domain.approvals import ApprovalInstance, Command
from domain.directory import Account, ApiToken, Definition, Tenant, TenantRegistry
from domain.policy import RunPolicy
from domain.runs import Run
from domain.schedules import Schedule, ScheduleSettings
from domain.values import FormData
from tests.support import FakeClock

Save = Callable[..., object]
T0 = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
POLICY = RunPolicy(grace=timedelta(seconds=5), max_attempts=100)
LEASE = timedelta(seconds=60)
SCHEDULE_ID = UUID(int=7)
# Read from the wall clock by the library when an event is made: equal only by chance.
WALL_CLOCK_FIELDS = frozenset({"timestamp", "_created_on", "_modified_on"})
SNAPSHOTTED = {"Tenant", "Account", "Definition", "Schedule", "Run", "ApprovalInstance"}
EVERY_KIND = SNAPSHOTTED | {"TenantRegistry", "ApiToken"}


@pytest.fixture
def ledgers(store_url: str) -> Iterator[tuple[Ledger, Ledger]]:
    """Two ledgers on two empty stores of the test's kind."""
    store = Store.from_url(store_url)
    store.create()
    with store.scratch() as other:
        ours, theirs = Ledger(store, FakeClock(T0)), Ledger(other, FakeClock(T0))
        yield ours, theirs
        ours.close()
        theirs.close()
    store.close()


def directory(save: Save, clock: FakeClock) -> tuple[Tenant, Account, Definition]:
    """A tenant in the registry, an account holding a token, a definition; saved together."""
    at, actor = clock(), "root"
    registry = TenantRegistry(at=at, actor=actor)
    tenant = Tenant(name="acme", at=at, actor=actor)
    registry.add(name="acme", tenant_id=tenant.id, at=at, actor=actor)
    account = Account(tenant.id, "ann", "Ann", ["requester"], at, actor)
    tenant.add_account("ann")
    token = ApiToken(
        secret_hash=UUID(int=1), tenant_id=tenant.id, account_id="ann", at=at, actor=actor
    )
    account.issue_token(str(token.id), at, actor)
    definition = Definition(tenant.id, "daily", "Daily", False, 3600, [], False, at, actor)
    tenant.add_definition(str(definition.id))
    save(registry, tenant, account, token, definition)
    return tenant, account, definition


def busy_directory(
    save: Save, clock: FakeClock, tenant: Tenant, account: Account, definition: Definition
) -> None:
    """Past each one's snapshotting interval, a few events per save."""
    for n in range(60):
        at = clock.advance(1)
        tenant.add_account(f"a{n}")
        tenant.add_account(f"b{n}")
        account.update(f"Ann {n}", ["requester"], at, "root")
        (definition.unpublish if definition.published else definition.publish)(at, "root")
        if n % 7 == 0:
            save(tenant, account, definition)
    save(tenant, account, definition)


def ticked_schedule(save: Save, clock: FakeClock, definition: Definition) -> tuple[Schedule, Run]:
    """A schedule due every minute, ticked past its interval; its first run, saved with it."""
    settings = ScheduleSettings(
        "Daily",
        str(definition.id),
        {"kind": "cron", "expression": "* * * * *"},
        "UTC",
        "ann",
        "Daily {{date}}",
        FormData.of({"n": 1}),
    )
    schedule = Schedule._create(  # the library's way to give an aggregate its id
        Schedule.Created,
        id=SCHEDULE_ID,
        tenant_id=definition.tenant_id,
        settings=asdict(settings),
        enabled=True,
        next_fire_at=clock() + timedelta(minutes=1),
        definition_revision=1,
        at=clock(),
        actor="root",
    )
    save(schedule)
    runs: list[Run] = []
    for _ in range(55):
        runs += (new := schedule.register_due(clock.advance(60), 10, POLICY))
        save(schedule, *new)
    return schedule, runs[0]


def retried_run(save: Save, clock: FakeClock, run: Run, definition: Definition) -> ApprovalInstance:
    """Attempts whose leases run out, past the interval; then one launches an instance."""
    number = run.claim("w1", clock(), LEASE)
    for _ in range(30):
        number = run.claim("w1", clock.advance(61), LEASE)
        save(run)
    instance = run.approval(definition, clock())
    run.succeed(number, "w1", str(instance.id), clock())
    save(run, instance, unchanged=[(definition.id, definition.version)])
    return instance


def reviewed_instance(save: Save, clock: FakeClock, instance: ApprovalInstance) -> None:
    """Stale approvals past the interval (each recorded as rejected), then one that wins."""
    for n in range(55):
        instance.handle(
            Command("approve", f"stale-{n}", {"material_version": 2}), clock.advance(1), "bob"
        )
        if n % 5 == 0:
            save(instance)
    instance.handle(Command("approve", "ok", {"material_version": 1}), clock.advance(1), "bob")
    save(instance)


def every_kind_changed(save: Save) -> None:
    """The same changes, whichever `save` records them."""
    clock = FakeClock(T0)
    tenant, account, definition = directory(save, clock)
    busy_directory(save, clock, tenant, account, definition)
    _, run = ticked_schedule(save, clock, definition)
    reviewed_instance(save, clock, retried_run(save, clock, run, definition))


def comparable(value: Any) -> Any:
    """Decoded JSON with the wall-clock values left out (the keys stay)."""
    if isinstance(value, dict):
        return {
            k: "wall clock" if k in WALL_CLOCK_FIELDS else comparable(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def logged(ledger: Ledger) -> list[tuple[Any, ...]]:
    """The whole log in order: aggregate, version, topic and state of each event."""
    notifications = ledger.recorder.select_notifications(start=None, limit=100_000)
    return [
        (n.originator_id, n.originator_version, n.topic, comparable(json.loads(n.state)))
        for n in notifications
    ]


def snapshots(ledger: Ledger, ids: list[UUID]) -> list[tuple[Any, ...]]:
    assert ledger.snapshots is not None
    return [
        (s.originator_id, s.originator_version, s.topic, comparable(json.loads(s.state)))
        for i in ids
        for s in ledger.snapshots.recorder.select_events(i)
    ]


def kind(topic: str) -> str:
    return topic.rsplit(":", 1)[1].split(".")[0]


def test_ledger_save_stores_what_the_librarys_own_save_stores(
    ledgers: tuple[Ledger, Ledger],
) -> None:
    ours, theirs = ledgers
    every_kind_changed(ours.save)
    every_kind_changed(lambda *objs, **kwargs: Application.save(theirs, *objs, **kwargs))

    log = logged(ours)
    ids = list(dict.fromkeys(originator_id for originator_id, *_ in log))
    assert log == logged(theirs)
    assert snapshots(ours, ids) == snapshots(theirs, ids)
    assert {kind(topic) for _, _, topic, _ in log} == EVERY_KIND
    assert {kind(state["topic"]) for *_, state in snapshots(ours, ids)} == SNAPSHOTTED
