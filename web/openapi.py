"""The OpenAPI 3 document, generated from the endpoint declarations and their schemas."""

from __future__ import annotations

import re
from typing import Any

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import Flask
from marshmallow import Schema

from cronledger.version import installed_version
from web.api import MERGE_PATCH_TYPES, Body, Either, EndpointSpec, MergePatch
from web.schemas import ProblemOut

PATH_PARAMETER = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")
ERRORS = {
    "401": "no token, or one that no longer works",
    "403": "the token's account lacks the permission",
    "404": "no such resource in this tenant",
    "409": "conflict with the resource's state or version",
    "422": "invalid fields, or fields or query parameters it does not take (named in errors)",
}


def build_spec(app: Flask) -> dict[str, Any]:
    spec = APISpec(
        title="cronledger",
        version=installed_version(),
        openapi_version="3.0.3",
        plugins=[MarshmallowPlugin()],
        info={"description": "Scheduled approval workflows on an append-only event log."},
    )
    spec.components.security_scheme("bearer", {"type": "http", "scheme": "bearer"})
    spec.components.schema("Problem", schema=ProblemOut)
    for rule in sorted(app.url_map.iter_rules(), key=lambda r: r.rule):
        view = app.view_functions[rule.endpoint]
        declared = getattr(view, "endpoint_spec", None)
        written = getattr(view, "openapi_operation", None)  # views that are not `endpoint`s
        if isinstance(declared, EndpointSpec):
            written = _operation(declared, rule.arguments)
        if isinstance(written, dict):
            method = next(m for m in rule.methods or () if m not in ("HEAD", "OPTIONS"))
            spec.path(
                path=PATH_PARAMETER.sub(r"{\1}", rule.rule), operations={method.lower(): written}
            )
    return spec.to_dict()


def _operation(declared: EndpointSpec, path_arguments: set[str]) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "summary": declared.summary,
        "tags": [declared.tag],
        "parameters": [
            {"in": "path", "name": name, "required": True, "schema": {"type": "string"}}
            for name in sorted(path_arguments)
        ],
        "responses": {str(declared.status): _response(declared)},
    }
    if declared.query is not None:
        operation["parameters"].append({"in": "query", "schema": declared.query})
    if declared.body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": _body_content(declared.body),
        }
    if declared.permission is not None:
        operation["security"] = [{"bearer": []}]
        operation["description"] = f"Needs the permission `{declared.permission}`." + (
            f" A caller with only `{declared.seen_with}` gets 403, and the refusal is recorded."
            if declared.seen_with
            else ""
        )
        problem = {"content": {"application/problem+json": {"schema": "Problem"}}}
        for status, text in ERRORS.items():
            operation["responses"][status] = {"description": text, **problem}
    return operation


def _body_content(body: Body) -> dict[str, Any]:
    """The media types a body is taken in: a merge patch as either of its types."""
    if isinstance(body, MergePatch):
        return {media_type: {"schema": body.documented} for media_type in MERGE_PATCH_TYPES}
    return {"application/json": {"schema": _body_schema(body)}}


def _body_schema(body: type[Schema] | Either) -> Any:
    if isinstance(body, Either):
        return {"oneOf": [body.without_key, body.with_key]}
    return body


def _response(declared: EndpointSpec) -> dict[str, Any]:
    if declared.response is None:
        return {"description": "done"}
    return {
        "description": "success",
        "content": {"application/json": {"schema": declared.response}},
    }
