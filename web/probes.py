"""`/livez`, `/readyz` and `/healthz` (an alias of `/readyz`): what an orchestrator asks.

They read the process's `Health` (its phase, its loops' heartbeats) and, for readiness, one
short query on a connection of their own, never the API's pool. `probe_app` serves them, with
`/metrics`, on a small server of their own (`--metrics-port`), which busy API threads and open
event streams cannot hold up. Each phase of the process answers for itself
(docs/operations.md#health): starting (and migrating, rebuilding), ready, draining, stopped.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from flask import Blueprint, Flask, current_app, g
from prometheus_client import CollectorRegistry

from cronledger.application.services import Services
from cronledger.health import STARTING, Health
from cronledger.version import installed_version
from web import language
from web.api import endpoint
from web.problems import Problem, register_error_handlers
from web.schemas.ops import HealthOut, LivenessOut

bp = Blueprint("probes", __name__)
log = logging.getLogger("cronledger.web.probes")
STORE_TIMEOUT_SECONDS = 1.0  # readiness is refused when the store takes longer to answer
# What a probe server says between its services' opening and their serving (an API server
# listening, a loop running): the process is starting still.
NOT_SERVING_YET = "the store is open; the process does not serve yet"
CLOSE_SECONDS = 2.0  # the longest a probe server's last answers are waited for at exit


class StoreCheck:
    """One query at a time on a thread of its own, each waited for at most `timeout`: a store
    that hangs makes every probe wait no longer than that, and never piles up threads."""

    def __init__(self, ping: Callable[[], object], kind: str, timeout: float) -> None:
        self.ping, self.kind, self.timeout = ping, kind, timeout
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._done.set()
        self._error: str | None = None

    def problem(self) -> str | None:
        """Why the store is not fit to serve, or None when it answered in time."""
        with self._lock:
            if self._done.is_set():  # else: wait on the query still running
                self._done.clear()
                threading.Thread(target=self._run, name="store-check", daemon=True).start()
            done = self._done
        if not done.wait(self.timeout):
            return f"the {self.kind} store did not answer within {self.timeout:g} s"
        return self._error

    def _run(self) -> None:
        try:
            self.ping()
            self._error = None
        except Exception as error:
            self._error = f"the {self.kind} store is unreachable: {type(error).__name__}"
        self._done.set()


def attach(app: Flask, services: Services) -> None:
    """Give the probes the services they check (and keep the store check for the app)."""
    app.extensions["cronledger"] = services
    app.extensions["health"] = services.health
    ping = _ping(services)
    app.extensions["store_check"] = StoreCheck(ping, services.store.kind, STORE_TIMEOUT_SECONDS)


def _ping(services: Services) -> Callable[[], object]:
    store, table = services.store, services.ledger.events_table
    return lambda: store.ping(table, STORE_TIMEOUT_SECONDS)


def probe_app(health: Health) -> Flask:
    """The probes and `/metrics` alone: they answer from `health` at once (`/readyz`: 503 while
    migrating), and from the services (store, metrics) once `attach_probes` gives them."""
    from web import metrics

    app = Flask(__name__)
    app.json.sort_keys = False  # type: ignore[attr-defined]  # as the API's own answers
    app.extensions["health"] = health
    app.extensions["metrics"] = CollectorRegistry()  # empty until the services are open
    app.before_request(_name_request)
    language.install(app)
    register_error_handlers(app)
    app.register_blueprint(bp)
    app.register_blueprint(metrics.bp)
    return app


def attach_probes(app: Flask, services: Services, registry: CollectorRegistry) -> None:
    """The services are open: readiness can check their store, `/metrics` read `registry`."""
    attach(app, services)
    app.extensions["metrics"] = registry


def _name_request() -> None:
    """A problem document names its request (probes take no X-Request-ID of their own)."""
    g.request_id = uuid.uuid4().hex


def _health() -> Health:
    return cast(Health, current_app.extensions["health"])


@bp.get("/livez")
@endpoint("Is this process alive: do its loops run?", tag="operations", response=LivenessOut)
def get_liveness() -> dict[str, Any]:
    health = _health()
    if dead := health.dead_loops():
        raise Problem("UNAVAILABLE", f"loops stopped or stalled: {', '.join(dead)}")
    return {"status": "ok", "phase": _phase(health), "loops": health.loop_names()}


def _serving() -> bool:
    """Whether the process serves: a probe server's services are handed over once its API
    server listens or its loop runs (`attach_probes`); an API server's app has them from the
    start."""
    return "store_check" in current_app.extensions


def _phase(health: Health) -> str:
    """The process's phase, as its probes tell it: starting until it serves."""
    return STARTING if health.ready and not _serving() else health.phase


@bp.get("/readyz")
@endpoint("Is this process ready to serve?", tag="operations", response=HealthOut)
def get_readiness() -> dict[str, Any]:
    return _readiness()


@bp.get("/healthz")
@endpoint("Is this process ready to serve? (as /readyz)", tag="operations", response=HealthOut)
def get_health() -> dict[str, Any]:
    return _readiness()


def _readiness() -> dict[str, Any]:
    health = _health()
    if not health.ready:
        raise Problem("UNAVAILABLE", f"not ready: {health.why_not_ready()}")
    if not _serving():
        raise Problem("UNAVAILABLE", f"not ready: {STARTING}: {NOT_SERVING_YET}")
    check = cast(StoreCheck, current_app.extensions["store_check"])
    services = cast(Services, current_app.extensions["cronledger"])
    if problem := check.problem():
        raise Problem("UNAVAILABLE", problem)
    return {"status": "ok", "store": services.store.kind, "version": installed_version()}


@dataclass
class ProbeServer:
    """A process's probe server: its app, and the waitress server answering it."""

    app: Flask
    server: Any
    thread: threading.Thread

    def close(self) -> None:
        """Stop answering, each answer under way sent first (the process is exiting)."""
        from web.closing import close_gracefully

        deadline = time.monotonic() + CLOSE_SECONDS
        try:
            close_gracefully(self.server, lambda: deadline - time.monotonic())
        except Exception:  # its loop had ended, say: the process exits all the same
            log.warning("the probe server did not close cleanly", exc_info=True)
        self.thread.join(max(deadline - time.monotonic(), 0.0))


def serve_probes(app: Flask, host: str, port: int) -> ProbeServer:
    """Answer `app` on `host:port` from a thread and a small server of their own."""
    import waitress

    server = waitress.create_server(app, host=host, port=port, threads=2, ident="cronledger")
    thread = threading.Thread(target=server.run, name="probes", daemon=True)
    thread.start()
    return ProbeServer(app, server, thread)
