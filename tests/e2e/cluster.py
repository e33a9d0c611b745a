"""A deployment in miniature (docs/deployment.md): `cronledger` processes of every kind on one
PostgreSQL schema, and the checks that, together, they did each piece of work once."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TypeVar

import pytest

from bench._seed import Seeded, seed_due_schedules
from cronledger.application.services import open_services
from cronledger.config import Settings
from cronledger.persistence.store import Store, as_instant
from tests.e2e.helpers import answers, request
from tests.processes import STOP_SECONDS, Child, free_port, run_cli, started
from tests.support import WAIT_SECONDS, wait_until

T = TypeVar("T")
# A loop process works one statement at a time: the small pools docs/deployment.md advises.
LOOP_POOLS = {"CRONLEDGER_POOL_SIZE": "1", "CRONLEDGER_POOL_OVERFLOW": "1"}
RACING_TICK_SECONDS = "0.2"
WORK_SECONDS = 90.0  # for a cluster to register and launch what the tests seed
SHOWN_LOG_CHARACTERS = 3000  # of each process's log, when a wait fails


def last_whole_minute() -> datetime:
    """A whole UTC minute at least a minute past: a cycle planned at it is due at once."""
    return datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=1)


def seeded_store(url: str, schedules: int, tenant: str) -> Seeded:
    """`schedules` daily schedules of a new tenant, each with one cycle due already."""
    services = open_services(Settings(database_url=url))
    try:
        return seed_due_schedules(services, schedules, last_whole_minute(), tenant=tenant)
    finally:
        services.close()


class Cluster:
    """The processes started on one store, ended when the block of `cluster` ends."""

    def __init__(self, url: str, stack: ExitStack) -> None:
        self.url = url
        self.store = Store.from_url(url)
        stack.callback(self.store.close)
        self.children: list[Child] = []
        self._stack = stack

    def start(self, *args: str, **env: str) -> Child:
        child = self._stack.enter_context(started(self.url, *args, **env))
        self.children.append(child)
        return child

    def start_web(self) -> str:
        """A `cronledger web` process; its base URL, once it answers."""
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        web = self.start("web", "--port", str(port))
        web.wait_for(lambda: answers(f"{base}/readyz"), "the web process answering")
        return base

    def start_loops(self, ticks: int, workers: int, projections: int) -> None:
        """The loop processes. The ticks start paused and are resumed once all are up, so that
        their first scans, 0.2 s apart at most, race for the same due cycles."""
        self.cli("tick", "pause", "--reason", "starting the ticks together")
        started_ticks = [
            self.start("tick", **LOOP_POOLS, CRONLEDGER_TICK_SECONDS=RACING_TICK_SECONDS)
            for _ in range(ticks)
        ]
        for tick in started_ticks:
            tick.wait_for(partial(tick.logged, "the tick is paused"), "the tick paused")
        for command, count in (("worker", workers), ("projections", projections)):
            for _ in range(count):
                self.start(command, **LOOP_POOLS)
        self.cli("tick", "resume", "--reason", "every tick is up")

    def cli(self, *args: str) -> None:
        done = run_cli(self.url, *args)
        assert done.returncode == 0, done.stderr

    def count(self, statement: str, params: tuple[Any, ...] = ()) -> int:
        return int(self.store.query(statement, params)[0][0])

    def wait_for(self, condition: Callable[[], T], what: str, timeout: float = WAIT_SECONDS) -> T:
        """`condition`'s first truthy value; fails if any process exits or time runs out."""

        def met_while_all_run() -> T:
            value = condition()
            if not value:
                self.fail_if_one_exited(what)
            return value

        return wait_until(met_while_all_run, what, timeout, interval=0.1, context=self.describe)

    def fail_if_one_exited(self, what: str) -> None:
        for child in self.children:
            if child.process.poll() is not None:
                child.end()
                pytest.fail(
                    f"{child.command} exited with {child.process.returncode} before {what}:\n"
                    f"{child.stderr[-SHOWN_LOG_CHARACTERS:]}"
                )

    def describe(self) -> str:
        return "\n".join(
            f"{child.command} logged:\n{child.stderr[-SHOWN_LOG_CHARACTERS:]}"
            for child in self.children
        )

    def stop(self) -> None:
        """One SIGTERM to every process at once, as an orchestrator sends it; each must exit
        cleanly within STOP_SECONDS."""
        for child in self.children:
            child.process.terminate()
        for child in self.children:
            try:
                code = child.process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                code = None
            child.end()  # the rest of what it wrote; ended if it still runs
            assert code == 0, f"exit status {code}; {child.describe()}"

    def errors_logged(self) -> list[str]:
        """Every line any process logged at ERROR or above, and any traceback outside the log."""
        return [
            f"{child.command}: {line.strip()}"
            for child in self.children
            for line in child.lines
            if _is_error(line)
        ]


def _is_error(line: str) -> bool:
    if line.startswith("{"):
        return json.loads(line).get("level") in ("ERROR", "CRITICAL")
    return line.startswith("Traceback")


@contextmanager
def cluster(url: str) -> Iterator[Cluster]:
    with ExitStack() as stack:
        yield Cluster(url, stack)


def each_cycle_registered_once(group: Cluster, seeded: Seeded) -> None:
    """One scheduled run per seeded schedule, at its one due instant; never two for a cycle."""
    rows = group.store.query(
        "SELECT schedule_id, planned_at FROM runs WHERE trigger = 'schedule' AND tenant_id = ?",
        (str(seeded.tenant_id),),
    )
    cycles = Counter((schedule_id, as_instant(planned_at)) for schedule_id, planned_at in rows)
    assert [cycle for cycle, runs in cycles.items() if runs > 1] == []
    assert sorted(cycles) == sorted((str(i), seeded.first_due_at) for i in seeded.schedule_ids)


def each_run_launched_once(group: Cluster) -> int:
    """Every run SUCCEEDED with an instance of its own, and every instance is one run's; the
    number of runs."""
    runs = group.store.query("SELECT id, status, instance_id FROM runs")
    assert {status for _, status, _ in runs} == {"SUCCEEDED"}
    instances = [instance_id for _, _, instance_id in runs]
    assert None not in instances
    assert len(set(instances)) == len(instances)
    launched = dict(group.store.query("SELECT id, run_id FROM approvals"))
    assert launched == {instance_id: run_id for run_id, _, instance_id in runs}
    return len(runs)


def read_models_equal_a_rebuild(url: str) -> None:
    """`cronledger audit replay`: the live tables against a rebuild from the whole log."""
    replay = run_cli(url, "audit", "replay", "--json")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert json.loads(replay.stdout) == {"differences": []}


def api(base: str, token: str, path: str, body: Any = None) -> Any:
    """An answer of the web process that must succeed (2xx): its JSON."""
    status, answer = request(f"{base}{path}", token, body)
    assert 200 <= status < 300, (path, status, answer)
    return answer
