"""Pausing the review clock and returning an instance (退回), by the one rule, with no store
(docs/approvals.md#pausing-the-clock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest

from domain.approvals import (
    APPROVE,
    CLAIM,
    COMMENT,
    PAUSE,
    RESUME,
    RETURN,
    REVISE,
    SWEEP,
    WITHDRAW,
    ApprovalInstance,
    Clock,
    Command,
    Parties,
    decide,
)
from domain.errors import InvalidState

SUBMITTED = datetime(2026, 10, 1, 10, 0, tzinfo=UTC)
DEADLINE = SUBMITTED + timedelta(seconds=20)
PARTIES = Parties("sales", launched=False, schedule_saver_id=None, allow_self_approval=False)


def instance(
    max_pause_seconds: int | None = None,
    reminders: list[dict[str, int]] | None = None,
    escalation: dict[str, Any] | None = None,
    deadline_at: datetime = DEADLINE,
) -> ApprovalInstance:
    return ApprovalInstance(
        tenant_id=uuid4(),
        definition_id="d",
        applicant_id="sales",
        title="Pay vendor",
        form_data={},
        material_version=1,
        review_deadline_at=deadline_at,
        review_deadline_offset_minutes=None,
        deadline_policy={"source": "definition"},
        origin=None,
        allow_self_approval=False,
        command_id="submit-1",
        fingerprint="f",
        at=SUBMITTED,
        actor="sales",
        reminders=reminders or [],
        escalation=escalation,
        max_pause_seconds=max_pause_seconds,
    )


def at(seconds: float) -> datetime:
    return SUBMITTED + timedelta(seconds=seconds)


def pause(command_id: str = "pause-1") -> Command:
    return Command(PAUSE, command_id, {"reason": "unusual payment: checking with the bank"})


def resume(command_id: str = "resume-1") -> Command:
    return Command(RESUME, command_id, {"reason": "the bank answered"})


def send_back(command_id: str = "return-1") -> Command:
    return Command(RETURN, command_id, {"comment": "attach the invoice"})


def kinds(subject: ApprovalInstance) -> list[tuple[str, str]]:
    return [(type(e).__name__, getattr(e, "outcome", "")) for e in subject.collect_events()][1:]


@pytest.mark.parametrize(
    ("state", "paused", "command", "actor", "outcome", "after", "accepted", "code"),
    [
        ("WAITING_REVIEW", False, pause(), "ops", "PAUSED", "WAITING_REVIEW", True, None),
        ("WAITING_REVIEW", True, pause(), "ops", "CONFLICT", "WAITING_REVIEW", False,
         "CLOCK_ALREADY_PAUSED"),
        ("WAITING_REVIEW", True, resume(), "ops", "RESUMED", "WAITING_REVIEW", True, None),
        ("WAITING_REVIEW", False, resume(), "ops", "CONFLICT", "WAITING_REVIEW", False,
         "CLOCK_NOT_PAUSED"),
        ("APPROVED", False, pause(), "ops", "CONFLICT", "APPROVED", False, "ALREADY_DECIDED"),
        ("RETURNED", True, pause(), "ops", "CONFLICT", "RETURNED", False,
         "NOT_WAITING_FOR_REVIEW"),
        ("WAITING_REVIEW", False, send_back(), "ops", "RETURNED", "RETURNED", True,
         "RETURNED_FOR_CHANGES"),
        ("WAITING_REVIEW", False, send_back(), "sales", "SELF_APPROVAL", "WAITING_REVIEW", False,
         "SELF_APPROVAL_APPLICANT"),
        ("RETURNED", True, Command(APPROVE, "a", {}), "ops", "CONFLICT", "RETURNED", False,
         "INSTANCE_RETURNED"),
        ("RETURNED", True, Command(CLAIM, "c", {}), "ops", "CONFLICT", "RETURNED", False,
         "INSTANCE_RETURNED"),
        ("RETURNED", True, Command(WITHDRAW, "w", {}), "sales", "WITHDRAWN", "WITHDRAWN", True,
         None),
        ("RETURNED", True, Command(COMMENT, "m", {"comment": "done"}), "sales", "COMMENTED",
         "RETURNED", True, None),
        ("RETURNED", True, Command(SWEEP, None), "system:sweeper", "NOT_DUE", "RETURNED", True,
         None),
    ],
)  # fmt: skip
def test_the_clock_and_return_rows_of_the_rule(
    state: str,
    paused: bool,
    command: Command,
    actor: str,
    outcome: str,
    after: str,
    accepted: bool,
    code: str | None,
) -> None:
    since = at(5) if paused else None
    decision = decide(state, DEADLINE, 1, command, at(10), actor, PARTIES, paused_since=since)
    assert (decision.outcome, decision.state, decision.accepted) == (outcome, after, accepted)
    if code is not None:
        assert decision.why.code == code


def test_a_paused_instance_is_never_past_its_deadline() -> None:
    paused = decide("WAITING_REVIEW", DEADLINE, 1, Command(SWEEP, None), at(60), "s", PARTIES,
                    paused_since=at(5))  # fmt: skip
    running = decide("WAITING_REVIEW", DEADLINE, 1, Command(SWEEP, None), at(60), "s", PARTIES)
    assert (paused.outcome, running.outcome) == ("NOT_DUE", "EXPIRED")


def test_pause_and_resume_move_the_deadline_by_the_paused_time() -> None:
    subject = instance()
    assert subject.handle(pause(), at(5), "ops").outcome == "PAUSED"
    assert subject.paused_since == at(5)
    assert subject.handle(Command(SWEEP, None), at(30), "system:sweeper").outcome == "NOT_DUE"
    assert subject.handle(resume(), at(15), "ops").outcome == "RESUMED"
    assert subject.review_deadline_at == DEADLINE + timedelta(seconds=10)
    assert subject.paused_since is None
    assert subject.paused_seconds == 10
    (stood,) = subject.pauses
    assert stood["kind"] == "pause"
    assert (stood["from"], stood["to"]) == (at(5), at(15))
    assert (stood["old_deadline_at"], stood["new_deadline_at"]) == (DEADLINE, at(30))
    assert subject.handle(Command(SWEEP, None), at(29), "system:sweeper").outcome == "NOT_DUE"
    assert subject.handle(Command(SWEEP, None), at(30), "system:sweeper").outcome == "EXPIRED"


def test_a_repeated_pause_answers_the_first_and_a_second_is_refused() -> None:
    subject = instance()
    first = subject.handle(pause(), at(5), "ops")
    assert subject.answer_to(pause(), "ops") == first
    assert subject.handle(pause("pause-2"), at(6), "ops").reason_code == "CLOCK_ALREADY_PAUSED"
    assert kinds(subject) == [("DeadlinePaused", "PAUSED"), ("CommandRejected", "CONFLICT")]


def test_reviewers_still_decide_while_the_clock_is_paused() -> None:
    subject = instance()
    subject.handle(pause(), at(5), "ops")
    assert subject.handle(Command(APPROVE, "a", {}), at(40), "ops").outcome == "APPROVED"
    assert subject.paused_since is None
    assert subject.pauses[0]["to"] == at(40)
    assert subject.review_deadline_at == DEADLINE  # a decision moves no deadline


def test_reminders_and_escalation_wait_while_paused_then_move() -> None:
    subject = instance(
        reminders=[{"before_seconds": 5}],
        escalation={"after_seconds": 8, "account_id": "boss", "mode": "notify"},
    )
    subject.handle(pause(), at(2), "ops")
    assert subject.next_notice_at is None
    subject.record_due_notices(at(16), "system:sweeper")
    assert (subject.reminders_sent, subject.escalated) == ([], None)
    with pytest.raises(InvalidState):
        subject.remind(5, at(16), "system:sweeper")
    subject.handle(resume(), at(12), "ops")  # stood 10 s
    assert subject.next_notice_at == at(18)  # the escalation: 8 s after submission, + 10 s
    assert [n.due_at for n in subject.owed_notices()] == [at(18), at(25)]


def test_a_pause_past_max_pause_seconds_resumes_by_itself_at_its_end() -> None:
    subject = instance(max_pause_seconds=10)
    subject.handle(pause(), at(5), "ops")
    assert subject.pause_ends_at == at(15)
    assert subject.handle(Command(SWEEP, None), at(40), "system:sweeper").outcome == "EXPIRED"
    resumed = [e for e in subject.collect_events() if type(e).__name__ == "DeadlineResumed"]
    assert [(e.actor, e.clock["to"], e.reason_code) for e in resumed] == [
        ("system:sweeper", at(15), "CLOCK_RESUMED_AT_MAX_PAUSE")
    ]
    assert subject.review_deadline_at == DEADLINE + timedelta(seconds=10)
    assert subject.state == "EXPIRED"


def test_a_return_stops_the_clock_and_closes_the_tasks() -> None:
    subject = instance()
    assert subject.handle(send_back(), at(5), "ops").outcome == "RETURNED"
    assert (subject.state, subject.paused_since, subject.decided_at) == ("RETURNED", at(5), None)
    assert {t["state"] for t in subject.tasks} == {"CLOSED"}
    assert subject.comments[0]["text"] == "attach the invoice"
    assert subject.pauses[0]["kind"] == "return"
    assert subject.handle(Command(SWEEP, None), at(500), "system:sweeper").outcome == "NOT_DUE"
    assert subject.handle(Command(APPROVE, "a", {}), at(6), "ops").reason_code == (
        "INSTANCE_RETURNED"
    )


def test_a_return_ignores_max_pause_seconds() -> None:
    subject = instance(max_pause_seconds=1)
    subject.handle(send_back(), at(5), "ops")
    assert subject.pause_ends_at is None
    subject.handle(Command(SWEEP, None), at(500), "system:sweeper")
    assert subject.state == "RETURNED"


def revise(command_id: str = "revise-1", version: int = 2) -> Command:
    return Command(REVISE, command_id, {"material_version": version, "reason": "invoice attached"})


def test_a_revise_brings_a_returned_instance_back_with_the_deadline_moved() -> None:
    subject = instance()
    subject.handle(send_back(), at(5), "ops")
    answer = subject.handle(revise(), at(65), "sales")
    assert (answer.outcome, answer.state, subject.state) == (
        "REVISED",
        "WAITING_REVIEW",
        "WAITING_REVIEW",
    )
    assert subject.review_deadline_at == DEADLINE + timedelta(seconds=60)
    assert {t["state"] for t in subject.tasks} == {"OPEN"}
    assert (subject.paused_since, subject.paused_seconds) == (None, 60)
    assert subject.pauses[0]["new_deadline_at"] == DEADLINE + timedelta(seconds=60)
    assert subject.handle(Command(SWEEP, None), at(79), "system:sweeper").outcome == "NOT_DUE"
    assert subject.handle(Command(SWEEP, None), at(80), "system:sweeper").outcome == "EXPIRED"


def test_a_returned_instance_takes_no_stale_revise_and_no_clock_command() -> None:
    subject = instance()
    subject.handle(send_back(), at(5), "ops")
    stale = subject.handle(revise(version=1), at(6), "sales")
    assert (stale.outcome, stale.reason_code, subject.state) == (
        "RULE_BROKEN",
        "MATERIAL_NOT_NEWER",
        "RETURNED",
    )
    assert subject.handle(pause(), at(7), "ops").reason_code == "NOT_WAITING_FOR_REVIEW"
    assert subject.state == "RETURNED"


def test_a_return_while_paused_ends_the_pause_first() -> None:
    subject = instance()
    subject.handle(pause(), at(2), "ops")
    subject.handle(send_back(), at(6), "ops")
    assert [(p["kind"], p["from"], p["to"]) for p in subject.pauses] == [
        ("pause", at(2), at(6)),
        ("return", at(6), None),
    ]
    assert subject.review_deadline_at == DEADLINE + timedelta(seconds=4)


def test_the_clock_counts_as_it_is_told() -> None:
    half = Clock(
        measure=lambda start, end: (end - start) / 2,
        add=lambda instant, counted: instant + counted,
    )
    subject = instance()
    subject.handle(pause(), at(0), "ops")
    subject.handle(resume(), at(10), "ops", clock=half)
    assert subject.review_deadline_at == DEADLINE + timedelta(seconds=5)
    assert subject.paused_seconds == 10  # the time it stood, as a clock on the wall says
