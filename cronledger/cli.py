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
from cronledger.persistence.store import Store, redacted_url
from cronledger.printable import printable, printable_json
from cronledger.version import installed_version
from domain.directory import SYSTEM_ACTOR, Principal, tenant_uuid
from domain.errors import DomainError
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
    """Migrate the store for this release and rebuild outdated read models (safe to repeat)."""
    with opened() as services:
        click.echo(f"store ready ({services.store.kind})")


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
    found, head = verification.found, verification.head
    if as_json:
        broken = {"position": found.position, "problem": found.problem} if found else None
        checked = {"events": head.events, "position": head.position, "head": head.hash}
        vouched = dict.fromkeys(checked) if found else checked  # a broken log vouches for none
        click.echo(json.dumps({"intact": found is None, "break": broken, **vouched}))
    elif found is None:
        click.echo(
            f"the log matches its hash chain: {head.events} events checked, up to position "
            f"{head.position}; chain head {head.hash}"
        )
    else:
        click.echo(
            f"the log no longer matches at position {found.position}: {printable(found.problem)}"
        )
    if found is not None:
        sys.exit(1)


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
