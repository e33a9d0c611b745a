"""The one transition rule of approval instances (docs/approvals.md), with no store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest
from eventsourcing.domain import Snapshot

from domain.approvals import (
    APPROVE,
    DEADLINE_RULES_VERSION,
    EXTEND,
    RULE_BROKEN,
    SELF_APPROVAL,
    SIGN,
    SWEEP,
    WITHDRAW,
    Answer,
    ApprovalInstance,
    Command,
    CommandIdReused,
    Parties,
    decide,
    refusal_error,
)
from domain.errors import ValidationFailed
from tests.support import stored_by_an_older_release

DEADLINE = datetime(2026, 10, 1, 10, 0, tzinfo=UTC)  # 18:00 in Beijing
BEFORE = DEADLINE - timedelta(seconds=1)
SIGNED = {"contract_id": "c-1", "material_version": 2, "occurred_at": BEFORE, "source": "esign"}
PARTIES = Parties("sales", launched=False, schedule_saver_id=None, allow_self_approval=False)
LAUNCHED = {"source": "schedule", "run_id": "r-1", "saved_by": "planner"}


def instance(
    origin: dict[str, Any] | None = None, allow_self_approval: bool = False
) -> ApprovalInstance:
    return ApprovalInstance(
        tenant_id=uuid4(),
        definition_id="d",
        applicant_id="sales",
        title="Open account",
        form_data={},
        material_version=2,
        review_deadline_at=DEADLINE,
        review_deadline_offset_minutes=None,
        deadline_policy={"source": "explicit"},
        origin=origin,
        allow_self_approval=allow_self_approval,
        command_id="submit-1",
        fingerprint="f",
        at=DEADLINE - timedelta(days=3),
        actor="sales",
    )


def approve(command_id: str = "approve-1", material_version: int = 2) -> Command:
    return Command(APPROVE, command_id, {"material_version": material_version})


def withdraw(command_id: str = "withdraw-1") -> Command:
    return Command(WITHDRAW, command_id, {})


def extend(new: datetime) -> Command:
    return Command(EXTEND, "extend-1", {"new_deadline_at": new, "reason": "customer asked"})


def recorded(subject: ApprovalInstance) -> list[tuple[str, str]]:
    return [(type(e).__name__, getattr(e, "outcome", "")) for e in subject.collect_events()][1:]


@pytest.mark.parametrize(
    ("state", "now", "command", "outcome", "after", "accepted"),
    [
        ("WAITING_REVIEW", BEFORE, approve(), "APPROVED", "APPROVED", True),
        (
            "WAITING_REVIEW",
            BEFORE,
            approve(material_version=1),
            "STALE_MATERIAL",
            "WAITING_REVIEW",
            False,
        ),
        ("WAITING_REVIEW", BEFORE, withdraw(), "WITHDRAWN", "WITHDRAWN", True),
        (
            "WAITING_REVIEW",
            BEFORE,
            extend(DEADLINE + timedelta(days=1)),
            "EXTENDED",
            "WAITING_REVIEW",
            True,
        ),
        ("WAITING_REVIEW", BEFORE, Command(SIGN, "s", SIGNED), "OBSERVED", "WAITING_REVIEW", True),
        ("WAITING_REVIEW", BEFORE, Command(SWEEP, None), "NOT_DUE", "WAITING_REVIEW", True),
        ("WAITING_REVIEW", DEADLINE, approve(), "EXPIRED", "EXPIRED", False),
        ("WAITING_REVIEW", DEADLINE, withdraw(), "EXPIRED", "EXPIRED", False),
        ("WAITING_REVIEW", DEADLINE, Command(SIGN, "s", SIGNED), "EXPIRED", "EXPIRED", False),
        ("WAITING_REVIEW", DEADLINE, Command(SWEEP, None), "EXPIRED", "EXPIRED", True),
        ("APPROVED", BEFORE, withdraw(), "CONFLICT", "APPROVED", False),
        ("WITHDRAWN", BEFORE, approve(), "CONFLICT", "WITHDRAWN", False),
        ("EXPIRED", DEADLINE, extend(DEADLINE + timedelta(days=1)), "CONFLICT", "EXPIRED", False),
        ("EXPIRED", DEADLINE, Command(SIGN, "s", SIGNED), "LATE_OR_CONFLICT", "EXPIRED", False),
        ("APPROVED", DEADLINE, Command(SWEEP, None), "NOT_DUE", "APPROVED", True),
    ],
)
def test_the_contract_table(
    state: str, now: datetime, command: Command, outcome: str, after: str, accepted: bool
) -> None:
    actor = "sales" if command.kind == WITHDRAW else "ops"
    decision = decide(state, DEADLINE, 2, command, now, actor, PARTIES)
    assert (decision.outcome, decision.state, decision.accepted) == (outcome, after, accepted)


def test_approve_then_withdraw_withdraw_conflicts() -> None:
    subject = instance()
    assert subject.handle(approve(), BEFORE, "ops").outcome == "APPROVED"
    assert subject.handle(withdraw(), BEFORE, "sales").outcome == "CONFLICT"
    assert subject.state == "APPROVED"
    assert recorded(subject) == [("Approved", "APPROVED"), ("CommandRejected", "CONFLICT")]


def test_withdraw_then_approve_approve_conflicts() -> None:
    subject = instance()
    subject.handle(withdraw(), BEFORE, "sales")
    assert subject.handle(approve(), BEFORE, "ops").outcome == "CONFLICT"
    assert subject.state == "WITHDRAWN"


def test_approve_at_exactly_the_deadline_expires_and_is_recorded() -> None:
    subject = instance()
    answer = subject.handle(approve(), DEADLINE, "ops")
    assert (answer.outcome, answer.accepted, subject.state) == ("EXPIRED", False, "EXPIRED")
    assert subject.decided_at == DEADLINE
    # the deadline's expiry (the service's), then the late command, refused, as the caller's
    actors = [e.actor for e in subject.pending_events[1:]]  # type: ignore[attr-defined]
    assert recorded(subject) == [("Expired", "EXPIRED"), ("CommandRejected", "EXPIRED")]
    assert actors == ["system:sweeper", "ops"]


def test_a_late_sign_callback_is_observed_but_changes_nothing() -> None:
    subject = instance()
    subject.handle(Command(SWEEP, None), DEADLINE + timedelta(minutes=5), "system:sweeper")
    answer = subject.handle(Command(SIGN, "cb-1", SIGNED), DEADLINE + timedelta(hours=1), "esign")
    assert (answer.outcome, subject.state) == ("LATE_OR_CONFLICT", "EXPIRED")
    assert [o["outcome"] for o in subject.observations] == ["LATE_OR_CONFLICT"]
    assert subject.observations[0]["contract_id"] == "c-1"


def test_a_sign_callback_in_time_is_only_an_observation() -> None:
    subject = instance()
    assert subject.handle(Command(SIGN, "cb-1", SIGNED), BEFORE, "esign").outcome == "OBSERVED"
    assert subject.state == "WAITING_REVIEW"
    assert len(subject.observations) == 1


def test_a_repeated_command_id_gets_the_first_answer() -> None:
    subject = instance()
    subject.handle(approve(), BEFORE, "ops")
    first = subject.answer_to(approve())
    assert first is not None
    assert first.outcome == "APPROVED"
    with pytest.raises(CommandIdReused):
        subject.answer_to(approve(material_version=1))
    assert subject.answer_to(approve("approve-2")) is None


def test_a_command_id_that_broke_a_rule_takes_the_corrected_command() -> None:
    subject = instance()
    too_far = extend(BEFORE + timedelta(days=31))
    assert subject.handle(too_far, BEFORE, "ops").outcome == RULE_BROKEN
    assert not subject.answered_for_good("extend-1")
    assert subject.answer_to(too_far) == Answer(**subject.answers["extend-1"])
    corrected = extend(DEADLINE + timedelta(days=1))
    assert subject.answer_to(corrected) is None
    assert subject.handle(corrected, BEFORE, "ops").outcome == "EXTENDED"
    assert subject.answered_for_good("extend-1")
    with pytest.raises(CommandIdReused):
        subject.answer_to(too_far)


def test_a_new_command_id_cannot_approve_twice() -> None:
    subject = instance()
    subject.handle(approve(), BEFORE, "ops")
    assert subject.handle(approve("approve-2"), BEFORE, "ops").outcome == "CONFLICT"


def test_stale_material_is_rejected_and_recorded() -> None:
    subject = instance()
    answer = subject.handle(approve(material_version=1), BEFORE, "ops")
    assert (answer.outcome, subject.state) == ("STALE_MATERIAL", "WAITING_REVIEW")
    assert recorded(subject) == [("CommandRejected", "STALE_MATERIAL")]


def test_extension_moves_the_deadline_and_keeps_the_reason() -> None:
    subject = instance()
    later = DEADLINE + timedelta(days=2)
    assert subject.handle(extend(later), BEFORE, "ops").outcome == "EXTENDED"
    assert subject.review_deadline_at == later
    assert subject.deadline_policy == {
        "source": "extended",
        "reason": "customer asked",
        "rule_version": DEADLINE_RULES_VERSION,
    }
    assert subject.extensions == [
        {
            "old_deadline_at": DEADLINE,
            "new_deadline_at": later,
            "reason": "customer asked",
            "actor": "ops",
            "at": BEFORE,
            "rule_version": DEADLINE_RULES_VERSION,
        }
    ]
    assert subject.handle(approve(), DEADLINE + timedelta(days=1), "ops").outcome == "APPROVED"


@pytest.mark.parametrize(
    "new", [DEADLINE, DEADLINE - timedelta(hours=1), BEFORE + timedelta(days=30, seconds=1)]
)
def test_extension_must_be_later_and_within_30_days(new: datetime) -> None:
    subject = instance()
    answer = subject.handle(extend(new), BEFORE, "ops")
    assert (answer.outcome, answer.accepted, subject.review_deadline_at) == (
        RULE_BROKEN,
        False,
        DEADLINE,
    )
    assert recorded(subject) == [("CommandRejected", RULE_BROKEN)]
    error = refusal_error(answer, extend(new))
    assert isinstance(error, ValidationFailed)
    assert "new_deadline_at" in error.errors
    assert subject.extensions == []


def test_sweep_before_the_deadline_records_nothing() -> None:
    subject = instance()
    assert subject.handle(Command(SWEEP, None), BEFORE, "system:sweeper").outcome == "NOT_DUE"
    assert recorded(subject) == []


def test_the_sweep_records_the_true_deadline_and_its_own_time() -> None:
    subject = instance()
    late = DEADLINE + timedelta(hours=2)
    subject.handle(Command(SWEEP, None), late, "system:sweeper")
    event: Any = subject.collect_events()[-1]
    assert (event.at, event.actor, event.outcome) == (late, "system:sweeper", "EXPIRED")
    assert DEADLINE.isoformat() in event.reason
    assert late.isoformat() in event.reason


@pytest.mark.parametrize(
    ("origin", "actor"), [(None, "sales"), (LAUNCHED, "sales"), (LAUNCHED, "planner")]
)
def test_nobody_approves_what_they_asked_for(origin: dict[str, Any] | None, actor: str) -> None:
    subject = instance(origin)
    answer = subject.handle(approve(), BEFORE, actor)
    assert (answer.outcome, answer.state, answer.accepted) == (
        SELF_APPROVAL,
        "WAITING_REVIEW",
        False,
    )
    event: Any = subject.collect_events()[-1]
    assert (type(event).__name__, event.actor, event.outcome) == (
        "CommandRejected",
        actor,
        "SELF_APPROVAL",
    )
    assert actor in event.reason
    assert subject.handle(approve("approve-2"), BEFORE, "ops").outcome == "APPROVED"


@pytest.mark.parametrize("actor", ["sales", "planner"])
def test_a_definition_may_allow_self_approval(actor: str) -> None:
    subject = instance(LAUNCHED, allow_self_approval=True)
    assert subject.handle(approve(), BEFORE, actor).outcome == "APPROVED"


def test_the_applicant_may_still_withdraw() -> None:
    subject = instance(LAUNCHED)
    assert subject.handle(withdraw(), BEFORE, "sales").outcome == "WITHDRAWN"


def test_self_approval_is_checked_before_the_material_version_and_after_the_deadline() -> None:
    assert instance().handle(approve(material_version=1), BEFORE, "sales").outcome == SELF_APPROVAL
    assert instance().handle(approve(), DEADLINE, "sales").outcome == "EXPIRED"


def test_an_older_launch_without_its_saver_is_approved_by_nobody() -> None:
    subject = instance({"source": "schedule", "run_id": "r-1"})
    answer = subject.handle(approve(), BEFORE, "ops")
    assert (answer.outcome, subject.state) == (SELF_APPROVAL, "WAITING_REVIEW")
    assert "did not record who saved the schedule" in answer.reason
    assert subject.handle(withdraw(), BEFORE, "sales").outcome == "WITHDRAWN"


def test_an_older_submission_does_not_allow_self_approval() -> None:
    submitted = stored_by_an_older_release(
        instance(allow_self_approval=True).collect_events()[0], "allow_self_approval"
    )
    subject = submitted.mutate(None)
    assert subject.allow_self_approval is False
    assert subject.handle(approve(), BEFORE, "sales").outcome == SELF_APPROVAL


def test_an_older_snapshot_does_not_allow_self_approval() -> None:
    snapshot = Snapshot.take(instance(allow_self_approval=True))
    subject = stored_by_an_older_release(snapshot, "allow_self_approval").mutate(None)
    assert subject.allow_self_approval is False
    assert subject.handle(approve(), BEFORE, "sales").outcome == SELF_APPROVAL
