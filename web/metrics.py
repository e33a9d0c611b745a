"""`GET /metrics`: Prometheus text, no authentication (aggregate figures, no tenant data)."""

from __future__ import annotations

from flask import Blueprint, Response, current_app
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from cronledger.application.metrics import OperationsCollector
from cronledger.application.services import Services

bp = Blueprint("metrics", __name__)


def registry_for(services: Services) -> CollectorRegistry:
    """This app's own registry: no process-wide default, so apps in one process stay apart."""
    registry = CollectorRegistry()
    registry.register(OperationsCollector(services))
    return registry


@bp.get("/metrics")
def get_metrics() -> Response:
    body = generate_latest(current_app.extensions["metrics"])
    return Response(body, content_type=CONTENT_TYPE_LATEST)


get_metrics.openapi_operation = {  # type: ignore[attr-defined]
    "summary": "Backlogs, lags, attempts and dead letters in Prometheus text (no token)",
    "tags": ["operations"],
    "description": "Public: no token needed. Aggregate figures of every tenant, no tenant's "
    "data (docs/operations.md).",
    "security": [],
    "responses": {
        "200": {
            "description": "Prometheus text exposition format 0.0.4",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    },
}
