"""Serving the web API with waitress, and shutting a process down: drain, then exit
(docs/deployment.md)."""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

import click

from cronledger.application.services import (
    Services,
)
from cronledger.cli.base import log
from cronledger.health import DRAINING, STOPPED
from tick.loops import Loop, stop_on_signals
from web.closing import close_gracefully

if TYPE_CHECKING:
    from web.probes import ProbeServer

API_CONNECTIONS = 100  # connections a web process keeps open for API clients (waitress's default)
IDLE_CHECKS = 3  # searches for silent connections within CRONLEDGER_IDLE_CONNECTION_SECONDS


def run_alone(services: Services, loop: Loop, probes: ProbeServer | None) -> None:
    """One loop in this thread until a signal stops it; with a probe server, ready once the
    loop runs, and answering until the drain's end."""
    if probes is not None:
        from cronledger.application.metrics import registry_for
        from web.probes import attach_probes

        attach_probes(probes.app, services, registry_for(services))
    shutdown = Shutdown(services, [loop])
    stop_on_signals(shutdown.begin)
    loop.run()
    shutdown.finished(answering_probes=probes is not None)


class Shutdown:
    """SIGTERM or SIGINT: not ready at once (draining), every loop asked to stop at the same
    time, a web server serving on for CRONLEDGER_DRAIN_SECONDS then closing once its requests
    are answered (web/closing.py: no connection reset); stopped once the loops and server have;
    after CRONLEDGER_SHUTDOWN_GRACE_SECONDS the process exits, whatever is left undone."""

    def __init__(self, services: Services, loops: list[Loop], server: Any = None) -> None:
        self.health, self.settings = services.health, services.settings
        self.loops, self.server = loops, server
        self.deadline: float | None = None
        self.drain_end: float | None = None

    def begin(self) -> None:
        if self.deadline is not None:
            return
        grace = self.settings.shutdown_grace_seconds
        self.deadline = time.monotonic() + grace
        self.drain_end = time.monotonic() + self.settings.drain_seconds
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

    def finished(self, answering_probes: bool) -> None:
        """The loops and the server have stopped: the phase says so. A process answering
        probes keeps answering (stopped) until its drain's end, so that whatever asks sees it
        stop rather than vanish."""
        self.health.enter(STOPPED, "the loops and the server have stopped; exiting")
        log.info("stopped")
        if answering_probes and self.drain_end is not None:
            time.sleep(min(max(self.drain_end - time.monotonic(), 0.0), self.remaining()))

    def _drain(self) -> None:
        time.sleep(min(self.settings.drain_seconds, self.remaining()))
        try:
            close_gracefully(self.server, self.remaining)
        except Exception:  # the server is closed all the same (close_gracefully's last step)
            log.exception("draining failed: closing the server now")


def _exit_anyway(grace: float) -> None:
    log.error("shutdown took longer than %s s: exiting anyway", grace)
    logging.shutdown()
    os._exit(1)


def serve_web(
    services: Services,
    host: str,
    port: int,
    threads: int,
    loops: list[Loop],
    probes: ProbeServer | None,
    sock: socket.socket | None = None,
) -> None:
    """Serve the API with `threads` threads, and each event stream the process allows with a
    thread of its own beside them; on `sock` (a worker's shared socket) if given, else on a
    socket of its own bound to `host:port`. The probe server says ready once it listens."""
    import waitress

    from web import MAX_BODY_BYTES, create_app
    from web.connection_cap import cap_connections_per_address
    from web.probes import attach_probes

    app = create_app({"SERVICES": services})
    settings = services.settings
    streams = settings.streams_per_process
    idle = math.ceil(settings.idle_connection_seconds)  # waitress counts whole seconds
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
        channel_timeout=idle,  # a connection not being answered, silent this long, is closed
        cleanup_interval=max(1, idle // IDLE_CHECKS),
    )
    # One address holds a bounded share of the connections; waitress's own 413 and 400 too
    # are problem documents.
    cap_connections_per_address(server, settings.connections_per_address, app.extensions["metrics"])
    if probes is not None:
        attach_probes(probes.app, services, app.extensions["metrics"])

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
        shutdown.finished(answering_probes=False)  # its drain is over
