"""Attempts on a run with no store: backoff, dead letter, leases, manual retry and cancel."""

from __future__ import annotations

from datetime import timedelta

import pytest

from domain.directory import Account, Definition
from domain.errors import InvalidState
from domain.launch import LaunchFailed, checked_launch
from domain.runs import LeaseLost, Run
from tests.unit.helpers import LEASE, POLICY, T0, account, definition, new_run

BROKEN = LaunchFailed("INITIATOR_INACTIVE", "initiator ann is inactive", params={"subject": "ann"})


def fail_until_stopped(run: Run) -> list[float]:
    """Claim and fail every attempt as soon as it is due; the seconds after T0 of each."""
    started: list[float] = []
    while run.next_attempt_at is not None:
        at = run.next_attempt_at
        number = run.claim("w1", at, LEASE)
        started.append((at - T0).total_seconds())
        run.fail(number, "w1", BROKEN, POLICY, at)
    return started


def test_failing_launch_retries_with_doubling_waits_then_dead_letters() -> None:
    run = new_run()
    assert fail_until_stopped(run) == [0, 30, 90, 210, 450]
    assert run.status == "DEAD_LETTER"
    assert not run.is_due(T0 + timedelta(days=1))
    assert run.last_error == {
        "code": "INITIATOR_INACTIVE",
        "message": "initiator ann is inactive",
        "params": {"subject": "ann"},
    }
    assert [a["outcome"] for a in run.attempts] == ["FAILED"] * 5


def test_a_permanent_failure_stops_at_failed() -> None:
    run = new_run()
    number = run.claim("w1", T0, LEASE)
    run.fail(number, "w1", LaunchFailed("DEFINITION_NOT_FOUND", "gone", True), POLICY, T0)
    assert (run.status, run.next_attempt_at, run.finished_at) == ("FAILED", None, T0)


def test_manual_retry_starts_a_new_round_on_the_same_run() -> None:
    run = new_run()
    fail_until_stopped(run)
    later = T0 + timedelta(hours=1)
    run.retry(later, "ops")
    assert (run.status, run.next_attempt_at, run.finished_at) == ("PENDING", later, None)
    number = run.claim("w1", later, LEASE)
    assert number == 6
    run.succeed(number, "w1", "instance-1", later)
    assert (run.status, run.instance_id, len(run.attempts)) == ("SUCCEEDED", "instance-1", 6)
    assert (run.last_error, run.error_code) == (None, None)


def test_retry_and_cancel_only_from_their_states() -> None:
    run = new_run()
    with pytest.raises(InvalidState, match="only FAILED, DEAD_LETTER or CANCELLED"):
        run.retry(T0, "ops")
    run.cancel(T0, "ops")
    assert run.status == "CANCELLED"
    assert not run.is_due(T0 + timedelta(days=1))
    with pytest.raises(InvalidState, match="only PENDING or RETRY_WAIT"):
        run.cancel(T0, "ops")
    run.retry(T0, "ops")
    run.succeed(run.claim("w1", T0, LEASE), "w1", "i", T0)
    with pytest.raises(InvalidState):
        run.cancel(T0, "ops")


def test_an_attempt_is_claimed_once_until_its_lease_runs_out() -> None:
    run = new_run()
    first = run.claim("w1", T0, LEASE)
    with pytest.raises(InvalidState, match="not due"):
        run.claim("w2", T0 + LEASE - timedelta(seconds=1), LEASE)
    second = run.claim("w2", T0 + LEASE, LEASE)
    assert (first, second) == (1, 2)
    assert run.attempts[0]["outcome"] == "INTERRUPTED"
    assert run.holds(2, "w2")
    assert not run.holds(1, "w1")
    with pytest.raises(LeaseLost):
        run.succeed(1, "w1", "late-instance", T0 + LEASE)
    run.succeed(2, "w2", "instance", T0 + LEASE)
    assert run.instance_id == "instance"


def test_interrupted_last_attempt_dead_letters() -> None:
    run = new_run()
    at = T0
    for _ in range(5):
        run.claim("w", at, LEASE)
        at += LEASE
    assert run.is_due(at)
    assert run.claim("w", at, LEASE) == 0
    assert run.status == "DEAD_LETTER"
    assert [a["outcome"] for a in run.attempts] == ["INTERRUPTED"] * 5


def test_the_instance_carries_the_frozen_values_and_its_origin() -> None:
    run = new_run()
    definition = Definition(
        tenant_id=run.tenant_id,
        key="daily",
        name="Daily",
        external=False,
        review_window_seconds=600,
        schedule_presets=[],
        allow_self_approval=False,
        at=T0,
        actor="root",
    )
    definition.publish(T0, "root")
    instance = run.approval(definition, T0)
    assert instance.id == run.instance_id_to_launch
    assert (instance.applicant_id, instance.title, instance.form_data) == (
        "ann",
        "Daily 2026-10-01",
        {"n": 1},
    )
    assert instance.review_deadline_at == T0 + timedelta(seconds=600)
    assert instance.origin is not None
    assert instance.origin["fire_id"] == instance.origin["run_id"] == str(run.id)
    assert (instance.origin["source"], instance.origin["trigger_kind"]) == ("manual", "cron")
    assert (instance.origin["definition_revision"], instance.origin["definition_name"]) == (
        1,
        "Daily",
    )
    assert (instance.origin["saved_by"], instance.allow_self_approval) == ("ops", False)


@pytest.mark.parametrize(
    ("initiator", "target", "saver", "code", "permanent"),
    [
        (None, definition(), account(), "INITIATOR_NOT_FOUND", True),
        (account(active=False), definition(), account(), "INITIATOR_INACTIVE", False),
        (account(roles=("operator",)), definition(), account(), "INITIATOR_NOT_PERMITTED", False),
        (account(), None, account(), "DEFINITION_NOT_FOUND", True),
        (account(), definition(published=False), account(), "DEFINITION_UNPUBLISHED", False),
        (account(), definition(external=True), account(), "DEFINITION_EXTERNAL", False),
        (account(), definition(), account(active=False), "SAVER_INACTIVE", False),
        (account(), definition(), account(roles=("requester",)), "SAVER_NOT_PERMITTED", False),
    ],
)
def test_each_launch_check_has_its_stable_code(
    initiator: Account | None,
    target: Definition | None,
    saver: Account | None,
    code: str,
    permanent: bool,
) -> None:
    with pytest.raises(LaunchFailed) as caught:
        checked_launch(initiator, target, saver)
    assert (caught.value.code, caught.value.permanent) == (code, permanent)


def test_launch_checks_pass_for_an_active_initiator_and_a_published_definition() -> None:
    initiator, target = account(), definition()
    assert checked_launch(initiator, target, account()) == (initiator, target)


def test_a_snapshot_before_version_4_forgets_the_error_of_a_run_that_succeeded() -> None:
    succeeded = {"status": "SUCCEEDED", "last_error": {"code": "INITIATOR_INACTIVE"}}
    failed = {"status": "DEAD_LETTER", "last_error": {"code": "INITIATOR_INACTIVE"}}
    Run.upcast_v3_v4(succeeded)
    Run.upcast_v3_v4(failed)
    assert (succeeded["last_error"], failed["last_error"]) == (None, {"code": "INITIATOR_INACTIVE"})
