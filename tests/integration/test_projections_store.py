"""Read models against real stores: crash and resume, rebuild, replay, hash chain, past states."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services
from domain.runs import Run
from projections import chain
from projections.catalog import all_projections, projection_named
from projections.maintenance import rebuild, replay
from tests.support import T0, FakeClock, Opener, World


def differences(services: Services) -> list[Any]:
    return replay(services.ledger, all_projections("UTC"), lambda _: None)


def test_the_busy_day_has_something_in_every_table(busy: World) -> None:
    counts = {
        table: busy.services.store.query(f"SELECT COUNT(*) FROM {table}")[0][0]
        for projection in all_projections("UTC")
        for table in projection.tables
        if table != "chain_checkpoints"  # one per 10,000 events
    }
    assert all(counts.values()), counts
    dead = busy.services.store.query("SELECT COUNT(*) FROM runs WHERE status = 'DEAD_LETTER'")
    assert dead[0][0] == 1


def test_replay_finds_no_difference_then_names_an_altered_row(busy: World) -> None:
    services = busy.services
    assert differences(services) == []
    (run_id,) = services.store.query("SELECT id FROM runs WHERE status = 'DEAD_LETTER'")[0]
    with services.store.connect() as conn:
        conn.execute(
            "UPDATE runs SET status = 'SUCCEEDED' WHERE id = "
            + ("?" if services.store.kind == "sqlite" else "%s"),
            (run_id,),
        )
    found = differences(services)
    assert {(d.table, d.side) for d in found} == {("runs", "live"), ("runs", "replay")}
    assert all(run_id in d.row for d in found)


def test_rebuild_restores_an_altered_table_and_resumes_from_its_position(busy: World) -> None:
    services = busy.services
    with services.store.connect() as conn:
        conn.execute("DELETE FROM attempts")
    rebuild(services.ledger, [projection_named("runs", "UTC")], lambda _: None)
    assert differences(services) == []
    busy.clock.advance(600)
    Ticker.of(services).scan()
    Worker.of(services).drain()
    services.projector.catch_up()
    assert differences(services) == []


def test_the_hash_chain_cannot_be_rebuilt(busy: World) -> None:
    with pytest.raises(ValueError, match="audit_chain cannot be rebuilt"):
        rebuild(busy.services.ledger, [projection_named("audit_chain", "UTC")], lambda _: None)


def test_a_crash_mid_batch_then_a_restart_equals_a_rebuild(
    busy: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = busy.services
    services.projector.catch_up()
    busy.clock.advance(600)
    with services.ledger.projections_deferred():
        for n in range(30):
            busy.run_now(f"late-{n}")
    runs = projection_named("runs", "UTC")
    handlers = runs.handlers()
    calls = {"n": 0}

    def crashing(sql: Any, event: Any, position: int) -> None:
        calls["n"] += 1
        if calls["n"] == 20:
            raise KeyboardInterrupt("killed mid-batch")
        handlers[Run.Registered](sql, event, position)

    projector = services.projector
    target = next(p for p in projector.projections if p.name == "runs")
    monkeypatch.setattr(target, "handlers", lambda: {**handlers, Run.Registered: crashing})
    with pytest.raises(KeyboardInterrupt):
        projector.catch_up()
    monkeypatch.undo()
    assert services.store.query("SELECT COUNT(*) FROM runs")[0][0] == 8
    projector.catch_up()
    assert services.store.query("SELECT COUNT(*) FROM runs")[0][0] == 38
    assert differences(services) == []


def test_verify_names_the_position_of_an_altered_or_deleted_event(busy: World) -> None:
    services, store = busy.services, busy.services.store
    events = services.ledger.events_table
    assert services.audit.verify(lambda _: None).found is None
    positions = [
        row[0]
        for row in store.query(
            f"SELECT {store.position_column} FROM {events} ORDER BY {store.position_column}"
        )
    ]
    altered, deleted = positions[len(positions) // 2], positions[len(positions) // 3]
    mark = "?" if store.kind == "sqlite" else "%s"
    with store.connect() as conn:
        conn.execute(
            f"UPDATE {events} SET state = {mark} WHERE {store.position_column} = {mark}",
            (b'{"forged":true}', altered),
        )
    broken = services.audit.verify(lambda _: None).found
    assert broken is not None
    assert (broken.position, broken.problem.split(" (")[0]) == (altered, "the event was altered")
    with store.connect() as conn:
        conn.execute(f"DELETE FROM {events} WHERE {store.position_column} = {mark}", (deleted,))
    broken = services.audit.verify(lambda _: None).found
    assert broken is not None
    assert (broken.position, broken.problem.split(" (")[0]) == (deleted, "an event was deleted")


def test_state_at_a_past_instant(busy: World) -> None:
    services = busy.services
    early = services.audit.state(busy.schedule, T0 + timedelta(seconds=1))
    now = services.audit.state(busy.schedule, busy.clock.now)
    assert early["state"]["enabled"] is False
    assert early["state"]["settings"]["trigger"]["expression"] == "0 0 1 1 *"
    assert now["state"]["enabled"] is True
    assert now["state"]["settings"]["trigger"]["expression"] == "*/10 * * * *"
    assert now["log_version"] > early["log_version"]


def test_a_read_model_an_older_version_made_is_rebuilt_at_start(
    busy: World, open_with: Opener
) -> None:
    services = busy.services
    with services.store.connect() as conn:  # the `runs` table as an older version left it
        conn.execute("DROP TABLE runs")
        conn.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, status TEXT NOT NULL)")
        conn.execute("UPDATE projection_positions SET layout = NULL WHERE name = 'runs'")
    reopened = open_with(busy.clock)
    assert reopened.projector.outdated() == []
    assert differences(reopened) == []
    assert Worker.of(reopened).poll() is not None  # its scan reads the rebuilt columns


def test_the_daily_rollup_counts_a_run_once_while_it_lies_in_the_dead_letter(
    open_with: Opener,
) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock, max_attempts=1), clock)
    services = world.services
    run_id = world.run_now()
    world.set_ann_active(False)

    def daily() -> tuple[int, int, int]:
        services.projector.catch_up()
        row = services.store.query("SELECT cycles, successes, dead_letters FROM schedule_daily")
        return tuple(row[0])  # type: ignore[return-value]

    for _ in range(2):  # dead-lettered, retried by hand, dead-lettered again
        Worker.of(services).drain()
        assert daily() == (1, 0, 1)
        world.set_ann_active(True)  # a retry is refused while its cause is still present
        services.runs.retry(world.root, UUID(world.schedule), run_id, None)
        assert daily() == (1, 0, 0)
        world.set_ann_active(False)
    world.set_ann_active(True)
    Worker.of(services).drain()
    assert daily() == (1, 1, 0)
    assert differences(services) == []


@pytest.fixture
def frequent_checkpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chain, "CHECKPOINT_EVERY", 7)


def test_checkpoints_where_live_batches_put_them_pass_a_replay_and_a_forged_one_is_named(
    frequent_checkpoints: None, busy: World
) -> None:
    """The soak's hour found it: a replay's batches put checkpoints elsewhere than the live
    ones did, and `audit replay` called the live checkpoints differences."""
    services = busy.services
    live = services.store.query("SELECT position, events FROM chain_checkpoints ORDER BY position")
    assert any(events % 7 for _, events in live), live  # where a live batch crossed a multiple
    assert differences(services) == []
    position = live[0][0]
    with services.store.connect() as conn:
        conn.execute(
            "UPDATE chain_checkpoints SET hash = ? WHERE position = ?".replace(
                "?", "?" if services.store.kind == "sqlite" else "%s"
            ),
            ("f" * 64, position),
        )
    found = differences(services)
    assert [(d.table, d.side, d.row[0]) for d in found] == [("chain_checkpoints", "live", position)]
