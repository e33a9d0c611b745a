"""A release 0.1.0 store read today: definitions, schedules and runs count as revision 1, and
old instances' origins carry the fire metadata completed from what they stored."""

from __future__ import annotations

from uuid import UUID

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services
from domain.approvals import ApprovalInstance
from domain.directory import Definition
from domain.runs import Run
from domain.schedules import Schedule
from tests.release_stores import facts
from tests.support import FakeClock

FACTS = facts("release-0.1.0-working")


def test_old_instances_carry_fire_metadata(upgraded: Services) -> None:
    submitted = [
        n.originator_id
        for n in upgraded.ledger.recorder.select_notifications(start=1, limit=FACTS["log_end"])
        if n.topic.endswith("ApprovalInstance.Submitted")
    ]
    instances = upgraded.ledger.get_many(submitted).values()
    origins = [i.origin for i in instances if isinstance(i, ApprovalInstance) and i.origin]
    assert len(origins) > 10
    for origin in origins:
        assert origin["fire_id"] == origin["run_id"]
        assert origin["source"] == "schedule"  # the store's launches were all scheduled
        assert origin["trigger_kind"] == origin["trigger"]["kind"] == "cron"
        assert "definition_revision" not in origin  # not known then: not made up


def test_old_schedules_launch_their_definitions_first_revision(upgraded: Services) -> None:
    schedule_ids = [UUID(i) for i in FACTS["schedules"].values()]
    schedules = upgraded.ledger.get_many(schedule_ids)  # one of them from its snapshot
    definitions = []
    for schedule in schedules.values():
        assert isinstance(schedule, Schedule)
        assert schedule.definition_revision == 1
        definition_id = UUID(schedule.settings.definition_id)
        definition = upgraded.ledger.find(Definition, definition_id, "definition", "")
        assert (definition.revision, definition.terms_of(1)) == (1, definition.terms)
        definitions.append(definition)
    clock = upgraded.ledger.clock
    assert isinstance(clock, FakeClock)
    clock.advance(60)
    assert Ticker.of(upgraded).scan().registered == 2
    assert Worker.of(upgraded).poll().succeeded == 2
    end = upgraded.ledger.recorder.max_notification_id() or 0
    launched = [
        upgraded.ledger.find(ApprovalInstance, n.originator_id, "approval", "")
        for n in upgraded.ledger.recorder.select_notifications(start=FACTS["log_end"], limit=end)
        if n.topic.endswith("ApprovalInstance.Submitted")
    ]
    assert [i.origin["definition_revision"] for i in launched if i.origin] == [1, 1]
    old_run = next(
        n.originator_id
        for n in upgraded.ledger.recorder.select_notifications(start=1, limit=end)
        if n.topic.endswith("Run.Registered")
    )
    assert upgraded.ledger.find(Run, old_run, "run", "").definition_revision == 1
