"""Setting up and operating a store: `migrate`, `bootstrap`, `backup`, `config`, a
projection's rebuild, the tick's and a tenant's pauses (docs/operations.md)."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cronledger.config import ConfigError, Settings, effective, unknown_variables
from cronledger.persistence.backup import BackupRefused, backup_sqlite, pg_dump_command
from cronledger.persistence.connections import Limits
from cronledger.persistence.event_keys import (
    EventKeyError,
    EventKeys,
    create_event_keys,
    event_keys_path,
    load_event_keys,
    rotate_event_keys,
)
from cronledger.persistence.signing_key import (
    SigningKey,
    SigningKeyError,
    create_signing_key,
    load_signing_key,
    signing_key_path,
)
from cronledger.persistence.store import Store
from cronledger.printable import printable
from projections.catalog import projection_named, rebuildable_projections
from projections.maintenance import rebuild as rebuild_projections

if TYPE_CHECKING:
    pass
from cronledger.cli.base import (
    NothingToRead,
    checked_settings,
    console_actor,
    console_principal,
    main,
    opened,
    progress_bar,
    reason_option,
    timeline_line,
    utc_text,
)
from cronledger.cli.processes import projections, tick


@main.command()
def migrate() -> None:
    """Migrate the store for this release, rebuild outdated read models, make the signing key
    of checkpoints and the event keys if there are none (safe to repeat: a key is never
    replaced), and authenticate events from here on if the store did not yet."""
    with opened() as services:
        click.echo(f"store ready ({services.store.kind})")
        path = signing_key_path(services.settings.signing_key_file, services.store)
        key, created = _signing_key(path)
        keys_path = event_keys_path(services.settings.event_keys_file, services.store)
        keys, keys_created = _event_keys(keys_path)
        services.ledger.use_event_keys(keys)
        boundary = services.ledger.start_authentication()
    made = " created" if created else ""
    click.echo(f"signing key {printable(str(path))}{made} (key id {key.key_id})")
    made = " created" if keys_created else ""
    ids = ", ".join(k.key_id for k in keys.keys)
    click.echo(f"event keys {printable(str(keys_path))}{made} (key ids {ids})")
    if boundary is not None:
        click.echo(f"events are authenticated from position {boundary.position} on")


def _event_keys(path: Path) -> tuple[EventKeys, bool]:
    """The keys in `path`, made now if there are none; and whether they were made now."""
    try:
        found = load_event_keys(path)
        return (found, False) if found is not None else (create_event_keys(path, now()), True)
    except EventKeyError as error:
        raise click.ClickException(printable(str(error))) from None
    except OSError as error:
        raise click.ClickException(
            f"cannot create the event keys {printable(str(path))}: {error.strerror}"
        ) from None


@main.command("rotate-event-key")
def rotate_event_key() -> None:
    """Add a new event key: events are authenticated with it from now on (each process once
    restarted), the older keys kept to verify the events written before."""
    settings = checked_settings()
    try:
        store = Store.from_url(settings.database_url, Limits.of(settings, "cli"))
        path = event_keys_path(settings.event_keys_file, store)
        keys = rotate_event_keys(path, now())
    except (ConfigError, EventKeyError) as error:
        raise click.ClickException(printable(str(error))) from None
    except OSError as error:
        raise click.ClickException(
            f"cannot rewrite the event keys {printable(str(path))}: {error.strerror}"
        ) from None
    click.echo(
        f"event keys {printable(str(path))}: new key id {keys.writer.key_id} writes from now "
        f"on ({len(keys.keys)} keys kept); restart every process so each writes with it"
    )


def now() -> datetime:
    return datetime.now(UTC)


def _signing_key(path: Path) -> tuple[SigningKey, bool]:
    """The key in `path`, made now if there is none; and whether it was made now."""
    try:
        found = load_signing_key(path)
        return (found, False) if found is not None else (create_signing_key(path), True)
    except SigningKeyError as error:
        raise click.ClickException(printable(str(error))) from None
    except OSError as error:
        raise click.ClickException(
            f"cannot create the signing key {printable(str(path))}: {error.strerror}"
        ) from None


@main.command()
@click.option("--tenant", required=True, help="Name of the new tenant.")
@click.option("--admin", required=True, help="Id and name of its first admin account.")
def bootstrap(tenant: str, admin: str) -> None:
    """Create a tenant and its first admin; the admin's token is the last line of output."""
    with opened() as services:
        issued = services.directory.bootstrap(tenant, admin)
        click.echo(f"tenant {tenant} created with admin account {admin}")
        click.echo(f"token id {issued.token_id}; the token follows (shown once)")
        click.echo(issued.token)


@main.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
def backup(path: Path) -> None:
    """Copy a SQLite store to PATH while it runs; for PostgreSQL, print the pg_dump command."""
    try:
        settings = Settings.from_env()
        store = Store.from_url(settings.database_url, Limits.of(settings, "cli"))
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    if store.kind == "postgresql":
        click.echo("a PostgreSQL store is backed up with pg_dump (docs/operations.md):", err=True)
        click.echo(pg_dump_command(store, path))
        sys.exit(2)
    try:
        copied = backup_sqlite(store, path)
    except BackupRefused as error:
        raise NothingToRead(str(error)) from None
    except sqlite3.Error as error:
        raise click.ClickException(f"backup failed: {error}") from None
    click.echo(f"backup written to {copied.path} ({copied.size} bytes)")


@main.command("config")
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of text.")
def show_config(as_json: bool) -> None:
    """Print each setting in force, its value (secrets hidden) and where it came from."""
    try:
        settings = Settings.from_env()
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    rows, unknown = effective(settings), unknown_variables(os.environ)
    if as_json:
        ignored = [{"variable": variable, "suggestion": meant} for variable, meant in unknown]
        document = {"settings": [asdict(row) for row in rows], "unknown": ignored}
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
        return
    width = max(len(row.variable) for row in rows)
    for row in rows:
        click.echo(f"{row.variable:<{width}}  {printable(str(row.value))}  ({row.source})")
    for variable, meant in unknown:
        hint = f"; did you mean {meant}?" if meant else ""
        click.echo(f"{printable(variable)}: unknown, ignored{hint}")


@projections.command()
@click.argument("name", required=False)
def rebuild(name: str | None) -> None:
    """Rebuild one projection (or all) from position zero into fresh tables, then swap them in."""
    with opened(read_only=True) as services:
        try:
            zone = services.settings.timezone
            chosen = [projection_named(name, zone)] if name else rebuildable_projections(zone)
        except ValueError as error:
            raise click.ClickException(str(error)) from None
        with progress_bar(services, f"rebuild {name or 'all'}") as advance:
            try:
                rebuild_projections(services.ledger, chosen, advance)
            except ValueError as error:
                raise click.ClickException(str(error)) from None
        click.echo(f"rebuilt {', '.join(p.name for p in chosen)}")


@tick.command("pause")
@reason_option
def tick_pause(reason: str) -> None:
    """Pause the tick of every process: no cycle is registered until `tick resume`."""
    with opened() as services:
        pause = services.pauses.pause_tick(console_actor(), reason)
    assert pause is not None
    click.echo(
        f"the tick is paused since {utc_text(pause.at)} by {printable(pause.actor)}: "
        f"{printable(pause.reason)}"
    )


@tick.command("resume")
@reason_option
def tick_resume(reason: str) -> None:
    """Resume the tick: cycles missed while paused follow each schedule's misfire policy."""
    with opened() as services:
        services.pauses.resume_tick(console_actor(), reason)
    click.echo("the tick is running")


@tick.command("status")
def tick_status() -> None:
    """Whether the tick is paused, and every pause and resume so far."""
    with opened() as services:
        pause = services.pauses.tick_pause()
        history = services.pauses.tick_timeline()
    if pause is None:
        click.echo("the tick is running")
    else:
        click.echo(
            f"the tick is paused since {utc_text(pause.at)} by {printable(pause.actor)}: "
            f"{printable(pause.reason)}"
        )
    for entry in history:
        click.echo(timeline_line(entry, UTC))


@main.group()
def schedules() -> None:
    """Act on every schedule of a tenant at once."""


@schedules.command("pause")
@click.option("--tenant", required=True, help="Name of the tenant.")
@reason_option
def schedules_pause(tenant: str, reason: str) -> None:
    """Pause every schedule of a tenant: the tick registers none of its cycles until resumed."""
    with opened() as services:
        view = services.pauses.pause_tenant(console_principal(tenant), reason)
    pause = view.schedules_paused
    assert pause is not None
    click.echo(
        f"the schedules of tenant {tenant} are paused since {utc_text(pause.at)} by "
        f"{printable(pause.actor)}: {printable(pause.reason)}"
    )


@schedules.command("resume")
@click.option("--tenant", required=True, help="Name of the tenant.")
@reason_option
def schedules_resume(tenant: str, reason: str) -> None:
    """Resume a tenant's schedules: cycles missed while paused follow each misfire policy."""
    with opened() as services:
        services.pauses.resume_tenant(console_principal(tenant), reason)
    click.echo(f"the schedules of tenant {tenant} run")
