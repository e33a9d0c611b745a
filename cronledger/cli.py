"""The `cronledger` command line (docs/configuration.md lists every command)."""

from __future__ import annotations

import getpass
import json
import logging
import os
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import psycopg
from eventsourcing import persistence
from tqdm import tqdm

from cronledger.application.evidence import NoSigningKey
from cronledger.application.services import (
    SERVING_KINDS,
    NoLog,
    Services,
    open_existing,
    open_services,
)
from cronledger.config import ConfigError, Settings, effective, unknown_variables
from cronledger.health import DRAINING, Health
from cronledger.logs import configure_logging
from cronledger.persistence.backup import BackupRefused, backup_sqlite, pg_dump_command
from cronledger.persistence.connections import Limits
from cronledger.persistence.ledger import TimelineEntry, jsonable
from cronledger.persistence.signing_key import (
    SigningKey,
    SigningKeyError,
    create_signing_key,
    load_signing_key,
    signing_key_path,
)
from cronledger.persistence.store import Store, redacted_url
from cronledger.printable import printable, printable_json
from cronledger.version import installed_version
from domain.directory import SYSTEM_ACTOR, Principal, tenant_uuid
from domain.errors import DomainError
from domain.evidence import (
    BundleReport,
    Checkpoint,
    EvidenceError,
    consistency_problem,
    public_key_from_pem,
    verify_bundle,
)
from domain.merkle import ProofError
from domain.reasons import MAX_REASON
from domain.triggers import TriggerError, load_zone
from projections.catalog import projection_named, rebuildable_projections
from projections.maintenance import STOPPED
from projections.maintenance import rebuild as rebuild_projections
from tick.loops import Loop, stop_on_signals
from tick.notifier import notifier_loop
from tick.processes import (
    every_loop,
    projections_loop,
    sweeper_loop,
    tick_loop,
    worker_loop,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from flask import Flask

log = logging.getLogger("cronledger.cli")
API_CONNECTIONS = 100  # connections a web process keeps open for API clients (waitress's default)
WHERE_OF_SIDE = {
    "live": "only in the live table",
    "replay": "only in the replay",
    STOPPED: "the replay stopped on an event it cannot apply",
}


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
        services = (
            open_existing(settings, kind=kind)
            if read_only
            else open_services(settings, health=health, kind=kind)
        )
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    except NoLog as error:
        raise NothingToRead(str(error)) from None
    except (psycopg.OperationalError, persistence.OperationalError) as error:
        where = redacted_url(settings.database_url)
        raise click.ClickException(f"cannot open the store at {where}: {error}") from None
    try:
        yield services
    except DomainError as error:
        raise click.ClickException(printable(error.message)) from None
    finally:
        services.close()


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


@main.command()
def migrate() -> None:
    """Migrate the store for this release, rebuild outdated read models and make the signing
    key of checkpoints if there is none (safe to repeat: a key is never replaced)."""
    with opened() as services:
        click.echo(f"store ready ({services.store.kind})")
        path = signing_key_path(services.settings.signing_key_file, services.store)
        key, created = _signing_key(path)
    made = " created" if created else ""
    click.echo(f"signing key {printable(str(path))}{made} (key id {key.key_id})")


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


def web_options(command: Callable[..., None]) -> Callable[..., None]:
    for option in reversed(
        (
            click.option("--host", default="127.0.0.1", show_default=True),
            click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535)),
            click.option("--threads", default=8, show_default=True, type=click.IntRange(1, 64)),
        )
    ):
        command = option(command)
    return command


def probe_options(command: Callable[..., None]) -> Callable[..., None]:
    """`--metrics-port`, `--metrics-host`: the probes and `/metrics` on a server of their own."""
    for option in reversed(
        (
            click.option(
                "--metrics-port",
                type=click.IntRange(1, 65535),
                help="Answer /livez, /readyz, /healthz and /metrics on this port too, from a "
                "small server of their own that busy API threads cannot hold up.",
            ),
            click.option(
                "--metrics-host",
                default="127.0.0.1",
                show_default=True,
                help="The address --metrics-port listens on.",
            ),
        )
    ):
        command = option(command)
    return command


@contextmanager
def running(metrics_host: str, metrics_port: int | None) -> Iterator[tuple[Services, Flask | None]]:
    """A long-running process's services, and its probe server's app if it has one. The probes
    listen first, so that `/readyz` tells what the start waits for (migration lock, rebuild)."""
    health = Health()
    probes = None
    if metrics_port is not None:
        from web.probes import probe_app, serve_probes

        probes = probe_app(health)
        serve_probes(probes, metrics_host, metrics_port)
    with opened(health=health) as services:
        yield services, probes


@main.command()
@web_options
@probe_options
def serve(host: str, port: int, threads: int, metrics_host: str, metrics_port: int | None) -> None:
    """Run everything in one process: web API, tick, worker, deadline sweeper, projections,
    webhook notifier."""
    with running(metrics_host, metrics_port) as (services, probes):
        loops = [*every_loop(services), notifier_loop(services, 1.0)]
        _serve_web(services, host, port, threads, loops, probes)


@main.command()
@web_options
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    help="Server processes sharing the port, each with --threads API threads and its own "
    "connections (default: CRONLEDGER_WEB_WORKERS, 1). Worker i answers its probes and "
    "/metrics on --metrics-port + i.",
)
@probe_options
def web(
    host: str,
    port: int,
    threads: int,
    workers: int | None,
    metrics_host: str,
    metrics_port: int | None,
) -> None:
    """Run the web API alone, in one process or in several sharing its port."""
    settings = _checked_settings()
    count = workers or settings.web_workers
    if count == 1:
        with running(metrics_host, metrics_port) as (services, probes):
            _serve_web(services, host, port, threads, [], probes)
        return
    from cronledger.workers import Supervisor, listening_socket

    configure_logging(settings.log_level)
    sock = listening_socket(host, port)
    click.echo(f"cronledger listening on http://{host}:{port} ({count} workers)")

    def serve_one(index: int) -> int:
        probe_port = None if metrics_port is None else metrics_port + index
        try:
            with running(metrics_host, probe_port) as (services, probes):
                _serve_web(services, host, port, threads, [], probes, sock)
        except click.ClickException as error:
            error.show()
            return error.exit_code
        return 0

    sys.exit(Supervisor(count, serve_one, settings.shutdown_grace_seconds).run())


def _checked_settings() -> Settings:
    try:
        return Settings.from_env()
    except ConfigError as error:
        raise click.ClickException(str(error)) from None


@main.command()
@click.option("--interval", default=1.0, show_default=True, type=click.FloatRange(0.05))
@probe_options
def sweeper(interval: float, metrics_host: str, metrics_port: int | None) -> None:
    """Run the deadline sweeper alone: expire instances whose deadline has come."""
    with running(metrics_host, metrics_port) as (services, probes):
        _run_alone(services, sweeper_loop(services, interval), probes)


@main.command()
@click.option("--interval", default=1.0, show_default=True, type=click.FloatRange(0.05))
@probe_options
def notifier(interval: float, metrics_host: str, metrics_port: int | None) -> None:
    """Run the webhook notifier alone: schedule and send the messages subscriptions want."""
    with running(metrics_host, metrics_port) as (services, probes):
        _run_alone(services, notifier_loop(services, interval), probes)


@main.group(invoke_without_command=True)
@click.option("--interval", default=1.0, show_default=True, type=click.FloatRange(0.05))
@probe_options
@click.pass_context
def projections(
    context: click.Context, interval: float, metrics_host: str, metrics_port: int | None
) -> None:
    """Run the projections alone: keep the SQL read models up to date."""
    if context.invoked_subcommand is None:
        with running(metrics_host, metrics_port) as (services, probes):
            _run_alone(services, projections_loop(services, interval), probes)


@projections.command()
@click.argument("name", required=False)
def rebuild(name: str | None) -> None:
    """Rebuild one projection (or all) from position zero into fresh tables, then swap them in."""
    with opened(read_only=True) as services:
        try:
            chosen = [projection_named(name)] if name else rebuildable_projections()
        except ValueError as error:
            raise click.ClickException(str(error)) from None
        with _progress(services, f"rebuild {name or 'all'}") as advance:
            try:
                rebuild_projections(services.ledger, chosen, advance)
            except ValueError as error:
                raise click.ClickException(str(error)) from None
        click.echo(f"rebuilt {', '.join(p.name for p in chosen)}")


@main.group(invoke_without_command=True)
@probe_options
@click.pass_context
def tick(context: click.Context, metrics_host: str, metrics_port: int | None) -> None:
    """Run the tick alone: register every due cycle, every CRONLEDGER_TICK_SECONDS."""
    if context.invoked_subcommand is None:
        with running(metrics_host, metrics_port) as (services, probes):
            _run_alone(services, tick_loop(services), probes)


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


def _console_actor() -> str:
    """Who runs a command at the console, as events record it: `system:cli:<login>`."""
    try:
        return f"{SYSTEM_ACTOR}:cli:{getpass.getuser()}"
    except (OSError, KeyError):  # no login name in this environment
        return f"{SYSTEM_ACTOR}:cli"


@tick.command("pause")
@reason_option
def tick_pause(reason: str) -> None:
    """Pause the tick of every process: no cycle is registered until `tick resume`."""
    with opened() as services:
        pause = services.pauses.pause_tick(_console_actor(), reason)
    assert pause is not None
    click.echo(
        f"the tick is paused since {_utc(pause.at)} by {printable(pause.actor)}: "
        f"{printable(pause.reason)}"
    )


@tick.command("resume")
@reason_option
def tick_resume(reason: str) -> None:
    """Resume the tick: cycles missed while paused follow each schedule's misfire policy."""
    with opened() as services:
        services.pauses.resume_tick(_console_actor(), reason)
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
            f"the tick is paused since {_utc(pause.at)} by {printable(pause.actor)}: "
            f"{printable(pause.reason)}"
        )
    for entry in history:
        click.echo(_line(entry, UTC))


@main.group()
def schedules() -> None:
    """Act on every schedule of a tenant at once."""


@schedules.command("pause")
@click.option("--tenant", required=True, help="Name of the tenant.")
@reason_option
def schedules_pause(tenant: str, reason: str) -> None:
    """Pause every schedule of a tenant: the tick registers none of its cycles until resumed."""
    with opened() as services:
        view = services.pauses.pause_tenant(_console_principal(tenant), reason)
    pause = view.schedules_paused
    assert pause is not None
    click.echo(
        f"the schedules of tenant {tenant} are paused since {_utc(pause.at)} by "
        f"{printable(pause.actor)}: {printable(pause.reason)}"
    )


@schedules.command("resume")
@click.option("--tenant", required=True, help="Name of the tenant.")
@reason_option
def schedules_resume(tenant: str, reason: str) -> None:
    """Resume a tenant's schedules: cycles missed while paused follow each misfire policy."""
    with opened() as services:
        services.pauses.resume_tenant(_console_principal(tenant), reason)
    click.echo(f"the schedules of tenant {tenant} run")


def _console_principal(tenant: str) -> Principal:
    return Principal(tenant_uuid(tenant), _console_actor(), frozenset())


def _utc(at: datetime) -> str:
    return str(jsonable(at))


@main.command()
@click.option("--interval", default=1.0, show_default=True, type=click.FloatRange(0.05))
@probe_options
def worker(interval: float, metrics_host: str, metrics_port: int | None) -> None:
    """Run the worker alone: launch due runs as approval instances, with retries."""
    with running(metrics_host, metrics_port) as (services, probes):
        _run_alone(services, worker_loop(services, interval), probes)


def _run_alone(services: Services, loop: Loop, probes: Flask | None) -> None:
    if probes is not None:
        from cronledger.application.metrics import registry_for
        from web.probes import attach_probes

        attach_probes(probes, services, registry_for(services))
    stop_on_signals(Shutdown(services, [loop]).begin)
    loop.run()


class Shutdown:
    """SIGTERM or SIGINT: not ready at once, every loop asked to stop at the same time, a web
    server serving on for CRONLEDGER_DRAIN_SECONDS then closing once its requests are answered;
    after CRONLEDGER_SHUTDOWN_GRACE_SECONDS the process exits, whatever is left undone."""

    def __init__(self, services: Services, loops: list[Loop], server: Any = None) -> None:
        self.health, self.settings = services.health, services.settings
        self.loops, self.server = loops, server
        self.deadline: float | None = None

    def begin(self) -> None:
        if self.deadline is not None:
            return
        grace = self.settings.shutdown_grace_seconds
        self.deadline = time.monotonic() + grace
        self.health.enter(DRAINING, "shutting down")
        log.info("shutting down", extra={"drain_seconds": self.settings.drain_seconds})
        for loop in self.loops:
            loop.stop.set()
        timer = threading.Timer(grace, _exit_anyway, (grace,))
        timer.daemon = True  # a process done sooner does not wait for it
        timer.start()
        if self.server is not None:
            threading.Thread(target=self._drain, name="drain", daemon=True).start()

    def remaining(self) -> float:
        return max(0.0, (self.deadline or time.monotonic()) - time.monotonic())

    def join(self, threads: list[threading.Thread]) -> None:
        """Wait for the loops together, until the shutdown's deadline at most."""
        for thread in threads:
            thread.join(self.remaining())

    def _drain(self) -> None:
        from waitress import wasyncore

        server = self.server
        time.sleep(min(self.settings.drain_seconds, self.remaining()))
        try:
            server.trigger.pull_trigger(lambda: wasyncore.dispatcher.close(server))  # no new client
            while _answering(server) and self.remaining() > 0:
                time.sleep(0.05)
        except Exception:  # the server is closed below all the same
            log.exception("draining failed: closing the server now")
        server.trigger.pull_trigger(lambda: wasyncore.close_all(server._map))  # ends server.run


def _answering(server: Any) -> bool:
    """Whether a connection of the server still reads, runs or writes a request."""
    from waitress.channel import HTTPChannel

    return any(
        channel.requests or channel.request is not None or channel.total_outbufs_len
        for channel in server._map.copy().values()  # a copy taken at once: the map changes
        if isinstance(channel, HTTPChannel)
    )


def _exit_anyway(grace: float) -> None:
    log.error("shutdown took longer than %s s: exiting anyway", grace)
    logging.shutdown()
    os._exit(1)


def _serve_web(
    services: Services,
    host: str,
    port: int,
    threads: int,
    loops: list[Loop],
    probes: Flask | None,
    sock: socket.socket | None = None,
) -> None:
    """Serve the API with `threads` threads, and each event stream the process allows with a
    thread of its own beside them; on `sock` (a worker's shared socket) if given, else on a
    socket of its own bound to `host:port`."""
    import waitress

    from web import MAX_BODY_BYTES, create_app
    from web.probes import attach_probes
    from web.server_errors import answer_refusals_as_problems

    app = create_app({"SERVICES": services})
    if probes is not None:
        attach_probes(probes, services, app.extensions["metrics"])
    streams = services.settings.streams_per_process
    where: dict[str, Any] = {"sockets": [sock]} if sock else {"host": host, "port": port}
    server = waitress.create_server(
        app,
        **where,
        threads=threads + streams,
        connection_limit=API_CONNECTIONS + streams,
        asyncore_use_poll=True,  # select() watches no more than 1,024 sockets
        ident="cronledger",
        # a longer body is 413 before it is buffered (waitress refuses from this size on)
        max_request_body_size=MAX_BODY_BYTES + 1,
        channel_request_lookahead=1,  # keeps reading, so a stream sees its client leave
    )
    answer_refusals_as_problems(server)  # waitress's own 413 and 400 too

    shutdown = Shutdown(services, loops, server)
    stop_on_signals(shutdown.begin)
    loop_threads = [loop.start() for loop in loops]
    if sock is None:
        click.echo(f"cronledger listening on http://{host}:{port} ({services.store.kind})")
    else:
        log.info("web worker serving", extra={"pid": os.getpid(), "store": services.store.kind})
    try:
        server.run()
    except OSError:
        pass  # the drain closed the server's sockets
    finally:
        shutdown.begin()  # no-op after a signal
        shutdown.join(loop_threads)


@main.group()
def audit() -> None:
    """Read the log as an auditor."""


class Zone(click.ParamType[tzinfo]):
    """An IANA time zone name, e.g. Asia/Shanghai."""

    name = "zone"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tzinfo:
        if isinstance(value, tzinfo):
            return value
        try:
            return load_zone(value)
        except TriggerError as error:
            self.fail(error.message, param, ctx)


def zone_option(command: Callable[..., None]) -> Callable[..., None]:
    """`--tz ZONE`: instants printed in that zone, with its offset, instead of UTC."""
    return click.option(
        "--tz",
        "zone",
        type=Zone(),
        default=UTC,
        help="IANA time zone to print instants in (default UTC).",
    )(command)


@audit.command()
@click.argument("key")
@click.option("--tenant", help="Tenant of an account id (needed only if several have it).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of text.")
@zone_option
def timeline(key: str, tenant: str | None, as_json: bool, zone: tzinfo) -> None:
    """Every event of one aggregate (a log id, or an account id), oldest first."""
    with opened(read_only=True) as services:
        entries = services.audit.timeline(key, tenant, zone)
    if as_json:
        json.dump({"items": [jsonable(asdict(e), zone) for e in entries]}, sys.stdout, indent=2)
        click.echo()
        return
    for entry in entries:
        click.echo(_line(entry, zone))


@audit.command()
@click.argument("key")
@click.option("--at", "at_text", required=True, help="An instant with its offset (ISO 8601).")
@click.option("--tenant", help="Tenant of an account id (needed only if several have it).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of text.")
@zone_option
def state(key: str, at_text: str, tenant: str | None, as_json: bool, zone: tzinfo) -> None:
    """An aggregate as it was at a past instant."""
    at = _instant(at_text)
    with opened(read_only=True) as services:
        found = services.audit.state(key, at, tenant, zone)
    if as_json:
        click.echo(printable_json(found, indent=2))
        return
    last = found["last_event"]
    click.echo(
        f"{printable(found['type'])} {found['id']} log_version {found['log_version']} "
        f"as of {found['as_of']} "
        f"(last event #{last['position']} {printable(last['type'])})"
    )
    for field, value in found["state"].items():
        click.echo(f"  {printable(field)} = {printable_json(value)}")


@audit.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of text.")
def replay(as_json: bool) -> None:
    """Rebuild every projection from the log and compare it with the live tables."""
    with opened(read_only=True) as services, _progress(services, "replay") as advance:
        differences = services.audit.replay(advance)
    if as_json:
        rows = [
            {"table": d.table, "side": d.side, "row": jsonable(list(d.row))} for d in differences
        ]
        click.echo(printable_json({"differences": rows}, indent=2))
    else:
        for d in differences:
            click.echo(f"{d.table}: {WHERE_OF_SIDE[d.side]}: {jsonable(list(d.row))}")
        click.echo("no difference" if not differences else f"{len(differences)} differences")
    if differences:
        sys.exit(1)


@audit.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of text.")
def verify(as_json: bool) -> None:
    """Recompute the hash chain over the log; name the first position that no longer matches."""
    with opened(read_only=True) as services, _progress(services, "verify") as advance:
        verification = services.audit.verify(advance)
    found, head, tree = verification.found, verification.head, verification.tree
    if as_json:
        broken = {"position": found.position, "problem": found.problem} if found else None
        checked = {
            "events": head.events,
            "position": head.position,
            "head": head.hash,
            "tree_size": tree.size,
            "tree_root": tree.root.hex(),
        }
        vouched = dict.fromkeys(checked) if found else checked  # a broken log vouches for none
        checkpoints = {
            "proven": verification.proven,
            "unproven": [c.as_json() for c in verification.unproven],
        }
        click.echo(json.dumps({"intact": found is None, "break": broken, **vouched, **checkpoints}))
    elif found is None:
        click.echo(
            f"the log matches its hash chain and its Merkle tree: {head.events} events checked, "
            f"up to position {head.position}; chain head {head.hash}; tree of {tree.size} "
            f"events, root {tree.root.hex()}; {verification.proven} signed checkpoints proven"
        )
    else:
        click.echo(
            f"the log no longer matches at position {found.position}: {printable(found.problem)}"
        )
        for checkpoint in verification.unproven:
            click.echo(
                f"signed checkpoint of tree size {checkpoint.tree_size} (signed "
                f"{printable(checkpoint.signed_at)}) is not the tree the log gives now"
            )
    if found is not None:
        sys.exit(1)


@audit.command("public-key")
def public_key() -> None:
    """Print the public key (PEM) that checks this service's checkpoints, for auditors."""
    settings = _checked_settings()
    try:
        store = Store.from_url(settings.database_url, Limits.of(settings, "cli"))
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    path = signing_key_path(settings.signing_key_file, store)
    try:
        key = load_signing_key(path)
    except SigningKeyError as error:
        raise click.ClickException(printable(str(error))) from None
    if key is None:
        raise click.ClickException(
            f"no signing key at {printable(str(path))}: `cronledger migrate` makes one (or set "
            "CRONLEDGER_SIGNING_KEY_FILE to the file that holds it)"
        )
    click.echo(key.public_pem(), nl=False)


@audit.command()
@click.option(
    "--since",
    type=click.IntRange(0),
    default=0,
    help="Only the checkpoints of a larger tree size.",
)
@click.option(
    "--latest",
    is_flag=True,
    help="Only the checkpoint of the log as it is now (signed now if the log grew since the "
    "last one).",
)
@click.option(
    "--export",
    is_flag=True,
    help='JSON: {"checkpoints": [...]}; with --latest, the one checkpoint alone, the file to '
    "save and later give to `audit verify-bundle --checkpoint` and `audit consistency`.",
)
def checkpoints(since: int, latest: bool, export: bool) -> None:
    """The signed checkpoints of the log's Merkle tree, oldest first: tree size, log position
    of its last event, when and with which key it was signed, root hash."""
    if latest and since:
        raise click.UsageError("--latest takes no --since")
    with opened(read_only=True) as services:
        chosen = [_latest_checkpoint(services)] if latest else _checkpoints(services, since)
    if export:
        as_json = [c.as_json() for c in chosen]
        click.echo(printable_json(as_json[0] if latest else {"checkpoints": as_json}, indent=2))
        return
    for checkpoint in chosen:
        click.echo(
            f"tree size {checkpoint.tree_size}  position {checkpoint.position}  "
            f"signed {printable(checkpoint.signed_at)}  key {printable(checkpoint.key_id)}  "
            f"root {checkpoint.root.hex()}"
        )


def _latest_checkpoint(services: Services) -> Checkpoint:
    """The checkpoint of the log as it is now: signed now if the log grew since the last."""
    services.projector.catch_up()
    services.evidence.checkpoint(force=True)
    latest = services.evidence.latest()
    if latest is None:
        raise NoSigningKey()
    return latest


def _checkpoints(services: Services, since: int) -> list[Checkpoint]:
    """Every checkpoint above tree size `since`, a page at a time."""
    found: list[Checkpoint] = []
    while page := services.evidence.checkpoints(since):
        found += page
        since = page[-1].tree_size
    return found


class SinceCheckpoint(click.ParamType[int]):
    """A checkpoint saved earlier, as its JSON file or its tree size."""

    name = "checkpoint"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        if value.isdigit():
            return int(value)
        try:
            return _saved_checkpoint(Path(value)).tree_size
        except EvidenceError as error:
            self.fail(printable(str(error)), param, ctx)


@audit.command()
@click.argument("key")
@click.option("--tenant", help="Tenant of an account id (needed only if several have it).")
@click.option(
    "--since",
    multiple=True,
    type=SinceCheckpoint(),
    help="A checkpoint saved earlier (its JSON file, or its tree size): the bundle holds the "
    "proof that the log only grew since it. Repeatable.",
)
def bundle(key: str, tenant: str | None, since: tuple[int, ...]) -> None:
    """One aggregate's events (a log id, or an account id) with the proofs that a signed
    checkpoint holds them, as JSON: `audit verify-bundle` checks it anywhere, with no store."""
    with opened(read_only=True) as services:
        aggregate = services.audit.resolve(key, tenant)
        document = services.evidence.bundle(aggregate, since=list(since))
    click.echo(printable_json(document, indent=2))


EXISTING_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@audit.command("verify-bundle")
@click.argument("bundle_file", metavar="FILE", type=EXISTING_FILE)
@click.option(
    "--public-key",
    "key_file",
    required=True,
    type=EXISTING_FILE,
    help="The service's public key (PEM), as `cronledger audit public-key` prints it.",
)
@click.option(
    "--checkpoint",
    "saved_file",
    type=EXISTING_FILE,
    help="A checkpoint saved earlier (`audit checkpoints --export --latest`): the bundle must "
    'prove the log only grew since. Of a file of several ({"checkpoints": [...]}), the last.',
)
@click.option(
    "--tz",
    "zone",
    type=Zone(),
    help="IANA time zone of the local times (default: this machine's).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of text.")
def verify_bundle_command(
    bundle_file: Path, key_file: Path, saved_file: Path | None, zone: tzinfo | None, as_json: bool
) -> None:
    """Check an evidence bundle offline, with no store and no settings: the checkpoint's
    signature, each event's proof against it and, given a saved checkpoint, that the log only
    grew since. Exit code 1 when anything fails (or a file cannot be read)."""
    with _evidence_refused():
        saved = _saved_checkpoint(saved_file) if saved_file else None
        report = verify_bundle(_json_file(bundle_file), _public_key(key_file), saved)
    if as_json:
        click.echo(printable_json(_report_json(report, zone), indent=2))
    else:
        for line in _report_lines(report, zone):
            click.echo(line)
    if report.problems:
        sys.exit(1)


def _report_lines(report: BundleReport, zone: tzinfo | None) -> Iterator[str]:
    checkpoint = report.checkpoint
    assert checkpoint is not None
    yield (
        f"checked against the checkpoint of tree size {checkpoint.tree_size}, signed "
        f"{printable(checkpoint.signed_at)} with key {printable(checkpoint.key_id)}"
    )
    for event in report.proven:
        local, utc = _instants(event.at, zone)
        yield (
            f"#{event.position} v{event.version} {printable(event.type)} {local} ({utc}) "
            f"by {printable(event.actor or '-')}"
        )
    yield from (f"note: {printable(note)}" for note in report.notes)
    yield from (f"problem: {printable(problem)}" for problem in report.problems)
    if report.problems:
        count = len(report.problems)
        yield f"NOT verified: {count} problem{'' if count == 1 else 's'}"
    else:
        yield (
            f"verified: {len(report.proven)} events of {printable(report.aggregate_id)} proven "
            f"in the signed log of tree size {checkpoint.tree_size}"
        )


def _report_json(report: BundleReport, zone: tzinfo | None) -> dict[str, Any]:
    assert report.checkpoint is not None
    events = []
    for event in report.proven:
        local, utc = _instants(event.at, zone)
        events.append(
            {
                "position": event.position,
                "version": event.version,
                "type": event.type,
                "at": local,
                "at_utc": utc,
                "actor": event.actor,
            }
        )
    return {
        "verified": not report.problems,
        "aggregate_id": report.aggregate_id,
        "checkpoint": report.checkpoint.as_json(),
        "events": events,
        "notes": report.notes,
        "problems": report.problems,
    }


def _instants(at: datetime | None, zone: tzinfo | None) -> tuple[str | None, str | None]:
    """An instant in `zone` (None: this machine's) with its offset, and in UTC."""
    if at is None:
        return None, None
    return at.astimezone(zone).isoformat(), _utc(at)


@audit.command()
@click.argument("old_file", metavar="OLD", type=EXISTING_FILE)
@click.argument("new_file", metavar="NEW", type=EXISTING_FILE)
@click.option(
    "--public-key",
    "key_file",
    type=EXISTING_FILE,
    help="The public key (PEM) the checkpoints were signed with (default: this service's).",
)
def consistency(old_file: Path, new_file: Path, key_file: Path | None) -> None:
    """Check that the log of a checkpoint saved later (NEW) extends the one of a checkpoint
    saved earlier (OLD): nothing OLD signed was rewritten since. Each file holds one checkpoint
    (`audit checkpoints --export --latest`); of a file of several, the last. Exit code 1 when
    it does not."""
    with _evidence_refused():
        old, new = _saved_checkpoint(old_file), _saved_checkpoint(new_file)
        given = _public_key(key_file) if key_file else None
    if old.tree_size > new.tree_size:
        raise click.UsageError(
            f"OLD (tree size {old.tree_size}) is newer than NEW (tree size {new.tree_size}): "
            "give the older checkpoint first"
        )
    with opened(read_only=True) as services:
        key = given or _own_public_key(services)
        try:
            proof = services.evidence.proof_between(old.tree_size, new.tree_size)
        except ProofError as error:
            problem: str | None = str(error)
        else:
            problem = consistency_problem(old, new, proof, key)
    if problem is not None:
        click.echo(f"NOT consistent: {printable(problem)}")
        sys.exit(1)
    click.echo(
        f"consistent: the log of tree size {new.tree_size} extends the one of tree size "
        f"{old.tree_size}"
    )


def _own_public_key(services: Services) -> Ed25519PublicKey:
    if services.evidence.key is None:
        raise NoSigningKey()
    return services.evidence.key.private.public_key()


@contextmanager
def _evidence_refused() -> Iterator[None]:
    """An unreadable file, or evidence that cannot be what it claims: its message, exit 1."""
    try:
        yield
    except EvidenceError as error:
        raise click.ClickException(printable(str(error))) from None


def _json_file(path: Path) -> object:
    try:
        return json.loads(path.read_bytes())
    except OSError as error:
        raise EvidenceError(f"cannot read {path}: {error.strerror}") from None
    except ValueError as error:
        raise EvidenceError(f"{path} is not JSON: {error}") from None
    except RecursionError:
        raise EvidenceError(f"{path} is nested too deeply to be evidence") from None


def _saved_checkpoint(path: Path) -> Checkpoint:
    """The checkpoint a file holds; of `{"checkpoints": [...]}`, the last."""
    data = _json_file(path)
    if isinstance(data, dict) and "checkpoints" in data:
        listed = data["checkpoints"]
        if not isinstance(listed, list) or not listed:
            raise EvidenceError(f"{path} holds no checkpoint")
        data = listed[-1]
    try:
        return Checkpoint.from_json(data)
    except EvidenceError as error:
        raise EvidenceError(f"{path}: {error}") from None


def _public_key(path: Path) -> Ed25519PublicKey:
    try:
        return public_key_from_pem(path.read_bytes())
    except OSError as error:
        raise EvidenceError(f"cannot read {path}: {error.strerror}") from None
    except EvidenceError as error:
        raise EvidenceError(f"{path}: {error}") from None


@contextmanager
def _progress(services: Services, label: str) -> Iterator[Callable[[int], object]]:
    """A progress bar on standard error over the log's events (done, rate, time left)."""
    total = services.ledger.recorder.max_notification_id() or 0
    with tqdm(total=total, desc=label, unit=" events", file=sys.stderr) as bar:
        yield bar.update


def _instant(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not an ISO 8601 instant", param_hint="--at"
        ) from None
    if moment.utcoffset() is None:
        raise click.BadParameter(f"{text!r} needs an offset (Z or +08:00)", param_hint="--at")
    return moment


def _line(entry: TimelineEntry, zone: tzinfo) -> str:
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
