"""Resubmit and request-cancellation by the one rule (docs/approvals.md#resubmit-and-cancel),
with no store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest

from domain.approvals import (
    APPROVE,
    CANCELLATION_REQUESTED,
    CONFLICT,
    FORBIDDEN,
    REJECT,
    REQUEST_CANCELLATION,
    RESUBMIT,
    RESUBMITTED,
    SWEEP,
    WITHDRAW,
    ApprovalInstance,
    Command,
    Links,
    Parties,
    approval_uuid,
    cancellation_settled_as,
    decide,
    linked_command_id,
)

DEADLINE = datetime(2026, 10, 1, 10, 0, tzinfo=UTC)
BEFORE = DEADLINE - timedelta(seconds=1)
PARTIES = Parties("sales", launched=False, schedule_saver_id=None, allow_self_approval=False)
RESUBMIT_IT = Command(RESUBMIT, "r-1", {"reason": "late", "material_version": 3})
CANCEL_IT = Command(REQUEST_CANCELLATION, "c-1", {"reason": "changed my mind"})
CANCELS_WITH = Links(new_id="new", cancellation_definition="refund")


def _decide(state: str, command: Command, links: Links, actor: str = "sales") -> Any:
    return decide(state, DEADLINE, 2, command, BEFORE, actor, PARTIES, links=links)


@pytest.mark.parametrize("state", ["WITHDRAWN", "EXPIRED", "REJECTED"])
def test_a_final_instance_but_an_approved_one_may_be_resubmitted_once(state: str) -> None:
    first = _decide(state, RESUBMIT_IT, Links(new_id="new"))
    assert (first.outcome, first.state, first.accepted) == (RESUBMITTED, state, True)
    assert first.why.params == {"instance_id": "new"}
    again = _decide(state, RESUBMIT_IT, Links(new_id="other", resubmitted_as="new"))
    assert (again.outcome, again.accepted, again.why.code) == (
        CONFLICT,
        False,
        "ALREADY_RESUBMITTED",
    )
    assert again.why.params == {"instance_id": "new"}


@pytest.mark.parametrize("state", ["WAITING_REVIEW", "APPROVED"])
def test_a_waiting_or_approved_instance_is_not_resubmitted(state: str) -> None:
    refused = _decide(state, RESUBMIT_IT, Links(new_id="new"))
    assert (refused.outcome, refused.state, refused.why.code) == (
        CONFLICT,
        state,
        "NOT_RESUBMITTABLE",
    )


def test_only_the_applicant_resubmits_or_asks_to_cancel() -> None:
    for command, code in (
        (RESUBMIT_IT, "RESUBMIT_BY_APPLICANT_ONLY"),
        (CANCEL_IT, "CANCELLATION_BY_APPLICANT_ONLY"),
    ):
        refused = _decide("APPROVED", command, CANCELS_WITH, actor="vera")
        assert (refused.outcome, refused.why.code) == (FORBIDDEN, code)


@pytest.mark.parametrize(
    ("state", "links", "outcome", "code"),
    [
        ("APPROVED", CANCELS_WITH, CANCELLATION_REQUESTED, "CANCELLATION_REQUESTED_AS"),
        ("APPROVED", Links(new_id="new"), CONFLICT, "NO_CANCELLATION_DEFINITION"),
        ("REJECTED", CANCELS_WITH, CONFLICT, "NOT_APPROVED"),
        ("WAITING_REVIEW", CANCELS_WITH, CONFLICT, "NOT_APPROVED"),
        (
            "APPROVED",
            Links("new", None, {"state": "REQUESTED", "instance_id": "c"}, "refund"),
            CONFLICT,
            "CANCELLATION_PENDING",
        ),
        (
            "APPROVED",
            Links("new", None, {"state": "CANCELLED", "instance_id": "c"}, "refund"),
            CONFLICT,
            "ALREADY_CANCELLED",
        ),
        (
            "APPROVED",
            Links("new", None, {"state": "REFUSED", "instance_id": "c"}, "refund"),
            CANCELLATION_REQUESTED,
            "CANCELLATION_REQUESTED_AS",
        ),
    ],
)
def test_the_cancellation_rule(state: str, links: Links, outcome: str, code: str) -> None:
    decision = _decide(state, CANCEL_IT, links)
    assert (decision.outcome, decision.state, decision.why.code) == (outcome, state, code)


def test_a_late_resubmit_of_a_waiting_instance_expires_it_first() -> None:
    late = decide(
        "WAITING_REVIEW", DEADLINE, 2, RESUBMIT_IT, DEADLINE, "sales", PARTIES, links=Links("n")
    )
    assert (late.outcome, late.accepted) == ("EXPIRED", False)


@pytest.mark.parametrize(
    ("linked_state", "settled"),
    [
        ("APPROVED", "CANCELLED"),
        ("REJECTED", "REFUSED"),
        ("WITHDRAWN", "REFUSED"),
        ("EXPIRED", "REFUSED"),
        ("WAITING_REVIEW", None),
    ],
)
def test_how_a_cancellation_settles(linked_state: str, settled: str | None) -> None:
    assert cancellation_settled_as(linked_state) == settled


def _instance() -> ApprovalInstance:
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
        origin=None,
        allow_self_approval=False,
        command_id="submit-1",
        fingerprint="f",
        at=DEADLINE - timedelta(days=3),
        actor="sales",
    )


def test_the_instance_records_its_links_and_replays_them() -> None:
    original = _instance()
    original.handle(Command(APPROVE, "ok", {"material_version": 2}), BEFORE, "vera")
    answer = original.handle(CANCEL_IT, BEFORE, "sales", links=CANCELS_WITH)
    assert (answer.outcome, original.state) == (CANCELLATION_REQUESTED, "APPROVED")
    assert original.cancellation is not None
    assert (original.cancellation["state"], original.cancellation["instance_id"]) == (
        "REQUESTED",
        "new",
    )
    assert not original.settle_cancellation("other", "APPROVED", BEFORE)
    assert not original.settle_cancellation("new", "WAITING_REVIEW", BEFORE)
    assert original.settle_cancellation("new", "REJECTED", BEFORE)
    assert (original.cancellation["state"], original.cancellation["outcome"]) == (
        "REFUSED",
        "REJECTED",
    )
    events = original.collect_events()
    replayed = None
    for stored in events:
        replayed = stored.mutate(replayed)  # type: ignore[arg-type]
    assert isinstance(replayed, ApprovalInstance)
    assert replayed.cancellation == original.cancellation
    assert replayed.state == "APPROVED"
    assert [type(e).__name__ for e in events][-2:] == [
        "CancellationRequested",
        "CancellationSettled",
    ]


def test_a_resubmitted_instance_keeps_its_state_and_names_the_new_one() -> None:
    original = _instance()
    original.handle(Command(WITHDRAW, "w", {}), BEFORE, "sales")
    original.handle(RESUBMIT_IT, BEFORE, "sales", links=Links(new_id="new"))
    assert (original.state, original.resubmitted_as) == ("WITHDRAWN", "new")
    original.handle(Command(SWEEP, None), DEADLINE, "system:sweeper")
    original.handle(Command(REJECT, "x", {"material_version": 2}), BEFORE, "vera")
    assert original.state == "WITHDRAWN"


def test_the_new_instance_id_follows_from_the_command() -> None:
    tenant, original = uuid4(), uuid4()
    one = linked_command_id(RESUBMIT, original, "r-1")
    assert one == linked_command_id(RESUBMIT, str(original), "r-1")
    assert approval_uuid(tenant, "sales", one) == approval_uuid(tenant, "sales", one)
    assert one != linked_command_id(REQUEST_CANCELLATION, original, "r-1")
