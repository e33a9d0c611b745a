"""Prometheus metrics for operations (CONTRACT §6), read from the store every few seconds."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime, timedelta

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from cronledger.application.services import Services

LAG_BUCKETS = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 3600.0)
BACKLOG_GAUGES = {
    "due_schedules": "Enabled schedules whose next fire has come",
    "oldest_due_lag_seconds": "How late the most overdue schedule is",
    "pending_runs": "Runs waiting for their first attempt",
    "retry_wait_runs": "Runs waiting to retry",
    "dead_letter_runs": "Runs that gave up after their last attempt",
    "expired_unswept_approvals": "Instances past their deadline that the sweeper has not expired",
    "oldest_expired_unswept_lag_seconds": "How long the oldest of them has been past its deadline",
}


class OperationsCollector(Collector):
    """Backlogs, lags, attempts and dead letters across every tenant.

    `/metrics` needs no token, so its figures are kept `metrics_cache_seconds` (by the
    services' clock): scrapes within that time run no query and no projection catch-up.
    """

    def __init__(self, services: Services) -> None:
        self.services = services
        self._lock = threading.Lock()
        self._figures: list[Metric] = []
        self._measured_at: datetime | None = None

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            now = self.services.ledger.clock()
            if not self._fresh(now):
                self._figures = list(self._measure())
                self._measured_at = now
            return iter(self._figures)

    def _fresh(self, now: datetime) -> bool:
        """Measured less than `metrics_cache_seconds` ago; a clock set back makes it stale."""
        if self._measured_at is None:
            return False
        keep = timedelta(seconds=self.services.settings.metrics_cache_seconds)
        return timedelta(0) <= now - self._measured_at < keep

    def _measure(self) -> Iterator[Metric]:
        self.services.projector.catch_up()
        for name, value in self.services.backlog(None).items():
            if name in BACKLOG_GAUGES:
                yield GaugeMetricFamily(f"cronledger_{name}", BACKLOG_GAUGES[name], value=value)
        yield self._attempts()
        yield self._registration_lag()
        yield self._projection_lag()
        yield self._undecodable()

    def _attempts(self) -> Metric:
        family = CounterMetricFamily(
            "cronledger_attempts", "Launch attempts ended, by outcome", labels=["outcome"]
        )
        rows = self.services.store.query(
            "SELECT outcome, COUNT(*) FROM attempts WHERE outcome IS NOT NULL GROUP BY outcome"
        )
        for outcome, count in rows:
            family.add_metric([str(outcome)], int(count))
        return family

    def _registration_lag(self) -> Metric:
        """How late each cycle was registered after its planned instant."""
        counts = ", ".join(
            f"SUM(CASE WHEN registration_lag_seconds <= {bound} THEN 1 ELSE 0 END)"
            for bound in LAG_BUCKETS
        )
        row = self.services.store.query(
            f"SELECT {counts}, COUNT(*), SUM(registration_lag_seconds) FROM runs"  # noqa: S608
        )[0]
        total = int(row[-2])
        buckets = [(str(b), int(c or 0)) for b, c in zip(LAG_BUCKETS, row, strict=False)]
        return HistogramMetricFamily(
            "cronledger_registration_lag_seconds",
            "Seconds from a cycle's planned instant to its registration",
            buckets=[*buckets, ("+Inf", total)],
            sum_value=float(row[-1] or 0.0),
        )

    def _undecodable(self) -> Metric:
        """Any value above 0 deserves an alert: readers skip these events (see the log)."""
        rows = self.services.store.query("SELECT COUNT(*) FROM undecodable_events")
        return GaugeMetricFamily(
            "cronledger_undecodable_events",
            "Events on the log that cannot be decoded; readers skip them",
            value=int(rows[0][0]),
        )

    def _projection_lag(self) -> Metric:
        family = GaugeMetricFamily(
            "cronledger_projection_lag_events",
            "Events on the log a projection has not applied yet",
            labels=["projection"],
        )
        end = self.services.ledger.recorder.max_notification_id() or 0
        for name, position in self.services.projector.positions().items():
            family.add_metric([name], end - position)
        return family
