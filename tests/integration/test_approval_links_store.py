"""Cancellation requests racing in two processes on one store, both stores: the first commit
wins, the loser is retried on what the winner left and recorded as refused, and the loser's
would-be instance is never saved (docs/approvals.md#resubmit-and-cancel)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from cronledger.application.approvals import LinkResult
from cronledger.application.directory import DefinitionFields
from cronledger.application.services import Services
from domain.approvals import Command, Submission, approval_uuid, linked_command_id
from domain.directory import Principal
from domain.errors import DomainError
from tests.support import DECIDERS, FakeClock, Opener


def _together(*calls: Callable[[], Any]) -> list[Any]:
    """Each call on its own thread, started together; what each returned or raised."""
    barrier = threading.Barrier(len(calls))
    got: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        barrier.wait()
        try:
            got[index] = calls[index]()
        except DomainError as error:
            got[index] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return got


def _approved(services: Services) -> tuple[Principal, Principal, str]:
    """An approved instance of a definition that refund instances cancel; its applicant
    `ann` and the admin `root`."""
    directory = services.directory
    root = directory.authenticate(directory.bootstrap("acme", "root").token)
    assert root is not None
    directory.create_account(root, "ann", "Ann", ["requester"])
    ann = directory.authenticate(directory.issue_token(root, "ann").token)
    assert ann is not None
    refund = directory.create_definition(
        root, "refund", DefinitionFields("Refund", False, 3600, [], reviewers=DECIDERS)
    ).id
    directory.set_published(root, refund, True, None)
    fields = DefinitionFields(
        "Order", False, 3600, [], reviewers=DECIDERS, cancellation_definition="refund"
    )
    order = directory.create_definition(root, "order", fields).id
    directory.set_published(root, order, True, None)
    instance = services.approvals.submit(ann, Submission("s-1", order, "Order", {}, 1, None))[0]
    services.approvals.command(root, instance.id, Command("approve", "a", {"material_version": 1}))
    return ann, root, instance.id


def test_two_processes_requesting_cancellation_one_wins_the_other_is_recorded(
    open_with: Opener,
) -> None:
    clock = FakeClock()
    one, two = open_with(clock), open_with(clock)
    ann, _, original = _approved(one)
    asked = {"reason": "changed my mind", "form_data": None}

    def request(services: Services, command_id: str) -> LinkResult:
        return services.approvals.link(
            ann, original, Command("request-cancellation", command_id, asked)
        )

    got = _together(lambda: request(one, "x-1"), lambda: request(two, "x-2"))
    winners = [g for g in got if g.linked is not None]
    losers = [g for g in got if g.linked is None]
    assert (len(winners), len(losers)) == (1, 1)
    (winner,), (loser,) = winners, losers
    assert loser.command.reason_code == "CANCELLATION_PENDING"
    assert loser.command.reason_params == {"instance_id": winner.linked.id}
    timeline = one.approvals.timeline(ann.tenant_id, original)
    assert [e.type for e in timeline][-2:] == [
        "ApprovalInstance.CancellationRequested",
        "ApprovalInstance.CommandRejected",
    ]
    made = {
        command_id: approval_uuid(
            ann.tenant_id, "ann", linked_command_id("request-cancellation", original, command_id)
        )
        for command_id in ("x-1", "x-2")
    }
    saved = [str(made_id) for made_id in made.values() if one.ledger.exists(made_id)]
    assert saved == [winner.linked.id]  # the loser's instance was never saved


def test_a_cancellation_decided_while_another_process_writes_the_original_settles_it(
    open_with: Opener,
) -> None:
    clock = FakeClock()
    one, two = open_with(clock), open_with(clock)
    ann, root, original = _approved(one)
    asked = {"reason": "changed my mind", "form_data": None}
    linked = one.approvals.link(ann, original, Command("request-cancellation", "x", asked))
    assert linked.linked is not None
    callback = {
        "contract_id": "C-1",
        "material_version": 1,
        "occurred_at": clock(),
        "source": "esign",
    }
    approve = Command("approve", "ok", {"material_version": 1})
    late, decided = _together(
        lambda: two.approvals.command(root, original, Command("sign", "cb", callback)),
        lambda: one.approvals.command(root, linked.linked.id, approve),
    )
    assert (late.outcome, decided.outcome) == ("LATE_OR_CONFLICT", "APPROVED")
    after = one.approvals.instance(ann.tenant_id, original)
    assert after.state == "APPROVED"
    assert after.cancellation is not None
    assert (after.cancellation["state"], after.cancellation["outcome"]) == ("CANCELLED", "APPROVED")
