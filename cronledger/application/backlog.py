"""The backlogs operations watch (docs/operations.md): each figure named once, with its meaning."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields

GAUGE = "gauge"  # the figure's help text on /metrics; figures without one are exported otherwise


def _gauge(help_text: str) -> dict[str, str]:
    return {GAUGE: help_text}


@dataclass(frozen=True)
class Backlog:
    """What waits, and how late, for one tenant or for all."""

    due_schedules: int = field(metadata=_gauge("Enabled schedules whose next fire has come"))
    oldest_due_lag_seconds: float = field(metadata=_gauge("How late the most overdue schedule is"))
    pending_runs: int = field(metadata=_gauge("Runs waiting for their first attempt"))
    retry_wait_runs: int = field(metadata=_gauge("Runs waiting to retry"))
    dead_letter_runs: int = field(metadata=_gauge("Runs that gave up after their last attempt"))
    expired_unswept_approvals: int = field(
        metadata=_gauge("Instances past their deadline that the sweeper has not expired")
    )
    oldest_expired_unswept_lag_seconds: float = field(
        metadata=_gauge("How long the oldest of them has been past its deadline")
    )
    projection_lag_events: int  # /metrics has it per projection
    # Expiries recorded at most `bound` seconds after their deadline, by bound ("+Inf": all);
    # /metrics has them, with the sum, as the histogram cronledger_expiry_lag_seconds.
    expiry_lag_buckets: dict[str, int]
    expiry_lag_sum_seconds: float
    sweep_failures: dict[str, int]  # this process's, by reason; /metrics: a counter

    def gauges(self) -> Iterator[tuple[str, str, float]]:
        """Each figure /metrics exports as a gauge of its own: name, help text, value."""
        for figure in fields(self):
            if GAUGE in figure.metadata:
                yield figure.name, figure.metadata[GAUGE], getattr(self, figure.name)
