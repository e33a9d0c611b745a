"""Settings from the environment (docs/configuration.md), checked once at start-up."""

from __future__ import annotations

import dataclasses
import difflib
import logging
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from domain.triggers import TriggerError, load_zone

PREFIX = "CRONLEDGER_"
# Variables of that prefix that are no settings: read by the project's tests and benchmarks.
NOT_SETTINGS = frozenset({"CRONLEDGER_TEST_POSTGRES_URL"})
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
SECRET_WORDS = ("password", "secret", "token", "key")  # a setting so named is never shown
DAY = 86_400.0
MIN_SECRET_KEY = 32  # characters of CRONLEDGER_SECRET_KEY
log = logging.getLogger("cronledger.config")


class ConfigError(ValueError):
    def __init__(self, variable: str, value: str, expected: str) -> None:
        super().__init__(f"{variable}={value!r} is invalid: expected {expected}")


@dataclass(frozen=True)
class Bounds:
    """The numbers a setting accepts: finite, from `low` (or above it) up to `high`."""

    low: float
    high: float
    above_low: bool = False  # `low` itself refused

    def admits(self, value: float) -> bool:
        at_least_low = value > self.low if self.above_low else value >= self.low
        return math.isfinite(value) and at_least_low and value <= self.high

    def words(self, kind: type) -> str:
        what = "a whole number" if kind is int else "a number of seconds"
        if self.above_low:
            return f"{what} above {_figure(self.low)} and at most {_figure(self.high)}"
        return f"{what} from {_figure(self.low)} to {_figure(self.high)}"


# What each number setting accepts; one not named here gets the rule of its type.
BOUNDS: dict[str, Bounds] = {
    "tick_seconds": Bounds(0.05, 3600),
    "max_attempts": Bounds(1, 100),
    "lease_seconds": Bounds(1, DAY),
    "worker_concurrency": Bounds(1, 1000),
    "schedule_concurrency": Bounds(1, 1000),
    "shutdown_grace_seconds": Bounds(0, 3600, above_low=True),
    "drain_seconds": Bounds(0, 3600),
    "catchup_per_schedule": Bounds(1, 100_000),
    "catchup_per_scan": Bounds(1, 100_000),
    "scan_budget_seconds": Bounds(0, 3600, above_low=True),
    "pool_size": Bounds(1, 1000),
    "pool_overflow": Bounds(0, 1000),
    "streams_per_process": Bounds(0, 5000),  # 0: this process serves no event stream
    "web_workers": Bounds(1, 64),
    "idle_connection_seconds": Bounds(1, 3600),
    "connections_per_address": Bounds(1, 100_000),
    "console_session_hours": Bounds(1, 720),
    "webhook_max_attempts": Bounds(1, 100),
    "webhook_retry_base_seconds": Bounds(0, DAY, above_low=True),
    "webhook_connect_timeout_seconds": Bounds(0, 300, above_low=True),
    "webhook_read_timeout_seconds": Bounds(0, 300, above_low=True),
    "webhook_response_bytes": Bounds(0, 10_000_000),
    "webhook_attempt_deadline_seconds": Bounds(0, 300, above_low=True),
    "webhooks_per_tenant": Bounds(1, 10_000),
    "checkpoint_every_events": Bounds(1, 10_000_000),
    "checkpoint_every_seconds": Bounds(1, 7 * DAY),
    "audit_clock_skew_seconds": Bounds(0, DAY),
}
BOUNDS_OF_TYPE = {float: Bounds(0, DAY, above_low=True), int: Bounds(1, 1_000_000)}


def _figure(number: float) -> str:
    return f"{number:,.0f}" if number == int(number) else f"{number:g}"


def _zone(text: str) -> str:
    try:
        load_zone(text)
    except TriggerError:
        raise ValueError(text) from None
    return text


def _log_level(text: str) -> str:
    if text.upper() not in LOG_LEVELS:
        raise ValueError(text)
    return text.upper()


def _database_url(text: str) -> str:
    from cronledger.persistence.store import Store  # imports this module (ConfigError)

    Store.from_url(text)  # a ValueError (ConfigError) if it is none of the accepted forms
    return text


def _path(text: str) -> str:
    if not text.strip() or "\x00" in text:
        raise ValueError(text)
    return text


def _secret_key(text: str) -> str:
    if len(text) < MIN_SECRET_KEY:
        raise ValueError(text)
    return text


SMTP_SCHEMES = {"smtp": 25, "smtps": 465}


@dataclass(frozen=True)
class SmtpTarget:
    """Where notices are emailed: `smtp://user:password@host:port?starttls=true` (STARTTLS on
    a plain connection) or `smtps://...` (TLS from the start); credentials optional."""

    tls: bool
    host: str
    port: int
    starttls: bool
    user: str | None = dataclasses.field(default=None)
    password: str | None = dataclasses.field(default=None, repr=False)

    @classmethod
    def parse(cls, url: str) -> SmtpTarget:
        """The target a URL names; ValueError for anything else."""
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        starttls = query.pop("starttls", ["false"])
        if parts.scheme not in SMTP_SCHEMES or not parts.hostname or query or parts.path:
            raise ValueError("not an SMTP URL")
        port = parts.port or SMTP_SCHEMES[parts.scheme]  # port out of range: ValueError
        user = unquote(parts.username) if parts.username else None
        password = unquote(parts.password) if parts.password else None
        return cls(
            parts.scheme == "smtps", parts.hostname, port, _flag(starttls[-1]), user, password
        )


def _smtp_url(text: str) -> str:
    SmtpTarget.parse(text)
    return text


def _sender(text: str) -> str:
    if text.count("@") != 1 or any(c.isspace() for c in text):
        raise ValueError(text)
    return text


# The settings that are text, and what each accepts.
TEXT_RULES: dict[str, tuple[Callable[[str], str], str]] = {
    "database_url": (
        _database_url,
        "sqlite:///relative/path, sqlite:////absolute/path or "
        "postgresql://user:password@host:port/db (port 1 to 65535)",
    ),
    "timezone": (_zone, "an IANA time zone name, e.g. UTC or Europe/Paris"),
    "log_level": (_log_level, f"one of {', '.join(LOG_LEVELS)}"),
    "secret_key": (_secret_key, f"at least {MIN_SECRET_KEY} characters"),
    "signing_key_file": (_path, "a file path"),
    "event_keys_file": (_path, "a file path"),
    "smtp_url": (
        _smtp_url,
        "smtp://user:password@host:port (?starttls=true for STARTTLS) or "
        "smtps://user:password@host:port, credentials optional",
    ),
    "smtp_from": (_sender, "an email address, e.g. cronledger@example.com"),
}


FLAGS = {"true": True, "false": False}


def _flag(text: str) -> bool:
    if text.lower() not in FLAGS:
        raise ValueError(text)
    return FLAGS[text.lower()]


def _rule(name: str, default: object) -> tuple[Callable[[str], Any], str]:
    """How a setting's variable is read, and its rule in words."""
    if name in TEXT_RULES:
        return TEXT_RULES[name]
    if type(default) is bool:
        return _flag, "true or false"
    kind: type[int] | type[float] = int if type(default) is int else float
    bounds = BOUNDS.get(name, BOUNDS_OF_TYPE[kind])

    def parse(text: str) -> Any:
        value = kind(text)
        if not bounds.admits(value):
            raise ValueError(text)
        return value

    return parse, bounds.words(kind)


def variable_of(name: str) -> str:
    return PREFIX + name.upper()


def shown(name: str, value: object) -> object:
    """A setting's value as messages and `cronledger config` show it, secrets hidden."""
    if name in ("database_url", "smtp_url"):
        from cronledger.persistence.store import redacted_url  # imports this module

        return redacted_url(str(value))
    if any(word in name for word in SECRET_WORDS) and not name.endswith("_file"):
        return "***"
    return value


@dataclass(frozen=True)
class Settings:
    # Left out of repr(): it may hold a password.
    database_url: str = dataclasses.field(default="sqlite:///var/cronledger.sqlite", repr=False)
    timezone: str = "UTC"
    log_level: str = "INFO"
    tick_seconds: float = 1.0
    misfire_grace_seconds: float = 5.0
    retry_base_seconds: float = 30.0
    max_attempts: int = 5
    lease_seconds: float = 60.0
    worker_concurrency: int = 8
    schedule_concurrency: int = 4
    shutdown_grace_seconds: float = 30.0  # SIGTERM to exit, whatever is left undone
    drain_seconds: float = 5.0  # after SIGTERM, not ready but still serving requests
    catchup_per_schedule: int = 20
    catchup_per_scan: int = 10_000  # 10,000 cycles due at once (docs/operations.md, sizing)
    scan_budget_seconds: float = 5.0
    metrics_cache_seconds: float = 5.0
    web_workers: int = 1  # processes of `cronledger web`, as its --workers (docs/operations.md)
    # Open event streams (docs/security.md#event-streams); each has a server thread of its own.
    streams_per_account: int = 10
    streams_per_tenant: int = 50
    streams_per_process: int = 100
    stream_replay_positions: int = 1000
    refusals_per_minute: int = 120
    # The web server's connections (docs/security.md#connections): how long one that is not
    # being answered may stay silent, and how many of those one client address may hold.
    idle_connection_seconds: float = 75.0
    connections_per_address: int = 50
    # The store's connections (docs/operations.md#connections-and-timeouts).
    connect_timeout_seconds: float = 2.0
    statement_timeout_seconds: float = 30.0
    lock_timeout_seconds: float = 5.0
    idle_in_transaction_timeout_seconds: float = 10.0
    sqlite_busy_timeout_seconds: float = 10.0
    pool_size: int = 2
    pool_overflow: int = 4
    # The console (docs/console/README.md): what signs its cookies ("": a random key for each
    # process), and how long a sign-in lasts at most.
    secret_key: str = dataclasses.field(default="", repr=False)
    console_session_hours: int = 12
    # Outbound webhooks (docs/webhooks.md): where they may go, how often and how long they are
    # tried, how much of an answer is read, and how many subscriptions a tenant may have.
    webhook_allow_private: bool = False
    webhook_allow_http: bool = False
    webhook_max_attempts: int = 8
    webhook_retry_base_seconds: float = 30.0
    webhook_connect_timeout_seconds: float = 5.0
    webhook_read_timeout_seconds: float = 10.0
    webhook_response_bytes: int = 65_536
    webhook_attempt_deadline_seconds: float = 15.0  # one attempt, whole: connect to body
    webhooks_per_tenant: int = 50
    # Evidence for third parties (docs/audit.md): the Ed25519 key checkpoints are signed with
    # ("": beside a SQLite file, else var/cronledger-signing-key.pem), and how often the log's
    # Merkle tree is signed: after so many events, or so long after the last checkpoint.
    signing_key_file: str = ""
    checkpoint_every_events: int = 10_000
    checkpoint_every_seconds: float = 3600.0
    # The secret keys events are authenticated with when written ("": beside a SQLite file,
    # else var/cronledger-event-keys), and how far an event's time may fall before the time of
    # the event logged before it until `audit verify` warns.
    event_keys_file: str = ""
    audit_clock_skew_seconds: float = 5.0
    # Notices by email (docs/configuration.md#email): the SMTP server ("": no email) and the
    # sender's address.
    smtp_url: str = dataclasses.field(default="", repr=False)
    smtp_from: str = "cronledger@localhost"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every `CRONLEDGER_<FIELD>` variable; an unset one keeps its default.

        A value against its setting's rule raises ConfigError; an unknown variable is warned of.
        """
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field in fields(cls):
            variable = variable_of(field.name)
            if variable not in environ:
                continue
            parse, expected = _rule(field.name, field.default)
            try:
                values[field.name] = parse(environ[variable])
            except ValueError:
                value = str(shown(field.name, environ[variable]))
                raise ConfigError(variable, value, expected) from None
        for variable, meant in unknown_variables(environ):
            log.warning(
                f"unknown variable {variable} ignored"
                + (f"; did you mean {meant}?" if meant else ""),
                extra={"variable": variable, "suggestion": meant},
            )
        return cls(**values)


def unknown_variables(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """Each `CRONLEDGER_*` variable that is neither a setting nor a known non-setting, with the
    known variable closest to it (if any is close)."""
    settings = {f.name.upper(): variable_of(f.name) for f in fields(Settings)}
    known = {*settings.values(), *NOT_SETTINGS}
    unknown = sorted(v for v in environ if v.startswith(PREFIX) and v not in known)
    return [(v, _closest(v.removeprefix(PREFIX), settings)) for v in unknown]


def _closest(suffix: str, settings: Mapping[str, str]) -> str | None:
    """The setting whose name is closest to `suffix` (the prefix matches every one)."""
    close = difflib.get_close_matches(suffix, list(settings), n=1)
    return settings[close[0]] if close else None


@dataclass(frozen=True)
class Effective:
    """One setting as in force: its value (secrets hidden) and where that came from."""

    name: str
    variable: str
    value: object
    source: str  # "environment" or "default"


def effective(settings: Settings, environ: Mapping[str, str] | None = None) -> list[Effective]:
    environ = os.environ if environ is None else environ
    return [
        Effective(
            field.name,
            variable_of(field.name),
            shown(field.name, getattr(settings, field.name)),
            "environment" if variable_of(field.name) in environ else "default",
        )
        for field in fields(settings)
    ]
