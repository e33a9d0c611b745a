"""Approval instances against real stores: races, the sweeper, idempotency."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from cronledger.application.approvals import CommandResult
from cronledger.application.directory import DefinitionFields
from cronledger.application.services import Services
from domain.approvals import APPROVE, WITHDRAW, Command, Submission
from domain.directory import Principal
from domain.permissions import ROLES
from projections.approvals import ApprovalFilter
from projections.keyset import Window
from tests.support import DECIDERS, FakeClock


@pytest.fixture
def root(services: Services) -> Principal:
    principal = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    assert principal is not None
    return principal


@pytest.fixture
def reviewer(services: Services, root: Principal) -> Principal:
    """Approves what root submits: nobody approves their own instance."""
    services.directory.create_account(root, "rev", "Reviewer", ["operator"])
    return Principal(root.tenant_id, "rev", ROLES["operator"])


def sender(root: Principal, reviewer: Principal, command: Command) -> Principal:
    return reviewer if command.kind == APPROVE else root


@pytest.fixture
def definition_id(services: Services, root: Principal, reviewer: Principal) -> str:
    created = services.directory.create_definition(
        root,
        "onboarding",
        DefinitionFields("Onboarding", False, 3600, [], reviewers=DECIDERS),
    )
    services.directory.set_published(root, created.id, True, None)
    return created.id


def submit(
    services: Services,
    root: Principal,
    definition_id: str,
    key: str,
    deadline: datetime | None = None,
) -> str:
    view, _ = services.approvals.submit(
        root, Submission(key, definition_id, f"Instance {key}", {}, 1, deadline)
    )
    return view.id


def test_sweeper_down_two_hours_expires_everything_due_with_both_times(
    services: Services, root: Principal, definition_id: str, clock: FakeClock
) -> None:
    start = clock.now
    deadlines = [start + timedelta(minutes=m) for m in (10, 30, 60, 119)]
    due = [submit(services, root, definition_id, f"k{i}", d) for i, d in enumerate(deadlines)]
    not_yet = submit(services, root, definition_id, "later", start + timedelta(hours=3))
    clock.advance(2 * 3600)
    backlog = services.approvals.backlog(root.tenant_id)
    assert (
        backlog["expired_unswept_approvals"],
        backlog["oldest_expired_unswept_lag_seconds"],
    ) == (4, 110 * 60.0)
    assert services.approvals.sweep() == 4
    sweep_time = clock.now
    for instance_id, deadline in zip(due, deadlines, strict=True):
        expired = services.approvals.timeline(root.tenant_id, instance_id)[-1]
        assert (expired.type, expired.at, expired.actor) == (
            "ApprovalInstance.Expired",
            sweep_time,
            "system:sweeper",
        )
        assert deadline.isoformat() in (expired.reason or "")
        assert services.approvals.view(root.tenant_id, instance_id).state == "EXPIRED"
    assert services.approvals.view(root.tenant_id, not_yet).state == "WAITING_REVIEW"
    lags = services.store.query(
        "SELECT expiry_lag_seconds FROM approvals WHERE state = 'EXPIRED' "
        "ORDER BY expiry_lag_seconds"
    )
    assert [row[0] for row in lags] == [60.0, 3600.0, 5400.0, 6600.0]
    assert services.approvals.sweep() == 0
    assert services.approvals.backlog(root.tenant_id)["expired_unswept_approvals"] == 0


def test_sweepers_running_together_expire_each_instance_once(
    services: Services, root: Principal, definition_id: str, clock: FakeClock
) -> None:
    ids = [
        submit(services, root, definition_id, f"k{i}", clock.now + timedelta(minutes=1))
        for i in range(30)
    ]
    clock.advance(120)
    with ThreadPoolExecutor(max_workers=4) as pool:
        expired = sum(pool.map(lambda _: services.approvals.sweep(), range(4)))
    assert expired == 30
    for instance_id in ids:
        types = [e.type for e in services.approvals.timeline(root.tenant_id, instance_id)]
        assert types.count("ApprovalInstance.Expired") == 1


def test_approve_and_withdraw_racing_give_exactly_one_decision(
    services: Services, root: Principal, reviewer: Principal, definition_id: str
) -> None:
    for round_number in range(8):
        instance_id = submit(services, root, definition_id, f"race-{round_number}")
        commands = [
            Command(APPROVE, f"a{round_number}", {"material_version": 1}),
            Command(WITHDRAW, f"w{round_number}", {}),
        ]

        def send(command: Command, instance_id: str = instance_id) -> CommandResult:
            return services.approvals.command(sender(root, reviewer, command), instance_id, command)

        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(send, commands))
        winners = [r for r in results if r.accepted]
        losers = [r for r in results if not r.accepted]
        assert len(winners) == 1
        assert len(losers) == 1
        assert losers[0].outcome == "CONFLICT"
        timeline = services.approvals.timeline(root.tenant_id, instance_id)
        assert sorted(e.outcome or "" for e in timeline[1:]) == sorted(
            [winners[0].outcome, "CONFLICT"]
        )
        assert services.approvals.view(root.tenant_id, instance_id).state == winners[0].state


def test_many_threads_on_one_instance_one_decision_every_loser_recorded(
    services: Services, root: Principal, reviewer: Principal, definition_id: str
) -> None:
    instance_id = submit(services, root, definition_id, "crowd")
    commands = [Command(APPROVE, f"a{i}", {"material_version": 1}) for i in range(6)] + [
        Command(WITHDRAW, f"w{i}", {}) for i in range(6)
    ]
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(
            pool.map(
                lambda c: services.approvals.command(sender(root, reviewer, c), instance_id, c),
                commands,
            )
        )
    assert sum(r.accepted for r in results) == 1
    timeline = services.approvals.timeline(root.tenant_id, instance_id)[1:]
    assert len(timeline) == 12
    assert sum(e.outcome == "CONFLICT" for e in timeline) == 11


def test_a_repeated_submission_finds_the_first_instance(
    services: Services, root: Principal, definition_id: str
) -> None:
    submission = Submission("once", definition_id, "T", {"a": 1}, 1, None)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: services.approvals.submit(root, submission), range(4)))
    assert len({view.id for view, _ in results}) == 1
    assert sorted(replayed for _, replayed in results) == [False, True, True, True]
    page = services.approvals.list_page(root.tenant_id, ApprovalFilter(), Window())
    assert page.total == 1


def test_deadline_from_the_definitions_review_window(
    services: Services, root: Principal, definition_id: str, clock: FakeClock
) -> None:
    view, _ = services.approvals.submit(root, Submission("w", definition_id, "T", {}, 1, None))
    assert view.review_deadline_at == clock.now + timedelta(hours=1)
    assert view.deadline_policy == {
        "source": "definition",
        "review_window_seconds": 3600,
        "definition_revision": 1,
        "rule_version": 1,
    }


def test_list_filters_by_state_newest_first(
    services: Services, root: Principal, definition_id: str, clock: FakeClock
) -> None:
    first = submit(services, root, definition_id, "first")
    clock.advance(1)
    second = submit(services, root, definition_id, "second")
    services.approvals.command(root, first, Command(WITHDRAW, "w", {}))
    everything = services.approvals.list_page(root.tenant_id, ApprovalFilter(), Window())
    assert [v.id for v in everything.items] == [second, first]
    withdrawn = services.approvals.list_page(root.tenant_id, ApprovalFilter("WITHDRAWN"), Window())
    assert [v.id for v in withdrawn.items] == [first]
    assert datetime(2026, 10, 1, tzinfo=UTC) < everything.items[0].submitted_at
