"""Refusals recorded, withdraws checking material, callbacks matched, extensions kept
(requirement 004: deadlines and late messages), with no store."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from eventsourcing.domain import Snapshot

from domain.approvals import (
    EXTEND,
    FORBIDDEN,
    SIGN,
    STALE_MATERIAL,
    WITHDRAW,
    ApprovalInstance,
    Command,
    refusal_error,
)
from domain.errors import Forbidden
from domain.permissions import APPROVAL_LIST, APPROVAL_SUBMIT
from tests.support import stored_by_an_older_release
from tests.unit.test_approval_rules import (
    BEFORE,
    DEADLINE,
    SIGNED,
    approve,
    extend,
    instance,
    recorded,
    withdraw,
)

ONLY_LIST = frozenset({APPROVAL_LIST})


def rejected(subject: ApprovalInstance) -> Any:
    event: Any = subject.collect_events()[-1]
    assert type(event).__name__ == "CommandRejected"
    return event


def test_a_withdraw_by_someone_else_is_recorded_as_forbidden() -> None:
    subject = instance()
    answer = subject.handle(withdraw(), BEFORE, "ops", frozenset({APPROVAL_SUBMIT}))
    assert (answer.outcome, answer.accepted, subject.state) == (
        FORBIDDEN,
        False,
        "WAITING_REVIEW",
    )
    event = rejected(subject)
    assert (event.actor, event.command, event.reason) == (
        "ops",
        WITHDRAW,
        "only the applicant may withdraw an instance",
    )
    assert isinstance(refusal_error(answer, withdraw()), Forbidden)


def test_a_command_without_its_permission_is_recorded_and_decides_nothing() -> None:
    subject = instance()
    late = DEADLINE + timedelta(hours=1)
    answer = subject.handle(approve(), late, "viewer", ONLY_LIST)
    assert (answer.outcome, subject.state) == (FORBIDDEN, "WAITING_REVIEW")  # not even expired
    assert "viewer lacks the permission workflow:approval:decide" in answer.reason
    assert subject.answer_to(approve(), "viewer", ONLY_LIST) is None  # refused, and recorded, again
    assert subject.handle(approve(), late, "viewer", ONLY_LIST).outcome == FORBIDDEN
    assert subject.answer_to(approve(), "ops") is None  # the refusal did not take the command id
    assert subject.handle(approve(), BEFORE, "ops").outcome == "APPROVED"
    assert subject.answer_to(approve(), "viewer", ONLY_LIST) is None  # nor sees its answer
    assert recorded(subject) == [
        ("CommandRejected", FORBIDDEN),
        ("CommandRejected", FORBIDDEN),
        ("Approved", "APPROVED"),
    ]


def test_the_permission_is_checked_for_every_command_but_the_sweep() -> None:
    for command in (approve(), withdraw(), extend(DEADLINE + timedelta(days=1))):
        assert instance().handle(command, BEFORE, "sales", ONLY_LIST).outcome == FORBIDDEN
    refused = instance()
    assert refused.handle(Command(SIGN, "s", SIGNED), BEFORE, "x", ONLY_LIST).outcome == FORBIDDEN
    assert (refused.observations, refused.contract_id) == ([], None)
    assert instance().handle(Command("sweep", None), DEADLINE, "system:sweeper", frozenset())


def test_a_withdraw_naming_stale_material_is_refused_and_recorded() -> None:
    subject = instance()
    stale = Command(WITHDRAW, "w-1", {"material_version": 1})
    answer = subject.handle(stale, BEFORE, "sales")
    assert (answer.outcome, answer.accepted, subject.state) == (
        STALE_MATERIAL,
        False,
        "WAITING_REVIEW",
    )
    assert recorded(subject) == [("CommandRejected", STALE_MATERIAL)]
    current = Command(WITHDRAW, "w-2", {"material_version": 2})
    assert subject.handle(current, BEFORE, "sales").outcome == "WITHDRAWN"


def test_a_withdraw_without_material_keeps_its_fingerprint() -> None:
    """0.1.0's withdraws had an empty payload; a repeat of one must replay, not conflict."""
    assert withdraw().fingerprint == Command(WITHDRAW, "withdraw-1", {}).fingerprint
    assert instance().handle(withdraw(), BEFORE, "sales").outcome == "WITHDRAWN"


def callback(command_id: str, **changes: Any) -> Command:
    return Command(SIGN, command_id, {**SIGNED, **changes})


def test_the_first_callback_binds_the_contract_and_later_ones_are_matched() -> None:
    subject = instance()
    assert subject.contract_id is None
    subject.handle(callback("cb-1"), BEFORE, "esign")
    other = subject.handle(callback("cb-2", contract_id="c-2"), BEFORE, "esign")
    stale = subject.handle(callback("cb-3", material_version=1), BEFORE, "esign")
    assert (other.outcome, stale.outcome, subject.contract_id) == ("OBSERVED", "OBSERVED", "c-1")
    matches = [(o["contract_matches"], o["material_matches"]) for o in subject.observations]
    assert matches == [(True, True), (False, True), (True, False)]
    assert "mismatch: contract c-2 is not the instance's c-1" in other.reason
    assert "mismatch: material version 1 is not the current 2" in stale.reason


def test_a_late_mismatched_callback_says_so_too() -> None:
    subject = instance()
    subject.handle(callback("cb-1"), BEFORE, "esign")
    late = subject.handle(callback("cb-2", contract_id="c-9"), DEADLINE, "esign")
    assert late.outcome == "EXPIRED"
    assert "mismatch: contract c-9" in late.reason
    assert subject.observations[-1]["contract_matches"] is False


def test_an_extension_of_an_older_release_counts_as_rule_version_1() -> None:
    subject = instance()
    subject.handle(extend(DEADLINE + timedelta(days=1)), BEFORE, "ops")
    extended = subject.collect_events()[-1]
    older = stored_by_an_older_release(extended, "rule_version")
    assert older.rule_version == 1
    assert type(older).__name__ == "DeadlineExtended"


def test_an_older_snapshot_binds_its_first_callback_and_has_no_extensions() -> None:
    subject = instance()
    subject.handle(callback("cb-1"), BEFORE, "esign")
    subject.handle(callback("cb-2", contract_id="c-2"), BEFORE, "esign")
    subject.handle(
        Command(EXTEND, "e", {"new_deadline_at": DEADLINE + timedelta(1), "reason": "r"}),
        BEFORE,
        "ops",
    )
    snapshot = Snapshot.take(subject)
    older = stored_by_an_older_release(snapshot, "contract_id", "extensions").mutate(None)
    assert (older.contract_id, older.extensions) == ("c-1", [])
    assert [o["contract_matches"] for o in older.observations] == [True, False]
