"""What this process did since it started, counted as it happens (docs/operations.md#metrics).

Counters and histograms of the events this process committed, and of the store errors it met:
a scrape reads them from memory, never from the database. Each process counts its own;
Prometheus adds the processes up (`sum without (instance)`), and `rate()` rides over restarts.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import psycopg
from eventsourcing.persistence import PersistenceError
from prometheus_client import Counter, Histogram
from prometheus_client.registry import Collector

from cronledger.persistence.ledger import Recorded
from domain.approvals import EXPIRED, ApprovalInstance
from domain.jobs import JOB_MESSAGES
from domain.launch import ATTEMPT_MESSAGES, NO_ELIGIBLE_REVIEWER
from domain.runs import ATTEMPT_FAILED, ATTEMPT_SUCCEEDED, DEAD_LETTER, INTERRUPTED, Run
from domain.schedules import Schedule
from domain.webhooks import FAILED as GIVEN_UP

REGISTRATION_LAG_BUCKETS = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 3600.0)
# From a run's planned instant to its launch: a worker polls every second, a retry waits
# seconds to minutes, an outage may hold runs for an hour.
LAUNCH_LAG_BUCKETS = (
    0.5,
    1.0,
    2.0,
    5.0,
    10.0,
    15.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
    1800.0,
    3600.0,
)
EXPIRY_LAG_BUCKETS = (1.0, 5.0, 30.0, 60.0, 300.0, 3600.0)
WEBHOOK_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
DATABASE_ERRORS = (psycopg.Error, sqlite3.Error, PersistenceError)
OUTCOME_OF_ATTEMPT_EVENT = {  # by qualified name, as projections know events
    "Run.AttemptSucceeded": ATTEMPT_SUCCEEDED,
    "Run.AttemptFailed": ATTEMPT_FAILED,
    "Run.AttemptInterrupted": INTERRUPTED,
}
OUTCOME_OF_WEBHOOK_EVENT = {
    "WebhookDelivery.AttemptSucceeded": "delivered",
    "WebhookDelivery.AttemptFailed": "failed",
    "WebhookDelivery.AttemptInterrupted": "interrupted",
}
# Where a store error can surface: a loop's name (tick/processes.py), a request, a scrape.
DATABASE_ERROR_SOURCES = ("api", "metrics", "notifier", "projections", "sweeper", "tick", "worker")
# Every (outcome, error code) an attempt can end with; "" is a success's code.
ATTEMPT_LABELS = (
    (ATTEMPT_SUCCEEDED, ""),
    *((ATTEMPT_FAILED, code) for code in (*ATTEMPT_MESSAGES, NO_ELIGIBLE_REVIEWER, *JOB_MESSAGES)),
    (INTERRUPTED, INTERRUPTED),
)


def is_database_error(error: BaseException) -> bool:
    """A failure of the store (connection, timeout, lock, SQL), not of the service's logic."""
    return isinstance(error, DATABASE_ERRORS) or isinstance(error.__cause__, DATABASE_ERRORS)


class Meters:
    """This process's counters, fed by the ledger after each committed save. Every label a
    counter can take that is known in advance is there at 0 from the start, so that
    `increase()` sees the first one."""

    def __init__(self) -> None:
        self.attempts = Counter(
            "cronledger_attempts",
            "Launch attempts this process ended, by outcome and error code ('' for a success)",
            ["outcome", "error_code"],
            registry=None,
        )
        self.dead_lettered = Counter(
            "cronledger_dead_lettered_runs",
            "Runs this process moved to the dead letter (their last attempt failed)",
            registry=None,
        )
        self.auto_paused = Counter(
            "cronledger_schedules_auto_paused",
            "Schedules this process paused because their cycles ended without launching, "
            "auto_pause_after_failures times in a row",
            registry=None,
        )
        self.registration_lag = Histogram(
            "cronledger_registration_lag_seconds",
            "Seconds from a cycle's planned instant to its registration by this process",
            buckets=REGISTRATION_LAG_BUCKETS,
            registry=None,
        )
        self.launch_lag = Histogram(
            "cronledger_run_launch_lag_seconds",
            "Seconds from a run's planned instant to its launch (the attempt that created its "
            "approval instance) by this process, retries included",
            buckets=LAUNCH_LAG_BUCKETS,
            registry=None,
        )
        self.expiry_lag = Histogram(
            "cronledger_expiry_lag_seconds",
            "Seconds from an instance's review deadline to the expiry this process recorded",
            buckets=EXPIRY_LAG_BUCKETS,
            registry=None,
        )
        self.webhook_attempts = Counter(
            "cronledger_webhook_attempts",
            "Webhook attempts this process ended, by outcome (delivered, failed: the receiver "
            "answered no 2xx or not at all; interrupted: a notifier stopped before recording it)",
            ["outcome"],
            registry=None,
        )
        self.webhook_given_up = Counter(
            "cronledger_webhook_deliveries_given_up",
            "Webhook messages this process gave up on after their round's last attempt",
            registry=None,
        )
        self.webhook_latency = Histogram(
            "cronledger_webhook_latency_seconds",
            "Seconds a webhook attempt of this process waited for the receiver's answer",
            buckets=WEBHOOK_LATENCY_BUCKETS,
            registry=None,
        )
        self.database_errors = Counter(
            "cronledger_database_errors",
            "Store operations of this process that failed, by where they surfaced "
            "(a loop's name, or api)",
            ["source"],
            registry=None,
        )
        self._start_at_zero()

    def _start_at_zero(self) -> None:
        for outcome, code in ATTEMPT_LABELS:
            self.attempts.labels(outcome, code)
        for webhook_outcome in OUTCOME_OF_WEBHOOK_EVENT.values():
            self.webhook_attempts.labels(webhook_outcome)
        for source in DATABASE_ERROR_SOURCES:
            self.database_errors.labels(source)

    def collectors(self) -> list[Collector]:
        return [
            self.attempts,
            self.dead_lettered,
            self.auto_paused,
            self.registration_lag,
            self.launch_lag,
            self.expiry_lag,
            self.webhook_attempts,
            self.webhook_given_up,
            self.webhook_latency,
            self.database_errors,
        ]

    def database_error(self, source: str, error: BaseException) -> None:
        """Count the error if the store caused it."""
        if is_database_error(error):
            self.database_errors.labels(source).inc()

    def recorded(self, events: Sequence[Recorded]) -> None:
        """Count what one committed save recorded."""
        for event, aggregate in events:
            if isinstance(event, Run.Registered):
                self.registration_lag.observe((event.at - event.planned_at).total_seconds())
            elif type(event).__qualname__ in OUTCOME_OF_ATTEMPT_EVENT:
                self._attempt_ended(event, aggregate)
            elif isinstance(event, ApprovalInstance.CommandHandled) and event.outcome == EXPIRED:
                self._expired(event, aggregate)
            elif type(event).__qualname__ in OUTCOME_OF_WEBHOOK_EVENT:
                self._webhook_attempt_ended(event)
            elif isinstance(event, Schedule.AutoPaused):
                self.auto_paused.inc()

    def _attempt_ended(self, event: Any, aggregate: object) -> None:
        outcome = OUTCOME_OF_ATTEMPT_EVENT[type(event).__qualname__]
        code = "" if outcome == ATTEMPT_SUCCEEDED else event.code
        self.attempts.labels(outcome, code).inc()
        if event.status == DEAD_LETTER:
            self.dead_lettered.inc()
        if outcome == ATTEMPT_SUCCEEDED and isinstance(aggregate, Run):
            lag = (event.at - aggregate.planned_at).total_seconds()
            self.launch_lag.observe(max(lag, 0.0))

    def _webhook_attempt_ended(self, event: Any) -> None:
        self.webhook_attempts.labels(OUTCOME_OF_WEBHOOK_EVENT[type(event).__qualname__]).inc()
        if getattr(event, "latency_seconds", None) is not None:
            self.webhook_latency.observe(event.latency_seconds)
        if event.status == GIVEN_UP:
            self.webhook_given_up.inc()

    def _expired(self, event: ApprovalInstance.CommandHandled, aggregate: object) -> None:
        if isinstance(aggregate, ApprovalInstance):
            lag = (event.at - aggregate.review_deadline_at).total_seconds()
            self.expiry_lag.observe(max(lag, 0.0))
