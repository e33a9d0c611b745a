"""Backlogs and the API's own description (the probes are in web/probes.py)."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify
from flask.typing import ResponseReturnValue

from cronledger.application.backlog import Backlog
from domain.directory import Principal
from domain.permissions import SCHEDULE_LIST
from web.api import endpoint, services
from web.openapi import build_spec
from web.schemas.ops import BacklogOut

bp = Blueprint("ops", __name__)


@bp.get("/api/backlog")
@endpoint(
    "Backlogs and lags for operations",
    tag="operations",
    permission=SCHEDULE_LIST,
    response=BacklogOut,
)
def get_backlog(principal: Principal) -> Backlog:
    return services().backlog(principal.tenant_id)


@bp.get("/api/openapi.json")
def get_openapi_document() -> ResponseReturnValue:
    if "openapi" not in current_app.extensions:
        current_app.extensions["openapi"] = build_spec(current_app)
    return jsonify(current_app.extensions["openapi"])


get_openapi_document.openapi_operation = {  # type: ignore[attr-defined]
    "summary": "This document: the API as OpenAPI 3.0 (no token)",
    "tags": ["operations"],
    "description": "Public: no token needed. Generated from the running release's own "
    "request and response schemas; `info.version` is the release.",
    "security": [],
    "responses": {
        "200": {
            "description": "the OpenAPI document of the running release",
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    },
}
