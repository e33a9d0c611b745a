"""Reminders and escalation on real stores: the sweeper records each once, at its instant or
on its first pass after downtime, found from the `approvals` read model; nothing moves the
deadline; a store of release 0.1.0 carries on with none."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

import pytest

from cronledger.application.directory import DefinitionFields
from cronledger.application.groups import GroupFields
from cronledger.application.services import Services
from domain.approvals import APPROVE, Command, Submission
from domain.directory import Principal
from domain.permissions import ROLES
from projections.approvals import ApprovalFilter, ApprovalRow, instances_owing_notices
from projections.keyset import Window
from tests.release_stores import facts
from tests.support import DECIDERS, T0, FakeClock

DAY = 86400
WINDOW = 3 * DAY
DEADLINE = T0 + timedelta(seconds=WINDOW)
ESCALATED = T0 + timedelta(seconds=DAY + 7200)  # 2 October, 11:00
REMINDED = DEADLINE - timedelta(days=1)  # 3 October, 09:00
LAST_HOUR = DEADLINE - timedelta(hours=1)
NOTICES = ("ApprovalInstance.ReminderDue", "ApprovalInstance.Escalated")


@pytest.fixture
def root(services: Services) -> Principal:
    principal = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    assert principal is not None
    services.directory.create_account(principal, "boss", "Boss", ["operator"])
    return principal


@pytest.fixture
def definition_id(services: Services, root: Principal) -> str:
    fields = DefinitionFields(
        "Contract",
        False,
        WINDOW,
        [],
        reminders=[{"before_seconds": DAY}, {"before_seconds": 3600}],
        reviewers=DECIDERS,
        escalation={"after_seconds": DAY + 7200, "account_id": "boss"},
    )
    created = services.directory.create_definition(root, "contract", fields)
    services.directory.set_published(root, created.id, True, None)
    return created.id


def submit(services: Services, root: Principal, definition_id: str, key: str = "s-1") -> str:
    view, _ = services.approvals.submit(
        root, Submission(key, definition_id, f"Contract {key}", {}, 1, None)
    )
    return view.id


def notices(services: Services, root: Principal, instance_id: str) -> list[tuple[Any, ...]]:
    """The instance's reminders and escalations on its timeline: type, due, recorded, by."""
    return [
        (entry.type.split(".")[1], entry.data["due_at"], entry.at, entry.actor)
        for entry in services.approvals.timeline(root.tenant_id, instance_id)
        if entry.type in NOTICES
    ]


def at(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def sweep_at(services: Services, clock: FakeClock, moment: datetime) -> None:
    clock.now = moment
    services.approvals.sweep()


def test_each_fires_once_at_its_instant(
    services: Services, clock: FakeClock, root: Principal, definition_id: str
) -> None:
    instance_id = submit(services, root, definition_id)
    sweep_at(services, clock, ESCALATED - timedelta(microseconds=1))
    assert notices(services, root, instance_id) == []
    sweep_at(services, clock, ESCALATED)
    sweep_at(services, clock, ESCALATED + timedelta(seconds=1))
    assert notices(services, root, instance_id) == [
        ("Escalated", at(ESCALATED), ESCALATED, "system:sweeper")
    ]
    for moment in (REMINDED, REMINDED, LAST_HOUR, LAST_HOUR + timedelta(minutes=30)):
        sweep_at(services, clock, moment)
    assert notices(services, root, instance_id)[1:] == [
        ("ReminderDue", at(REMINDED), REMINDED, "system:sweeper"),
        ("ReminderDue", at(LAST_HOUR), LAST_HOUR, "system:sweeper"),
    ]
    view = services.approvals.view(root.tenant_id, instance_id)
    assert (view.state, view.review_deadline_at, view.version) == ("WAITING_REVIEW", DEADLINE, 4)
    assert view.deadline_policy["source"] == "definition"


def test_a_sweeper_stopped_across_the_instants_records_each_once_when_back(
    services: Services, clock: FakeClock, root: Principal, definition_id: str
) -> None:
    instance_id = submit(services, root, definition_id)
    back = LAST_HOUR + timedelta(minutes=20)  # nothing swept since the submission
    sweep_at(services, clock, back)
    assert notices(services, root, instance_id) == [
        ("Escalated", at(ESCALATED), back, "system:sweeper"),
        ("ReminderDue", at(REMINDED), back, "system:sweeper"),
        ("ReminderDue", at(LAST_HOUR), back, "system:sweeper"),
    ]
    sweep_at(services, clock, back + timedelta(minutes=5))
    assert len(notices(services, root, instance_id)) == 3
    (row,) = services.approvals.list_page(root.tenant_id, ApprovalFilter(), Window(10)).items
    assert row.reminders_sent == [
        {"before_seconds": DAY, "due_at": at(REMINDED), "at": at(back)},
        {"before_seconds": 3600, "due_at": at(LAST_HOUR), "at": at(back)},
    ]
    assert (row.escalated_account_id, row.escalated_at, row.next_notice_at) == ("boss", back, None)
    assert (row.state, row.review_deadline_at) == ("WAITING_REVIEW", DEADLINE)
    instance = services.approvals.instance(root.tenant_id, instance_id)
    assert row == ApprovalRow.of_aggregate(instance)  # the list, as the log


def test_the_list_tells_what_is_owed_next(
    services: Services, clock: FakeClock, root: Principal, definition_id: str
) -> None:
    submit(services, root, definition_id)
    (row,) = services.approvals.list_page(root.tenant_id, ApprovalFilter(), Window(10)).items
    assert (row.reminders, row.escalation, row.next_notice_at) == (
        [{"before_seconds": DAY}, {"before_seconds": 3600}],
        {
            "after_seconds": DAY + 7200,
            "account_id": "boss",
            "group_leader_of": None,
            "mode": "reassign",
        },
        ESCALATED,
    )
    assert instances_owing_notices(services.store, ESCALATED - timedelta(seconds=1), 10) == []
    sweep_at(services, clock, ESCALATED)
    (row,) = services.approvals.list_page(root.tenant_id, ApprovalFilter(), Window(10)).items
    assert (row.escalated_account_id, row.next_notice_at) == ("boss", REMINDED)


def test_a_decided_or_expired_instance_gets_none(
    services: Services, clock: FakeClock, root: Principal, definition_id: str
) -> None:
    approved = submit(services, root, definition_id, "approved")
    expired = submit(services, root, definition_id, "expired")
    services.directory.create_account(root, "rev", "Reviewer", ["operator"])
    reviewer = Principal(root.tenant_id, "rev", ROLES["operator"])
    services.approvals.command(reviewer, approved, Command(APPROVE, "a-1", {"material_version": 1}))
    sweep_at(services, clock, DEADLINE + timedelta(hours=1))  # the sweeper slept through it all
    assert notices(services, root, approved) == notices(services, root, expired) == []
    assert services.approvals.view(root.tenant_id, expired).state == "EXPIRED"
    owing = "SELECT COUNT(*) FROM approvals WHERE next_notice_at IS NOT NULL"
    assert services.store.query(owing) == [(0,)]


def test_an_extension_moves_the_reminders_still_owed(
    services: Services, clock: FakeClock, root: Principal, definition_id: str
) -> None:
    instance_id = submit(services, root, definition_id)
    sweep_at(services, clock, REMINDED)
    later = DEADLINE + timedelta(days=1)
    extend = {"new_deadline_at": later, "reason": "customer asked"}
    services.directory.create_account(root, "rev", "Reviewer", ["operator"])
    reviewer = Principal(root.tenant_id, "rev", ROLES["operator"])
    services.approvals.command(reviewer, instance_id, Command("extend-deadline", "e-1", extend))
    sweep_at(services, clock, LAST_HOUR)
    assert [n[0] for n in notices(services, root, instance_id)] == ["Escalated", "ReminderDue"]
    sweep_at(services, clock, later - timedelta(hours=1))
    assert notices(services, root, instance_id)[-1][1] == at(later - timedelta(hours=1))
    assert services.approvals.view(root.tenant_id, instance_id).review_deadline_at == later


def test_sweepers_at_once_record_each_once(
    services: Services, clock: FakeClock, root: Principal, definition_id: str
) -> None:
    ids = [submit(services, root, definition_id, f"s-{n}") for n in range(12)]
    clock.now = LAST_HOUR
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: services.approvals.sweep(), range(4)))
    for instance_id in ids:
        assert len(notices(services, root, instance_id)) == 3, instance_id


def test_a_definition_change_leaves_waiting_instances_as_they_were(
    services: Services, clock: FakeClock, root: Principal, definition_id: str
) -> None:
    instance_id = submit(services, root, definition_id)
    version = services.directory.definition(root.tenant_id, definition_id).version
    fields = DefinitionFields("Contract", False, WINDOW, [], reminders=[], escalation=None)
    services.directory.update_definition(root, definition_id, fields, version)
    later = submit(services, root, definition_id, "s-2")
    sweep_at(services, clock, LAST_HOUR)
    assert len(notices(services, root, instance_id)) == 3
    assert notices(services, root, later) == []


def test_the_read_model_rebuilt_from_the_log_is_the_live_one(
    services: Services, clock: FakeClock, root: Principal, definition_id: str
) -> None:
    for key in ("s-1", "s-2"):
        submit(services, root, definition_id, key)
    sweep_at(services, clock, REMINDED)
    assert services.audit.replay(lambda _: None) == []


def test_a_store_of_release_0_1_0_carries_on_with_none(upgraded: Services) -> None:
    """Its instances owe no reminder; its definitions take them as they are updated."""
    old = facts("release-0.1.0-working")
    assert upgraded.store.query(
        "SELECT COUNT(*) FROM approvals WHERE reminders <> '[]' OR escalation IS NOT NULL "
        "OR next_notice_at IS NOT NULL"
    ) == [(0,)]
    clock = upgraded.ledger.clock
    assert isinstance(clock, FakeClock)
    clock.advance(3600)
    upgraded.approvals.sweep()
    end = upgraded.ledger.recorder.max_notification_id() or 0
    topics = {n.topic for n in upgraded.ledger.recorder.select_notifications(start=1, limit=end)}
    assert not {t for t in topics if t.endswith(("ReminderDue", "Escalated"))}
    principal = upgraded.directory.authenticate(old["tokens"]["acme"])
    assert principal is not None
    definition = upgraded.directory.definitions(principal.tenant_id, Window(10)).items[0]
    assert (definition.reminders, definition.escalation) == ([], None)
    fields = DefinitionFields(
        definition.name,
        definition.external,
        definition.review_window_seconds,
        definition.schedule_presets,
        reminders=[{"before_seconds": 60}],
    )
    updated = upgraded.directory.update_definition(
        principal, definition.id, fields, definition.version
    )
    assert updated.reminders == [{"before_seconds": 60}]
    instance_id = next(iter(old["instances"].values()))
    view = upgraded.approvals.view(principal.tenant_id, instance_id)
    assert (view.reminders, view.escalation, view.reminders_sent) == ([], None, [])


def escalating_to(
    services: Services, root: Principal, to: dict[str, str], mode: str = "reassign"
) -> str:
    """An instance of root's, whose task goes after an hour to the target `to` names (an
    account, or a group's leader)."""
    fields = DefinitionFields(
        "Escalating",
        False,
        WINDOW,
        [],
        escalation={"after_seconds": 3600, **to, "mode": mode},
        reviewers=DECIDERS,
    )
    (target,) = to.values()
    created = services.directory.create_definition(root, f"to-{target}-{mode}", fields)
    services.directory.set_published(root, created.id, True, None)
    return submit(services, root, created.id, f"e-{target}-{mode}")


@pytest.mark.parametrize(
    ("target", "mode", "assignee"),
    [("boss", "reassign", "boss"), ("boss", "notify", None), ("root", "reassign", None)],
    ids=["reassigned", "notified", "the-applicant-is-skipped"],
)
def test_an_escalation_takes_the_task_to_its_target_with_a_high_priority_exactly_once(
    services: Services,
    clock: FakeClock,
    root: Principal,
    target: str,
    mode: str,
    assignee: str | None,
) -> None:
    instance_id = escalating_to(services, root, {"account_id": target}, mode)
    sweep_at(services, clock, T0 + timedelta(hours=5))  # long after it was due: once
    sweep_at(services, clock, T0 + timedelta(hours=6))
    task = services.approvals.instance(root.tenant_id, instance_id).task()
    assert (task.priority, task.assignee_id) == ("high", assignee)
    (escalated,) = [
        e
        for e in services.approvals.timeline(root.tenant_id, instance_id)
        if e.type == "ApprovalInstance.Escalated"
    ]
    expected_code = "ESCALATION_TARGET_INELIGIBLE" if target == "root" else None
    assert (escalated.data["to_assignee"], escalated.reason_code) == (
        assignee,
        expected_code,
    )
    services.projector.catch_up()
    (row,) = services.store.query(
        "SELECT priority, assignee_id FROM tasks WHERE instance_id = ?", (instance_id,)
    )
    assert tuple(row) == ("high", assignee)


def test_an_escalation_to_a_group_s_leader_passes_up_to_the_next_leader_who_may_approve(
    services: Services, clock: FakeClock, root: Principal
) -> None:
    groups = services.groups
    groups.create(root, "company", GroupFields("公司", ["boss"], "boss", None))
    groups.create(root, "ops", GroupFields("运营部", ["root"], "root", "company"))
    instance_id = escalating_to(services, root, {"group_leader_of": "ops"})
    sweep_at(services, clock, T0 + timedelta(hours=2))
    task = services.approvals.instance(root.tenant_id, instance_id).task()
    assert (task.priority, task.assignee_id) == ("high", "boss")  # root applied: passed up
    services.projector.catch_up()
    told = services.store.query(
        "SELECT account_id, kind FROM notifications WHERE instance_id = ?", (instance_id,)
    )
    assert ("boss", "TASK_ESCALATED_TO") in [tuple(row) for row in told]
