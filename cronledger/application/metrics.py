"""Prometheus metrics (docs/operations.md#metrics): what an on-call alerts on.

A scrape has no side effects: it never catches the projections up, never takes the projector's
lock and never writes. What it reads from the store are bounded queries (index ranges over what
waits, `MIN` through an index, the log's head): they cost the same at a million finished runs as
at a thousand. Everything else comes from memory: this process's counters (`Meters`), its
loops' heartbeats (`Health`), its tick's totals and its connection pools.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from prometheus_client import (
    GCCollector,
    Info,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry
from psycopg_pool import ConnectionPool

from cronledger.application.meters import is_database_error
from cronledger.application.services import Services
from cronledger.logs import Outage
from cronledger.version import installed_version
from projections.approvals import overdue_backlog
from projections.engine import undecodable_count
from projections.runs import run_queue
from projections.schedules import due_schedule_backlog
from projections.webhooks import waiting_deliveries

log = logging.getLogger("cronledger.metrics")
# psycopg_pool's get_stats() key, the gauge it feeds, and its help text.
POOL_FIGURES = (
    ("pool_max", "cronledger_db_pool_max_connections", "Connections the pool may open"),
    ("pool_size", "cronledger_db_pool_open_connections", "Connections the pool holds open"),
    ("pool_available", "cronledger_db_pool_idle_connections", "Open connections not in use"),
    (
        "requests_waiting",
        "cronledger_db_pool_waiting_requests",
        "Callers waiting for a connection (the pool is exhausted while above 0)",
    ),
)


def registry_for(services: Services) -> CollectorRegistry:
    """Everything a process exports, on a registry of its own (not the process-wide default, so
    apps and loop processes in one interpreter stay apart): web and loop processes alike."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    build = Info("cronledger_build", "The release this process runs", registry=registry)
    build.info({"version": installed_version()})
    for collector in services.meters.collectors():
        registry.register(collector)
    registry.register(services.callback_sources.refusals)
    registry.register(services.credentials.failures)
    registry.register(services.calendars.assumed)
    registry.register(ProcessStateCollector(services))
    registry.register(StoreCollector(services))
    return registry


class ProcessStateCollector(Collector):
    """What this process knows without asking the store: loops, tick, sweeps, pools, phase."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def collect(self) -> Iterator[Metric]:
        yield from self._loops()
        yield self._ready()
        yield from self._tick()
        yield self._sweep_failures()
        yield from self._pools()

    def _ready(self) -> Metric:
        return GaugeMetricFamily(
            "cronledger_ready",
            "1 when this process has started and is not stopping (its phase is ready)",
            value=1 if self.services.health.ready else 0,
        )

    def _loops(self) -> Iterator[Metric]:
        health = self.services.health
        now = health.monotonic()
        dead = set(health.dead_loops())
        up = GaugeMetricFamily(
            "cronledger_loop_up",
            "1 while the loop runs and beats; 0 once it stopped or missed its heartbeat",
            labels=["loop"],
        )
        age = GaugeMetricFamily(
            "cronledger_loop_heartbeat_age_seconds",
            "Seconds since the loop's last heartbeat",
            labels=["loop"],
        )
        failures = CounterMetricFamily(
            "cronledger_loop_failures",
            "Iterations of the loop that failed (each logged with its error)",
            labels=["loop"],
        )
        for name, beat in sorted(dict(health.loops).items()):
            up.add_metric([name], 0 if name in dead else 1)
            age.add_metric([name], max(now - beat.last_beat, 0.0))
            failures.add_metric([name], beat.failures)
        yield from (up, age, failures)

    def _tick(self) -> Iterator[Metric]:
        tick = self.services.tick
        yield CounterMetricFamily(
            "cronledger_tick_scans", "Scans this process's tick ran", value=tick.scans
        )
        yield CounterMetricFamily(
            "cronledger_skipped_missed_cycles",
            "Cycles this process's tick recorded as skipped because they were missed "
            "(registered later than the missed-cycle policy allows)",
            value=tick.skipped_missed,
        )
        yield CounterMetricFamily(
            "cronledger_scan_budget_exhaustions",
            "Scans of this process's tick that stopped at their budget (time or cycles per "
            "scan) while schedules were still due",
            value=tick.budget_stops,
        )

    def _sweep_failures(self) -> Metric:
        family = CounterMetricFamily(
            "cronledger_sweep_failures",
            "Deadline sweeps of this process that failed, by reason",
            labels=["reason"],
        )
        for reason, count in self.services.approvals.sweep_failures.counts().items():
            family.add_metric([reason], count)
        return family

    def _pools(self) -> Iterator[Metric]:
        """PostgreSQL's connection pools (none on SQLite): size, use and callers waiting."""
        stats = {name: pool.get_stats() for name, pool in connection_pools(self.services).items()}
        for key, metric, help_text in POOL_FIGURES:
            family = GaugeMetricFamily(metric, help_text, labels=["pool"])
            for name, figures in sorted(stats.items()):
                family.add_metric([name], figures.get(key, 0))
            yield family


def connection_pools(services: Services) -> dict[str, ConnectionPool[Any]]:
    """The open PostgreSQL pools: the event recorder's and the read models'."""
    datastore = getattr(services.ledger.recorder, "datastore", None)
    pools = {
        "events": getattr(datastore, "pool", None),
        "read_models": services.store.read_model_pool,
    }
    return {name: pool for name, pool in pools.items() if isinstance(pool, ConnectionPool)}


class StoreCollector(Collector):
    """Queues and lags read from the store with bounded queries, kept `metrics_cache_seconds`
    (by the services' clock), since `/metrics` needs no token.

    A scrape that finds another one reading the store answers with the last figures instead of
    waiting; one the store fails counts a database error and leaves these figures out.
    """

    def __init__(self, services: Services) -> None:
        self.services = services
        self._lock = threading.Lock()
        self._figures: list[Metric] = []
        self._measured_at: datetime | None = None
        self._unreadable = Outage(  # under the lock: one scrape measures at a time
            log, "metrics could not read the store", "metrics read the store again"
        )

    def collect(self) -> Iterator[Metric]:
        if not self._lock.acquire(blocking=False):
            return iter(self._figures)
        try:
            now = self.services.ledger.clock()
            if not self._fresh(now):
                self._figures = self._measured(now)
                self._measured_at = now
            return iter(self._figures)
        finally:
            self._lock.release()

    def _fresh(self, now: datetime) -> bool:
        """Measured less than `metrics_cache_seconds` ago; a clock set back makes it stale."""
        if self._measured_at is None:
            return False
        keep = timedelta(seconds=self.services.settings.metrics_cache_seconds)
        return timedelta(0) <= now - self._measured_at < keep

    def _measured(self, now: datetime) -> list[Metric]:
        try:
            figures = [*self._measure(now)]
        except Exception as error:
            if not is_database_error(error):
                raise
            self.services.meters.database_error("metrics", error)
            self._unreadable.failed(logging.WARNING)
            return []
        self._unreadable.succeeded()
        return figures

    def _measure(self, now: datetime) -> Iterator[Metric]:
        store = self.services.store
        due, oldest_fire = due_schedule_backlog(store, None, now)
        queue = run_queue(store, now)
        overdue, oldest_deadline = overdue_backlog(store, None, now)
        messages, oldest_message = waiting_deliveries(store)
        for name, help_text, value in (
            ("due_schedules", "Enabled schedules whose next fire has come", due),
            (
                "oldest_due_lag_seconds",
                "How late the most overdue schedule is",
                _age(oldest_fire, now),
            ),
            ("pending_runs", "Runs waiting for their first attempt", queue.pending),
            ("retry_wait_runs", "Runs waiting to retry", queue.retry_wait),
            (
                "expired_lease_runs",
                "Runs held by an attempt whose lease ran out (its worker stopped or hangs); "
                "a worker reclaims them",
                queue.expired_leases,
            ),
            (
                "oldest_pending_run_age_seconds",
                "Seconds the run waiting longest for a worker (pending, due to retry, or held "
                "by an expired lease) has been claimable",
                _age(queue.oldest_due_at, now),
            ),
            (
                "dead_letter_runs",
                "Runs that gave up after their last attempt",
                queue.dead_letter,
            ),
            (
                "expired_unswept_approvals",
                "Instances past their deadline that the sweeper has not expired",
                overdue,
            ),
            (
                "oldest_expired_unswept_lag_seconds",
                "How long the oldest of them has been past its deadline",
                _age(oldest_deadline, now),
            ),
            (
                "webhook_waiting_deliveries",
                "Webhook messages waiting to be delivered (pending, being sent, or waiting to "
                "retry)",
                messages,
            ),
            (
                "oldest_webhook_due_lag_seconds",
                "How long the webhook message due earliest has been due",
                _age(oldest_message, now),
            ),
            (
                "undecodable_events",
                "Events on the log that cannot be decoded; readers skip them",
                undecodable_count(store),
            ),
        ):
            yield GaugeMetricFamily(f"cronledger_{name}", help_text, value=value)
        yield from self._projection_lag(now)

    def _projection_lag(self, now: datetime) -> Iterator[Metric]:
        """The log's head minus each projection's position (what is written but not applied),
        and how long the first event it has not applied has waited."""
        events = GaugeMetricFamily(
            "cronledger_projection_lag_events",
            "Events on the log a projection has not applied yet",
            labels=["projection"],
        )
        seconds = GaugeMetricFamily(
            "cronledger_projection_lag_seconds",
            "Seconds since the first event a projection has not applied yet was recorded "
            "(0 when it has applied them all)",
            labels=["projection"],
        )
        head = self.services.ledger.recorder.max_notification_id() or 0
        positions = self.services.projector.positions()
        recorded = {p: self._recorded_at(p + 1) for p in set(positions.values()) if p < head}
        for name, position in sorted(positions.items()):
            events.add_metric([name], max(head - position, 0))
            seconds.add_metric([name], _age(recorded.get(position), now))
        yield from (events, seconds)

    def _recorded_at(self, position: int) -> datetime | None:
        """When the event at `position` of the log was recorded (one read through the log's
        index); None if it is gone or cannot be decoded."""
        ledger = self.services.ledger
        found = ledger.recorder.select_notifications(start=position, limit=1)
        if not found:
            return None
        event = ledger.decode(found[0])
        at = getattr(event, "at", None) or getattr(event, "timestamp", None)
        return at if isinstance(at, datetime) else None


def _age(since: datetime | None, now: datetime) -> float:
    return max((now - since).total_seconds(), 0.0) if since else 0.0
