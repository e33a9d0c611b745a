"""People in the approval, against real stores: who reviews, claims, rejects and comments."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from cronledger.application.approvals import CommandResult
from cronledger.application.directory import DefinitionFields
from cronledger.application.launches import Worker
from cronledger.application.services import Services
from domain.approvals import (
    APPROVE,
    CLAIM,
    COMMENT,
    REASSIGN,
    REJECT,
    UNCLAIM,
    WITHDRAW,
    Command,
    Submission,
)
from domain.directory import Principal
from domain.errors import NoEligibleReviewer, NotAReviewer, ValidationFailed
from domain.permissions import ROLES
from tests.support import REVIEWER, FakeClock, World


@pytest.fixture
def root(services: Services) -> Principal:
    principal = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    assert principal is not None
    return principal


def account(services: Services, root: Principal, account_id: str, role: str) -> Principal:
    services.directory.create_account(root, account_id, account_id.title(), [role])
    return Principal(root.tenant_id, account_id, ROLES[role])


def definition(services: Services, root: Principal, key: str, reviewers: Any) -> str:
    created = services.directory.create_definition(
        root, key, DefinitionFields("Onboarding", False, 3600, [], reviewers=reviewers)
    )
    services.directory.set_published(root, created.id, True, None)
    return created.id


@pytest.fixture
def people(services: Services, root: Principal) -> dict[str, Principal]:
    return {
        name: account(services, root, name, role)
        for name, role in [("ann", "requester"), ("bo", "operator"), ("cy", "operator")]
    }


@pytest.fixture
def instance_id(services: Services, root: Principal, people: dict[str, Principal]) -> str:
    """Ann's instance, reviewed by bo and cy (named as accounts)."""
    definition_id = definition(services, root, "named", {"accounts": ["bo", "cy"]})
    view, _ = services.approvals.submit(
        people["ann"], Submission("s1", definition_id, "Ann's", {}, 1, None)
    )
    return view.id


def send(services: Services, who: Principal, instance_id: str, kind: str, **payload: Any) -> Any:
    command_id = payload.pop("command_id", f"{who.account_id}-{kind}")
    return services.approvals.command(who, instance_id, Command(kind, command_id, payload))


def test_the_task_goes_to_the_named_reviewers_only(
    services: Services, people: dict[str, Principal], instance_id: str, root: Principal
) -> None:
    instance = services.approvals.instance(root.tenant_id, instance_id)
    assert instance.task().candidates == ("bo", "cy")
    assert instance.task().assignee_id is None


def test_an_operator_who_is_no_reviewer_is_refused_and_the_refusal_is_recorded(
    services: Services, root: Principal, people: dict[str, Principal], instance_id: str
) -> None:
    dee = account(services, root, "dee", "operator")
    with pytest.raises(NotAReviewer):
        send(services, dee, instance_id, APPROVE, material_version=1)
    last = services.approvals.timeline(root.tenant_id, instance_id)[-1]
    assert (last.outcome, last.reason_code) == ("FORBIDDEN", "NOT_A_REVIEWER")
    assert services.approvals.instance(root.tenant_id, instance_id).state == "WAITING_REVIEW"


def test_a_claim_keeps_everyone_but_the_assignee_from_deciding(
    services: Services, root: Principal, people: dict[str, Principal], instance_id: str
) -> None:
    claimed = send(services, people["bo"], instance_id, CLAIM)
    assert claimed.outcome == "CLAIMED"
    assert claimed.instance.version > 1
    taken = send(services, people["cy"], instance_id, APPROVE, material_version=1)
    assert (taken.outcome, taken.reason_params) == ("CLAIMED_BY_OTHER", {"assignee": "bo"})
    assert not taken.accepted
    again = send(services, people["cy"], instance_id, APPROVE, material_version=1)
    assert not again.replayed  # a refusal never takes the command id
    rejected = send(
        services, people["bo"], instance_id, REJECT, material_version=1, comment="材料不全"
    )
    assert (rejected.outcome, rejected.state) == ("REJECTED", "REJECTED")
    instance = services.approvals.instance(root.tenant_id, instance_id)
    assert instance.comments[0]["author"] == "bo"
    assert instance.comments[0]["text"] == "材料不全"
    assert instance.task().state == "CLOSED"
    late = send(services, people["bo"], instance_id, APPROVE, material_version=1)
    assert (late.outcome, late.state) == ("CONFLICT", "REJECTED")


def test_the_assignee_unclaims_and_reassigns_only_to_an_eligible_reviewer(
    services: Services, root: Principal, people: dict[str, Principal], instance_id: str
) -> None:
    send(services, people["bo"], instance_id, CLAIM)
    with pytest.raises(ValidationFailed) as refused:
        send(services, people["bo"], instance_id, REASSIGN, assignee_id="ann", reason="x")
    assert "assignee_id" in refused.value.errors
    moved = send(
        services,
        people["bo"],
        instance_id,
        REASSIGN,
        assignee_id="cy",
        reason="休假",
        command_id="r2",
    )
    assert moved.outcome == "REASSIGNED"
    assert services.approvals.instance(root.tenant_id, instance_id).task().assignee_id == "cy"
    released = send(services, people["cy"], instance_id, UNCLAIM)
    assert released.outcome == "UNCLAIMED"
    assert services.approvals.instance(root.tenant_id, instance_id).task().state == "OPEN"


def test_the_applicant_comments_and_withdraws_as_before(
    services: Services, root: Principal, people: dict[str, Principal], instance_id: str
) -> None:
    noted = send(services, people["ann"], instance_id, COMMENT, comment="补充了附件")
    assert (noted.outcome, noted.state) == ("COMMENTED", "WAITING_REVIEW")
    withdrawn = send(services, people["ann"], instance_id, WITHDRAW)
    assert withdrawn.state == "WITHDRAWN"


def test_reviewers_by_role_admit_the_role_and_are_recorded(
    services: Services, root: Principal, people: dict[str, Principal]
) -> None:
    definition_id = definition(services, root, "by-role", {"roles": ["operator"]})
    view, _ = services.approvals.submit(
        people["ann"], Submission("s2", definition_id, "Ann's", {}, 1, None)
    )
    approved = send(services, people["cy"], view.id, APPROVE, material_version=1)
    assert approved.state == "APPROVED"
    last = services.approvals.timeline(root.tenant_id, view.id)[-1]
    assert last.type == "ApprovalInstance.Approved"


def test_twenty_reviewers_claiming_at_once_give_one_assignee(
    services: Services, root: Principal, people: dict[str, Principal]
) -> None:
    claimers = [account(services, root, f"op{n}", "operator") for n in range(20)]
    definition_id = definition(services, root, "crowd", {"roles": ["operator"]})
    view, _ = services.approvals.submit(
        people["ann"], Submission("s3", definition_id, "Ann's", {}, 1, None)
    )

    def claim(who: Principal) -> CommandResult:
        result: CommandResult = send(services, who, view.id, CLAIM)
        return result

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(claim, claimers))
    winners = [who.account_id for who, r in zip(claimers, results, strict=True) if r.accepted]
    assert len(winners) == 1
    assert {r.outcome for r in results} == {"CLAIMED", "CLAIMED_BY_OTHER"}
    holder = services.approvals.instance(root.tenant_id, view.id).task().assignee_id
    assert holder == winners[0]


def test_reviewers_that_leave_nobody_eligible_refuse_the_submission(
    services: Services, root: Principal, people: dict[str, Principal]
) -> None:
    definition_id = definition(services, root, "only-ann", {"accounts": ["ann"]})
    with pytest.raises(NoEligibleReviewer):
        services.approvals.submit(
            people["ann"], Submission("s4", definition_id, "Ann's", {}, 1, None)
        )


def test_a_definition_must_name_known_reviewers(services: Services, root: Principal) -> None:
    with pytest.raises(ValidationFailed) as refused:
        definition(services, root, "nobody", {"accounts": ["ghost"], "roles": []})
    assert "reviewers.accounts" in refused.value.errors
    with pytest.raises(ValidationFailed) as empty:
        definition(services, root, "empty", {"accounts": []})
    assert "reviewers" in empty.value.errors


def test_a_launched_instance_goes_to_the_reviewers_of_its_revision(
    services: Services, clock: FakeClock
) -> None:
    world = World(services, clock, reviewers={"roles": ["operator"]})
    account(services, world.root, "bo", "operator")
    run_id = world.run_now()
    Worker.of(services).poll()
    assert world.run(run_id).status == "SUCCEEDED"
    (instance,) = world.instances()
    assert instance.task().candidates == ("bo", REVIEWER)


def test_a_launch_whose_reviewers_leave_nobody_fails_and_retries(
    services: Services, clock: FakeClock
) -> None:
    world = World(services, clock, reviewers={"accounts": ["ann"]})  # the initiator
    run_id = world.run_now()
    Worker.of(services).poll()
    run = world.run(run_id)
    assert (run.status, run.error_code) == ("RETRY_WAIT", "NO_ELIGIBLE_REVIEWER")
    assert world.instances() == []


@pytest.mark.parametrize("change", ["deactivated", "no longer an operator"])
def test_a_task_whose_assignee_may_no_longer_decide_goes_back_to_its_candidates(
    services: Services, root: Principal, people: dict[str, Principal], instance_id: str, change: str
) -> None:
    send(services, people["bo"], instance_id, CLAIM)
    if change == "deactivated":
        services.directory.set_active(root, "bo", False, None)
    else:
        version = services.directory.account(root.tenant_id, "bo").version
        services.directory.update_account(root, "bo", "Bo", ["requester"], version)
    services.approvals.sweep()
    instance = services.approvals.instance(root.tenant_id, instance_id)
    assert (instance.task().state, instance.task().assignee_id) == ("OPEN", None)
    last = services.approvals.timeline(root.tenant_id, instance_id)[-1]
    assert (last.type, last.actor) == ("ApprovalInstance.TaskReleased", "system:sweeper")
    services.approvals.sweep()  # once
    assert len(services.approvals.timeline(root.tenant_id, instance_id)) == 3
    claimed_by_cy = send(services, people["cy"], instance_id, CLAIM)
    assert claimed_by_cy.outcome == "CLAIMED"


def test_reject_racing_approve_and_withdraw_gives_one_decision_every_loser_recorded(
    services: Services, root: Principal, people: dict[str, Principal]
) -> None:
    definition_id = definition(services, root, "raced", {"roles": ["operator"]})
    for round_number in range(6):
        view, _ = services.approvals.submit(
            people["ann"], Submission(f"race-{round_number}", definition_id, "Ann's", {}, 1, None)
        )
        sends = [
            (
                people["bo"],
                Command(REJECT, f"r{round_number}", {"material_version": 1, "comment": "不行"}),
            ),
            (people["cy"], Command(APPROVE, f"a{round_number}", {"material_version": 1})),
            (people["ann"], Command(WITHDRAW, f"w{round_number}", {})),
        ]

        def sent(pair: tuple[Principal, Command], instance_id: str = view.id) -> CommandResult:
            return services.approvals.command(pair[0], instance_id, pair[1])

        with ThreadPoolExecutor(max_workers=3) as pool:
            results = list(pool.map(sent, sends))
        winners = [r for r in results if r.accepted]
        assert len(winners) == 1
        assert sorted(r.outcome for r in results if not r.accepted) == ["CONFLICT", "CONFLICT"]
        timeline = services.approvals.timeline(root.tenant_id, view.id)
        assert len(timeline) == 4  # the submission and the three commands
        assert services.approvals.view(root.tenant_id, view.id).state == winners[0].state
