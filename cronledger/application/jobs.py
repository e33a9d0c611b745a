"""Built-in jobs (docs/jobs.md): what the worker runs, instead of launching an approval, for a
run whose schedule's target is one of domain/jobs.py's kinds.

A job reads its params from its schedule as saved now (the run freezes only its kind and
timeout: a run's record copies no parameters, seed 002) and runs within its timeout, against
the injected clock: each job looks at its deadline between its steps, and one that ran past it
fails with `JOB_TIMEOUT`. It answers a small result summary, or fails with a stable code
(`LaunchFailed`, as a launch does), which the worker records on the run's attempt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

from cronledger.application.audit import Audit
from cronledger.application.evidence import Evidence
from cronledger.application.meters import is_database_error
from cronledger.application.notifier import Notifier
from cronledger.application.services import Services
from cronledger.application.webhooks import Webhooks, ping_payload
from cronledger.clock import Clock
from cronledger.health import Health
from cronledger.persistence.ledger import Ledger
from domain.errors import NotFound
from domain.jobs import (
    AUDIT_BROKEN,
    AUDIT_CHECKPOINT,
    AUDIT_VERIFY,
    JOB_CHANGED,
    JOB_FAILED,
    JOB_TIMEOUT,
    LOOP_STOPPED,
    NO_SIGNING_KEY,
    STORE_UNAVAILABLE,
    SYSTEM_HEALTH_CHECK,
    WEBHOOK_DISABLED,
    WEBHOOK_NOT_FOUND,
    WEBHOOK_PING,
    WEBHOOK_REFUSED,
    WEBHOOK_UNREACHABLE,
    job_failed,
)
from domain.launch import LaunchFailed
from domain.runs import Run
from domain.schedules import Schedule
from domain.webhooks import PING, WebhookDelivery
from projections.chain import Break
from projections.engine import Projector
from projections.runs import last_job_result

log = logging.getLogger("tick.jobs")
Result = dict[str, Any]


class JobTimedOut(Exception):
    """The job's deadline passed before it finished."""


@dataclass(frozen=True)
class Deadline:
    """When a job must have finished, by the injected clock."""

    clock: Clock
    ends: datetime

    @classmethod
    def after(cls, clock: Clock, seconds: int) -> Deadline:
        return cls(clock, clock() + timedelta(seconds=seconds))

    def remaining(self) -> float:
        return max(0.0, (self.ends - self.clock()).total_seconds())

    def check(self, *_: object) -> None:
        """Stop the job if its time is up (also a progress callback: it ignores what it is
        told)."""
        if self.clock() >= self.ends:
            raise JobTimedOut()


class Jobs:
    """Runs one built-in job for a claimed run: its result summary, or `LaunchFailed`."""

    @classmethod
    def of(cls, services: Services, worker: str) -> Jobs:
        return cls(
            services.ledger,
            services.projector,
            services.audit,
            services.evidence,
            services.webhooks,
            lambda: Notifier.of(services, f"{worker}:ping"),
            services.health,
        )

    def __init__(
        self,
        ledger: Ledger,
        projector: Projector,
        audit: Audit,
        evidence: Evidence,
        webhooks: Webhooks,
        sender: Callable[[], Notifier],
        health: Health,
    ) -> None:
        self.ledger = ledger
        self.projector = projector
        self.audit = audit
        self.evidence = evidence
        self.webhooks = webhooks
        self.sender = sender  # made when a ping is first sent: most workers never send one
        self.health = health
        self.runners: dict[str, Callable[[Run, Mapping[str, Any], Deadline], Result]] = {
            SYSTEM_HEALTH_CHECK: self.health_check,
            AUDIT_VERIFY: self.verify,
            AUDIT_CHECKPOINT: self.checkpoint,
            WEBHOOK_PING: self.ping,
        }

    @cached_property
    def notifier(self) -> Notifier:
        """What sends a `webhook.ping` job's message, as the notifier sends any."""
        return self.sender()

    def run(self, run: Run) -> Result:
        """Run the job of this claimed run within its timeout: its result summary, or the
        failure (`LaunchFailed`) to record; a store that fails is `STORE_UNAVAILABLE`."""
        seconds = run.job_timeout_seconds
        deadline = Deadline.after(self.ledger.clock, seconds)
        try:
            params = self._params(run)
            result = self.runners[run.target["kind"]](run, params, deadline)
            deadline.check()
        except JobTimedOut:
            raise job_failed(JOB_TIMEOUT, seconds=str(seconds)) from None
        except LaunchFailed:
            raise
        except Exception as error:
            if is_database_error(error):
                raise job_failed(STORE_UNAVAILABLE) from error
            log.exception("job failed unexpectedly", extra={"run_id": str(run.id)})
            raise job_failed(JOB_FAILED) from error
        return result

    def _params(self, run: Run) -> Mapping[str, Any]:
        """The job's params, from its schedule as saved now; a schedule deleted or saved
        with another target since the run was registered runs nothing."""
        kind = run.target["kind"]
        try:
            schedule = self.ledger.find(Schedule, run.schedule_id, "schedule", run.schedule_id)
        except NotFound:
            raise job_failed(JOB_CHANGED, kind=kind) from None
        target = schedule.settings.target
        if schedule.deleted or target["kind"] != kind:
            raise job_failed(JOB_CHANGED, kind=kind)
        params: Mapping[str, Any] = target["params"]
        return params

    def health_check(self, run: Run, params: Mapping[str, Any], deadline: Deadline) -> Result:
        """The store answers a query, and every loop of this process beats."""
        self.ledger.store.query("SELECT 1")
        deadline.check()
        stopped = self.health.dead_loops()
        if stopped:
            raise job_failed(LOOP_STOPPED, loops=", ".join(stopped))
        return {"ok": True, "loops": len(self.health.loop_names())}

    def verify(self, run: Run, params: Mapping[str, Any], deadline: Deadline) -> Result:
        """The events appended since the schedule's last verified position (its last
        successful run's `to`), or, with `full`, the whole log, its tree and checkpoints."""
        if params["full"]:
            whole = self.audit.verify(deadline.check)
            _check(whole.found)
            head = whole.head
            first = 1 if head.events else None
            return {
                "ok": True,
                "full": True,
                "events_verified": head.events,
                "from_position": first,
                "to_position": head.position,
                "checkpoints_proven": whole.proven,
            }
        last = last_job_result(self.ledger.store, run.schedule_id, AUDIT_VERIFY) or {}
        since = self.audit.verify_since(int(last.get("to_position") or 0), deadline.check)
        _check(since.found)
        return {
            "ok": True,
            "full": False,
            "events_verified": since.events,
            "from_position": since.first,
            "to_position": since.to,
        }

    def checkpoint(self, run: Run, params: Mapping[str, Any], deadline: Deadline) -> Result:
        """A checkpoint of the tree signed now (none when it is signed at its size already)."""
        if self.evidence.key is None:
            raise job_failed(NO_SIGNING_KEY)
        self.projector.catch_up()
        deadline.check()
        signed = self.evidence.checkpoint(force=True)
        if signed is not None:
            return {"ok": True, "signed": True, "tree_size": signed.tree_size}
        _check(self.evidence.refused)
        latest = self.evidence.latest()
        return {"ok": True, "signed": False, "tree_size": latest.tree_size if latest else 0}

    def ping(self, run: Run, params: Mapping[str, Any], deadline: Deadline) -> Result:
        """A `ping` message to one of the tenant's subscriptions, sent at once within the
        deadline (a message of its own, one attempt: the run's retries are the job's)."""
        try:
            subscription = self.webhooks.subscription(run.tenant_id, params["webhook_id"])
        except NotFound:
            raise job_failed(WEBHOOK_NOT_FOUND) from None
        if not subscription.enabled:
            raise job_failed(WEBHOOK_DISABLED)
        at = self.ledger.clock()
        delivery = WebhookDelivery(
            tenant_id=subscription.tenant_id,
            subscription_id=subscription.id,
            source=f"job/{run.id}/{len(run.attempts)}",
            event_type=PING,
            payload=ping_payload(subscription, at),
            max_attempts=1,
            at=at,
            actor=self.notifier.name,
        )
        response = self.notifier.send_now(delivery, subscription, deadline.remaining())
        if response.delivered:
            return {"ok": True, "status": response.status, "delivery_id": str(delivery.id)}
        deadline.check()
        if response.status is None:
            raise job_failed(WEBHOOK_UNREACHABLE)
        raise job_failed(WEBHOOK_REFUSED, status=str(response.status))


def _check(found: Break | None) -> None:
    """A break of the log fails the job with its position (its words go to the log)."""
    if found is not None:
        log.error(
            "audit job found a break", extra={"position": found.position, "problem": found.problem}
        )
        raise job_failed(AUDIT_BROKEN, position=str(found.position))
