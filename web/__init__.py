"""The HTTP API: `create_app()` builds it; nothing is built at import time."""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Mapping
from typing import Any

from flask import Flask, Response, g, request
from werkzeug.exceptions import NotFound

from cronledger.version import installed_version
from web.problems import requested_path

MAX_BODY_BYTES = 1024 * 1024
# A caller's X-Request-ID is kept only if it is this; any other is replaced, never echoed.
REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
# Probes and scrapes come every few seconds: their request lines are DEBUG, not INFO.
QUIET_ROUTES = frozenset({"/livez", "/readyz", "/healthz", "/metrics"})
log = logging.getLogger("cronledger.web")


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """The Flask app; `config["SERVICES"]` injects ready services (tests), else env settings."""
    from cronledger.application.services import open_services
    from cronledger.config import Settings
    from web import (
        approvals,
        audit,
        bulk,
        calendars,
        callback_sources,
        console,
        directory,
        docs,
        events,
        groups,
        metrics,
        notifications,
        ops,
        probes,
        runs,
        schedules,
        tasks,
        tenant,
        webhooks,
    )
    from web.problems import register_error_handlers
    from web.refusals import refusal_budget

    app = Flask(__name__)
    traced(app)
    app.url_map.merge_slashes = False  # `//` is 404 naming the path meant, never a redirect
    app.config.update(MAX_CONTENT_LENGTH=MAX_BODY_BYTES, JSON_SORT_KEYS=False)
    app.config.update(config or {})
    services = app.config.get("SERVICES") or open_services(Settings.from_env(), kind="web")
    probes.attach(app, services)
    metrics.install(app, services)  # first of the request hooks: its timing covers the others
    app.extensions["streams"] = events.streams_for(services)
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.json.ensure_ascii = False  # type: ignore[attr-defined]  # UTF-8 text, not \u escapes
    register_error_handlers(app)
    app.register_blueprint(probes.bp)
    app.register_blueprint(ops.bp)
    app.register_blueprint(metrics.bp)
    app.register_blueprint(docs.bp)
    app.register_blueprint(directory.bp)
    app.register_blueprint(schedules.bp)
    app.register_blueprint(runs.bp)
    app.register_blueprint(runs.log_bp)
    app.register_blueprint(bulk.bp)
    app.register_blueprint(approvals.bp)
    app.register_blueprint(tasks.bp)
    app.register_blueprint(callback_sources.bp)
    app.register_blueprint(groups.bp)
    app.register_blueprint(calendars.bp)
    app.register_blueprint(events.bp)
    app.register_blueprint(audit.bp)
    app.register_blueprint(tenant.bp)
    app.register_blueprint(webhooks.bp)
    app.register_blueprint(notifications.bp)
    console.install(app)
    app.before_request(_start_request)
    refusal_budget(app, services.settings.refusals_per_minute)  # checked after the request id
    app.before_request(_refuse_double_slashes)  # a refusal like any other: after the budget
    app.after_request(_log_request)
    app.after_request(_tell_api_version)
    return app


def traced(app: Flask) -> None:
    """Each request in the trace its `traceparent` names (a new one without), as a span when
    tracing is on (cronledger/tracing.py); probes and scrapes are left out."""
    from opentelemetry.instrumentation.flask import FlaskInstrumentor

    untraced = ",".join(f"{re.escape(route)}$" for route in sorted(QUIET_ROUTES))
    FlaskInstrumentor.instrument_app(app, excluded_urls=untraced)  # type: ignore[no-untyped-call]


def _start_request() -> None:
    g.request_id = _request_id(request.headers.get("X-Request-ID", ""))
    g.started = time.perf_counter()


def _refuse_double_slashes() -> None:
    if "//" in requested_path():  # routing reads a leading `//` as `/`: never answer it
        raise NotFound()


def _request_id(given: str) -> str:
    """The caller's id if it is short and plain; else a fresh one."""
    return given if REQUEST_ID.fullmatch(given) else uuid.uuid4().hex


def _tell_api_version(response: Response) -> Response:
    """Every answer names the release serving it, as the OpenAPI document's `info.version`."""
    response.headers["API-Version"] = installed_version()
    return response


def _log_request(response: Response) -> Response:
    response.headers["X-Request-ID"] = g.request_id
    principal = g.get("principal")
    route = request.url_rule.rule if request.url_rule else None  # None: no route matched
    log.log(
        logging.DEBUG if route in QUIET_ROUTES else logging.INFO,
        "request",
        extra={
            "request_id": g.request_id,
            "method": request.method,
            "route": route,
            "path": request.path,
            "status": response.status_code,
            "duration_ms": round((time.perf_counter() - g.started) * 1000, 2),
            "account": principal.account_id if principal else None,
            "tenant": str(principal.tenant_id) if principal else None,
        },
    )
    return response
