"""Prometheus metrics (docs/operations.md#metrics), read from the store every few seconds."""

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

from cronledger.application.backlog import Backlog
from cronledger.application.services import Services
from projections.engine import undecodable_count
from projections.runs import attempt_outcomes, registration_lags

LAG_BUCKETS = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 3600.0)


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
        backlog = self.services.backlog(None)
        for name, help_text, value in backlog.gauges():
            yield GaugeMetricFamily(f"cronledger_{name}", help_text, value=value)
        yield self._expiry_lag(backlog)
        yield self._sweep_failures(backlog)
        yield self._attempts()
        yield self._registration_lag()
        yield self._projection_lag()
        yield self._undecodable()

    def _attempts(self) -> Metric:
        family = CounterMetricFamily(
            "cronledger_attempts",
            "Launch attempts ended, by outcome and error code ('' for a success)",
            labels=["outcome", "error_code"],
        )
        for (outcome, error_code), count in attempt_outcomes(self.services.store).items():
            family.add_metric([outcome, error_code], count)
        return family

    def _registration_lag(self) -> Metric:
        """How late each cycle was registered after its planned instant."""
        lags = registration_lags(self.services.store, LAG_BUCKETS)
        buckets = [(str(b), count) for b, count in zip(LAG_BUCKETS, lags.at_most, strict=True)]
        return HistogramMetricFamily(
            "cronledger_registration_lag_seconds",
            "Seconds from a cycle's planned instant to its registration",
            buckets=[*buckets, ("+Inf", lags.total)],
            sum_value=lags.sum_seconds,
        )

    @staticmethod
    def _expiry_lag(backlog: Backlog) -> Metric:
        """How late the sweeper (or a late command) recorded each expiry after its deadline."""
        buckets = dict(backlog.expiry_lag_buckets)
        total = buckets.pop("+Inf")
        return HistogramMetricFamily(
            "cronledger_expiry_lag_seconds",
            "Seconds from an instance's review deadline to its recorded expiry",
            buckets=[*buckets.items(), ("+Inf", total)],
            sum_value=backlog.expiry_lag_sum_seconds,
        )

    @staticmethod
    def _sweep_failures(backlog: Backlog) -> Metric:
        family = CounterMetricFamily(
            "cronledger_sweep_failures",
            "Deadline sweeps of this process that failed, by reason",
            labels=["reason"],
        )
        for reason, count in backlog.sweep_failures.items():
            family.add_metric([reason], count)
        return family

    def _undecodable(self) -> Metric:
        """Any value above 0 deserves an alert: readers skip these events (see the log)."""
        return GaugeMetricFamily(
            "cronledger_undecodable_events",
            "Events on the log that cannot be decoded; readers skip them",
            value=undecodable_count(self.services.store),
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
