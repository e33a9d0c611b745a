"""Properties of the approval rule (domain/approvals.py; docs/approvals.md): random
interleavings of approve, withdraw, extend-deadline, signing callbacks, sweeps, repeated
command ids and clock steps (landing exactly on the deadline too) against one
ApprovalInstance: at most one decision, a terminal state never changes, the deadline is
inclusive, and every command is recorded, accepted or rejected (a sweep that finds nothing
due records nothing; a repeated command id replays its first answer and records nothing,
but for a refused caller's, which is decided anew)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cronledger.application.directory import DefinitionFields
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from domain.approvals import (
    APPROVE,
    EXTEND,
    SIGN,
    SWEEP,
    TERMINAL,
    WITHDRAW,
    Answer,
    ApprovalInstance,
    Command,
    Submission,
)
from domain.directory import Principal
from domain.errors import Forbidden, ValidationFailed
from domain.permissions import ROLES
from domain.values import FormData
from tests.support import DECIDERS, FakeClock

PROFILE = settings(
    derandomize=True,
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
DEADLINE = datetime(2026, 10, 1, 10, 0, tzinfo=UTC)
SUBMITTED = DEADLINE - timedelta(hours=2)
DECISIONS = ("Approved", "Withdrawn", "Expired")


def instance() -> ApprovalInstance:
    return ApprovalInstance(
        tenant_id=uuid4(),
        definition_id="d",
        applicant_id="sales",
        title="Open account",
        form_data=FormData.of({}),
        material_version=2,
        review_deadline_at=DEADLINE,
        review_deadline_offset_minutes=None,
        deadline_policy={"source": "explicit"},
        origin=None,
        allow_self_approval=False,
        command_id="submit-1",
        fingerprint="f",
        at=SUBMITTED,
        actor="sales",
    )


steps = st.lists(
    st.one_of(
        st.tuples(st.just("step"), st.sampled_from([1, 59, 600, 1800, 3600, -1])),
        st.tuples(st.just("to_deadline"), st.sampled_from([-1, 0, 1])),
        st.tuples(st.just(APPROVE), st.sampled_from(["ops", "sales"]), st.sampled_from([1, 2])),
        st.tuples(st.just(WITHDRAW), st.sampled_from(["sales", "ops"]), st.sampled_from([None, 2])),
        st.tuples(st.just(EXTEND), st.sampled_from([-600, 0, 1, 3600, 86_400 * 31])),
        st.tuples(st.just(SIGN), st.sampled_from(["c-1", "c-2"]), st.sampled_from([1, 2])),
        st.tuples(st.just(SWEEP)),
        st.tuples(st.just("repeat"), st.integers(0, 30)),
    ),
    min_size=1,
    max_size=30,
)


def command_of(step: tuple[Any, ...], number: int, deadline: datetime, now: datetime) -> Command:
    kind, command_id = step[0], f"c-{number}"
    if kind == APPROVE:
        return Command(APPROVE, command_id, {"material_version": step[2]})
    if kind == WITHDRAW:
        payload = {} if step[2] is None else {"material_version": step[2]}
        return Command(WITHDRAW, command_id, payload)
    if kind == EXTEND:
        new = deadline + timedelta(seconds=step[1])
        return Command(EXTEND, command_id, {"new_deadline_at": new, "reason": "asked"})
    if kind == SIGN:
        payload = {"contract_id": step[1], "material_version": step[2], "occurred_at": now}
        return Command(SIGN, command_id, {**payload, "source": "esign"})
    return Command(SWEEP, None)


def actor_of(step: tuple[Any, ...]) -> str:
    if step[0] in (APPROVE, WITHDRAW):
        return str(step[1])
    return {EXTEND: "ops", SIGN: "system:callback", SWEEP: "system:sweeper"}[step[0]]


@PROFILE
@given(steps)
def test_random_interleavings_keep_the_approval_rule(steps: list[tuple[Any, ...]]) -> None:
    subject = instance()
    now = SUBMITTED
    sent: list[tuple[Command, str, Answer]] = []  # every command with a command id, and its answer
    for number, step in enumerate(steps):
        if step[0] == "step":  # the clock moves, also backwards a second
            now += timedelta(seconds=step[1])
            continue
        if step[0] == "to_deadline":  # a second before, exactly at, a second after
            now = subject.review_deadline_at + timedelta(seconds=step[1])
            continue
        if step[0] == "repeat":
            if sent:
                command, actor, first = sent[step[1] % len(sent)]
                before = len(subject.pending_events)
                # a refused caller's command is decided anew each time, never replayed
                expected = None if first.outcome == "FORBIDDEN" else first
                assert subject.answer_to(command, actor) == expected
                assert len(subject.pending_events) == before, "a repeat recorded something"
            continue
        state, deadline = subject.state, subject.review_deadline_at
        decided_at = subject.decided_at
        before = len(subject.pending_events)
        command, actor = command_of(step, number, deadline, now), actor_of(step)
        answer = subject.handle(command, now, actor)
        new = subject.pending_events[before:]
        names = [type(e).__name__ for e in new]
        if command.command_id is not None:
            sent.append((command, actor, answer))
        # the deadline is inclusive: a waiting instance at or after it expires, whatever came
        forbidden = command.kind == WITHDRAW and actor != "sales"
        if state == "WAITING_REVIEW" and now >= deadline and not forbidden:
            assert answer.outcome == "EXPIRED"
            assert subject.state == "EXPIRED"
            assert subject.decided_at == now
        if state in TERMINAL:  # terminal states never change
            assert (subject.state, subject.decided_at) == (state, decided_at)
            assert not answer.accepted or command.kind == SWEEP
        if subject.state in ("APPROVED", "WITHDRAWN"):
            assert subject.decided_at is not None
            assert subject.decided_at < subject.review_deadline_at
        # every command is recorded, accepted or rejected; a sweep with nothing due is not
        if command.kind == SWEEP and answer.outcome == "NOT_DUE":
            assert new == []
        else:
            assert new, f"{command.kind} at {now} was not recorded"
            last = new[-1]
            assert (last.command, last.command_id, last.accepted) == (  # type: ignore[attr-defined]
                command.kind,
                command.command_id,
                answer.accepted,
            )
            assert all(name in (*DECISIONS, "CommandRejected") for name in names[:-1])
    events = subject.pending_events
    decisions = [e for e in events if type(e).__name__ in DECISIONS]
    assert len(decisions) <= 1, "more than one decision"
    assert (subject.state in TERMINAL) == (len(decisions) == 1)
    event(f"ended {subject.state}")


# ---------------------------------------------------------------------------------------------
# The same rule through the application service, on both stores: one instance per example


SERVICE_PROFILE = settings(
    derandomize=True,
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
service_steps = st.lists(
    st.one_of(
        st.tuples(st.just("step"), st.sampled_from([1, 600, 3600, -3600])),
        st.tuples(st.just("to_deadline"), st.sampled_from([-1, 0])),
        st.tuples(st.just(APPROVE), st.sampled_from(["rev", "root"]), st.sampled_from([1, 2])),
        st.tuples(st.just(WITHDRAW), st.sampled_from(["root", "rev"]), st.just(None)),
        st.tuples(st.just(EXTEND), st.sampled_from([-600, 1, 3600])),
        st.tuples(st.just(SWEEP)),
        st.tuples(st.just("repeat"), st.integers(0, 10)),
    ),
    min_size=1,
    max_size=12,
)


@pytest.fixture
def approval_world(
    store_url: str,
) -> Iterator[tuple[Services, FakeClock, dict[str, Principal], str]]:
    clock = FakeClock(SUBMITTED)
    services = open_services(Settings(database_url=store_url), clock)
    root = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    assert root is not None
    services.directory.create_account(root, "rev", "Reviewer", ["operator"])
    definition = services.directory.create_definition(
        root,
        "onboarding",
        DefinitionFields("Onboarding", False, 3600, [], reviewers=DECIDERS),
    )
    services.directory.set_published(root, definition.id, True, None)
    people = {"root": root, "rev": Principal(root.tenant_id, "rev", ROLES["operator"])}
    yield services, clock, people, definition.id
    services.close()


@SERVICE_PROFILE
@given(steps=service_steps)
def test_random_interleavings_through_the_service_keep_the_rule_and_the_timeline(
    approval_world: tuple[Services, FakeClock, dict[str, Principal], str],
    steps: list[tuple[Any, ...]],
) -> None:
    services, clock, people, definition_id = approval_world
    clock.now = SUBMITTED
    key = uuid4().hex
    instance_id = services.approvals.submit(
        people["root"], Submission(key, definition_id, key, {}, 2, DEADLINE)
    )[0].id
    tenant = people["root"].tenant_id
    sent: list[tuple[Command, str, str]] = []  # command, actor, first outcome
    terminal: tuple[str, Any] | None = None
    for number, step in enumerate(steps):
        if step[0] == "step":
            clock.now += timedelta(seconds=step[1])
            continue
        if step[0] == "to_deadline":
            deadline = services.approvals.view(tenant, instance_id).review_deadline_at
            clock.now = deadline + timedelta(seconds=step[1])
            continue
        if step[0] == SWEEP:
            services.approvals.sweep()
        elif step[0] == "repeat":
            if not sent:
                continue
            command, actor, outcome = sent[step[1] % len(sent)]
            if outcome == "RULE_BROKEN":  # replayed: the same problem again
                with pytest.raises(ValidationFailed):
                    services.approvals.command(people[actor], instance_id, command)
            elif outcome != "FORBIDDEN":  # a refused caller's command is decided anew
                again = services.approvals.command(people[actor], instance_id, command)
                assert (again.outcome, again.replayed) == (outcome, True)
        else:
            deadline = services.approvals.view(tenant, instance_id).review_deadline_at
            command = command_of(step, number, deadline, clock.now)
            command = Command(command.kind, f"{key}-{number}", command.payload)
            actor = str(step[1]) if step[0] in (APPROVE, WITHDRAW) else "rev"
            try:
                result = services.approvals.command(people[actor], instance_id, command)
                outcome = result.outcome
            except (Forbidden, ValidationFailed) as refused:
                outcome = "FORBIDDEN" if isinstance(refused, Forbidden) else "RULE_BROKEN"
            # Only the reviewer's withdrawal is forbidden (only the applicant withdraws), and
            # only an extension to an earlier deadline breaks its rule: no other refusal.
            assert (outcome == "FORBIDDEN") == (step[0] == WITHDRAW and actor == "rev"), step
            assert outcome != "RULE_BROKEN" or (step[0] == EXTEND and step[1] < 0), step
            sent.append((command, actor, outcome))
        view = services.approvals.view(tenant, instance_id)
        if terminal is not None:  # a terminal state never changes
            assert (view.state, view.decided_at) == terminal
        elif view.state in TERMINAL:
            terminal = (view.state, view.decided_at)
    timeline = services.approvals.timeline(tenant, instance_id)
    decisions = [e for e in timeline if e.type.split(".")[-1] in DECISIONS]
    assert len(decisions) <= 1, "more than one decision"
    recorded = Counter(str(e.command_id) for e in timeline if e.command_id is not None)
    for command, _, _ in sent:  # every command recorded; a repeat once, a refusal each time
        assert recorded[str(command.command_id)] >= 1, f"{command} is not in the timeline"
    firsts = {str(c.command_id) for c, _, outcome in sent if outcome != "FORBIDDEN"}
    assert all(recorded[command_id] == 1 for command_id in firsts)
