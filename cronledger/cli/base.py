"""The command group, and what its commands share: opening the services, reasons, the
console's actor, instants, timelines and progress bars."""

from __future__ import annotations

import getpass
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING

import click
import psycopg
from eventsourcing import persistence
from tqdm import tqdm

from cronledger.application.services import (
    SERVING_KINDS,
    NoLog,
    Services,
    open_existing,
    open_services,
)
from cronledger.config import ConfigError, Settings
from cronledger.health import Health
from cronledger.logs import configure_logging
from cronledger.persistence.event_auth import NoEventKeys
from cronledger.persistence.event_keys import EventKeyError
from cronledger.persistence.ledger import TimelineEntry, jsonable
from cronledger.persistence.store import redacted_url
from cronledger.printable import printable, printable_json
from cronledger.tracing import configure_tracing, flush
from cronledger.version import installed_version
from domain.directory import SYSTEM_ACTOR, Principal, tenant_uuid
from domain.errors import DomainError
from domain.reasons import MAX_REASON

if TYPE_CHECKING:
    pass


log = logging.getLogger("cronledger.cli")


class NothingToRead(click.ClickException):
    """A read-only command found no log: exit code 2, as for any unusable input."""

    exit_code = 2


@contextmanager
def opened(read_only: bool = False, health: Health | None = None) -> Iterator[Services]:
    """The services for one command; configuration and rule errors end it with exit code 1.

    `read_only` commands refuse (exit code 2) a store without events instead of creating one.
    `health` hears what the opening waits for (the migration lock, a rebuild).
    """
    try:
        settings = Settings.from_env()
        configure_logging(settings.log_level)
        kind = _process_kind()
        if kind != "cli":
            configure_tracing(kind)
        services = (
            open_existing(settings, kind=kind)
            if read_only
            else open_services(settings, health=health, kind=kind)
        )
    except (ConfigError, EventKeyError, NoEventKeys) as error:
        raise click.ClickException(printable(str(error))) from None
    except NoLog as error:
        raise NothingToRead(str(error)) from None
    except (psycopg.OperationalError, persistence.OperationalError) as error:
        where = redacted_url(settings.database_url)
        raise click.ClickException(f"cannot open the store at {where}: {error}") from None
    try:
        yield services
    except DomainError as error:
        raise click.ClickException(printable(error.message)) from None
    except NoEventKeys as error:
        raise click.ClickException(str(error)) from None
    finally:
        services.close()
        flush()  # the spans not exported yet


@contextmanager
def start_errors_logged() -> Iterator[None]:
    """A long-running process that cannot start says why as a log line, in the log's format
    (docs/operations.md#logs), not as text a log collector cannot read; then it exits, 1 (2
    for unusable input, as every command)."""
    try:
        yield
    except click.ClickException as error:
        log.error("cannot start: %s", error.format_message(), extra={"exit_code": error.exit_code})
        raise SystemExit(error.exit_code) from None
    except Exception:
        log.exception("cannot start", extra={"exit_code": 1})
        raise SystemExit(1) from None


def _process_kind() -> str:
    """What this process is, as its connections name it (`cronledger-<kind>`): the long-running
    command's name, else `cli`."""
    command = click.get_current_context(silent=True)
    name = command.info_name if command is not None else None
    return name if name in SERVING_KINDS else "cli"


@click.group()
@click.version_option(installed_version(), prog_name="cronledger", message="%(prog)s %(version)s")
def main() -> None:
    """cronledger: scheduled approval workflows on an append-only event log."""
    configure_logging()


def checked_settings() -> Settings:
    try:
        return Settings.from_env()
    except ConfigError as error:
        raise click.ClickException(str(error)) from None


def reason_option(command: Callable[..., None]) -> Callable[..., None]:
    """`--reason TEXT`: why, recorded on the event (timelines and the audit show it)."""
    return click.option(
        "--reason",
        required=True,
        type=click.STRING,
        callback=_checked_reason,
        help="Why (recorded on the event; 1-500 characters).",
    )(command)


def _checked_reason(context: click.Context, param: click.Parameter, value: str) -> str:
    if not 1 <= len(value.strip()) <= MAX_REASON:
        raise click.BadParameter(f"give 1-{MAX_REASON} characters")
    return value


def console_actor() -> str:
    """Who runs a command at the console, as events record it: `system:cli:<login>`."""
    try:
        return f"{SYSTEM_ACTOR}:cli:{getpass.getuser()}"
    except (OSError, KeyError):  # no login name in this environment
        return f"{SYSTEM_ACTOR}:cli"


def console_principal(tenant: str) -> Principal:
    return Principal(tenant_uuid(tenant), console_actor(), frozenset())


def utc_text(at: datetime) -> str:
    return str(jsonable(at))


@contextmanager
def progress_bar(services: Services, label: str) -> Iterator[Callable[[int], object]]:
    """A progress bar on standard error over the log's events (done, rate, time left)."""
    total = services.ledger.recorder.max_notification_id() or 0
    with tqdm(total=total, desc=label, unit=" events", file=sys.stderr) as bar:
        yield bar.update


def parsed_instant(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not an ISO 8601 instant", param_hint="--at"
        ) from None
    if moment.utcoffset() is None:
        raise click.BadParameter(f"{text!r} needs an offset (Z or +08:00)", param_hint="--at")
    return moment


def timeline_line(entry: TimelineEntry, zone: tzinfo) -> str:
    at = jsonable(entry.at, zone)
    extras = [
        f"{k}={printable(v)}"
        for k, v in (
            ("command", entry.command_id),
            ("outcome", entry.outcome),
            ("reason", entry.reason),
        )
        if v
    ]
    data = " ".join(f"{printable(k)}={printable_json(v)}" for k, v in entry.data.items())
    return "  ".join(
        part
        for part in (
            f"#{entry.position}",
            f"log_version={entry.log_version}",
            at,
            printable(entry.type),
            f"by {printable(entry.actor or '-')}",
            *extras,
            data,
        )
        if part
    )
