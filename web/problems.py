"""Every error as an RFC 9457 problem document with the contract's `code`, the request's path
as its `instance` and the request's id (the `X-Request-ID` answered) as `request_id`."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from flask import Flask, Response, current_app, g, json, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound

from cronledger.persistence.connections import store_unavailable
from domain.errors import DomainError, ValidationFailed
from domain.messages import Message
from web.language import name_language, said, said_all

log = logging.getLogger("cronledger.web")

STATUS_OF_CODE = {
    "BAD_REQUEST": 400,
    "UNAUTHENTICATED": 401,
    "NOT_A_REVIEWER": 403,
    "FORBIDDEN": 403,
    "NO_ELIGIBLE_REVIEWER": 422,
    "NOT_ENOUGH_REVIEWERS": 422,
    "TOO_MANY_ROWS": 422,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
    "VERSION_CONFLICT": 409,
    "COMMAND_REJECTED": 409,
    "IN_FLIGHT": 409,
    "INVALID_STATE": 409,
    "GROUP_IS_PARENT": 409,
    "TOO_MANY_WEBHOOKS": 409,
    "COMMAND_ID_REUSED": 409,
    "REQUEST_ID_REUSED": 409,
    "IDEMPOTENCY_KEY_REUSED": 409,
    "PRECONDITION_FAILED": 412,
    "PAYLOAD_TOO_LARGE": 413,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "VALIDATION_FAILED": 422,
    "TOO_MANY_STREAMS": 429,
    "TOO_MANY_REQUESTS": 429,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
}
UNAVAILABLE_RETRY_AFTER_SECONDS = 2  # what a 503 `UNAVAILABLE` tells a client to wait
CODE_OF_STATUS = {status: code for code, status in STATUS_OF_CODE.items()}
TITLES = {
    "BAD_REQUEST": Message("Bad request"),
    "UNAUTHENTICATED": Message("Unauthenticated"),
    "NOT_A_REVIEWER": Message("Not a reviewer"),
    "FORBIDDEN": Message("Forbidden"),
    "NO_ELIGIBLE_REVIEWER": Message("No eligible reviewer"),
    "NOT_ENOUGH_REVIEWERS": Message("Not enough reviewers"),
    "TOO_MANY_ROWS": Message("Too many rows"),
    "NOT_FOUND": Message("Not found"),
    "METHOD_NOT_ALLOWED": Message("Method not allowed"),
    "VERSION_CONFLICT": Message("The resource has changed since that version"),
    "COMMAND_REJECTED": Message("The command lost"),
    "IN_FLIGHT": Message("In flight"),
    "INVALID_STATE": Message("Invalid state"),
    "GROUP_IS_PARENT": Message("Group is parent"),
    "TOO_MANY_WEBHOOKS": Message("Too many webhooks"),
    "COMMAND_ID_REUSED": Message("Command id reused"),
    "REQUEST_ID_REUSED": Message("Request id reused"),
    "IDEMPOTENCY_KEY_REUSED": Message("Idempotency key reused"),
    "PRECONDITION_FAILED": Message("The resource does not match If-Match"),
    "PAYLOAD_TOO_LARGE": Message("Payload too large"),
    "UNSUPPORTED_MEDIA_TYPE": Message("Unsupported media type"),
    "VALIDATION_FAILED": Message("The request has invalid fields"),
    "TOO_MANY_STREAMS": Message("Too many streams"),
    "TOO_MANY_REQUESTS": Message("Too many requests"),
    "INTERNAL": Message("Internal"),
    "UNAVAILABLE": Message("Unavailable"),
}
SOME_FIELDS_INVALID = Message("some fields are invalid")  # a 422's detail; `errors` say which
# Path characters kept as they are in `instance`: RFC 3986 `pchar` and `/`.
PATH_SAFE = "/:@!$&'()*+,;=-._~"


class Problem(Exception):
    """An error the web layer answers itself (authentication, bodies, If-Match, lost commands)."""

    def __init__(
        self,
        code: str,
        detail: str,
        errors: dict[str, list[str]] | None = None,
        *,
        extensions: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ):
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.errors = errors
        self.extensions = extensions or {}
        self.headers = headers or {}


def problem(
    code: str,
    detail: str,
    errors: dict[str, list[str]] | None = None,
    extensions: Mapping[str, Any] | None = None,
) -> Response:
    """The problem document of `code`; `extensions` are members of its own (RFC 9457 3.2)."""
    status = STATUS_OF_CODE[code]
    body = document(code, said(detail), _instance(), g.request_id)
    if errors is not None:
        body["errors"] = said_all(errors)
    body.update({key: value for key, value in (extensions or {}).items() if key not in body})
    answer = Response(json.dumps(body), status=status, mimetype="application/problem+json")
    if code == "UNAVAILABLE":  # the store or the process may be back soon: every 503 says when
        answer.headers["Retry-After"] = str(UNAVAILABLE_RETRY_AFTER_SECONDS)
    return name_language(answer)


def document(code: str, detail: str, instance: str, request_id: str) -> dict[str, Any]:
    """The members every problem document has, for `code`: its title in the request's
    language (`detail` comes said)."""
    return {
        "type": f"urn:cronledger:problem:{code.lower().replace('_', '-')}",
        "title": said(TITLES[code]),
        "status": STATUS_OF_CODE[code],
        "detail": detail,
        "code": code,
        "instance": instance,
        "request_id": request_id,
    }


def code_of_status(status: int) -> str:
    """The code a status answers with when nothing more precise is known."""
    return CODE_OF_STATUS.get(status, "BAD_REQUEST" if status < 500 else "INTERNAL")


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(Problem)
    def web_problem(error: Problem) -> Response:
        answer = problem(error.code, error.detail, error.errors, error.extensions)
        answer.headers.update(error.headers)
        return answer

    @app.errorhandler(DomainError)
    def domain_error(error: DomainError) -> Response:
        errors = error.errors if isinstance(error, ValidationFailed) else None
        return problem(error.code, error.message, errors)

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException) -> Response:
        if isinstance(error.response, Response):
            return error.response  # already a problem document (e.g. the refusal budget's)
        status = error.code or 500
        code = code_of_status(status)
        answer = problem(
            code,
            _no_such_path()
            if isinstance(error, NotFound)
            else Message.verbatim(error.description or error.name),
        )
        if isinstance(error, MethodNotAllowed):
            answer.headers["Allow"] = ", ".join(error.valid_methods or ())
        return answer

    @app.errorhandler(Exception)
    def unexpected(error: Exception) -> Response:
        route = request.url_rule.rule if request.url_rule else None
        extra = {"request_id": g.get("request_id"), "method": request.method, "route": route}
        if store_unavailable(error) or store_unavailable(error.__cause__ or error):
            log.warning("the store is unavailable: %s", type(error).__name__, extra=extra)
            return store_away()
        log.exception("unhandled error", exc_info=error, extra=extra)
        return problem("INTERNAL", Message("an internal error occurred; it has been logged"))


def store_away() -> Response:
    """503 `UNAVAILABLE`: the store cannot be reached or did not answer within its timeouts."""
    return problem("UNAVAILABLE", Message("the store is unavailable; try again shortly"))


def _instance() -> str:
    """The request's path as a URI reference: absolute if it starts with `//`, which a relative
    reference would read as a host."""
    path = quote(request.root_path + requested_path(), safe=PATH_SAFE)
    return request.host_url.rstrip("/") + path if path.startswith("//") else path


def requested_path() -> str:
    """The path as requested, doubled slashes kept: `request.path` reads `//x` as `/x`."""
    return str(request.environ.get("PATH_INFO", "")).encode("latin-1").decode("utf-8", "replace")


def _no_such_path() -> Message:
    """Why no route answers: with the path meant, if doubled or trailing slashes hide one."""
    path = request.root_path + requested_path()
    meant = re.sub("/{2,}", "/", requested_path()).rstrip("/") or "/"
    if meant == requested_path() or not _routed(meant):
        return Message("no resource at {path}", path=path)
    return Message(
        "no resource at {path}: did you mean {meant}? (paths take no doubled or trailing /)",
        path=path,
        meant=request.root_path + meant,
    )


def _routed(path: str) -> bool:
    """Whether some route answers `path`, by any method."""
    try:
        current_app.url_map.bind_to_environ(request.environ).match(path, method=request.method)
    except MethodNotAllowed:
        return True
    except HTTPException:
        return False
    return True
