"""Who reviews, and where its refusals sit in the one rule (docs/approvals.md), with no store."""

from __future__ import annotations

from dataclasses import asdict, fields
from datetime import UTC, datetime, timedelta
from uuid import uuid4

from eventsourcing.domain import Snapshot

from domain.approvals import (
    APPROVE,
    CLAIM,
    COMMENT,
    CONFLICT,
    EXPIRED,
    FORBIDDEN,
    REJECT,
    SELF_APPROVAL,
    TAKEN,
    ApprovalInstance,
    Command,
    Parties,
    Review,
    decide,
)
from domain.directory import Definition
from domain.reviewers import FIRST_TASK, Person, Reviewers, Task, admission_of
from tests.support import stored_by_an_older_release

DEADLINE = datetime(2026, 10, 1, 10, 0, tzinfo=UTC)
BEFORE = DEADLINE - timedelta(seconds=1)
PARTIES = Parties("ann", launched=False, schedule_saver_id=None, allow_self_approval=False)
OPS = Reviewers(groups=("ops",), roles=("auditor",), accounts=("bo",), applicant_leader=True)
CLAIMED_BY_BO = Task(FIRST_TASK, ("bo", "cy"), assignee_id="bo", claimed_at=BEFORE)


def approve(command_id: str = "a1") -> Command:
    return Command(APPROVE, command_id, {"material_version": 1})


def test_each_kind_of_reviewer_is_admitted_by_its_own_rule() -> None:
    assert admission_of(OPS, Person("bo"), None) == {"rule": "account"}
    assert admission_of(OPS, Person("cy", groups=frozenset({"ops"})), None) == {
        "rule": "group",
        "group": "ops",
    }
    assert admission_of(OPS, Person("di", roles=frozenset({"auditor"})), None) == {
        "rule": "role",
        "role": "auditor",
    }
    assert admission_of(OPS, Person("ed"), "ed") == {"rule": "applicant_leader"}
    assert admission_of(OPS, Person("fay"), "ed", frozenset({"fay"})) == {"rule": "candidate"}
    assert admission_of(OPS, Person("gus", roles=frozenset({"operator"})), "ed") is None
    assert admission_of(None, Person("gus"), None) == {"rule": "anyone"}


def test_a_non_reviewer_after_the_deadline_is_refused_and_expires_nothing() -> None:
    decision = decide(
        "WAITING_REVIEW",
        DEADLINE,
        1,
        approve(),
        DEADLINE,
        "gus",
        PARTIES,
        review=Review(admission=None),
    )
    assert (decision.outcome, decision.state) == (FORBIDDEN, "WAITING_REVIEW")
    assert decision.why.code == "NOT_A_REVIEWER"
    reviewer = decide("WAITING_REVIEW", DEADLINE, 1, approve(), DEADLINE, "bo", PARTIES)
    assert reviewer.outcome == EXPIRED


def test_a_claimed_task_refuses_others_after_the_final_state_check_and_before_self_approval() -> (
    None
):
    claimed = Review(CLAIMED_BY_BO, {"rule": "role", "role": "operator"})
    decided = decide("APPROVED", DEADLINE, 1, approve(), BEFORE, "cy", PARTIES, review=claimed)
    assert decided.outcome == CONFLICT
    applicant = decide(
        "WAITING_REVIEW", DEADLINE, 1, approve(), BEFORE, "ann", PARTIES, review=claimed
    )
    assert (applicant.outcome, applicant.why.params) == (TAKEN, {"assignee": "bo"})
    unclaimed = Review(Task(FIRST_TASK, ("ann", "bo")), {"rule": "role", "role": "operator"})
    own = decide("WAITING_REVIEW", DEADLINE, 1, approve(), BEFORE, "ann", PARTIES, review=unclaimed)
    assert own.outcome == SELF_APPROVAL
    assignee = decide(
        "WAITING_REVIEW", DEADLINE, 1, approve(), BEFORE, "bo", PARTIES, review=claimed
    )
    assert assignee.state == "APPROVED"


def test_a_claim_and_a_reject_follow_the_rule_like_an_approve() -> None:
    claimed = Review(CLAIMED_BY_BO, {"rule": "account"})
    claim = Command(CLAIM, "c1", {})
    assert (
        decide("WAITING_REVIEW", DEADLINE, 1, claim, BEFORE, "cy", PARTIES, review=claimed).outcome
        == TAKEN
    )
    reject = Command(REJECT, "r1", {"material_version": 1, "comment": "缺少合同"})
    assert (
        decide("WAITING_REVIEW", DEADLINE, 1, reject, BEFORE, "bo", PARTIES, review=claimed).state
        == "REJECTED"
    )
    stale = Command(REJECT, "r2", {"material_version": 2, "comment": "x"})
    assert (
        decide("WAITING_REVIEW", DEADLINE, 1, stale, BEFORE, "bo", PARTIES, review=claimed).outcome
        == "STALE_MATERIAL"
    )


def submitted(candidates: list[str] | None) -> ApprovalInstance:
    return ApprovalInstance(
        tenant_id=uuid4(),
        definition_id="d",
        applicant_id="ann",
        title="Open account",
        form_data={},
        material_version=1,
        review_deadline_at=DEADLINE,
        review_deadline_offset_minutes=None,
        deadline_policy={"source": "explicit"},
        origin=None,
        allow_self_approval=False,
        command_id="s1",
        fingerprint="f",
        at=DEADLINE - timedelta(days=1),
        actor="ann",
        reviewers=OPS.as_dict(),
        candidates=candidates,
    )


def test_an_instance_submitted_before_reviewers_is_for_anyone_who_may_decide() -> None:
    older = stored_by_an_older_release(
        submitted(["bo"]).collect_events()[0],
        "allow_self_approval",
        "review_deadline_offset_minutes",
        "reminders",
        "escalation",
        "reviewers",
        "candidates",
    ).mutate(None)
    assert older.reviewer_rule is None
    assert older.task() == Task(FIRST_TASK, None)
    assert older.handle(approve(), BEFORE, "gus").state == "APPROVED"


def test_a_decided_instances_snapshot_from_before_tasks_has_its_task_closed() -> None:
    subject = submitted(["bo"])
    subject.handle(approve(), BEFORE, "bo", review=Review(admission={"rule": "account"}))
    older = stored_by_an_older_release(Snapshot.take(subject), "tasks", "comments").mutate(None)
    assert older.reviewers is None
    assert older.task().state == "CLOSED"
    assert older.comments == []


def test_a_definition_registered_before_reviewers_has_none() -> None:
    definition = Definition(
        tenant_id=uuid4(),
        key="k",
        name="n",
        external=False,
        review_window_seconds=3600,
        schedule_presets=[],
        allow_self_approval=False,
        at=BEFORE,
        actor="root",
        reviewers={"roles": ["operator"]},
    )
    older = stored_by_an_older_release(
        definition.collect_events()[0],
        "allow_self_approval",
        "reminders",
        "escalation",
        "reviewers",
    ).mutate(None)
    assert older.reviewers is None
    assert older.terms.reviewers is None


def test_an_escalation_recorded_before_tasks_changes_no_task() -> None:
    subject = submitted(["bo"])
    subject.escalation = {"after_seconds": 60, "account_id": "cy", "mode": "reassign"}
    subject.escalate(DEADLINE - timedelta(hours=1), "system:sweeper")
    escalated = subject.collect_events()[-1]
    older = stored_by_an_older_release(
        escalated, "task_id", "mode", "from_assignee", "to_assignee", "reason_code"
    )
    assert (older.mode, older.to_assignee) == (None, None)
    fresh = submitted(["bo"])
    older.apply(fresh)
    assert fresh.task() == Task(FIRST_TASK, ("bo",))


def test_on_an_instance_without_reviewers_only_who_may_decide_or_the_applicant_comments() -> None:
    comment = Command(COMMENT, "n1", {"comment": "?"})
    reader = frozenset({"workflow:approval:list"})
    refused = decide("WAITING_REVIEW", DEADLINE, 1, comment, BEFORE, "aud", PARTIES, granted=reader)
    assert (refused.outcome, refused.why.code) == (FORBIDDEN, "NOT_A_REVIEWER")
    own = decide("WAITING_REVIEW", DEADLINE, 1, comment, BEFORE, "ann", PARTIES, granted=reader)
    assert own.outcome == "COMMENTED"
    assert decide("WAITING_REVIEW", DEADLINE, 1, comment, BEFORE, "bo", PARTIES).accepted


LEADERS = {"payables": ["cfo", "ceo"], "empty": []}


def escalated_to_leader_of(group: str, may_review: frozenset[str]) -> ApprovalInstance:
    subject = submitted(["bo"])
    subject.escalation = {"after_seconds": 60, "group_leader_of": group, "mode": "reassign"}
    subject.escalate(
        DEADLINE - timedelta(hours=1),
        "system:sweeper",
        may_review=lambda account: account in may_review,
        leaders_up=lambda key: LEADERS[key],
    )
    return subject


def test_an_escalation_to_a_group_s_leader_goes_to_the_nearest_leader_who_may_approve() -> None:
    assert escalated_to_leader_of("payables", frozenset({"cfo", "ceo"})).task().assignee_id == "cfo"
    passed_up = escalated_to_leader_of("payables", frozenset({"ceo"}))
    assert (passed_up.task().assignee_id, passed_up.escalated["account_id"]) == ("ceo", "ceo")


def test_an_escalation_with_no_leader_who_may_approve_takes_nothing_and_says_why() -> None:
    nobody_may = escalated_to_leader_of("payables", frozenset())
    last = nobody_may.collect_events()[-1]
    assert (last.account_id, last.to_assignee, last.reason_code) == (
        "cfo",
        None,
        "ESCALATION_TARGET_INELIGIBLE",
    )
    assert nobody_may.task().assignee_id is None
    no_leader = escalated_to_leader_of("empty", frozenset({"cfo"})).collect_events()[-1]
    assert (no_leader.account_id, no_leader.reason_code) == (None, "ESCALATION_TARGET_INELIGIBLE")


def test_a_task_is_kept_with_every_field_in_its_order() -> None:
    kept = CLAIMED_BY_BO.as_dict()
    assert kept == {**asdict(CLAIMED_BY_BO), "candidates": ["bo", "cy"]}
    assert list(kept) == [field.name for field in fields(Task)]
    assert Task.of(kept) == CLAIMED_BY_BO
