"""The `cronledger` command line (docs/configuration.md lists every command)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime, tzinfo
from typing import Any

import click
import psycopg
from eventsourcing import persistence
from tqdm import tqdm

from cronledger.application.services import NoLog, Services, open_existing, open_services
from cronledger.config import ConfigError, Settings
from cronledger.logs import configure_logging
from cronledger.persistence.ledger import TimelineEntry, jsonable
from cronledger.persistence.store import redacted_url
from cronledger.printable import printable, printable_json
from cronledger.version import installed_version
from domain.errors import DomainError
from domain.triggers import TriggerError, load_zone
from projections.catalog import projection_named, rebuildable_projections
from projections.maintenance import STOPPED
from projections.maintenance import rebuild as rebuild_projections
from tick.loops import Loop, stop_on_signals
from tick.processes import (
    every_loop,
    projections_loop,
    sweeper_loop,
    tick_loop,
    worker_loop,
)

WHERE_OF_SIDE = {
    "live": "only in the live table",
    "replay": "only in the replay",
    STOPPED: "the replay stopped on an event it cannot apply",
}


class NothingToRead(click.ClickException):
    """A read-only command found no log: exit code 2, as for any unusable input."""

    exit_code = 2


@contextmanager
def opened(read_only: bool = False) -> Iterator[Services]:
    """The services for one command; configuration and rule errors end it with exit code 1.

    `read_only` commands refuse (exit code 2) a store without events instead of creating one.
    """
    try:
        settings = Settings.from_env()
        services = open_existing(settings) if read_only else open_services(settings)
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


@click.group()
@click.version_option(installed_version(), prog_name="cronledger", message="%(prog)s %(version)s")
def main() -> None:
    """cronledger: scheduled approval workflows on an append-only event log."""
    configure_logging()


@main.command()
def migrate() -> None:
    """Create the store's tables if they are missing (safe to run any number of times)."""
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


@main.command()
@web_options
def serve(host: str, port: int, threads: int) -> None:
    """Run everything in one process: web API, tick, worker, deadline sweeper, projections."""
    with opened() as services:
        _serve_web(services, host, port, threads, every_loop(services))


@main.command()
@web_options
def web(host: str, port: int, threads: int) -> None:
    """Run the web API alone."""
    with opened() as services:
        _serve_web(services, host, port, threads, [])


@main.command()
@click.option("--interval", default=1.0, show_default=True, type=click.FloatRange(0.05))
def sweeper(interval: float) -> None:
    """Run the deadline sweeper alone: expire instances whose deadline has come."""
    with opened() as services:
        _run_alone(sweeper_loop(services, interval))


@main.group(invoke_without_command=True)
@click.option("--interval", default=1.0, show_default=True, type=click.FloatRange(0.05))
@click.pass_context
def projections(context: click.Context, interval: float) -> None:
    """Run the projections alone: keep the SQL read models up to date."""
    if context.invoked_subcommand is None:
        with opened() as services:
            _run_alone(projections_loop(services, interval))


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


@main.command()
def tick() -> None:
    """Run the tick alone: register every due cycle, every CRONLEDGER_TICK_SECONDS."""
    with opened() as services:
        _run_alone(tick_loop(services))


@main.command()
@click.option("--interval", default=1.0, show_default=True, type=click.FloatRange(0.05))
def worker(interval: float) -> None:
    """Run the worker alone: launch due runs as approval instances, with retries."""
    with opened() as services:
        _run_alone(worker_loop(services, interval))


def _run_alone(loop: Loop) -> None:
    stop_on_signals(loop.stop.set)
    loop.run()


def _serve_web(services: Services, host: str, port: int, threads: int, loops: list[Loop]) -> None:
    import waitress

    from web import MAX_BODY_BYTES, create_app

    server = waitress.create_server(
        create_app({"SERVICES": services, "WEB_THREADS": threads}),
        host=host,
        port=port,
        threads=threads,
        ident="cronledger",
        # a longer body is 413 before it is buffered (waitress refuses from this size on)
        max_request_body_size=MAX_BODY_BYTES + 1,
        channel_request_lookahead=1,  # keeps reading, so a stream sees its client leave
    )

    def stop() -> None:
        for loop in loops:
            loop.stop.set()
        server.close()

    stop_on_signals(stop)
    running = [loop.start() for loop in loops]
    click.echo(f"cronledger listening on http://{host}:{port} ({services.store.kind})")
    try:
        server.run()
    except OSError:
        pass  # the listening socket was closed by stop()
    finally:
        stop()
        for thread in running:
            thread.join(timeout=services.settings.shutdown_grace_seconds)


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
