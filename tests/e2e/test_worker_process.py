"""The worker as a process: killed with SIGKILL mid-batch, restarted: one instance per run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cronledger.application.cycles import Ticker
from cronledger.application.directory import DefinitionFields
from cronledger.application.launches import Worker
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.processes import killed_mid_work
from tests.support import DECIDERS, REVIEWER, FakeClock, wait_until

HOURLY = {"kind": "cron", "expression": "0 * * * *"}
SCHEDULES = 20


def test_sigkill_mid_batch_then_restart_launches_each_run_once(store_url: str) -> None:
    created_at = datetime.now(UTC) - timedelta(days=1)
    services = open_services(
        Settings(database_url=store_url, catchup_per_scan=10_000), FakeClock(created_at)
    )
    root = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    assert root is not None
    services.directory.create_account(root, REVIEWER, "Vera", ["operator"])
    definition = services.directory.create_definition(
        root,
        "d",
        DefinitionFields("D", False, 3600, [], reviewers=DECIDERS),
    )
    services.directory.set_published(root, definition.id, True, None)
    for n in range(SCHEDULES):
        body = {
            "name": f"s{n}",
            "definition_id": definition.id,
            "trigger": HOURLY,
            "timezone": "UTC",
            "initiator_id": "root",
            "overlap_policy": "allow",  # the catch-up's runs all launch
        }
        services.schedules.create(root, services.schedules.settings_from(body), True)
    services.ledger.clock = lambda: datetime.now(UTC)
    while Ticker.of(services).scan().registered:
        pass
    before = services.ledger.recorder.max_notification_id() or 0
    killed_mid_work(
        store_url,
        "worker",
        lambda: (services.ledger.recorder.max_notification_id() or 0) > before,
        "it claimed a first batch",
        CRONLEDGER_LEASE_SECONDS="1",
    )

    restarted = open_services(Settings(database_url=store_url, lease_seconds=1))
    worker = Worker.of(restarted)

    def all_launched() -> bool:
        """Each lease the killed worker held runs out; then its run is launched."""
        worker.drain()
        return not _unfinished(restarted)

    wait_until(all_launched, "every run launched after the restart", timeout=60, interval=0.2)
    runs = restarted.store.query("SELECT status, instance_id FROM runs")
    assert len(runs) >= SCHEDULES * 24
    assert {status for status, _ in runs} == {"SUCCEEDED"}
    instances = restarted.store.query("SELECT id FROM approvals")
    assert sorted(i for _, i in runs) == sorted(row[0] for row in instances)
    restarted.close()
    services.close()


def _unfinished(services: Services) -> int:
    services.projector.catch_up()
    rows = services.store.query("SELECT COUNT(*) FROM runs WHERE status <> 'SUCCEEDED'")
    return int(rows[0][0])
