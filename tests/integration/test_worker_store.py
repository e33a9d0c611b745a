"""The worker against real stores: retries, dead letter, restarts, leases, races, overlap."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

import cronledger.application.launches
from cronledger.application.launches import Claim, Worker, WorkReport
from cronledger.persistence.recorders import AggregatesMoved
from domain.directory import account_uuid
from tests.support import T0, FakeClock, Opener, World, wait_until
from tests.two_commits import TwoCommitWorker
from tick.processes import projections_loop

RACING_RUNS = 80


@pytest.fixture
def world(open_with: Opener) -> World:
    clock = FakeClock(T0)
    return World(open_with(clock), clock)


def seconds_after(start: datetime, instants: list[Any]) -> list[float]:
    return [(datetime.fromisoformat(str(i)) - start).total_seconds() for i in instants]


def test_a_launch_creates_the_instance_on_the_initiators_behalf(world: World) -> None:
    run_id = world.run_now()
    assert Worker.of(world.services).poll() == WorkReport(claimed=1, succeeded=1)
    run = world.run(run_id)
    (instance,) = world.instances()
    assert (run.status, run.instance_id) == ("SUCCEEDED", str(instance.id))
    assert (instance.applicant_id, instance.title, instance.state) == (
        "ann",
        "Daily 2026-10-01",
        "WAITING_REVIEW",
    )
    assert instance.review_deadline_at == T0 + timedelta(seconds=3600)
    assert instance.origin is not None
    assert (instance.origin["source"], instance.origin["trigger_kind"]) == ("manual", "cron")
    assert (instance.origin["schedule_id"], instance.origin["run_id"]) == (world.schedule, run_id)
    assert (instance.origin["fire_id"], instance.origin["definition_revision"]) == (run_id, 1)
    assert Worker.of(world.services).poll() == WorkReport()


def test_always_failing_launch_dead_letters_and_a_restart_keeps_the_count(
    open_with: Opener, world: World
) -> None:
    run_id = world.run_now()
    world.set_ann_active(False)
    services = world.services
    for step in (0, 30, 60):
        world.clock.advance(step)
        assert Worker.of(services).poll().failed == 1
    services.close()
    restarted = open_with(world.clock)  # a new process: new worker name, same store
    for step in (120, 240, 480, 10_000):
        world.clock.advance(step)
        Worker.of(restarted).poll()
    run = world.run(run_id, restarted)
    starts = seconds_after(T0, [a["started_at"] for a in run.attempts])
    assert starts == [0, 30, 90, 210, 450]
    assert run.status == "DEAD_LETTER"
    assert {a["error"]["code"] for a in run.attempts} == {"INITIATOR_INACTIVE"}

    world.services = restarted
    world.set_ann_active(True)
    restarted.runs.retry(world.root, UUID(world.schedule), run_id, None)
    assert Worker.of(restarted).poll().succeeded == 1
    (instance,) = world.instances()
    assert instance.origin is not None
    assert instance.origin["run_id"] == run_id
    assert world.run(run_id, restarted).attempts[-1]["outcome"] == "SUCCEEDED"


def test_a_launch_waits_while_the_initiator_may_not_submit(world: World) -> None:
    run_id = world.run_now()
    world.set_ann_roles(["auditor"])  # after the schedule was saved and the run registered
    assert Worker.of(world.services).poll().failed == 1
    run = world.run(run_id)
    assert (run.status, run.last_error and run.last_error["code"]) == (
        "RETRY_WAIT",
        "INITIATOR_NOT_PERMITTED",
    )
    world.set_ann_roles(["requester"])
    world.clock.advance(30)
    assert Worker.of(world.services).poll().succeeded == 1
    (instance,) = world.instances()
    assert instance.origin is not None
    assert (instance.applicant_id, instance.origin["saved_by"]) == ("ann", "root")


def test_a_worker_that_lost_its_lease_cannot_record_an_outcome(
    open_with: Opener, world: World
) -> None:
    run_id = world.run_now()
    paused = TwoCommitWorker.of(open_with(world.clock, lease_seconds=60))
    (claim,) = paused.claim()  # then it stops (SIGSTOP)
    world.clock.advance(61)
    assert Worker.of(world.services).poll().succeeded == 1
    assert paused.launch([claim]) == WorkReport(rejected=1)  # it resumes
    run = world.run(run_id)
    assert [a["outcome"] for a in run.attempts] == ["INTERRUPTED", "SUCCEEDED"]
    assert run.status == "SUCCEEDED"
    assert len(world.instances()) == 1
    events = [e.type for e in world.services.ledger.timeline(run.id)]
    assert events[-1] == "Run.OutcomeRejected"


def test_a_crash_after_claiming_is_recovered_after_the_lease(
    open_with: Opener, world: World
) -> None:
    run_id = world.run_now()
    crashed = TwoCommitWorker.of(open_with(world.clock))
    crashed.claim()  # kill -9 before launching
    assert Worker.of(world.services).poll() == WorkReport()  # the lease still holds
    world.clock.advance(60)
    assert Worker.of(world.services).poll().succeeded == 1
    assert world.run(run_id).status == "SUCCEEDED"
    assert len(world.instances()) == 1


def test_a_launch_that_fails_to_commit_leaves_nothing_claimed(
    open_with: Opener, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_ids = [world.run_now(f"r{n}") for n in range(4)]
    failing = open_with(world.clock)

    def store_gone(*args: Any, **kwargs: Any) -> None:
        raise OSError("the store went away mid-launch")

    monkeypatch.setattr(failing.ledger, "save", store_gone)
    with pytest.raises(OSError, match="went away"):
        Worker.of(failing).poll()

    assert Worker.of(world.services).poll().succeeded == 4  # at once: no lease to wait out
    assert [len(world.run(i).attempts) for i in run_ids] == [1, 1, 1, 1]
    assert len(world.instances()) == 4


def test_a_crash_holding_a_schedules_every_slot_is_recovered(
    open_with: Opener, world: World
) -> None:
    for n in range(4):
        world.run_now(f"r{n}")
    crashed = TwoCommitWorker.of(open_with(world.clock))
    assert len(crashed.claim()) == 4  # then kill -9
    world.clock.advance(60)
    assert Worker.of(world.services).poll().succeeded == 4
    assert len(world.instances()) == 4


def test_an_instance_whose_attempt_outcome_was_lost_is_reused(world: World) -> None:
    run_id = world.run_now()
    run = world.run(run_id)
    definition = world.services.directory.definition_aggregate(
        world.root.tenant_id, world.definition
    )
    world.services.ledger.save(run.approval(definition, T0))  # committed, outcome never was
    assert Worker.of(world.services).poll().succeeded == 1
    (instance,) = world.instances()
    assert world.run(run_id).instance_id == str(instance.id)


def test_two_workers_never_launch_one_run_twice(open_with: Opener, world: World) -> None:
    run_ids = [world.run_now(f"r{n}") for n in range(12)]
    workers = [Worker.of(open_with(world.clock)) for _ in range(3)]
    threads = [threading.Thread(target=w.drain) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    runs = [world.run(i) for i in run_ids]
    assert {r.status for r in runs} == {"SUCCEEDED"}
    assert all(len(r.attempts) == 1 for r in runs)
    assert len(world.instances()) == 12


def test_no_instance_is_created_after_the_initiators_deactivation(
    open_with: Opener, world: World
) -> None:
    for n in range(RACING_RUNS):
        world.run_now(f"r{n}")
    workers = [Worker.of(open_with(world.clock, worker_concurrency=2)) for _ in range(2)]
    threads = [threading.Thread(target=w.drain) for w in workers]
    for thread in threads:
        thread.start()
    wait_until(  # deactivate while the launches are under way
        lambda: len(world.instances()) >= 3, "three instances launched", interval=0.001
    )
    world.set_ann_active(False)
    for thread in threads:
        thread.join()
    store, ledger = world.services.store, world.services.ledger
    world.services.projector.catch_up()
    (deactivated,) = [
        e.position
        for e in ledger.timeline(account_uuid(world.root.tenant_id, "ann"))
        if e.type == "Account.Deactivated"
    ]
    created = [ledger.timeline(i.id)[0].position for i in world.instances()]
    assert all(position < deactivated for position in created)
    failed = store.query("SELECT COUNT(*) FROM runs WHERE status = 'RETRY_WAIT'")[0][0]
    assert 3 <= len(created) < RACING_RUNS
    assert len(created) + int(failed) == RACING_RUNS


def test_skip_while_open_records_skipped_overlap_while_an_instance_is_in_review(
    open_with: Opener,
) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock), clock, overlap_policy="skip_while_open")
    first = world.run_now("r1")
    Worker.of(world.services).poll()
    clock.advance(1)
    second = world.run_now("r2")
    assert Worker.of(world.services).poll() == WorkReport(skipped=1)
    assert world.run(first).status == "SUCCEEDED"
    assert world.run(second).status == "SKIPPED_OVERLAP"
    assert len(world.instances()) == 1


def test_one_overlap_check_skips_every_blocked_cycle_of_a_poll(open_with: Opener) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock), clock, overlap_policy="skip_while_open")
    first = world.run_now("r1")
    Worker.of(world.services).poll()
    clock.advance(1)
    later = [world.run_now(f"r{n}") for n in range(2, 5)]
    assert Worker.of(world.services).poll() == WorkReport(skipped=3)
    assert {(world.run(i).status, world.run(i).blocked_by) for i in later} == {
        ("SKIPPED_OVERLAP", first)
    }


def test_a_poll_launches_more_than_worker_concurrency_in_one_go(
    open_with: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock, worker_concurrency=1, schedule_concurrency=100), clock)
    for n in range(12):
        world.run_now(f"r{n}")
    monkeypatch.setattr(cronledger.application.launches, "LAUNCHES_PER_COMMIT", 5)
    worker = Worker.of(world.services)
    assert [worker.poll().succeeded for _ in range(4)] == [5, 5, 2, 0]
    assert len(world.instances()) == 12


def test_a_poll_launches_at_most_four_cycles_of_one_schedule(open_with: Opener) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock), clock)
    for n in range(6):
        world.run_now(f"r{n}")
    worker = Worker.of(world.services)
    assert [worker.poll().succeeded for _ in range(3)] == [4, 2, 0]


def test_at_most_four_attempts_of_one_schedule_at_once(open_with: Opener) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock), clock)
    for n in range(6):
        world.run_now(f"r{n}")
    worker = TwoCommitWorker.of(world.services)
    claims = worker.claim()
    assert len(claims) == 4
    assert all(isinstance(c, Claim) for c in claims)


def test_a_launch_commits_only_while_the_initiator_is_as_it_was_read(world: World) -> None:
    ledger, directory = world.services.ledger, world.services.directory
    run = world.run(world.run_now())
    ann = account_uuid(world.root.tenant_id, "ann")
    read_version = directory.account(world.root.tenant_id, "ann").version
    number = run.claim("w", T0, timedelta(seconds=60))
    ledger.save(run)
    instance = run.approval(directory.definition_aggregate(run.tenant_id, run.definition_id), T0)
    run.succeed(number, "w", str(instance.id), T0)
    world.set_ann_active(False)  # commits after the read, before the launch
    with pytest.raises(AggregatesMoved):
        ledger.save(instance, run, unchanged=[(ann, read_version)])
    assert not ledger.exists(instance.id)
    assert world.run(str(run.id)).status == "RUNNING"


def test_a_deactivation_between_the_checks_and_the_commit_fails_the_launch(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = world.run_now()
    worker = Worker.of(world.services)
    ann = account_uuid(world.root.tenant_id, "ann")
    read = world.services.ledger.get_many
    deactivated: list[bool] = []

    def read_then_deactivate(ids: Sequence[UUID]) -> Any:
        """After the launch's checks read ann (once), her deactivation commits."""
        found = read(ids)
        if ann in found and not deactivated:
            deactivated.append(True)
            world.set_ann_active(False)
        return found

    monkeypatch.setattr(world.services.ledger, "get_many", read_then_deactivate)
    assert worker.poll() == WorkReport(claimed=1, failed=1)
    assert world.instances() == []
    assert world.run(run_id).last_error == {
        "code": "INITIATOR_INACTIVE",
        "message": "initiator ann is inactive",
        "params": {"subject": "ann"},
    }


def test_the_worker_of_a_process_waits_while_its_tick_saves_a_scan(world: World) -> None:
    world.run_now()
    worker = Worker.of(world.services)
    worker.registration_wait = 60.0
    polled: list[WorkReport] = []
    with world.services.registration.registering():  # as Ticker.scan while it saves its cycles
        polling = threading.Thread(target=lambda: polled.append(worker.poll()))
        polling.start()
        polling.join(0.5)
        assert polling.is_alive()  # no commit of its own meanwhile
        assert not polled
    polling.join(30)
    assert polled == [WorkReport(claimed=1, succeeded=1)]


def test_the_projections_of_a_process_wait_while_its_tick_saves_a_scan(world: World) -> None:
    with world.services.ledger.projections_deferred():
        world.run_now()
    projections = projections_loop(world.services, 1.0)
    with world.services.registration.registering():  # as Ticker.scan while it saves its cycles
        projecting = threading.Thread(target=projections.work)
        projecting.start()
        projecting.join(0.5)
        assert projecting.is_alive()
        assert world.services.projector.lag() > 0
    projecting.join(30)
    assert world.services.projector.lag() == 0


def test_a_waiting_worker_polls_as_soon_as_its_tick_has_registered_cycles(world: World) -> None:
    worker = Worker.of(world.services)
    pausing = threading.Thread(target=worker.pause, args=(3600,))
    pausing.start()
    world.services.registration.registered()  # as Ticker.scan once it saved new cycles
    pausing.join(30)
    assert not pausing.is_alive()


def test_a_waiting_worker_that_is_stopping_waits_no_longer(world: World) -> None:
    worker = Worker.of(world.services)
    pausing = threading.Thread(target=worker.pause, args=(3600,))
    pausing.start()
    worker.stopping.set()
    pausing.join(30)
    assert not pausing.is_alive()
