"""Ledger.get_many against real stores (each test runs on SQLite and PostgreSQL)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any
from uuid import UUID, uuid4

import pytest
from eventsourcing.domain import Aggregate

from cronledger.application.services import Services
from cronledger.persistence.ledger import Ledger
from cronledger.persistence.store import Store
from domain.directory import Account, TenantRegistry, account_uuid, tenant_uuid
from tests.support import FakeClock


def new_accounts(clock: FakeClock, count: int) -> list[Account]:
    return [
        Account(
            tenant_id=uuid4(), account_id=f"a{n}", name=f"A {n}", roles=[], at=clock(), actor="t"
        )
        for n in range(count)
    ]


def save_in_batches(ledger: Ledger, accounts: Sequence[Account], size: int = 400) -> None:
    for start in range(0, len(accounts), size):
        ledger.save(*accounts[start : start + size])


def renamed(ledger: Ledger, clock: FakeClock, times: int) -> Account:
    """An account whose version is `times + 1`, saved after every rename."""
    (account,) = new_accounts(clock, 1)
    ledger.save(account)
    for n in range(times):
        account.update(f"name {n}", [], clock.advance(1), "t")
        ledger.save(account)
    return account


def assert_same_as_repository(ledger: Ledger, got: dict[UUID, Any], ids: Sequence[UUID]) -> None:
    for aggregate_id in ids:
        expected: Aggregate = ledger.repository.get(aggregate_id)
        assert type(got[aggregate_id]) is type(expected)
        assert got[aggregate_id].__dict__ == expected.__dict__


@pytest.fixture
def queries(monkeypatch: pytest.MonkeyPatch) -> list[Sequence[Any]]:
    """The parameters of every Store.query made while the test runs."""
    seen: list[Sequence[Any]] = []
    original = Store.query

    def spy(store: Store, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        seen.append(params)
        return original(store, statement, params)

    monkeypatch.setattr(Store, "query", spy)
    return seen


def test_empty_input_gives_an_empty_dict(services: Services, queries: list[Sequence[Any]]) -> None:
    assert services.ledger.get_many([]) == {}
    assert queries == []


def test_snapshotted_and_plain_aggregates_match_the_repository(
    services: Services, clock: FakeClock, queries: list[Sequence[Any]]
) -> None:
    ledger = services.ledger
    services.directory.bootstrap("acme", "root")
    long_lived = renamed(ledger, clock, 129)  # version 130: snapshots at 50 and 100
    at_snapshot = renamed(ledger, clock, 99)  # version 100: nothing after its snapshot
    short = renamed(ledger, clock, 3)
    assert ledger.snapshots is not None
    assert [s.originator_version for s in ledger.snapshots.get(long_lived.id)] == [50, 100]
    assert [s.originator_version for s in ledger.snapshots.get(at_snapshot.id)] == [50, 100]
    assert list(ledger.snapshots.get(short.id)) == []
    acme = tenant_uuid("acme")
    ids = [
        long_lived.id,
        at_snapshot.id,
        short.id,
        acme,
        TenantRegistry.create_id(),
        account_uuid(acme, "root"),
    ]
    queries.clear()

    got = ledger.get_many(ids)

    assert set(got) == set(ids)
    assert_same_as_repository(ledger, got, ids)
    assert got[long_lived.id].version == 130
    assert got[at_snapshot.id].version == 100
    assert len(queries) == 2
    after = {UUID(str(i)): v for i, v in zip(queries[1][::2], queries[1][1::2], strict=True)}
    assert (after[long_lived.id], after[at_snapshot.id], after[short.id]) == (100, 100, 0)


def test_many_ids_across_chunks_with_missing_and_repeated_ids(
    services: Services, clock: FakeClock, queries: list[Sequence[Any]]
) -> None:
    ledger = services.ledger
    accounts = new_accounts(clock, 1_100)
    save_in_batches(ledger, accounts)
    missing = [uuid4() for _ in range(5)]
    ids = [a.id for a in accounts[:600]] + missing + [a.id for a in accounts[600:]]
    queries.clear()

    got = ledger.get_many([*ids, accounts[0].id])

    assert len(queries) == 6  # 1,105 distinct ids: three chunks of two queries
    assert set(got) == {a.id for a in accounts}
    assert not set(missing) & set(got)
    assert_same_as_repository(ledger, got, [a.id for a in accounts])


def test_only_missing_ids_give_an_empty_dict(services: Services) -> None:
    assert services.ledger.get_many([uuid4(), uuid4()]) == {}


def test_timing_against_a_loop_of_repository_get(services: Services, clock: FakeClock) -> None:
    """Informal: prints both figures (run with -s), asserts only that the answers agree."""
    ledger = services.ledger
    accounts = new_accounts(clock, 2_000)
    save_in_batches(ledger, accounts, 500)
    ids = [a.id for a in accounts]

    started = time.perf_counter()
    got = ledger.get_many(ids)
    batched = time.perf_counter() - started
    started = time.perf_counter()
    one_by_one: dict[UUID, Aggregate] = {i: ledger.repository.get(i) for i in ids}
    looped = time.perf_counter() - started

    print(
        f"\n{services.store.kind}: get_many {batched * 1000:.0f} ms, "
        f"repository.get loop {looped * 1000:.0f} ms for {len(ids)} aggregates"
    )
    assert {i: a.__dict__ for i, a in got.items()} == {i: a.__dict__ for i, a in one_by_one.items()}
