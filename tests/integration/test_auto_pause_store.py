"""Auto-pause on a store release 0.1.0 wrote in use: its schedule, read from a snapshot of that
release, has counted no failed cycle; three in a row pause it, the read model and the API say
so, and the audit's replay of the log agrees with the read models."""

from __future__ import annotations

from uuid import UUID

from cronledger.application.services import Services
from domain.schedules import Schedule
from tests.release_stores import facts
from tests.support import Api
from web import create_app

FACTS = facts("release-0.1.0-working")


def test_a_schedule_an_earlier_release_saved_pauses_after_three_failed_cycles(
    upgraded: Services,
) -> None:
    client = create_app({"SERVICES": upgraded, "TESTING": True}).test_client()
    acme = Api(client, FACTS["tokens"]["acme"])
    path = f"/api/workflows/schedules/{FACTS['schedules']['acme']}"
    before = acme.get(path).json
    assert (before["enabled"], before["auto_paused"]) == (True, None)
    dead = [run["id"] for run in acme.get(f"{path}/runs?status=DEAD_LETTER").json["items"]]
    assert len(dead) >= 3
    schedule = upgraded.ledger.repository.get(UUID(before["id"]))
    assert isinstance(schedule, Schedule)
    assert (schedule.failed_cycles, schedule.auto_paused) == ([], None)

    for run_id in dead[:3]:
        schedule.cycle_failed(run_id, "INITIATOR_INACTIVE", upgraded.ledger.clock())
    upgraded.ledger.save(schedule)
    upgraded.projector.catch_up()

    after = acme.get(path).json
    assert (after["enabled"], after["next_fire_at"], after["version"]) == (
        False,
        None,
        before["version"] + 1,
    )
    assert [failed["run_id"] for failed in after["auto_paused"]["runs"]] == dead[:3]
    assert upgraded.audit.replay(lambda _: None) == []
