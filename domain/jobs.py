"""Built-in jobs (系统任务): what a schedule's cycle may do instead of launching an approval.

The set is closed (seed 002: never an arbitrary function, shell command or URL): each kind
names the params it takes (their type and default) and the range of its `timeout_seconds`.
A schedule's `target` is `{"kind": "approval"}` or `{"kind", "params", "timeout_seconds"}` of
one of them; `target_problems` names every rule a target breaks at once, `checked_target`
gives it in normal form (defaults filled in). docs/jobs.md describes each kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from domain.launch import LaunchFailed
from domain.messages import N_, Message

APPROVAL = "approval"  # a cycle launches an approval instance (the default target)
SYSTEM_HEALTH_CHECK = "system.health_check"
AUDIT_VERIFY = "audit.verify"
AUDIT_CHECKPOINT = "audit.checkpoint"
WEBHOOK_PING = "webhook.ping"
TARGET_FIELDS = ("kind", "params", "timeout_seconds")
MAX_PARAM_TEXT = 64
SHORT_TIMEOUT = 10  # seconds: seed 002's 1-10 s for a job
LONG_TIMEOUT = 600  # seconds: a full pass of `audit.verify`


@dataclass(frozen=True)
class Param:
    """One parameter of a job: a flag (`bool`) or a short text (`str`, an id); without a
    default it is required."""

    type: type[bool] | type[str]
    default: bool | str | None = None

    def problem(self, value: Any) -> str | None:
        if self.type is bool:
            return None if isinstance(value, bool) else Message("must be true or false")
        if isinstance(value, str) and 1 <= len(value) <= MAX_PARAM_TEXT:
            return None
        return Message("must be a text of 1-{most} characters", most=MAX_PARAM_TEXT)


@dataclass(frozen=True)
class JobKind:
    """A built-in job: its params, its default timeout, and the most it may be given (a
    longer `long_most` when its flag `long_when` is true)."""

    name: str
    params: Mapping[str, Param] = field(default_factory=dict)
    default_timeout: int = SHORT_TIMEOUT
    long_when: str | None = None
    long_most: int = LONG_TIMEOUT

    def runs_long(self, params: Mapping[str, Any]) -> bool:
        return bool(self.long_when and params.get(self.long_when) is True)

    def most_seconds(self, params: Mapping[str, Any]) -> int:
        return self.long_most if self.runs_long(params) else SHORT_TIMEOUT

    def default_seconds(self, params: Mapping[str, Any]) -> int:
        return self.long_most if self.runs_long(params) else self.default_timeout

    def with_defaults(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The params given, and the default of each left out, in the kind's order."""
        return {
            name: params.get(name, spec.default)
            for name, spec in self.params.items()
            if name in params or spec.default is not None
        }


JOBS = {
    job.name: job
    for job in (
        JobKind(SYSTEM_HEALTH_CHECK, default_timeout=5),
        JobKind(AUDIT_VERIFY, {"full": Param(bool, False)}, long_when="full"),
        JobKind(AUDIT_CHECKPOINT),
        JobKind(WEBHOOK_PING, {"webhook_id": Param(str)}),
    )
}
JOB_KINDS = tuple(JOBS)
TARGET_KINDS = (APPROVAL, *JOB_KINDS)


def is_job(target: Mapping[str, Any]) -> bool:
    kind = target.get("kind")
    return isinstance(kind, str) and kind in JOBS


def target_problems(target: Any) -> dict[str, list[str]]:
    """Every rule the target breaks, by field (`target.kind`, `target.params.full`, ...)."""
    if not isinstance(target, Mapping):
        return {"target": [Message("must be an object")]}
    errors: dict[str, list[str]] = {
        f"target.{name}": [Message("unknown field: use kind, params and timeout_seconds")]
        for name in target
        if name not in TARGET_FIELDS
    }
    kind = target.get("kind")
    if kind == APPROVAL:
        errors.update(_approval_problems(target))
    elif isinstance(kind, str) and kind in JOBS:
        errors.update(_job_problems(JOBS[kind], target))
    else:
        choices = ", ".join(TARGET_KINDS)
        errors["target.kind"] = [Message("must be one of {choices}", choices=choices)]
    return errors


def _approval_problems(target: Mapping[str, Any]) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    if target.get("params"):
        errors["target.params"] = [Message("an approval target takes no params")]
    if target.get("timeout_seconds") is not None:
        errors["target.timeout_seconds"] = [
            Message("an approval target has no timeout: leave it out")
        ]
    return errors


def _job_problems(job: JobKind, target: Mapping[str, Any]) -> dict[str, list[str]]:
    params = {} if target.get("params") is None else target["params"]
    if not isinstance(params, Mapping):
        return {"target.params": [Message("must be an object")]}
    errors: dict[str, list[str]] = {
        f"target.params.{name}": [problem] for name, problem in _param_problems(job, params)
    }
    timeout = target.get("timeout_seconds")
    most = job.most_seconds(params)
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= most
    ):
        errors["target.timeout_seconds"] = [
            Message("use 1 to {most} seconds for {kind}", most=most, kind=job.name)
        ]
    return errors


def _param_problems(job: JobKind, params: Mapping[str, Any]) -> list[tuple[str, str]]:
    taken = ", ".join(job.params) or Message("none")
    problems: list[tuple[str, str]] = [
        (name, Message("unknown parameter: {kind} takes {taken}", kind=job.name, taken=taken))
        for name in params
        if name not in job.params
    ]
    for name, spec in job.params.items():
        if name not in params:
            if spec.default is None:
                problems.append((name, Message("required by {kind}", kind=job.name)))
        elif problem := spec.problem(params[name]):
            problems.append((name, problem))
    return problems


def checked_target(target: Mapping[str, Any]) -> dict[str, Any]:
    """The target in normal form, once `target_problems` found none: an approval's as
    `{"kind": "approval"}`, a job's with each param and its timeout (defaults filled in)."""
    kind = str(target["kind"])
    if kind == APPROVAL:
        return {"kind": APPROVAL}
    job = JOBS[kind]
    params = job.with_defaults(target.get("params") or {})
    timeout = target.get("timeout_seconds") or job.default_seconds(params)
    return {"kind": kind, "params": params, "timeout_seconds": timeout}


def run_target(target: Mapping[str, Any]) -> dict[str, Any]:
    """What a run keeps of its schedule's target when registered: the kind, and a job's
    timeout; never its params (a run's record copies no parameters, seed 002)."""
    if not is_job(target):
        return {"kind": APPROVAL}
    return {"kind": target["kind"], "timeout_seconds": target["timeout_seconds"]}


# Why a job's attempt failed: its stable code, kept on the run's log (keep the wording).
JOB_TIMEOUT = "JOB_TIMEOUT"
JOB_FAILED = "JOB_FAILED"
JOB_CHANGED = "JOB_CHANGED"
STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
LOOP_STOPPED = "LOOP_STOPPED"
AUDIT_BROKEN = "AUDIT_BROKEN"
NO_SIGNING_KEY = "NO_SIGNING_KEY"
WEBHOOK_NOT_FOUND = "WEBHOOK_NOT_FOUND"
WEBHOOK_DISABLED = "WEBHOOK_DISABLED"
WEBHOOK_UNREACHABLE = "WEBHOOK_UNREACHABLE"
WEBHOOK_REFUSED = "WEBHOOK_REFUSED"
JOB_MESSAGES = {
    JOB_TIMEOUT: N_("the job did not finish within {seconds} s"),
    JOB_FAILED: N_("the job stopped on an unexpected error"),
    JOB_CHANGED: N_("the schedule no longer runs {kind}"),
    STORE_UNAVAILABLE: N_("the store did not answer"),
    LOOP_STOPPED: N_("loop(s) {loops} stopped or missed their heartbeat"),
    AUDIT_BROKEN: N_("the log fails its verification at position {position}"),
    NO_SIGNING_KEY: N_("this process has no signing key"),
    WEBHOOK_NOT_FOUND: N_("the webhook subscription is not in the tenant"),
    WEBHOOK_DISABLED: N_("the webhook subscription is disabled"),
    WEBHOOK_UNREACHABLE: N_("the receiver gave no answer in time"),
    WEBHOOK_REFUSED: N_("the receiver answered {status}"),
}
# Failures no retry mends: the run is FAILED at once.
PERMANENT_JOB_FAILURES = frozenset({JOB_CHANGED, AUDIT_BROKEN, NO_SIGNING_KEY, WEBHOOK_NOT_FOUND})


def job_failed(code: str, **params: str) -> LaunchFailed:
    """A job's failure, recorded on its run as a launch's is (retried unless permanent)."""
    message = Message(JOB_MESSAGES[code], **params)
    return LaunchFailed(code, message, code in PERMANENT_JOB_FAILURES, params)
