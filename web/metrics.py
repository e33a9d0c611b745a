"""`GET /metrics`: Prometheus text, no authentication (aggregate figures, no tenant data).

Besides the process's figures (cronledger.application.metrics), the web layer counts its
requests by method, route template and status, and the store errors its requests met. Every
label has a bounded set of values: a route template (never the raw path), and a method HTTP
defines (any other is `OTHER`), so that no client can add series.
"""

from __future__ import annotations

import time
from http import HTTPMethod
from typing import Any

from flask import Blueprint, Flask, Response, current_app, g, request
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest
from prometheus_client.registry import CollectorRegistry

from cronledger.application.metrics import registry_for
from cronledger.application.services import Services

bp = Blueprint("metrics", __name__)
UNMATCHED = "unmatched"  # the route of a request no rule matched (404, or refused before routing)
KNOWN_METHODS = frozenset(HTTPMethod.__members__)  # GET, POST, ... (RFC 9110 and PATCH)
OTHER_METHOD = "OTHER"  # the label of every other method a client sends


class HttpMeters:
    """One app's request counter and latency histogram."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "cronledger_http_requests",
            "HTTP requests answered, by method, route template and status",
            ["method", "route", "status"],
            registry=registry,
        )
        self.duration = Histogram(
            "cronledger_http_request_duration_seconds",
            "Seconds from a request's arrival to its answer's headers (a stream's first byte), "
            "by method and route template",
            ["method", "route"],
            registry=registry,
        )

    def start(self) -> None:
        g.metrics_started = time.perf_counter()

    def answered(self, response: Response) -> Response:
        route = request.url_rule.rule if request.url_rule is not None else UNMATCHED
        method = method_label(request.method)
        self.requests.labels(method, route, str(response.status_code)).inc()
        started = g.get("metrics_started")
        if started is not None:
            self.duration.labels(method, route).observe(time.perf_counter() - started)
        return response


def method_label(method: str) -> str:
    """A request's method as its series name it: a method HTTP defines, else `OTHER`."""
    return method if method in KNOWN_METHODS else OTHER_METHOD


def install(app: Flask, services: Services) -> None:
    """The app's registry (the process's figures and its HTTP meters), and the hooks that count:
    call before any other `before_request`, so that the timing covers them."""
    registry = registry_for(services)
    meters = HttpMeters(registry)
    app.extensions["metrics"] = registry
    app.before_request(meters.start)
    app.after_request(meters.answered)
    handle = app.handle_user_exception

    def counting_store_errors(error: Exception) -> Any:
        """Every error a view raised passes here before its handler turns it into a problem."""
        services.meters.database_error("api", error)
        return handle(error)

    app.handle_user_exception = counting_store_errors  # type: ignore[method-assign,assignment]


@bp.get("/metrics")
def get_metrics() -> Response:
    body = generate_latest(current_app.extensions["metrics"])
    return Response(body, content_type=CONTENT_TYPE_LATEST)


get_metrics.openapi_operation = {  # type: ignore[attr-defined]
    "summary": "Requests, loops, queues, lags, pools and errors in Prometheus text (no token)",
    "tags": ["operations"],
    "description": "Public: no token needed. Aggregate figures of every tenant, no tenant's "
    "data (docs/operations.md#metrics). A scrape never writes and never waits for the "
    "projections.",
    "security": [],
    "responses": {
        "200": {
            "description": "Prometheus text exposition format 0.0.4",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    },
}
