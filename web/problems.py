"""Every error as an RFC 9457 problem document with the contract's `code`."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, json
from werkzeug.exceptions import HTTPException

from domain.errors import DomainError, ValidationFailed

log = logging.getLogger("cronledger.web")

STATUS_OF_CODE = {
    "BAD_REQUEST": 400,
    "UNAUTHENTICATED": 401,
    "FORBIDDEN": 403,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
    "VERSION_CONFLICT": 409,
    "IN_FLIGHT": 409,
    "INVALID_STATE": 409,
    "COMMAND_ID_REUSED": 409,
    "REQUEST_ID_REUSED": 409,
    "PAYLOAD_TOO_LARGE": 413,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "VALIDATION_FAILED": 422,
    "TOO_MANY_STREAMS": 429,
    "TOO_MANY_REQUESTS": 429,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
}
CODE_OF_STATUS = {status: code for code, status in STATUS_OF_CODE.items()}
TITLES = {
    "VALIDATION_FAILED": "The request has invalid fields",
    "VERSION_CONFLICT": "The resource has changed since that version",
}


class Problem(Exception):
    """An error raised by the web layer itself (authentication, body parsing)."""

    def __init__(self, code: str, detail: str, errors: dict[str, list[str]] | None = None):
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.errors = errors


def problem(code: str, detail: str, errors: dict[str, list[str]] | None = None) -> Response:
    status = STATUS_OF_CODE[code]
    body: dict[str, Any] = {
        "type": f"urn:cronledger:problem:{code.lower().replace('_', '-')}",
        "title": TITLES.get(code, code.replace("_", " ").capitalize()),
        "status": status,
        "detail": detail,
        "code": code,
    }
    if errors is not None:
        body["errors"] = errors
    return Response(json.dumps(body), status=status, mimetype="application/problem+json")


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(Problem)
    def web_problem(error: Problem) -> Response:
        return problem(error.code, error.detail, error.errors)

    @app.errorhandler(DomainError)
    def domain_error(error: DomainError) -> Response:
        errors = error.errors if isinstance(error, ValidationFailed) else None
        return problem(error.code, error.message, errors)

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException) -> Response:
        if isinstance(error.response, Response):
            return error.response  # already a problem document (e.g. the refusal budget's)
        status = error.code or 500
        code = CODE_OF_STATUS.get(status, "BAD_REQUEST" if status < 500 else "INTERNAL")
        return problem(code, error.description or error.name)

    @app.errorhandler(Exception)
    def unexpected(error: Exception) -> Response:
        log.exception("unhandled error", exc_info=error)
        return problem("INTERNAL", "an internal error occurred; it has been logged")
