"""The layout of docs/deployment.md on one PostgreSQL schema: two `cronledger tick`, two
`cronledger worker`, one `cronledger projections` and one `cronledger web`, as separate processes,
with cycles due when they start and requests arriving while they work.

Together they register each cycle once, launch each run once, leave read models equal to a
rebuild from the log, and log nothing at ERROR.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.cluster import (
    WORK_SECONDS,
    Cluster,
    api,
    cluster,
    each_cycle_registered_once,
    each_run_launched_once,
    read_models_equal_a_rebuild,
    seeded_store,
)
from tests.support import fresh_postgres_url

pytestmark = pytest.mark.slow
SCHEDULES = 300  # each with one cycle due when the processes start
RUNS_NOW = 5  # manual runs asked of the web process while the loops work
APPROVED = 5  # launched instances approved over HTTP while the loops work


@pytest.fixture
def postgres_url(postgres_ready: None) -> Iterator[str]:
    """A schema of its own (PostgreSQL only: a SQLite file serves one machine)."""
    yield from fresh_postgres_url()


class Traffic:
    """What a user does meanwhile: lists, manual runs of a schedule, approvals by an operator."""

    def __init__(self, base: str, token: str, definition_id: str) -> None:
        self.base, self.token = base, token
        api(base, token, "/api/accounts", {"id": "otto", "name": "Otto", "roles": ["operator"]})
        self.operator = api(base, token, "/api/accounts/otto/tokens", {})["token"]
        manual = {
            "name": "on demand",
            "definition_id": definition_id,
            "trigger": {"kind": "cron", "expression": "0 0 1 1 *"},
            "timezone": "UTC",
            "initiator_id": "root",
            "enabled": False,
            "overlap_policy": "allow",  # every manual run launches
        }
        self.schedule = api(base, token, "/api/workflows/schedules", manual)["id"]
        self.manual_runs: dict[str, str] = {}  # request id: run id
        self.approved: set[str] = set()

    def one_round(self) -> None:
        """A few lists, one manual run (or its repeat), one approval."""
        for path in ("/api/workflows/runs", "/api/workflows/schedules", "/api/approvals"):
            api(self.base, self.token, path)
        self._run_now()
        self._approve_one()

    def _run_now(self) -> None:
        number = len(self.manual_runs)
        if number == RUNS_NOW:
            return
        request_id = f"r{number}"
        path = f"/api/workflows/schedules/{self.schedule}/run"
        run = api(self.base, self.token, path, {"request_id": request_id})
        again = api(self.base, self.token, path, {"request_id": request_id})
        assert again["id"] == run["id"]  # a repeated request answers the same run
        self.manual_runs[request_id] = run["id"]

    def _approve_one(self) -> None:
        if len(self.approved) == APPROVED:
            return
        waiting = api(self.base, self.operator, "/api/approvals?state=WAITING_REVIEW&page_size=1")
        for instance in waiting["items"]:
            path = f"/api/approvals/{instance['id']}/approve"
            body = {"command_id": "approve", "material_version": 1}
            decided = api(self.base, self.operator, path, body)
            assert decided["outcome"] == "APPROVED"
            self.approved.add(instance["id"])

    def all_done(self) -> bool:
        return len(self.manual_runs) == RUNS_NOW and len(self.approved) == APPROVED


def succeeded(group: Cluster) -> int:
    return group.count("SELECT COUNT(*) FROM runs WHERE status = 'SUCCEEDED'")


def test_two_ticks_two_workers_projections_and_web_do_each_cycle_once(postgres_url: str) -> None:
    seeded = seeded_store(postgres_url, SCHEDULES, "acme")
    with cluster(postgres_url) as group:
        base = group.start_web()
        traffic = Traffic(base, seeded.token, seeded.definition_id)
        group.start_loops(ticks=2, workers=2, projections=1)

        def everything_launched() -> bool:
            traffic.one_round()
            return traffic.all_done() and succeeded(group) == SCHEDULES + RUNS_NOW

        group.wait_for(everything_launched, "every cycle and manual run launched", WORK_SECONDS)
        for instance_id in traffic.approved:
            assert api(base, seeded.token, f"/api/approvals/{instance_id}")["state"] == "APPROVED"
        group.stop()

        each_cycle_registered_once(group, seeded)
        assert each_run_launched_once(group) == SCHEDULES + RUNS_NOW
        manual = group.store.query("SELECT id FROM runs WHERE trigger = 'manual'")
        assert sorted(row[0] for row in manual) == sorted(traffic.manual_runs.values())
        read_models_equal_a_rebuild(postgres_url)
        assert group.errors_logged() == []
