"""Settings from the environment (docs/configuration.md), checked once at start-up."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any


class ConfigError(ValueError):
    def __init__(self, variable: str, value: str, expected: str) -> None:
        super().__init__(f"{variable}={value!r} is invalid: expected {expected}")


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError(text)
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


_PARSERS: dict[type, tuple[Callable[[str], Any], str]] = {
    str: (str, "a string"),
    float: (_positive_float, "a positive number"),
    int: (_positive_int, "a positive whole number"),
}


@dataclass(frozen=True)
class Settings:
    # Left out of repr(): it may hold a password.
    database_url: str = dataclasses.field(default="sqlite:///var/cronledger.sqlite", repr=False)
    timezone: str = "UTC"
    tick_seconds: float = 1.0
    misfire_grace_seconds: float = 5.0
    retry_base_seconds: float = 30.0
    max_attempts: int = 5
    lease_seconds: float = 60.0
    worker_concurrency: int = 8
    schedule_concurrency: int = 4
    shutdown_grace_seconds: float = 30.0
    catchup_per_schedule: int = 20
    catchup_per_scan: int = 100
    scan_budget_seconds: float = 5.0
    metrics_cache_seconds: float = 5.0
    streams_per_account: int = 2
    streams_per_tenant: int = 3
    streams_per_process: int = 4
    stream_replay_positions: int = 1000
    refusals_per_minute: int = 120

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every `CRONLEDGER_<FIELD>` variable; an unset one keeps its default."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field in fields(cls):
            variable = f"CRONLEDGER_{field.name.upper()}"
            if variable not in environ:
                continue
            parse, expected = _PARSERS[type(getattr(cls(), field.name))]
            try:
                values[field.name] = parse(environ[variable])
            except ValueError:
                raise ConfigError(variable, environ[variable], expected) from None
        return cls(**values)
