"""Levels, countersign and revised material in the one approval rule, with no store (issue 35)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest
from eventsourcing.domain import Snapshot

from domain.approvals import (
    ALREADY_VOTED,
    APPROVE,
    APPROVED,
    REJECT,
    REJECTED,
    RETURN,
    RETURNED,
    REVISE,
    RULE_BROKEN,
    STALE_MATERIAL,
    VOTED,
    WAITING_REVIEW,
    ApprovalInstance,
    Command,
    Parties,
    Review,
    decide,
)
from domain.errors import ValidationFailed
from domain.levels import Level, Tally, check_levels, level_of
from domain.reviewers import Reviewers

DEADLINE = datetime(2026, 10, 1, 10, 0, tzinfo=UTC)
SUBMITTED = DEADLINE - timedelta(days=3)
NOW = DEADLINE - timedelta(hours=1)
PARTIES = Parties("ann", launched=False, schedule_saver_id=None, allow_self_approval=False)
FINANCE = ("fa", "fb", "fc")


def leveled(*levels: tuple[tuple[str, ...], int, bool]) -> ApprovalInstance:
    """An instance of a definition with `levels` (candidates, approvals, any reject rejects)."""
    kept = [
        level_of(n, Level(Reviewers(accounts=c), required, rejects), c)
        for n, (c, required, rejects) in enumerate(levels, start=1)
    ]
    return ApprovalInstance(
        tenant_id=uuid4(),
        definition_id="d",
        applicant_id="ann",
        title="Payment",
        form_data={"amount": 100},
        material_version=1,
        review_deadline_at=DEADLINE,
        review_deadline_offset_minutes=None,
        deadline_policy={"source": "explicit"},
        origin=None,
        allow_self_approval=False,
        command_id="submit-1",
        fingerprint="f",
        at=SUBMITTED,
        actor="ann",
        reviewers=kept[0]["reviewers"],
        candidates=list(levels[0][0]),
        levels=kept,
    )


def approve(command_id: str, version: int = 1) -> Command:
    return Command(APPROVE, command_id, {"material_version": version})


def reject(command_id: str, version: int = 1) -> Command:
    return Command(REJECT, command_id, {"material_version": version, "comment": "不同意"})


def revise(command_id: str, version: int, **more: Any) -> Command:
    return Command(REVISE, command_id, {"material_version": version, "reason": "改", **more})


def outcome(subject: ApprovalInstance, command: Command, actor: str) -> str:
    """What the command gets, the actor admitted as a reviewer by account (the service's
    part, which reads the directory)."""
    task_id = subject.task_id_for(command, actor)
    review = Review(subject.task(task_id), {"rule": "account"}, tally=subject.tally(task_id))
    return subject.handle(command, NOW, actor, review=review).outcome


@pytest.mark.parametrize(
    ("tally", "command", "expected", "completes"),
    [
        (Tally(), approve("a"), APPROVED, True),  # 或签: one approval, the last level
        (Tally(required=2), approve("a"), VOTED, False),
        (Tally(required=2, approvals=1), approve("a"), APPROVED, True),
        (Tally(required=2, approvals=1, last=False), approve("a"), VOTED, True),
        (Tally(voters=frozenset({"fa"})), approve("a"), ALREADY_VOTED, False),
        (Tally(holders=frozenset({"fa"})), Command("claim", "c", {}), ALREADY_VOTED, False),
        (Tally(), reject("r"), REJECTED, False),
        (Tally(required=2, possible=3, any_reject_rejects=False), reject("r"), VOTED, False),
        (Tally(required=2, possible=2, any_reject_rejects=False), reject("r"), REJECTED, False),
    ],
)
def test_a_vote_counts_completes_its_level_or_refuses(
    tally: Tally, command: Command, expected: str, completes: bool
) -> None:
    decision = decide(
        WAITING_REVIEW, DEADLINE, 1, command, NOW, "fa", PARTIES, review=Review(tally=tally)
    )
    assert (decision.outcome, decision.completes_level) == (expected, completes)


def test_a_countersign_level_opens_one_task_per_approval_for_distinct_reviewers() -> None:
    subject = leveled((FINANCE, 2, True))
    assert [(t["id"], t["level"]) for t in subject.tasks] == [("1", 1), ("2", 1)]
    assert outcome(subject, Command("claim", "c-1", {}), "fa") == "CLAIMED"
    assert outcome(subject, Command("claim", "c-2", {}), "fb") == "CLAIMED"  # never blocked
    assert subject.task("2").assignee_id == "fb"
    assert outcome(subject, approve("a-1"), "fa") == VOTED
    assert outcome(subject, approve("a-1b"), "fa") == ALREADY_VOTED
    assert outcome(subject, approve("a-2"), "fb") == APPROVED


def test_the_next_level_opens_only_when_the_one_before_completes() -> None:
    subject = leveled((("lee",), 1, True), (FINANCE, 2, True))
    assert [t["id"] for t in subject.tasks] == ["1"]
    assert [level["state"] for level in subject.levels] == ["open", "waiting"]
    assert outcome(subject, approve("a-1"), "lee") == VOTED
    assert subject.current_level == 2
    assert [(t["id"], t["level"], t["state"]) for t in subject.tasks] == [
        ("1", 1, "CLOSED"),
        ("2", 2, "OPEN"),
        ("3", 2, "OPEN"),
    ]
    names = [type(e).__name__ for e in subject.collect_events()]
    assert names[-2:] == ["Voted", "LevelCompleted"]


def test_a_reject_vote_fails_the_level_only_when_n_can_no_longer_be_reached() -> None:
    subject = leveled((FINANCE, 2, False))
    assert outcome(subject, reject("r-1"), "fa") == VOTED  # fb and fc may still approve
    assert outcome(subject, reject("r-2"), "fb") == REJECTED  # only fc left: 1 < 2
    assert subject.levels[0]["state"] == "failed"


def test_a_revise_lapses_every_vote_and_goes_back_to_level_one() -> None:
    subject = leveled((FINANCE, 2, True), (("lee",), 1, True))
    outcome(subject, approve("a-1"), "fa")
    outcome(subject, approve("a-2"), "fb")
    assert subject.current_level == 2
    assert outcome(subject, revise("v-0", 1), "ann") == RULE_BROKEN
    assert outcome(subject, revise("v-x", 2), "fa") == "FORBIDDEN"
    assert outcome(subject, revise("v-1", 2, form_data={"amount": 90}), "ann") == "REVISED"
    assert (subject.material_version, dict(subject.form_data)) == (2, {"amount": 90})
    assert subject.current_level == 1
    assert [(v["actor"], v["lapsed"]) for v in subject.votes] == [("fa", True), ("fb", True)]
    assert [(t["id"], t["state"]) for t in subject.tasks] == [
        ("1", "OPEN"),
        ("2", "OPEN"),
        ("3", "CLOSED"),
    ]
    assert outcome(subject, approve("late", 1), "fc") == STALE_MATERIAL
    assert outcome(subject, approve("b-1", 2), "fa") == VOTED  # lapsed: fa may vote again
    assert outcome(subject, approve("b-2", 2), "fc") == VOTED
    assert [t["state"] for t in subject.tasks] == ["CLOSED", "CLOSED", "OPEN"]
    assert outcome(subject, approve("b-3", 2), "lee") == APPROVED


def test_a_revise_before_any_vote_keeps_the_review_where_it_is() -> None:
    subject = leveled((FINANCE, 2, True))
    subject.handle(revise("v-1", 2), NOW, "ann")
    (event,) = [e for e in subject.collect_events() if type(e).__name__ == "Revised"]
    assert (event.lapsed_votes, event.back_to_level, event.reopened_tasks) == (0, 1, [])


def test_a_refused_revise_is_answered_on_material_version() -> None:
    subject = leveled((FINANCE, 1, True))
    answer = subject.handle(revise("v-1", 1), NOW, "ann")
    assert (answer.outcome, answer.reason_code) == (RULE_BROKEN, "MATERIAL_NOT_NEWER")


def test_levels_are_checked_on_a_definition() -> None:
    with pytest.raises(ValidationFailed) as refused:
        check_levels([{"reviewers": {"accounts": []}}])
    assert list(refused.value.errors) == ["levels.0.reviewers"]
    with pytest.raises(ValidationFailed) as too_many:
        check_levels([{"reviewers": {"roles": ["operator"]}, "approvals_required": 51}])
    assert list(too_many.value.errors) == ["levels.0.approvals_required"]
    with pytest.raises(ValidationFailed) as unreachable:
        check_levels(
            [
                {"reviewers": {"roles": ["operator"]}},
                {"reviewers": {"accounts": ["ann", "bob"]}, "approvals_required": 3},
            ]
        )
    assert list(unreachable.value.errors) == ["levels.1.approvals_required"]
    assert check_levels([{"reviewers": {"groups": ["finance"]}, "approvals_required": 3}])


def test_a_snapshot_from_before_levels_reads_one_level_from_its_reviewers() -> None:
    subject = leveled((FINANCE, 1, True))
    state = Snapshot.take(subject).state
    kept = {**_as_version_8(state)}
    ApprovalInstance.upcast_v8_v9(kept)
    assert kept["levels"][0]["candidates"] == list(FINANCE)
    assert (kept["current_level"], kept["votes"], kept["leveled"]) == (1, [], False)


def _as_version_8(state: dict[str, Any]) -> dict[str, Any]:
    """A snapshot's state as version 8 kept it: no levels, votes or revise flag."""
    dropped = {"levels", "current_level", "votes", "leveled", "restart_deadline_on_revise"}
    return {k: v for k, v in state.items() if k not in dropped}


def send_back(command_id: str) -> Command:
    return Command(RETURN, command_id, {"comment": "缺少发票"})


@pytest.mark.parametrize(
    ("return_to", "back_to", "level_one_votes_lapsed"),
    [("first", 1, True), ("returning", 2, False)],
)
def test_a_revise_after_a_return_at_level_two_goes_back_as_the_definition_says(
    return_to: str, back_to: int, level_one_votes_lapsed: bool
) -> None:
    subject = leveled((("lead",), 1, True), (FINANCE, 2, True))
    subject.return_to = return_to
    assert outcome(subject, approve("a-lead"), "lead") == VOTED
    assert outcome(subject, approve("a-fa"), "fa") == VOTED
    task_id = subject.task_id_for(send_back("r-fb"), "fb")
    review = Review(subject.task(task_id), {"rule": "account"}, tally=subject.tally(task_id))
    assert subject.handle(send_back("r-fb"), NOW, "fb", review=review).outcome == RETURNED
    answer = subject.handle(revise("v2", 2), NOW + timedelta(minutes=30), "ann")
    assert (answer.outcome, subject.state, subject.current_level) == (
        "REVISED",
        WAITING_REVIEW,
        back_to,
    )
    assert subject.review_deadline_at == DEADLINE + timedelta(minutes=30)
    lapsed = {v["level"]: v["lapsed"] for v in subject.votes}
    assert lapsed == {1: level_one_votes_lapsed, 2: True}
    open_tasks = {t["level"] for t in subject.tasks if t["state"] == "OPEN"}
    assert open_tasks == {back_to}
    assert outcome(subject, approve("late", 1), "fc") == STALE_MATERIAL
