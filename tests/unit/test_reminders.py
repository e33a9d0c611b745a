"""Reminders and escalation (requirement 004): the definition's rules, the instance's events,
each recorded once, at the instant it was due, never moving the deadline; older events and
snapshots read as having none."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest
from eventsourcing.domain import Snapshot

from domain.approvals import APPROVE, ApprovalInstance, Command, Submission
from domain.directory import Definition, check_notices
from domain.errors import InvalidState, ValidationFailed
from domain.schedules import Schedule
from tests.support import stored_at_version
from tests.unit.helpers import POLICY, SETTINGS

SUBMITTED = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
DAY = 86400
WINDOW = 3 * DAY  # the deadline: 4 October, 09:00
DEADLINE = SUBMITTED + timedelta(seconds=WINDOW)
REMINDERS = [{"before_seconds": DAY}, {"before_seconds": 3600}]
ESCALATION = {"after_seconds": DAY + 7200, "account_id": "boss"}  # 2 October, 11:00
SWEEPER = "system:sweeper"


def definition(reminders: Any = REMINDERS, escalation: Any = ESCALATION) -> Definition:
    made = Definition(
        tenant_id=uuid4(),
        key="contract",
        name="Contract",
        external=False,
        review_window_seconds=WINDOW,
        schedule_presets=[],
        allow_self_approval=False,
        at=SUBMITTED,
        actor="root",
        reminders=reminders,
        escalation=escalation,
    )
    made.publish(at=SUBMITTED, actor="root")
    return made


def instance(deadline: datetime | None = None, **terms: Any) -> ApprovalInstance:
    submission = Submission("s-1", "d", "Contract C-9", {}, 1, deadline)
    made = ApprovalInstance.submit(uuid4(), "ann", submission, definition(**terms), None, SUBMITTED)
    made.collect_events()
    return made


def notices(subject: ApprovalInstance) -> list[tuple[str, dict[str, Any]]]:
    """The reminders and escalations recorded since the last look: type, and what they say."""
    return [
        (type(e).__name__, {k: v for k, v in e.__dict__.items() if k in SAID})
        for e in subject.collect_events()
        if type(e).__name__ in {"ReminderDue", "Escalated"}
    ]


SAID = {"before_seconds", "due_at", "at", "account_id", "after_seconds", "actor"}


def test_each_fires_once_at_its_instant() -> None:
    subject = instance()
    escalation_due = SUBMITTED + timedelta(seconds=DAY + 7200)
    reminder_due = DEADLINE - timedelta(days=1)
    subject.record_due_notices(escalation_due - timedelta(microseconds=1), SWEEPER)
    assert notices(subject) == []
    subject.record_due_notices(escalation_due, SWEEPER)
    assert notices(subject) == [
        (
            "Escalated",
            {
                "account_id": "boss",
                "after_seconds": DAY + 7200,
                "due_at": escalation_due,
                "at": escalation_due,
                "actor": SWEEPER,
            },
        )
    ]
    subject.record_due_notices(reminder_due, SWEEPER)
    subject.record_due_notices(reminder_due, SWEEPER)
    assert notices(subject) == [
        (
            "ReminderDue",
            {"before_seconds": DAY, "due_at": reminder_due, "at": reminder_due, "actor": SWEEPER},
        )
    ]
    assert subject.next_notice_at == DEADLINE - timedelta(hours=1)
    assert (subject.state, subject.review_deadline_at) == ("WAITING_REVIEW", DEADLINE)


def test_after_downtime_one_pass_records_each_with_the_instant_it_was_due() -> None:
    subject = instance()
    late = DEADLINE - timedelta(minutes=10)  # every notice was due while nobody swept
    subject.record_due_notices(late, SWEEPER)
    recorded = notices(subject)
    assert [(kind, said["due_at"], said["at"]) for kind, said in recorded] == [
        ("Escalated", SUBMITTED + timedelta(seconds=DAY + 7200), late),
        ("ReminderDue", DEADLINE - timedelta(days=1), late),
        ("ReminderDue", DEADLINE - timedelta(hours=1), late),
    ]
    subject.record_due_notices(late + timedelta(minutes=5), SWEEPER)
    assert notices(subject) == []
    assert subject.next_notice_at is None
    assert (subject.state, subject.review_deadline_at) == ("WAITING_REVIEW", DEADLINE)
    assert [r["before_seconds"] for r in subject.reminders_sent] == [DAY, 3600]
    assert subject.escalated is not None
    assert subject.escalated["account_id"] == "boss"


def test_the_aggregate_refuses_a_second_one() -> None:
    subject = instance()
    subject.remind(DAY, DEADLINE - timedelta(hours=2), SWEEPER)
    with pytest.raises(InvalidState, match="already recorded"):
        subject.remind(DAY, DEADLINE - timedelta(hours=2), SWEEPER)
    subject.escalate(DEADLINE - timedelta(hours=2), SWEEPER)
    with pytest.raises(InvalidState, match="already escalated at"):
        subject.escalate(DEADLINE - timedelta(hours=2), SWEEPER)
    with pytest.raises(InvalidState, match="not due until"):
        subject.remind(3600, DEADLINE - timedelta(hours=2), SWEEPER)
    with pytest.raises(InvalidState, match="no reminder 60 s"):
        subject.remind(60, DEADLINE - timedelta(minutes=1), SWEEPER)


def test_a_decided_instance_gets_none() -> None:
    subject = instance()
    subject.handle(Command(APPROVE, "a-1", {"material_version": 1}), SUBMITTED, "olga")
    subject.collect_events()
    subject.record_due_notices(DEADLINE - timedelta(minutes=1), SWEEPER)
    assert notices(subject) == []
    assert subject.next_notice_at is None
    with pytest.raises(InvalidState, match="APPROVED, no longer waiting"):
        subject.remind(DAY, DEADLINE - timedelta(minutes=1), SWEEPER)


def test_none_once_the_deadline_has_come() -> None:
    subject = instance()
    subject.record_due_notices(DEADLINE, SWEEPER)  # the expiry is due, not the reminders
    assert notices(subject) == []
    with pytest.raises(InvalidState, match="has passed"):
        subject.escalate(DEADLINE, SWEEPER)


def test_an_extension_moves_the_reminders_still_owed() -> None:
    subject = instance()
    subject.record_due_notices(DEADLINE - timedelta(days=1), SWEEPER)
    assert len(notices(subject)) == 2  # the escalation, and the reminder a day before
    later = DEADLINE + timedelta(days=2)
    extend = {"new_deadline_at": later, "reason": "customer asked"}
    subject.handle(Command("extend-deadline", "e-1", extend), DEADLINE - timedelta(hours=5), "olga")
    subject.collect_events()
    assert subject.next_notice_at == later - timedelta(hours=1)
    subject.record_due_notices(DEADLINE - timedelta(minutes=30), SWEEPER)
    assert notices(subject) == []  # an hour before the old deadline is no longer due


def test_an_escalation_due_after_the_deadline_never_comes() -> None:
    subject = instance(reminders=[], escalation={"after_seconds": WINDOW, "account_id": "boss"})
    assert subject.next_notice_at is None
    subject.record_due_notices(DEADLINE - timedelta(seconds=1), SWEEPER)
    assert notices(subject) == []


def test_a_reminder_of_a_closer_deadline_is_due_at_submission() -> None:
    subject = instance(deadline=SUBMITTED + timedelta(hours=12))  # the escalation never comes
    assert subject.next_notice_at == SUBMITTED
    subject.record_due_notices(SUBMITTED + timedelta(seconds=1), SWEEPER)
    assert [(kind, said["due_at"]) for kind, said in notices(subject)] == [
        ("ReminderDue", SUBMITTED)
    ]
    assert subject.next_notice_at == SUBMITTED + timedelta(hours=11)


def test_a_definition_change_leaves_waiting_instances_as_they_were() -> None:
    terms = definition()
    subject = ApprovalInstance.submit(
        uuid4(), "ann", Submission("s-1", "d", "C", {}, 1, None), terms, None, SUBMITTED
    )
    terms.update("Contract", False, WINDOW, [], False, SUBMITTED, "root", [], None)
    assert (subject.reminders, subject.escalation) == (REMINDERS, ESCALATION)
    assert (terms.terms_of(1).reminders, terms.terms_of(2).reminders) == (REMINDERS, [])


def test_a_launch_takes_those_of_the_revision_its_run_was_frozen_at() -> None:
    made = definition()  # revision 1, with reminders and an escalation
    schedule = Schedule.create(uuid4(), SETTINGS, True, SUBMITTED, "ops", 1)
    made.update("Contract", False, WINDOW, [], False, SUBMITTED, "root")  # revision 2: none
    run = schedule.manual_run("r1", SUBMITTED, "ops", POLICY)
    launched = run.approval(made, SUBMITTED)
    assert (launched.reminders, launched.escalation) == (REMINDERS, ESCALATION)
    assert launched.next_notice_at == SUBMITTED + timedelta(seconds=DAY + 7200)


@pytest.mark.parametrize(
    ("reminders", "escalation", "errors"),
    [
        (
            [{"before_seconds": s} for s in range(1, 7)],
            None,
            {"reminders": ["at most 5 reminders"]},
        ),
        (
            [{"before_seconds": 0}, {"before_seconds": WINDOW}],
            None,
            {
                f"reminders.{i}.before_seconds": [
                    f"must be more than 0 and less than the review window ({WINDOW} s)"
                ]
                for i in (0, 1)
            },
        ),
        (
            [{"before_seconds": DAY}, {"before_seconds": DAY}],
            None,
            {
                "reminders.1.before_seconds": [
                    f"another reminder is already {DAY} s before the deadline"
                ]
            },
        ),
        (
            [],
            {"after_seconds": 0, "account_id": "boss"},
            {"escalation.after_seconds": ["must be more than 0"]},
        ),
    ],
)
def test_the_definitions_rules(
    reminders: list[dict[str, int]], escalation: dict[str, Any] | None, errors: dict[str, Any]
) -> None:
    with pytest.raises(ValidationFailed) as refused:
        check_notices(reminders, escalation, WINDOW)
    assert refused.value.errors == errors
    with pytest.raises(ValidationFailed):
        definition().update("C", False, WINDOW, [], False, SUBMITTED, "root", reminders, escalation)


# -- what earlier releases stored -----------------------------------------------------------


NEW_ON_INSTANCES = ("reminders", "escalation")


def test_an_older_submission_reads_as_having_none() -> None:
    submission = Submission("s-1", "d", "C", {}, 1, None)
    made = ApprovalInstance.submit(uuid4(), "ann", submission, definition(), None, SUBMITTED)
    (submitted,) = made.collect_events()
    older = stored_at_version(submitted, 4, *NEW_ON_INSTANCES)
    assert (older.reminders, older.escalation) == ([], None)
    rebuilt = older.mutate(None)
    assert (rebuilt.reminders, rebuilt.escalation, rebuilt.next_notice_at) == ([], None, None)
    rebuilt.record_due_notices(DEADLINE - timedelta(seconds=1), SWEEPER)
    assert rebuilt.collect_events() == []


def test_an_older_instance_snapshot_reads_as_having_none_owed_or_recorded() -> None:
    subject = instance()
    snapshot = Snapshot.take(subject)
    fields = (*NEW_ON_INSTANCES, "reminders_sent", "escalated")
    older = stored_at_version(snapshot, 6, *fields).mutate(None)
    assert (older.reminders, older.escalation, older.reminders_sent, older.escalated) == (
        [],
        None,
        [],
        None,
    )


def test_older_definition_events_and_snapshots_read_as_having_none() -> None:
    made = definition()
    made.update("Contract", False, WINDOW, [], False, SUBMITTED, "root", REMINDERS, ESCALATION)
    registered, published, updated = made.collect_events()
    rebuilt = stored_at_version(registered, 2, *NEW_ON_INSTANCES).mutate(None)
    assert (rebuilt.reminders, rebuilt.escalation) == ([], None)
    rebuilt = published.mutate(rebuilt)
    assert rebuilt.terms_of(1).reminders == []
    stored_at_version(updated, 3, *NEW_ON_INSTANCES).mutate(rebuilt)
    assert (rebuilt.reminders, rebuilt.escalation, rebuilt.terms_of(2).escalation) == (
        [],
        None,
        None,
    )
    snapshot = Snapshot.take(made)
    older = stored_at_version(snapshot, 3, *NEW_ON_INSTANCES)
    for terms in older.state["revisions"].values():
        del terms["reminders"], terms["escalation"]
    rebuilt = older.mutate(None)
    assert (rebuilt.reminders, rebuilt.terms_of(1).reminders, rebuilt.terms_of(2).escalation) == (
        [],
        [],
        None,
    )


def test_definition_events_and_snapshots_from_before_deadline_rules_read_in_seconds() -> None:
    """Registered v4, Updated v5 and snapshots v5 have no `deadline_rule`: their review
    window, in plain seconds, is the rule (docs/calendars.md#deadlines-in-working-time)."""
    made = definition()
    made.update("Contract", False, 7200, [], False, SUBMITTED, "root", [], None)
    registered, published, updated = made.collect_events()
    in_seconds = {"kind": "seconds", "seconds": WINDOW}
    rebuilt = stored_at_version(registered, 4, "deadline_rule").mutate(None)
    assert rebuilt.deadline_rule == in_seconds
    rebuilt = published.mutate(rebuilt)
    assert rebuilt.terms_of(1).deadline_rule == in_seconds
    stored_at_version(updated, 5, "deadline_rule").mutate(rebuilt)
    assert rebuilt.deadline_rule == {"kind": "seconds", "seconds": 7200}
    assert rebuilt.terms_of(2).deadline_rule == {"kind": "seconds", "seconds": 7200}
    older = stored_at_version(Snapshot.take(made), 5, "deadline_rule")
    for terms in older.state["revisions"].values():
        del terms["deadline_rule"]
    rebuilt = older.mutate(None)
    assert (rebuilt.deadline_rule, rebuilt.terms_of(1).deadline_rule) == (
        {"kind": "seconds", "seconds": 7200},
        in_seconds,
    )
