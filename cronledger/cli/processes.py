"""The long-running processes: `serve` (everything), and `web`, `worker`, `tick`,
`sweeper`, `notifier` and `projections` alone (docs/deployment.md)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

import click

from cronledger.application.services import (
    Services,
)
from cronledger.health import Health
from cronledger.logs import configure_logging
from tick.processes import (
    every_loop,
    notifier_loop,
    projections_loop,
    sweeper_loop,
    tick_loop,
    worker_loop,
)

if TYPE_CHECKING:
    from web.probes import ProbeServer
from cronledger.cli.base import checked_settings, main, opened, start_errors_logged
from cronledger.cli.server import run_alone, serve_web


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
def running(
    metrics_host: str, metrics_port: int | None
) -> Iterator[tuple[Services, ProbeServer | None]]:
    """A long-running process's services, and its probe server if it has one. The probes
    listen first, so that `/readyz` tells what the start waits for (migration lock, rebuild),
    and close last, once the answers they are giving are sent."""
    health = Health()
    probes = None
    if metrics_port is not None:
        from web.probes import probe_app, serve_probes

        probes = serve_probes(probe_app(health), metrics_host, metrics_port)
    try:
        with ExitStack() as stack:
            with start_errors_logged():
                services = stack.enter_context(opened(health=health))
            yield services, probes
    finally:
        if probes is not None:
            probes.close()


@main.command()
@web_options
@probe_options
def serve(host: str, port: int, threads: int, metrics_host: str, metrics_port: int | None) -> None:
    """Run everything in one process: web API, tick, worker, deadline sweeper, projections,
    webhook notifier."""
    with running(metrics_host, metrics_port) as (services, probes):
        loops = [*every_loop(services), notifier_loop(services, 1.0)]
        serve_web(services, host, port, threads, loops, probes)


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
    with start_errors_logged():
        settings = checked_settings()
    count = workers or settings.web_workers
    if count == 1:
        with running(metrics_host, metrics_port) as (services, probes):
            serve_web(services, host, port, threads, [], probes)
        return
    from cronledger.workers import Supervisor, listening_socket

    configure_logging(settings.log_level)
    sock = listening_socket(host, port)
    click.echo(f"cronledger listening on http://{host}:{port} ({count} workers)")

    def serve_one(index: int) -> int:
        probe_port = None if metrics_port is None else metrics_port + index
        with running(metrics_host, probe_port) as (services, probes):
            serve_web(services, host, port, threads, [], probes, sock)
        return 0

    sys.exit(Supervisor(count, serve_one, settings.shutdown_grace_seconds).run())


@main.command()
@click.option("--interval", default=1.0, show_default=True, type=click.FloatRange(0.05))
@probe_options
def sweeper(interval: float, metrics_host: str, metrics_port: int | None) -> None:
    """Run the deadline sweeper alone: expire instances whose deadline has come."""
    with running(metrics_host, metrics_port) as (services, probes):
        run_alone(services, sweeper_loop(services, interval), probes)


@main.command()
@click.option("--interval", default=1.0, show_default=True, type=click.FloatRange(0.05))
@probe_options
def notifier(interval: float, metrics_host: str, metrics_port: int | None) -> None:
    """Run the webhook notifier alone: schedule and send the messages subscriptions want."""
    with running(metrics_host, metrics_port) as (services, probes):
        run_alone(services, notifier_loop(services, interval), probes)


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
            run_alone(services, projections_loop(services, interval), probes)


@main.group(invoke_without_command=True)
@probe_options
@click.pass_context
def tick(context: click.Context, metrics_host: str, metrics_port: int | None) -> None:
    """Run the tick alone: register every due cycle, every CRONLEDGER_TICK_SECONDS."""
    if context.invoked_subcommand is None:
        with running(metrics_host, metrics_port) as (services, probes):
            run_alone(services, tick_loop(services), probes)


@main.command()
@click.option("--interval", default=1.0, show_default=True, type=click.FloatRange(0.05))
@probe_options
def worker(interval: float, metrics_host: str, metrics_port: int | None) -> None:
    """Run the worker alone: launch due runs as approval instances, with retries."""
    with running(metrics_host, metrics_port) as (services, probes):
        run_alone(services, worker_loop(services, interval), probes)
