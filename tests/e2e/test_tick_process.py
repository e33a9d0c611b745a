"""The tick as a process: killed with SIGKILL mid-batch, restarted, nothing lost or doubled."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

from cronledger.application.cycles import Ticker
from cronledger.application.directory import DefinitionFields
from cronledger.application.services import open_services
from cronledger.config import Settings
from cronledger.persistence.store import as_instant
from domain.triggers import fire_times, load_zone, parse_trigger
from tests.processes import killed_mid_work
from tests.support import DECIDERS, FakeClock

HOURLY = {"kind": "cron", "expression": "0 * * * *"}


def test_sigkill_mid_batch_then_restart_leaves_no_gap_and_no_duplicate(store_url: str) -> None:
    created_at = datetime.now(UTC) - timedelta(days=3)  # 3,600 hourly cycles to register
    services = open_services(Settings(database_url=store_url), FakeClock(created_at))
    root = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    assert root is not None
    definition = services.directory.create_definition(
        root, "d", DefinitionFields("D", False, 60, [], reviewers=DECIDERS)
    )
    services.directory.set_published(root, definition.id, True, None)
    ids = [
        services.schedules.create(
            root,
            services.schedules.settings_from(
                {
                    "name": f"s{n}",
                    "definition_id": definition.id,
                    "trigger": HOURLY,
                    "timezone": "UTC",
                    "initiator_id": "root",
                }
            ),
            True,
        ).id
        for n in range(50)
    ]
    before = services.ledger.recorder.max_notification_id() or 0
    killed_mid_work(
        store_url,
        "tick",
        lambda: (services.ledger.recorder.max_notification_id() or 0) > before,
        "it committed a first batch of cycles",
        CRONLEDGER_CATCHUP_PER_SCAN="100000",
        CRONLEDGER_CATCHUP_PER_SCHEDULE="1000",
    )

    services.projector.catch_up()
    killed_with = services.store.query("SELECT COUNT(*) FROM runs")[0][0]
    assert 0 < killed_with < 50 * 71, "the kill did not land in the middle of the work"
    restarted = open_services(
        Settings(database_url=store_url, catchup_per_scan=100000, catchup_per_schedule=1000)
    )
    while Ticker.of(restarted).scan().registered:
        pass
    restarted.projector.catch_up()
    for schedule_id in ids:
        rows = restarted.store.query(
            "SELECT planned_at FROM runs WHERE schedule_id = ? ORDER BY planned_at", (schedule_id,)
        )
        instants = [as_instant(row[0]) for row in rows]
        plan = restarted.schedules.schedule(root.tenant_id, schedule_id).next_fire_at
        assert plan is not None
        expected = []
        for instant in fire_times(parse_trigger(HOURLY), load_zone("UTC"), created_at):
            if instant >= plan:
                break
            expected.append(instant)
        assert instants == expected, UUID(schedule_id)
        assert len(expected) >= 71  # every hour of the three days
    restarted.close()
    services.close()
