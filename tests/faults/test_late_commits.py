"""Late commits: an append held open before its commit while a later one tries to commit.

PostgreSQL only: there a position (`notification_id`, a sequence) is given at insert time, so
without care a transaction that inserted first could commit after a later one is visible, and
every reader that moved past the later position would skip the earlier one for good. The
recorder takes `LOCK TABLE ... IN EXCLUSIVE MODE` before it inserts (eventsourcing's
`_lock_table`, also taken first by `BinaryAppendRecorder` for a checked append), so appends
commit in position order. On SQLite a position is given by the only writer, inside its write
lock: the question does not arise.

Each test holds a real append (a run-now) inside its transaction, after its insert and before
its commit, and makes a later append (an account) that must wait; the readers (the shared
`LogTail` of the event streams, the projections, the hash chain) look while both wait and once
both committed: none of them skips the held event.
"""

from __future__ import annotations

from collections.abc import Iterator
from uuid import UUID

import pytest
from eventsourcing.postgres import PostgresApplicationRecorder

from cronledger.application.services import Services
from cronledger.application.stream import LogTail
from tests.faults.cut_support import Background, Paused, backends, own_services
from tests.support import FakeClock, World, wait_until

pytestmark = pytest.mark.usefixtures("postgres_ready")


@pytest.fixture
def world() -> Iterator[tuple[World, str]]:
    clock = FakeClock()
    with own_services(clock) as (services, application_name):
        yield World(services, clock), application_name


def positions_of(services: Services, aggregate_id: UUID) -> list[int]:
    return [entry.position for entry in services.ledger.timeline(aggregate_id)]


def test_a_later_append_waits_for_the_held_one_and_no_reader_skips_it(
    world: tuple[World, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    world_, application_name = world
    services = world_.services
    services.projector.catch_up()
    before = services.ledger.recorder.max_notification_id() or 0
    tail = LogTail(services.ledger, services.health)
    with tail.following():
        wait_until(lambda: tail.position == before, "the tail at the log's end")
        # The run-now's transaction has inserted its events and holds the append lock.
        held = Paused(monkeypatch, PostgresApplicationRecorder, "_fetch_ids_after_insert_events")
        late = Background(lambda: world_.run_now("late"))
        held.wait()
        later = Background(
            lambda: services.directory.create_account(world_.root, "bob", "Bob", ["requester"])
        )
        wait_until(
            lambda: backends(application_name, waiting_for_lock=True),
            "the later append waiting for the lock",
        )

        # Nothing after `before` is visible to any reader while the held append is open.
        assert services.ledger.recorder.max_notification_id() == before
        assert services.projector.catch_up() == 0
        assert set(services.projector.positions().values()) == {before}
        assert tail.position == before

        held.release()
        run_id = UUID(late.join().result)
        assert later.join().error is None, later.error
        assert late.error is None, late.error
        end = services.ledger.recorder.max_notification_id() or 0
        wait_until(lambda: tail.position == end, "the tail at the new end")
        streamed = [event.position for event in tail.read(before, 1000)[0]]

    late_positions = positions_of(services, run_id)
    timeline = services.directory.account_timeline(world_.root.tenant_id, "bob")
    later_positions = [entry.position for entry in timeline]
    assert late_positions
    assert later_positions
    assert max(late_positions) < min(later_positions)  # held first, committed first
    assert set(late_positions) | set(later_positions) <= set(streamed)
    assert streamed == sorted(streamed)

    services.projector.catch_up()
    assert set(services.projector.positions().values()) == {end}
    found = services.audit.verify(lambda _: None)
    assert found.found is None
    log_size = len(services.ledger.recorder.select_notifications(start=1, limit=100_000))
    assert found.head.events == log_size
    assert services.audit.replay(lambda _: None) == []
