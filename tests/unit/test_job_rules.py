"""The built-in jobs' rules (domain/jobs.py): a closed set of kinds, each with its params and
timeout range, every fault of a target named at once; a run freezes a job's kind and timeout
but never its params, and records a job's success with its result and no instance."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from uuid import uuid4

import pytest

from domain.errors import ValidationFailed
from domain.jobs import (
    AUDIT_BROKEN,
    JOB_TIMEOUT,
    checked_target,
    job_failed,
    run_target,
    target_problems,
)
from domain.runs import SUCCEEDED, Run
from domain.schedules import Schedule, checked_settings
from tests.support import stored_at_version
from tests.unit.helpers import LEASE, POLICY, SETTINGS, T0, new_run

JOB = replace(
    SETTINGS,
    definition_id="",
    initiator_id="",
    title_template="",
    form_data={},
    target={"kind": "audit.verify"},
)


def test_an_unknown_kind_is_named_with_the_kinds_there_are() -> None:
    problems = target_problems({"kind": "shell.exec", "params": {"command": "rm -rf /"}})
    assert list(problems) == ["target.kind"]
    assert "audit.verify" in problems["target.kind"][0]


def test_every_bad_param_and_the_timeout_are_named_at_once() -> None:
    target = {
        "kind": "audit.verify",
        "params": {"full": "yes", "since": 3},
        "timeout_seconds": 30,
        "url": "https://example.com",
    }
    assert sorted(target_problems(target)) == [
        "target.params.full",
        "target.params.since",
        "target.timeout_seconds",
        "target.url",
    ]


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({"kind": "webhook.ping"}, "target.params.webhook_id"),
        ({"kind": "webhook.ping", "params": {"webhook_id": ""}}, "target.params.webhook_id"),
        ({"kind": "webhook.ping", "params": {"webhook_id": "x" * 65}}, "target.params.webhook_id"),
        ({"kind": "system.health_check", "params": {"deep": True}}, "target.params.deep"),
        ({"kind": "audit.checkpoint", "params": []}, "target.params"),
        ({"kind": "audit.checkpoint", "timeout_seconds": 0}, "target.timeout_seconds"),
        ({"kind": "audit.checkpoint", "timeout_seconds": True}, "target.timeout_seconds"),
        ({"kind": "audit.checkpoint", "timeout_seconds": 2.5}, "target.timeout_seconds"),
        ({"kind": "approval", "params": {"full": True}}, "target.params"),
        ({"kind": "approval", "timeout_seconds": 5}, "target.timeout_seconds"),
    ],
)
def test_each_fault_is_named_by_its_field(target: dict[str, Any], field: str) -> None:
    assert list(target_problems(target)) == [field]


def test_a_full_verify_may_take_up_to_ten_minutes_and_an_incremental_one_ten_seconds() -> None:
    full = {"kind": "audit.verify", "params": {"full": True}, "timeout_seconds": 600}
    assert target_problems(full) == {}
    assert list(target_problems({**full, "timeout_seconds": 601})) == ["target.timeout_seconds"]
    assert list(target_problems({**full, "params": {"full": False}})) == ["target.timeout_seconds"]


def test_defaults_are_filled_in_and_an_approval_keeps_its_one_field() -> None:
    assert checked_target({"kind": "audit.verify"}) == {
        "kind": "audit.verify",
        "params": {"full": False},
        "timeout_seconds": 10,
    }
    assert (
        checked_target({"kind": "audit.verify", "params": {"full": True}})["timeout_seconds"] == 600
    )
    assert checked_target({"kind": "system.health_check", "params": None}) == {
        "kind": "system.health_check",
        "params": {},
        "timeout_seconds": 5,
    }
    assert checked_target({"kind": "approval", "params": {}, "timeout_seconds": None}) == {
        "kind": "approval"
    }


def test_a_job_takes_none_of_the_approvals_fields_and_an_approval_needs_them() -> None:
    with pytest.raises(ValidationFailed) as refused:
        checked_settings(replace(JOB, definition_id="d1", form_data={"n": 1}), T0)
    assert sorted(refused.value.errors) == ["definition_id", "form_data"]
    with pytest.raises(ValidationFailed) as missing:
        checked_settings(replace(SETTINGS, definition_id="", initiator_id=""), T0)
    assert sorted(missing.value.errors) == ["definition_id", "initiator_id"]
    assert checked_settings(JOB, T0).target["timeout_seconds"] == 10


def test_a_run_freezes_a_jobs_kind_and_timeout_but_never_its_params() -> None:
    target = {"kind": "webhook.ping", "params": {"webhook_id": "h1"}, "timeout_seconds": 4}
    assert run_target(target) == {"kind": "webhook.ping", "timeout_seconds": 4}
    settings = checked_settings(replace(JOB, target=target), T0)
    run = Schedule.create(uuid4(), settings, True, T0, "ops").manual_run("r1", T0, "ops", POLICY)
    assert run.frozen["target"] == {"kind": "webhook.ping", "timeout_seconds": 4}
    assert "h1" not in repr(run.frozen)
    assert (run.is_job, run.job_timeout_seconds) == (True, 4)


def test_a_jobs_success_keeps_its_result_and_no_instance() -> None:
    settings = checked_settings(JOB, T0)
    run = Schedule.create(uuid4(), settings, True, T0, "ops").manual_run("r1", T0, "ops", POLICY)
    number = run.claim("w1", T0, LEASE)
    result = {"ok": True, "events_verified": 3, "from_position": 1, "to_position": 3}
    run.succeed_job(number, "w1", result, T0)
    assert (run.status, run.instance_id, run.result) == (SUCCEEDED, None, result)
    assert run.attempts[-1]["result"] == result


def test_permanent_job_failures_are_not_retried() -> None:
    assert job_failed(AUDIT_BROKEN, position="12").permanent
    timed_out = job_failed(JOB_TIMEOUT, seconds="10")
    assert (timed_out.permanent, timed_out.params, str(timed_out)) == (
        False,
        {"seconds": "10"},
        "the job did not finish within 10 s",
    )


def test_an_older_success_reads_without_a_result_and_an_older_run_launched_an_approval() -> None:
    run = new_run()
    number = run.claim("w1", T0, LEASE)
    run.succeed(number, "w1", str(uuid4()), T0)
    events = run.collect_events()
    succeeded = next(e for e in events if isinstance(e, Run.AttemptSucceeded))
    assert stored_at_version(succeeded, 2, "result").result is None
    registered = next(e for e in events if isinstance(e, Run.Registered))
    older = stored_at_version(registered, 5)
    assert older.frozen["target"] == {"kind": "approval"}


def test_a_snapshot_before_version_9_is_of_a_run_that_launched_an_approval() -> None:
    state: dict[str, Any] = {"frozen": {"title": "t"}, "attempts": [{"number": 1}]}
    Run.upcast_v8_v9(state)
    assert state == {
        "frozen": {"title": "t", "target": {"kind": "approval"}},
        "result": None,
        "attempts": [{"number": 1, "result": None}],
    }
