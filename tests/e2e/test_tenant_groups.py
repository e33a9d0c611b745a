"""Two tenant groups (docs/deployment.md#past-one-log-tenant-groups): two schemas of one
PostgreSQL database, each with its own tick, worker, projections and web processes, working at
the same time. Each group launches its own cycles once; neither sees anything of the other."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest

from bench._seed import Seeded
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
from tests.e2e.helpers import request
from tests.support import fresh_postgres_url

pytestmark = pytest.mark.slow
SCHEDULES = 150  # per group, each with one cycle due when the processes start
TENANT_TABLES = ("schedules", "runs", "approvals", "accounts", "definitions")


@pytest.fixture
def two_schemas(postgres_ready: None) -> Iterator[tuple[str, str]]:
    with ExitStack() as stack:
        urls = [stack.enter_context(contextmanager(fresh_postgres_url)()) for _ in range(2)]
        yield urls[0], urls[1]


class Group:
    """One tenant group: its store, its seeded tenant, its processes and its web API."""

    def __init__(self, url: str, tenant: str, stack: ExitStack) -> None:
        self.url = url
        self.seeded: Seeded = seeded_store(url, SCHEDULES, tenant)
        self.cluster: Cluster = stack.enter_context(cluster(url))
        self.base = ""

    def start(self) -> None:
        self.base = self.cluster.start_web()
        self.cluster.start_loops(ticks=1, workers=1, projections=1)

    def launched(self) -> bool:
        succeeded = "SELECT COUNT(*) FROM runs WHERE status = 'SUCCEEDED'"
        return self.cluster.count(succeeded) == SCHEDULES

    def tenants_in_tables(self) -> set[str]:
        return {
            str(row[0])
            for table in TENANT_TABLES
            for row in self.cluster.store.query(f"SELECT DISTINCT tenant_id FROM {table}")
        }


def test_two_groups_each_launch_their_own_cycles_and_see_nothing_of_the_other(
    two_schemas: tuple[str, str],
) -> None:
    with ExitStack() as stack:
        alpha = Group(two_schemas[0], "alpha", stack)
        beta = Group(two_schemas[1], "beta", stack)
        alpha.start()
        beta.start()
        what = "every cycle of both groups launched"

        def both_launched() -> bool:
            beta.cluster.fail_if_one_exited(what)  # alpha's wait checks its own processes
            return alpha.launched() and beta.launched()

        alpha.cluster.wait_for(both_launched, what, WORK_SECONDS)
        _each_sees_only_its_own(alpha, beta)
        _each_sees_only_its_own(beta, alpha)
        for group in (alpha, beta):
            group.cluster.stop()
            each_cycle_registered_once(group.cluster, group.seeded)
            assert each_run_launched_once(group.cluster) == SCHEDULES
            assert group.tenants_in_tables() == {str(group.seeded.tenant_id)}
            read_models_equal_a_rebuild(group.url)
            assert group.cluster.errors_logged() == []


def _each_sees_only_its_own(group: Group, other: Group) -> None:
    """The group's API lists its own schedules; the other group's token and ids are unknown."""
    token = group.seeded.token
    listed = api(group.base, token, "/api/workflows/schedules?page_size=200")["items"]
    assert {item["id"] for item in listed} == {str(i) for i in group.seeded.schedule_ids}
    assert request(f"{group.base}/api/workflows/schedules", other.seeded.token)[0] == 401
    theirs = other.seeded.schedule_ids[0]
    assert request(f"{group.base}/api/workflows/schedules/{theirs}", token)[0] == 404
