"""Run policy: how late a cycle may be registered before it counts as missed, and its retries."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol


class PolicySettings(Protocol):
    """The service settings a run policy is made from."""

    @property
    def misfire_grace_seconds(self) -> float: ...

    @property
    def max_attempts(self) -> int: ...

    @property
    def retry_base_seconds(self) -> float: ...

    @property
    def timezone(self) -> str: ...


@dataclass(frozen=True)
class RunPolicy:
    """How late a cycle may be registered before it counts as missed, how often it runs, and
    the business time zone its title is rendered in when it is registered."""

    grace: timedelta
    max_attempts: int
    retry_base: timedelta = timedelta(seconds=30)
    business_timezone: str = "UTC"

    @classmethod
    def from_settings(cls, settings: PolicySettings) -> RunPolicy:
        """A cycle registered more than the misfire grace after its planned instant counts as
        missed, however often the tick scans (requirement 002: more than 5 s late)."""
        return cls(
            grace=timedelta(seconds=settings.misfire_grace_seconds),
            max_attempts=settings.max_attempts,
            retry_base=timedelta(seconds=settings.retry_base_seconds),
            business_timezone=settings.timezone,
        )

    def retry_delay(self, attempt_in_round: int) -> timedelta:
        """Attempt n+1 waits base x 2^(n-1): 30, 60, 120, 240 s by default."""
        return self.retry_base * float(2 ** (attempt_in_round - 1))
