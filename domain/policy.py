"""Run policy: how late a cycle may be registered before it counts as missed, and its retries."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

MISSED_GRACE = timedelta(seconds=5)


class PolicySettings(Protocol):
    """The service settings a run policy is made from."""

    @property
    def tick_seconds(self) -> float: ...

    @property
    def max_attempts(self) -> int: ...

    @property
    def retry_base_seconds(self) -> float: ...


@dataclass(frozen=True)
class RunPolicy:
    """How late a cycle may be registered before it counts as missed, and how often it runs."""

    grace: timedelta
    max_attempts: int
    retry_base: timedelta = timedelta(seconds=30)

    @classmethod
    def from_settings(cls, settings: PolicySettings) -> RunPolicy:
        """A cycle registered more than one tick plus 5 seconds late counts as missed."""
        return cls(
            grace=timedelta(seconds=settings.tick_seconds) + MISSED_GRACE,
            max_attempts=settings.max_attempts,
            retry_base=timedelta(seconds=settings.retry_base_seconds),
        )

    def retry_delay(self, attempt_in_round: int) -> timedelta:
        """Attempt n+1 waits base x 2^(n-1): 30, 60, 120, 240 s by default."""
        return self.retry_base * float(2 ** (attempt_in_round - 1))
