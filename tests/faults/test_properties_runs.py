"""Properties of the run rules (domain/runs.py; docs/runs.md): random sequences of claims,
failures, successes, lease expiries (clock steps past the lease, then another
worker's claim), manual retries and cancels, checked against a small model of the rules:
attempt numbers and counts, statuses, the 30 s doubling backoff and the dead letter after
the round's last attempt."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from tempfile import TemporaryDirectory
from typing import Any, cast
from uuid import UUID, uuid4

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cronledger.application.services import open_services
from cronledger.config import Settings
from domain.errors import DomainError, InvalidState
from domain.launch import LaunchFailed
from domain.policy import RunPolicy
from domain.runs import LeaseLost, Run
from domain.schedules import Schedule
from tests.support import FakeClock, World, fresh_postgres_url
from tests.two_commits import TwoCommitWorker
from tests.unit.helpers import LEASE, POLICY, SETTINGS, T0

PROFILE = settings(
    derandomize=True,
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
WORKERS = ("w1", "w2")
UNFINISHED_OR_WAITING = ("PENDING", "RETRY_WAIT")


@dataclass
class Model:
    """What the rules say the run should be."""

    policy: RunPolicy
    status: str = "PENDING"
    next_attempt_at: datetime | None = T0
    attempts: int = 0  # all rounds
    in_round: int = 0
    holder: tuple[int, str] | None = None
    lease_until: datetime | None = None

    def due(self, now: datetime) -> bool:
        if self.status == "RUNNING":
            return self.lease_until is not None and self.lease_until <= now
        return (
            self.status in UNFINISHED_OR_WAITING
            and self.next_attempt_at is not None
            and self.next_attempt_at <= now
        )

    def stop_attempt(self, status: str, next_attempt_at: datetime | None) -> None:
        self.status, self.next_attempt_at, self.holder, self.lease_until = (
            status,
            next_attempt_at,
            None,
            None,
        )

    def interrupt(self, now: datetime) -> None:
        if self.in_round >= self.policy.max_attempts:
            self.stop_attempt("DEAD_LETTER", None)
        else:
            self.stop_attempt("RETRY_WAIT", now)


operations = st.lists(
    st.tuples(
        st.sampled_from(  # weighted towards the steps that move a run along
            ["step"] * 4
            + ["claim"] * 4
            + ["fail"] * 4
            + ["fail_permanent", "succeed", "retry", "retry", "cancel"]
        ),
        st.sampled_from(WORKERS),
        st.integers(0, 600),  # seconds the clock moves on a step
        st.sampled_from([True, True, True, False]),  # a report names the attempt held or not
    ),
    min_size=10,
    max_size=80,
)

TRANSIENT = LaunchFailed("INITIATOR_INACTIVE", "initiator ann is inactive")
PERMANENT = LaunchFailed("DEFINITION_NOT_FOUND", "gone", True)


@PROFILE
@given(operations, st.integers(1, 5))
def test_random_attempt_sequences_follow_the_run_rules(
    steps: list[tuple[str, str, int, bool]], max_attempts: int
) -> None:
    policy = RunPolicy(grace=POLICY.grace, max_attempts=max_attempts)
    schedule = Schedule.create(uuid4(), SETTINGS, True, T0 - timedelta(hours=1), "ops")
    run = schedule.manual_run("r1", T0, "ops", policy)
    model = Model(policy)
    now = T0
    for kind, worker, seconds, current in steps:
        if kind == "step":
            now += timedelta(seconds=seconds)
        elif kind == "claim":
            claim(run, model, worker, now)
        elif kind in ("fail", "fail_permanent", "succeed"):
            report(run, model, kind, worker, current, now)
        elif kind == "retry":
            if model.status in ("FAILED", "DEAD_LETTER", "CANCELLED"):
                run.retry(now, "ops")
                model.in_round = 0
                model.stop_attempt("PENDING", now)
            else:
                with pytest.raises(InvalidState):
                    run.retry(now, "ops")
        elif model.status in UNFINISHED_OR_WAITING:  # cancel
            run.cancel(now, "ops")
            model.stop_attempt("CANCELLED", None)
        else:
            with pytest.raises(InvalidState):
                run.cancel(now, "ops")
        check(run, model, now)
        event(f"reached {model.status}")


def claim(run: Run, model: Model, worker: str, now: datetime) -> None:
    if not model.due(now):
        with pytest.raises(InvalidState):
            run.claim(worker, now, LEASE)
        return
    if model.status == "RUNNING":  # the lease ran out: that attempt is interrupted first
        model.interrupt(now)
    number = run.claim(worker, now, LEASE)
    if model.status == "DEAD_LETTER":
        assert number == 0
        return
    model.attempts += 1
    model.in_round += 1
    assert number == model.attempts
    model.status = "RUNNING"
    model.holder, model.lease_until = (number, worker), now + LEASE


def report(run: Run, model: Model, kind: str, worker: str, current: bool, now: datetime) -> None:
    number = model.holder[0] if current and model.holder else model.attempts
    holds = model.holder == (number, worker)
    assert run.holds(number, worker) == holds
    act: Callable[[], None] = {
        "fail": lambda: run.fail(number, worker, TRANSIENT, model.policy, now),
        "fail_permanent": lambda: run.fail(number, worker, PERMANENT, model.policy, now),
        "succeed": lambda: run.succeed(number, worker, "instance-1", now),
    }[kind]
    if not holds:  # not its attempt, or another worker took the lease over: nothing changes
        with pytest.raises(LeaseLost):
            act()
        return
    act()
    if kind == "succeed":
        model.stop_attempt("SUCCEEDED", None)
    elif kind == "fail_permanent":
        model.stop_attempt("FAILED", None)
    elif model.in_round >= model.policy.max_attempts:
        model.stop_attempt("DEAD_LETTER", None)
    else:  # 30 s, doubling with each failed attempt of the round
        model.stop_attempt("RETRY_WAIT", now + timedelta(seconds=30 * 2 ** (model.in_round - 1)))


def check(run: Run, model: Model, now: datetime) -> None:
    assert run.status == model.status
    if run.status != "RUNNING":
        assert run.next_attempt_at == model.next_attempt_at
    assert [attempt["number"] for attempt in run.attempts] == list(range(1, model.attempts + 1))
    assert run.attempts_in_round == model.in_round <= model.policy.max_attempts
    open_attempts = [a for a in run.attempts if a.get("finished_at") is None]
    assert len(open_attempts) == (1 if run.status == "RUNNING" else 0)
    if run.status == "DEAD_LETTER":
        assert run.attempts_in_round == model.policy.max_attempts
        assert not run.is_due(now + timedelta(days=365))
    assert run.is_due(now) == model.due(now)
    finished = run.status in ("SUCCEEDED", "FAILED", "DEAD_LETTER", "CANCELLED")
    assert (run.finished_at is not None) == finished


# ---------------------------------------------------------------------------------------------
# The same rules through the real worker code, on both stores: two workers, leases that run
# out while the clock jumps, launches that fail while the initiator is inactive, manual retries


SERVICE_PROFILE = settings(
    derandomize=True,
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
service_steps = st.lists(
    st.one_of(
        st.tuples(st.just("step"), st.sampled_from([1, 29, 30, 61, 240, 600])),
        st.tuples(st.just("toggle"), st.sampled_from([False, False, True])),  # launches succeed?
        st.tuples(st.sampled_from(["claim", "launch"]), st.sampled_from(["w1", "w2"])),
        st.tuples(st.sampled_from(["claim", "launch"]), st.sampled_from(["w1", "w2"])),
        st.tuples(st.just("retry"), st.just(0)),
    ),
    min_size=10,
    max_size=30,
)


@pytest.fixture
def store_kind(store_url: str) -> str:
    return store_url.split(":", 1)[0]


@contextmanager
def fresh_world(kind: str) -> Iterator[World]:
    """A world on a store of its own: each example starts with one run and nothing else."""
    with TemporaryDirectory() as directory:
        urls = (
            iter([f"sqlite:///{directory}/runs.sqlite"])
            if kind == "sqlite"
            else fresh_postgres_url()
        )
        url = next(urls)
        services = open_services(Settings(database_url=url, max_attempts=2), FakeClock(T0))
        try:
            yield World(services, cast(FakeClock, services.ledger.clock))
        finally:
            services.close()
            next(urls, None)  # drops the PostgreSQL schema


@SERVICE_PROFILE
@given(steps=service_steps)
def test_random_worker_sequences_keep_the_run_rules(
    store_kind: str, steps: list[tuple[str, Any]]
) -> None:
    with fresh_world(store_kind) as world:
        run_id = world.run_now()
        workers = {name: TwoCommitWorker.of(world.services, name) for name in ("w1", "w2")}
        active = True
        for kind, value in steps:
            if kind == "step":
                world.clock.advance(value)
            elif kind == "toggle" and value != active:
                world.set_ann_active(value)
                active = value
            elif kind == "claim":
                workers[value].claim()
            elif kind == "launch":
                worker = workers[value]
                worker.launch(list(worker.held.values()))
            elif kind == "retry":
                status = world.run(run_id).status
                if status in ("FAILED", "DEAD_LETTER", "CANCELLED") and active:
                    world.services.runs.retry(world.root, UUID(world.schedule), run_id, None)
                else:  # not retryable, or refused while the launch could only fail again
                    with pytest.raises(DomainError):
                        world.services.runs.retry(world.root, UUID(world.schedule), run_id, None)
            check_stored(world, world.run(run_id))
        event(f"reached {world.run(run_id).status}")


def check_stored(world: World, run: Run) -> None:
    """The run's attempts against the rules, and the one instance a run may make."""
    attempts = run.attempts
    assert [a["number"] for a in attempts] == list(range(1, len(attempts) + 1))
    assert [a.get("finished_at") is None for a in attempts].count(True) == (
        1 if run.status == "RUNNING" else 0
    )
    assert run.attempts_in_round <= run.max_attempts == 2  # dead letter within reach
    if run.status == "DEAD_LETTER":
        assert run.attempts_in_round == run.max_attempts
    if run.status == "RETRY_WAIT" and attempts[-1]["outcome"] == "FAILED":
        wait = timedelta(seconds=30 * 2 ** (run.attempts_in_round - 1))  # 30 s, doubling
        assert run.next_attempt_at == attempts[-1]["finished_at"] + wait
    succeeded = [a for a in attempts if a["outcome"] == "SUCCEEDED"]
    instances = world.instances()
    assert len(succeeded) <= 1
    assert len(instances) <= 1
    if run.status == "SUCCEEDED":
        assert [str(i.id) for i in instances] == [run.instance_id] == [succeeded[0]["instance_id"]]
