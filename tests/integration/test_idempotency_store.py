"""Idempotency keys on the store: one resource however requests race with one key, and key
records that every reader of the log goes through unharmed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from cronledger.application.directory import DefinitionFields
from cronledger.application.idempotency import Outcome, check_key, once
from cronledger.application.services import Services
from cronledger.application.stream import EventStream, StreamedEvent
from cronledger.persistence.ledger import UnreadableAggregate
from domain.directory import Principal
from domain.idempotency import (
    CREATE_ACCOUNT,
    CREATE_DEFINITION,
    CREATE_SCHEDULE,
    ISSUE_TOKEN,
    IdempotencyKey,
    KeyedRequest,
)
from projections.engine import undecodable_count
from tests.support import DECIDERS, FakeClock, FakeTime, Opener, World

RECORDED = "IdempotencyKey.Recorded"


@dataclass(frozen=True)
class Kind:
    """A creation whose key is recorded, as the web layer asks it of the services."""

    name: str
    operation: str
    create: Callable[[Services, Principal, KeyedRequest], str]  # the created resource's id
    count: Callable[[Services, Principal], int]  # how many such resources the tenant has


def _create_schedule(services: Services, root: Principal, request: KeyedRequest) -> str:
    fields = {
        "name": "Keyed",
        "definition_id": services.directory.definition_by_key(root.tenant_id, "daily").id,
        "trigger": {"kind": "cron", "expression": "0 9 * * *"},
        "initiator_id": "ann",
    }
    settings = services.schedules.settings_from(fields)
    return services.schedules.create(root, settings, False, request).id


def _schedules(services: Services, root: Principal) -> int:
    services.projector.catch_up()
    return int(services.store.query("SELECT COUNT(*) FROM schedules")[0][0])


def _create_account(services: Services, root: Principal, request: KeyedRequest) -> str:
    return services.directory.create_account(root, None, "Bob", ["requester"], request).id


def _create_named_account(services: Services, root: Principal, request: KeyedRequest) -> str:
    return services.directory.create_account(root, "bob", "Bob", ["requester"], request).id


def _accounts(services: Services, root: Principal) -> int:
    return len(services.directory.tenant(root.tenant_id).account_ids)


def _create_definition(services: Services, root: Principal, request: KeyedRequest) -> str:
    fields = DefinitionFields("Travel", False, 60, [], reviewers=DECIDERS)
    return services.directory.create_definition(root, "travel", fields, request).id


def _definitions(services: Services, root: Principal) -> int:
    return len(services.directory.tenant(root.tenant_id).definition_ids)


def _issue_token(services: Services, root: Principal, request: KeyedRequest) -> str:
    return services.directory.issue_token(root, "ann", request).token_id


def _tokens(services: Services, root: Principal) -> int:
    timeline = services.directory.account_timeline(root.tenant_id, "ann")
    return sum(entry.type == "Account.TokenIssued" for entry in timeline)


KINDS = [
    Kind("schedule", CREATE_SCHEDULE, _create_schedule, _schedules),
    Kind("account", CREATE_ACCOUNT, _create_account, _accounts),
    Kind("account with an id", CREATE_ACCOUNT, _create_named_account, _accounts),
    Kind("definition", CREATE_DEFINITION, _create_definition, _definitions),
    Kind("token", ISSUE_TOKEN, _issue_token, _tokens),
]


def keyed(root: Principal, operation: str, fingerprint: str = "f") -> KeyedRequest:
    return KeyedRequest(root.tenant_id, root.account_id, operation, "k-1", fingerprint)


def requested(services: Services, root: Principal, kind: Kind) -> Outcome[str]:
    """What the web layer does: create, or answer the resource the key's first request made."""
    request = keyed(root, kind.operation)
    return once(lambda: kind.create(services, root, request), lambda resource_id: resource_id)


@pytest.fixture(params=KINDS, ids=lambda kind: kind.name)
def kind(request: pytest.FixtureRequest) -> Kind:
    return request.param  # type: ignore[no-any-return]


def test_the_loser_of_a_race_replays_the_winner(
    open_with: Opener, clock: FakeClock, kind: Kind, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both pass the key check; the other process saves first; this one's save is refused
    whole, and its retry finds the other's record."""
    world = World(open_with(clock), clock)
    other = world.services
    this = open_with(clock)
    before = kind.count(other, world.root)
    won: list[Outcome[str]] = []
    save = this.ledger.save

    def save_after_the_other(*objs: Any, **kwargs: Any) -> Any:
        if not won:
            won.append(requested(other, world.root, kind))
        return save(*objs, **kwargs)

    monkeypatch.setattr(this.ledger, "save", save_after_the_other)
    lost = requested(this, world.root, kind)
    assert won == [Outcome(won[0].value)]
    assert lost == Outcome(won[0].value, replayed=True)
    assert kind.count(other, world.root) == before + 1


def test_threads_racing_one_key_make_one_resource(
    services: Services, clock: FakeClock, kind: Kind
) -> None:
    world = World(services, clock)
    before = kind.count(services, world.root)
    start = threading.Barrier(4)

    def race(_: int) -> Outcome[str]:
        start.wait()
        return requested(services, world.root, kind)

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(race, range(4)))
    assert len({outcome.value for outcome in outcomes}) == 1
    assert sorted(outcome.replayed for outcome in outcomes) == [False, True, True, True]
    assert kind.count(services, world.root) == before + 1


def test_the_record_names_what_the_key_created(services: Services, clock: FakeClock) -> None:
    world = World(services, clock)
    request = keyed(world.root, CREATE_SCHEDULE, fingerprint="abc")
    schedule_id = _create_schedule(services, world.root, request)
    record = services.ledger.find(IdempotencyKey, request.record_id, "key", "k-1")
    assert (record.resource_kind, record.resource_id) == ("schedule", schedule_id)
    assert (record.actor, record.operation, record.key, record.fingerprint) == (
        "root",
        CREATE_SCHEDULE,
        "k-1",
        "abc",
    )
    assert record.tenant_id == world.root.tenant_id


def test_every_reader_of_the_log_goes_through_key_records(
    services: Services, clock: FakeClock
) -> None:
    world = World(services, clock)
    start = services.ledger.recorder.max_notification_id() or 0
    for kind in KINDS:
        requested(services, world.root, kind)
    services.projector.catch_up()
    assert services.projector.lag() == 0
    assert undecodable_count(services.store) == 0
    assert services.audit.replay(lambda _: None) == []
    assert services.audit.verify(lambda _: None).found is None
    streamed = _streamed_after(services, world.root, start)
    assert RECORDED not in streamed
    assert {"Schedule.Created", "Account.Registered", "Definition.Registered"} <= set(streamed)
    record_id = keyed(world.root, CREATE_SCHEDULE).record_id
    [entry] = services.audit.timeline(str(record_id))
    assert (entry.type, entry.actor, entry.data["resource_kind"]) == (RECORDED, "root", "schedule")


def _streamed_after(services: Services, root: Principal, start: int) -> list[str]:
    """The types of the events after `start` that root's stream sends."""
    fake = FakeTime()
    stream = EventStream(
        services.ledger,
        root,
        start,
        sleep=fake.sleep,
        should_stop=lambda: fake.sleeps > 0,
        clock=fake,
    )
    return [item.entry.type for item in stream if isinstance(item, StreamedEvent)]


def test_a_damaged_record_is_counted_and_stops_only_its_key(
    services: Services, clock: FakeClock
) -> None:
    world = World(services, clock)
    request = keyed(world.root, CREATE_SCHEDULE)
    with services.ledger.projections_deferred():
        schedule_id = _create_schedule(services, world.root, request)
    position_of_record = _position(services, request.record_id)
    _damage(services, position_of_record)
    services.projector.catch_up()
    assert undecodable_count(services.store) == 1
    assert services.projector.lag() == 0
    assert services.schedules.view(world.root.tenant_id, schedule_id).name == "Keyed"
    with pytest.raises(UnreadableAggregate):
        check_key(services.ledger, request)
    other = KeyedRequest(world.root.tenant_id, "root", CREATE_SCHEDULE, "k-2", "f")
    assert _create_schedule(services, world.root, other) != schedule_id


def _position(services: Services, aggregate_id: Any) -> int:
    store = services.store
    rows = store.query(
        f"SELECT {store.position_column} FROM {services.ledger.events_table} "
        "WHERE originator_id = ?",
        (aggregate_id.hex if store.kind == "sqlite" else aggregate_id,),
    )
    return int(rows[0][0])


def _damage(services: Services, position: int) -> None:
    store = services.store
    statement = (
        f"UPDATE {services.ledger.events_table} SET state = ? WHERE {store.position_column} = ?"
    )
    with store.connect() as connection:
        native = statement.replace("?", "%s") if store.kind == "postgresql" else statement
        connection.execute(native, (b"\x00\xff\x00\xff", position))
