"""The OpenAPI 3 document, generated from the endpoint declarations and their schemas.

Each operation lists the statuses it can answer and no others, each with its content type,
schema and headers; views that are not `endpoint`s carry their own `openapi_operation`. What
the service sends on its own is there too: each webhook message under `x-webhooks`, and the
event stream's frames under its `x-sse-frames` (web/schemas/messages.py).
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import Flask
from marshmallow import Schema

from cronledger.version import installed_version
from domain.idempotency import KEY as IDEMPOTENCY_KEY
from web.api import (
    KEYLESS_METHODS,
    MERGE_PATCH_TYPES,
    Body,
    Download,
    Either,
    EndpointSpec,
    MergePatch,
    is_list,
)
from web.examples import EXAMPLES
from web.freshness import WAIT_SECONDS, WANTED_HEADER, WRITTEN_HEADER
from web.idempotency import KEY_REUSED, reuse_code
from web.json_depth import MAX_JSON_DEPTH
from web.language import ANSWER_HEADERS
from web.openapi_shapes import reference, register_shapes, with_request_defaults_said
from web.problems import STATUS_OF_CODE
from web.rate_limits import RATE_LIMIT_HEADERS
from web.schemas.approvals import CommandOut, CommandRejectedOut
from web.schemas.base import ProblemOut
from web.schemas.messages import FRAMES, MESSAGES, message_name

PATH_PARAMETER = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")
PATH_TEMPLATE = re.compile(r"\{([^{}]+)\}")  # a parameter of an OpenAPI path
CODES = re.compile(r"`([A-Z][A-Z_]+)`")  # the problem codes an answer's description names
Fits = Callable[[Any], bool]  # whether an example fits where it is put
PROBLEM = "application/problem+json"
TAGS = {
    "schedules": "Schedules (定时任务) that launch approval instances on a trigger",
    "runs": "Runs: the cycles of schedules, their attempts, and the tenant's execution log",
    "approvals": "Approval instances and the commands that decide them",
    "tasks": "A reviewer's tasks: assigned to them, claimable by them, decided by them",
    "accounts": "The tenant's accounts and their API tokens",
    "definitions": "Process definitions: their review rules, schedule presets and publication",
    "groups": "Groups (部门/用户组): the tenant's departments, their members, leaders and parents",
    "calendars": "Calendars (工作日历): working days, holidays and make-up working days in "
    "revisions, and deadlines counted in working time",
    "callback-sources": "The external systems whose signed callbacks the tenant accepts "
    "(Standard Webhooks signatures)",
    "webhooks": "Outbound webhooks: the tenant's subscriptions, their secrets and the messages "
    "sent to them (Standard Webhooks)",
    "notifications": "The caller's own notices (通知): decisions and callbacks on their "
    "applications, read and unread",
    "audit": "The operations audit and the timeline of any resource",
    "events": "The tenant's new events as they are committed (Server-Sent Events)",
    "operations": "Health, metrics, backlogs and the API's own description",
}
HEADERS: dict[str, dict[str, Any]] = {
    "X-Request-ID": {
        "description": "The request's id, on every log line of the request: the caller's own "
        "`X-Request-ID` if it is 1-64 of `A-Za-z0-9._:-`, else a new one.",
        "required": True,
        "schema": {"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,64}$"},
    },
    "API-Version": {
        "description": "The version of the API that answered (`info.version`); see "
        "docs/api.md for what a version may change.",
        "required": True,
        "schema": {"type": "string"},
    },
    "Idempotent-Replayed": {
        "description": "`true` when this answer repeats the one an earlier request with the "
        "same `Idempotency-Key` got; nothing was done again.",
        "schema": {"type": "string", "enum": ["true"]},
    },
    "ETag": {
        "description": "The resource's version as an entity tag (a list page's: a digest of "
        "the page as answered): send it back in `If-Match` to write, in `If-None-Match` to "
        "read again only if it changed (docs/api.md#conditional-reads).",
        "required": True,
        "schema": {"type": "string"},
    },
    "Location": {
        "description": "The URL of the resource the request created, root-relative.",
        "required": True,
        "schema": {"type": "string"},
    },
    "RateLimit-Policy": {
        "description": "The quotas the answer counts against (draft-ietf-httpapi-ratelimit-"
        'headers): `"refusals";q=120;w=60`, the refused requests a caller may make a minute; '
        "on a refused event stream also the one whose streams are all open, e.g. "
        '`"streams-per-account";q=10;qu="concurrent-requests"` (docs/api.md#rate-limits).',
        "schema": {"type": "string"},
    },
    "RateLimit": {
        "description": 'What is left of each quota: `"refusals";r=117;t=42`, 117 more refusals '
        "allowed, the whole quota back in 42 s (docs/api.md#rate-limits).",
        "schema": {"type": "string"},
    },
    "Retry-After": {
        "description": "Seconds to wait before trying again.",
        "required": True,
        "schema": {"type": "integer", "minimum": 1},
    },
    "Allow": {
        "description": "The methods the path takes.",
        "required": True,
        "schema": {"type": "string"},
    },
    "Link": {
        "description": 'Other pages of the list (RFC 8288), root-relative: `rel="first"` always, '
        '`rel="next"` while there is a next page, `rel="prev"` after a numbered page 2 or later '
        "(docs/api.md#paging).",
        "schema": {"type": "string"},
    },
    "Content-Language": {
        "description": "The language of the problem's `title`, `detail` and field messages: "
        "`zh-CN` when `Accept-Language` asks for Chinese, else `en` (docs/api.md#languages).",
        "required": True,
        "schema": {"type": "string", "enum": ["zh-CN", "en"]},
    },
    "Vary": {
        "description": "`Accept-Language`: the problem's words depend on it.",
        "required": True,
        "schema": {"type": "string"},
    },
    WRITTEN_HEADER: {
        "description": "Where the events this request committed end on the log, when it "
        f"committed any: send it as `{WANTED_HEADER}` to read this write on any process "
        "(docs/api.md#reading-your-writes).",
        "schema": {"type": "integer", "minimum": 1},
    },
}
EVERY_RESPONSE = ("X-Request-ID", "API-Version")
# An operation's values taken in either of two places (docs/api.md#either-or).
EITHER_OR = "x-either-or"
PARAMETERS: dict[str, dict[str, Any]] = {
    "Idempotency-Key": {
        "in": "header",
        "description": "Makes a retry safe: the same key with the same request answers the "
        "first request's answer (`Idempotent-Replayed: true`) instead of acting again "
        "(docs/api.md#idempotency).",
        "schema": {"type": "string", "pattern": f"^{IDEMPOTENCY_KEY.pattern}$"},
    },
    "If-None-Match": {
        "in": "header",
        "description": "The `ETag` an earlier answer had (or a list of them, or `*`): if the "
        "answer would still have it, 304 with no body (docs/api.md#conditional-reads).",
        "schema": {"type": "string"},
    },
    "If-Match": {
        "in": "header",
        "description": "The `ETag` the resource was read with: if it has changed since, the "
        "answer is 412 and nothing is changed.",
        "schema": {"type": "string"},
    },
}
# On every authenticated read, written out in each (reads name each of their parameters).
WANTED_PARAMETER: dict[str, Any] = {
    "in": "header",
    "name": WANTED_HEADER,
    "description": f"A write's `{WRITTEN_HEADER}`: the answer waits until this process's read "
    f"models have reached it, at most {WAIT_SECONDS:g} s (then 503 `UNAVAILABLE`); a position "
    "the log does not reach is 422 (docs/api.md#reading-your-writes).",
    "schema": {"type": "integer", "minimum": 0},
}
# What a delivery signed by a callback source sends instead of a token (Standard Webhooks).
SIGNED_SCHEME = "callbackSignature"
SIGNED_HEADERS = {
    "webhook-id": "The delivery's id, the same on every retry of it: its `command_id`.",
    "webhook-timestamp": "When it was signed, in whole seconds since 1970 (UTC); refused "
    "when more than 5 minutes from the server's time.",
    "webhook-signature": "`v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>` "
    "with the secret of the source the body's `source` names (several, separated by spaces).",
}
# What every webhook message carries besides its body (docs/webhooks.md#the-message).
WEBHOOK_HEADERS = {
    "webhook-id": "`msg_` and the delivery's id: the same on every attempt of the message.",
    "webhook-timestamp": "When the attempt was signed, in whole seconds since 1970 (UTC).",
    "webhook-signature": "`v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>` "
    "with the subscription's secret.",
}
SIGNED_UNAUTHENTICATED = (
    "Neither a bearer token nor a signature: or a token that is unknown or revoked, or a "
    "signature of no registered source of the instance's tenant, or a `webhook-timestamp` more "
    "than 5 minutes off. Nothing is recorded."
)
# status: (component name, description, headers besides EVERY_RESPONSE)
SHARED_RESPONSES: dict[int, tuple[str, str, tuple[str, ...]]] = {
    400: (
        "BadRequest",
        f"The body is not a JSON object, or nests deeper than {MAX_JSON_DEPTH} levels; or "
        "`If-Match` is empty; or an `Idempotency-Key` came with a PUT, PATCH or DELETE.",
        (),
    ),
    401: ("Unauthenticated", "No bearer token, or one that is unknown or revoked.", ()),
    403: ("Forbidden", "The token's account lacks the permission.", ()),
    405: ("MethodNotAllowed", "The path does not take this method.", ("Allow",)),
    412: (
        "PreconditionFailed",
        "`If-Match` names a version the resource has moved on from: read it again.",
        (),
    ),
    413: ("PayloadTooLarge", "The body is larger than 1 MiB.", ()),
    415: (
        "UnsupportedMediaType",
        "A merge patch is sent as `application/merge-patch+json` (or `application/json`).",
        (),
    ),
    429: (
        "TooManyRequests",
        "`TOO_MANY_REQUESTS`: too many of this caller's requests were refused within a "
        "minute; every request of it is refused until `Retry-After` seconds have passed.",
        ("Retry-After",),
    ),
    500: ("Internal", "An unexpected error; it was logged with the request's id.", ()),
    503: (
        "Unavailable",
        "`UNAVAILABLE`: the store could not be reached or did not answer within its timeouts "
        "(about two seconds when it is away); try again after `Retry-After` seconds. For an "
        "evidence bundle, also: the service has no signing key (docs/audit.md).",
        ("Retry-After",),
    ),
}
# What may conflict with each command (409), besides a reused Idempotency-Key.
# Commands on an instance that answer the instance they start (201), or lose as any command.
LINKING = frozenset({"resubmit", "request_cancellation"})
CONFLICTS = {
    **dict.fromkeys(
        ("update_schedule", "patch_schedule", "enable_schedule", "disable_schedule"),
        "`VERSION_CONFLICT`: the schedule is not at the `version` given.",
    ),
    "delete_schedule": "`VERSION_CONFLICT`: the schedule is not at the `version` given; "
    "`IN_FLIGHT`: cycles of it are pending, running or waiting to retry.",
    "run_now": "`REQUEST_ID_REUSED`: this account's `request_id` (or `Idempotency-Key`) "
    "already ran the schedule at "
    "another version; `VERSION_CONFLICT`: the schedule is not at the `version` given.",
    "retry_run": "`INVALID_STATE`: the run is not FAILED, DEAD_LETTER or CANCELLED; "
    "`VERSION_CONFLICT`: it is not at the `version` given.",
    "cancel_run": "`INVALID_STATE`: the run is not PENDING or RETRY_WAIT; "
    "`VERSION_CONFLICT`: it is not at the `version` given.",
    **dict.fromkeys(
        ("update_account", "patch_account", "deactivate_account"),
        "`VERSION_CONFLICT`: the account is not at the `version` given; `INVALID_STATE`: "
        "the tenant would be left without an active admin.",
    ),
    "activate_account": "`VERSION_CONFLICT`: the account is not at the `version` given.",
    **dict.fromkeys(
        ("issue_token", "set_password"), "`INVALID_STATE`: the account is deactivated."
    ),
    **dict.fromkeys(
        ("update_definition", "patch_definition", "publish_definition", "unpublish_definition"),
        "`VERSION_CONFLICT`: the definition is not at the `version` given.",
    ),
    **dict.fromkeys(
        ("rotate_callback_source_secret", "delete_callback_source"),
        "`VERSION_CONFLICT`: the source is not at the `version` given.",
    ),
    **dict.fromkeys(
        ("update_group", "patch_group"),
        "`VERSION_CONFLICT`: the group is not at the `version` given.",
    ),
    **dict.fromkeys(
        ("update_calendar", "patch_calendar", "import_calendar"),
        "`VERSION_CONFLICT`: the calendar is not at the `version` given.",
    ),
    "delete_group": "`VERSION_CONFLICT`: the group is not at the `version` given; "
    "`GROUP_IS_PARENT`: live groups name it as their parent.",
    "create_callback_source": "`INVALID_STATE`: the service has no `CRONLEDGER_SECRET_KEY` "
    "to derive its secret from.",
    **dict.fromkeys(
        ("update_webhook", "delete_webhook", "rotate_webhook_secret"),
        "`VERSION_CONFLICT`: the subscription is not at the `version` given.",
    ),
    "create_webhook": "`INVALID_STATE`: the service has no `CRONLEDGER_SECRET_KEY` to derive "
    "its secret from; `TOO_MANY_WEBHOOKS`: the tenant has as many subscriptions as "
    "`CRONLEDGER_WEBHOOKS_PER_TENANT` allows.",
    "ping_webhook": "`INVALID_STATE`: the subscription is disabled.",
    "redeliver_webhook": "`INVALID_STATE`: the message is waiting to be sent already.",
    "submit_approval": "`COMMAND_ID_REUSED`: this account's `command_id` (or "
    "`Idempotency-Key`) already submitted "
    "another instance.",
    **dict.fromkeys(
        ("approve", "withdraw", "extend_deadline", "sign_callback"),
        "`COMMAND_REJECTED`: the command lost and was recorded (`outcome` says what it got, "
        "`approval` is the instance as it stands); `COMMAND_ID_REUSED`: its `command_id` was "
        "used by another command, or the `Idempotency-Key` that gave it came with another request "
        "(a plain problem document).",
    ),
}
RESOURCES = {  # what a path parameter names, for 404
    "schedule_id": "schedule",
    "run_id": "run",
    "account_id": "account",
    "token_id": "token",
    "definition_id": "definition",
    "key": "definition",
    "instance_id": "instance",
    "source_id": "callback source",
    "webhook_id": "webhook subscription",
    "delivery_id": "delivery",
    "aggregate_id": "schedule, run, instance, account or definition",
}
CALLERS_IDS = {"account_id", "key"}  # path parameters a caller chose; the others are UUIDs
REFERENCES = {  # what a body names that may not exist, for 404
    "create_schedule": "definition (`definition_id` with a `preset_id`)",
}
# 404s of what is not the tenant's: the log's signed checkpoints are shared by every tenant.
SHARED_NOT_FOUND = {
    "checkpoint_consistency": "No signed checkpoint of `from_size` or `to_size`.",
}
SUCCESSES = {200: "success", 201: "created", 202: "accepted", 204: "done"}


def build_spec(app: Flask) -> dict[str, Any]:
    spec = APISpec(
        title="cronledger",
        version=installed_version(),
        openapi_version="3.0.3",
        plugins=[plugin := MarshmallowPlugin()],
        info={
            "description": "Scheduled approval workflows on an append-only event log. A "
            "problem's `title`, `detail` and field messages are in the language "
            "`Accept-Language` asks for, Chinese (`zh-CN`) or English (the default), named by "
            "`Content-Language`; its `code` never changes (docs/api.md#languages)."
        },
        servers=[{"url": "/", "description": "the service that serves this document"}],
    )
    spec.components.security_scheme("bearer", {"type": "http", "scheme": "bearer"})
    spec.components.security_scheme(
        SIGNED_SCHEME,
        {
            "type": "apiKey",
            "in": "header",
            "name": "webhook-signature",
            "description": "A signing callback signed by a registered callback source, with "
            "`webhook-id` and `webhook-timestamp` beside it (docs/webhooks.md).",
        },
    )
    register_shapes(spec, plugin)
    spec.components.schema("Problem", schema=ProblemOut)
    _register_shared(spec)
    _register_sent(spec)
    locations: dict[str, str] = {}  # a creating operation's id: where what it made is
    for rule in sorted(app.url_map.iter_rules(), key=lambda r: r.rule):
        view = app.view_functions[rule.endpoint]
        declared = getattr(view, "endpoint_spec", None)
        written = getattr(view, "openapi_operation", None)  # views that are not `endpoint`s
        if isinstance(declared, EndpointSpec):
            method = _method(rule.methods)
            written = _operation(declared, method, rule.arguments)
            if declared.location is not None:
                locations[declared.operation_id] = declared.location
        if isinstance(written, dict):
            spec.path(
                path=PATH_PARAMETER.sub(r"{\1}", rule.rule),
                operations={_method(rule.methods).lower(): _completed(written, view.__name__)},
            )
    document = _with_examples(with_request_defaults_said(spec.to_dict()))
    return {**_with_links(document, locations), "x-webhooks": _webhooks()}


def _with_links(document: dict[str, Any], locations: dict[str, str]) -> dict[str, Any]:
    """Each 201's OpenAPI links to what may follow it on what it created: the operations at
    its `Location` (read, change, delete) and one segment under it (commands, sub-lists)."""
    for path, operations in document["paths"].items():
        for operation in operations.values():
            created = operation["responses"].get("201")
            location = locations.get(operation.get("operationId", ""))
            if location is None or not isinstance(created, dict):
                continue
            given = set(PATH_TEMPLATE.findall(path))
            links = {
                target["operationId"]: {
                    "operationId": target["operationId"],
                    "parameters": parameters,
                }
                for target_path, targets in document["paths"].items()
                if (parameters := _linked_parameters(location, target_path, given)) is not None
                for target in targets.values()
            }
            if links:
                created["links"] = links
    return document


def _linked_parameters(location: str, path: str, given: set[str]) -> dict[str, str] | None:
    """How `path` takes its parameters from a 201 whose `Location` is `location` (a request
    path parameter of its own, in `given`, or a field of the created resource); None if
    `path` is not at or one segment under the location."""
    made, target = location.strip("/").split("/"), path.strip("/").split("/")
    if len(target) not in (len(made), len(made) + 1):
        return None
    parameters: dict[str, str] = {}
    for part, asked in zip(made, target, strict=False):
        named, takes = PATH_TEMPLATE.fullmatch(part), PATH_TEMPLATE.fullmatch(asked)
        if named is None or takes is None:
            if part != asked:
                return None
            continue
        field = named[1]
        source = f"$request.path.{field}" if field in given else f"$response.body#/{field}"
        parameters[takes[1]] = source
    if len(target) > len(made) and PATH_TEMPLATE.fullmatch(target[-1]):
        return None  # another resource under it, whose id nothing created names
    return parameters


def _method(methods: set[str] | None) -> str:
    return next(m for m in methods or () if m not in ("HEAD", "OPTIONS"))


def _register_shared(spec: APISpec) -> None:
    """Tags, headers, header parameters and problem answers that operations refer to."""
    for name, description in TAGS.items():
        spec.tag({"name": name, "description": description})
    for name, header in HEADERS.items():
        spec.components.header(name, copy.deepcopy(header))
    for name, parameter in PARAMETERS.items():
        spec.components.parameter(name, parameter["in"], copy.deepcopy(parameter))
    for name, description, headers in SHARED_RESPONSES.values():
        spec.components.response(name, _problem(description, *headers))


def _register_sent(spec: APISpec) -> None:
    """The components of what the service sends on its own: each webhook message, and each
    kind of the event stream's frames."""
    for event_type, message in MESSAGES.items():
        spec.components.schema(message_name(event_type), schema=message)
    for frame in FRAMES.values():
        spec.components.schema(frame.__name__, schema=frame)


def _webhooks() -> dict[str, Any]:
    """`x-webhooks`: the message of each event type, as a subscription receives it."""
    return {event_type: {"post": _webhook(event_type)} for event_type in MESSAGES}


def _webhook(event_type: str) -> dict[str, Any]:
    return {
        "summary": f"`{event_type}`",
        "description": f"The message of a `{event_type}` event, signed (Standard Webhooks); "
        "docs/webhooks.md#event-types says when it is sent.",
        "operationId": "webhook_" + re.sub(r"\W", "_", event_type),
        "tags": ["webhooks"],
        "security": [],
        "parameters": [
            {
                "in": "header",
                "name": name,
                "description": text,
                "required": True,
                "schema": {"type": "string"},
            }
            for name, text in WEBHOOK_HEADERS.items()
        ],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": reference(message_name(event_type))}},
        },
        "responses": {
            "2XX": {"description": "delivered"},
            "4XX": {"description": "a failed attempt, tried again later (docs/webhooks.md)"},
        },
    }


def _problem(description: str, *headers: str, schema: Any = "Problem") -> dict[str, Any]:
    """A problem document's answer, with the headers every answer has and `headers`."""
    return {
        "description": description,
        "headers": {
            name: name for name in (*EVERY_RESPONSE, *ANSWER_HEADERS, *RATE_LIMIT_HEADERS, *headers)
        },
        "content": {PROBLEM: {"schema": schema}},
    }


def _completed(operation: dict[str, Any], operation_id: str) -> dict[str, Any]:
    """The operation named after its view, answering 429, 500 and 503 as any request may; every
    answer it describes itself carries the headers of every answer."""
    operation = copy.deepcopy(operation)
    operation.setdefault("operationId", operation_id)
    responses = operation["responses"]
    for status in (429, 500, 503):
        responses.setdefault(str(status), SHARED_RESPONSES[status][0])
    for response in responses.values():
        if isinstance(response, dict):
            headers = response.setdefault("headers", {})
            for name in EVERY_RESPONSE:
                headers.setdefault(name, name)
    return operation


def _operation(declared: EndpointSpec, method: str, path_arguments: set[str]) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "summary": declared.summary,
        "tags": [declared.tag],
        "parameters": [_path_parameter(name) for name in sorted(path_arguments)],
        "responses": _responses(declared, method, path_arguments),
        "security": [] if declared.permission is None else [{"bearer": []}],
    }
    if declared.verifier is not None:
        operation["security"].append({SIGNED_SCHEME: []})
        operation["parameters"] += [
            {"in": "header", "name": name, "description": text, "schema": {"type": "string"}}
            for name, text in SIGNED_HEADERS.items()
        ]
    if declared.query is not None:
        operation["parameters"].append({"in": "query", "schema": declared.query})
    if declared.idempotent:
        operation["parameters"].append("Idempotency-Key")
    if method == "GET" and _tagged(declared):
        operation["parameters"].append("If-None-Match")
    if _checks_if_match(declared, method):
        operation["parameters"].append("If-Match")
    if method == "GET" and declared.permission is not None:
        operation["parameters"].append(copy.deepcopy(WANTED_PARAMETER))
    if declared.body is not None:
        operation["requestBody"] = {
            "required": _body_required(declared.body),
            "content": _body_content(declared.body),
        }
    if rules := _either_or(declared, method):
        operation[EITHER_OR] = rules
    operation["description"] = _who_may(declared)
    return operation


def _either_or(declared: EndpointSpec, method: str) -> list[dict[str, Any]]:
    """The values the operation takes in either of two places, one of them required: a body's
    key field or `Idempotency-Key`; a query's `version` or `If-Match` (docs/api.md#either-or).
    Each rule says what the server answers with neither, and with both naming unlike values."""
    rules = []
    key_field = getattr(declared.body, "key_field", None)
    if declared.idempotent and key_field is not None:
        refused = _refused("VALIDATION_FAILED", key_field)
        rules.append(_rule(("body", key_field), ("header", "Idempotency-Key"), refused, refused))
    query = declared.query._declared_fields if declared.query is not None else {}
    if _checks_if_match(declared, method) and "version" in query:
        neither, differ = _refused("VALIDATION_FAILED", "version"), _refused("PRECONDITION_FAILED")
        rules.append(_rule(("query", "version"), ("header", "If-Match"), neither, differ))
    return rules


def _rule(
    one: tuple[str, str], other: tuple[str, str], neither: dict[str, Any], differ: dict[str, Any]
) -> dict[str, Any]:
    places = [{"in": where, "name": name} for where, name in (one, other)]
    return {"one_of": places, "neither": neither, "differ": differ}


def _refused(code: str, field: str | None = None) -> dict[str, Any]:
    """What the server answers: the problem code's status and code, and the field `errors`
    names."""
    return {"status": STATUS_OF_CODE[code], "code": code} | ({"field": field} if field else {})


def _who_may(declared: EndpointSpec) -> str:
    if declared.permission is None:
        return "Public: no token needed."
    return (
        f"Needs the permission `{declared.permission}`."
        + (
            f" A caller with only `{declared.seen_with}` gets 403, and the refusal is recorded."
            if declared.seen_with
            else ""
        )
        + (f" Or `{declared.also}`: either serves." if declared.also else "")
        + (
            " Or no token: a delivery signed by a registered callback source of the instance's "
            "tenant (docs/webhooks.md#verified-callbacks)."
            if declared.verifier is not None
            else ""
        )
    )


def _path_parameter(name: str) -> dict[str, Any]:
    named = "key" if name == "key" else "id"  # every other path parameter is an id
    return {
        "in": "path",
        "name": name,
        "required": True,
        "description": f"the {named} of the {RESOURCES.get(name, name)}",
        "schema": {"type": "string"}
        if name in CALLERS_IDS
        else {"type": "string", "format": "uuid"},
    }


def _checks_if_match(declared: EndpointSpec, method: str) -> bool:
    """Whether `If-Match` applies: a write to a resource it can read the version of."""
    return callable(declared.versioned) and method != "GET"


def _tagged(declared: EndpointSpec) -> bool:
    """Whether the operation's answer has an `ETag`: a versioned resource's, or a list's."""
    return declared.response is not None and (bool(declared.versioned) or is_list(declared))


def _responses(declared: EndpointSpec, method: str, path_arguments: set[str]) -> dict[str, Any]:
    """Every status the operation can answer: its success, and each problem it may meet."""
    statuses: dict[int, str | dict[str, Any]] = {declared.status: _success(declared, method)}
    if method == "GET" and _tagged(declared):
        statuses[304] = {
            "description": "not modified: the answer still has the `ETag` `If-None-Match` named",
            "headers": {"ETag": "ETag"},
        }
    if method in KEYLESS_METHODS or declared.keyless or _checks_if_match(declared, method):
        statuses |= _shared(400)
    if declared.body is not None:
        statuses |= _shared(400, 413)
    if isinstance(declared.body, MergePatch):
        statuses |= _shared(415)
    if declared.permission is not None:
        statuses |= _shared(401, 403)
    if declared.verifier is not None:
        statuses[401] = _problem(SIGNED_UNAUTHENTICATED)
    named = [RESOURCES.get(name, name) for name in sorted(path_arguments)]
    if declared.operation_id in REFERENCES:
        named.append(REFERENCES[declared.operation_id])
    if named:
        statuses[404] = _problem(f"No such {' or '.join(dict.fromkeys(named))} in the tenant.")
    if declared.operation_id in SHARED_NOT_FOUND:
        statuses[404] = _problem(SHARED_NOT_FOUND[declared.operation_id])
    if declared.operation_id in CONFLICTS or declared.idempotent:
        statuses[409] = _conflict(declared)
    if _checks_if_match(declared, method):
        statuses |= _shared(412)
    statuses[422] = _problem(_invalid(declared))
    return {str(status): answer for status, answer in sorted(statuses.items())}


def _shared(*statuses: int) -> dict[int, str | dict[str, Any]]:
    """The shared answers of `statuses`, by their component's name."""
    return {status: SHARED_RESPONSES[status][0] for status in statuses}


def _invalid(declared: EndpointSpec) -> str:
    """What 422 means for an operation: every one refuses query parameters it does not take."""
    if declared.body is not None:
        invalid = "Invalid fields, or fields or query parameters it does not take"
    elif declared.query is not None:
        invalid = "Invalid query parameters, or query parameters it does not take"
    else:
        invalid = "Query parameters, which it takes none of"
    if declared.idempotent:
        invalid += ", or a malformed `Idempotency-Key`"
    invalid += " (each named in `errors`)."
    if declared.download is not None:
        invalid = (
            f"`VALIDATION_FAILED`: {invalid[0].lower()}{invalid[1:]} `TOO_MANY_ROWS`: more rows "
            "match than a file may hold (100,000): narrow the filters; nothing was recorded."
        )
    return invalid


def _conflict(declared: EndpointSpec) -> dict[str, Any]:
    """The 409 of an operation, naming its codes; a decision command's may be the command lost."""
    causes = [CONFLICTS[declared.operation_id]] if declared.operation_id in CONFLICTS else []
    if declared.idempotent and reuse_code(declared.body) == KEY_REUSED:
        causes.append(f"`{KEY_REUSED}`: the `Idempotency-Key` came with another request.")
    if declared.response is not CommandOut and declared.operation_id not in LINKING:
        return _problem(" ".join(causes))
    lost = _problem(" ".join(causes), schema={"anyOf": [CommandRejectedOut, "Problem"]})
    lost["headers"] |= {
        "ETag": {
            "description": "The instance's, when the command lost.",
            "schema": {"type": "string"},
        },
        "Idempotent-Replayed": "Idempotent-Replayed",
    }
    return lost


def _success(declared: EndpointSpec, method: str) -> dict[str, Any]:
    headers = [*EVERY_RESPONSE]
    if method != "GET":
        headers.append(WRITTEN_HEADER)
    if _tagged(declared) and (method == "GET" or declared.versioned):
        headers.append("ETag")
    if declared.location is not None:
        headers.append("Location")
    if declared.idempotent:
        headers.append("Idempotent-Replayed")
    if is_list(declared):
        headers.append("Link")
    answer: dict[str, Any] = {
        "description": SUCCESSES.get(declared.status, "done"),
        "headers": {name: name for name in headers},
    }
    if declared.response is not None:
        answer["content"] = {"application/json": {"schema": declared.response}}
    if declared.download is not None:
        answer |= _file(declared.download, answer["headers"])
    return answer


def _file(download: Download, headers: dict[str, Any]) -> dict[str, Any]:
    """A file's answer: each media type it may be, and its own headers."""
    described = "; ".join(f"`{media}`: {text}" for media, text in download.media_types.items())
    return {
        "description": f"the file. {described}",
        "headers": headers
        | {
            name: {"description": text, "required": True, "schema": {"type": "string"}}
            for name, text in download.headers.items()
        },
        "content": {media: {"schema": _file_schema(media)} for media in download.media_types},
    }


def _file_schema(media_type: str) -> dict[str, str]:
    """A file of text (`text/...`, read as text), or of bytes."""
    if media_type.startswith("text/"):
        return {"type": "string"}
    return {"type": "string", "format": "binary"}


def _body_required(body: Body) -> bool:
    """Whether the body may be left out: not if any field is required (an empty body is `{}`)."""
    if not isinstance(body, type):
        return True  # a merge patch, or either of two shapes
    return any(field.required for field in body().fields.values())


def _body_content(body: Body) -> dict[str, Any]:
    """The media type a body is taken in. A merge patch is declared as its own type only (a
    generated client then sends that type); the server takes `application/json` too."""
    if isinstance(body, MergePatch):
        return {MERGE_PATCH_TYPES[0]: {"schema": body.documented}}
    return {"application/json": {"schema": _body_schema(body)}}


def _body_schema(body: type[Schema] | Either) -> Any:
    if isinstance(body, Either):
        return {"oneOf": [body.without_key, body.with_key]}
    return body


def _with_examples(document: dict[str, Any]) -> dict[str, Any]:
    """EXAMPLES on their component schemas (the first as its `example`), and on every body
    whose schema is, or is one of, that component: a problem's only under its own status,
    and only if its code is one the answer names (when it names any)."""
    schemas = document["components"]["schemas"]
    for name, examples in EXAMPLES.items():
        if name in schemas and examples:
            schemas[name]["example"] = next(iter(examples.values()))
    for media_type, fits in _media_types(document):
        named = {
            example: {"value": value}
            for component in _components_of(media_type.get("schema", {}))
            for example, value in EXAMPLES.get(component, {}).items()
            if fits(value)
        }
        if named:
            media_type["examples"] = named
    return document


def _media_types(document: dict[str, Any]) -> Iterator[tuple[dict[str, Any], Fits]]:
    """Every request and response media type object, with what its examples must fit."""
    statuses = {name: status for status, (name, _, _) in SHARED_RESPONSES.items()}
    answers = [
        (statuses[name], answer) for name, answer in document["components"]["responses"].items()
    ]
    for operations in document["paths"].values():
        for operation in operations.values():
            for media_type in operation.get("requestBody", {}).get("content", {}).values():
                yield media_type, _anything
            answers.extend(
                (int(status), answer)
                for status, answer in operation["responses"].items()
                if "$ref" not in answer
            )
    for status, answer in answers:
        fits = functools.partial(_fits, status, set(CODES.findall(answer["description"])))
        for media_type in answer.get("content", {}).values():
            yield media_type, fits


def _anything(value: Any) -> bool:
    return True


def _fits(status: int, codes: set[str], value: Any) -> bool:
    """Whether an example answers `status` with one of `codes` (any code if none is named)."""
    if not isinstance(value, dict) or not isinstance(value.get("status"), int):
        return True  # not a problem document
    return bool(value["status"] == status and (not codes or value.get("code") in codes))


def _components_of(schema: dict[str, Any]) -> Iterator[str]:
    """The component schemas a body schema is: its `$ref`, or each of its `oneOf` or `anyOf`."""
    if "$ref" in schema:
        yield schema["$ref"].rpartition("/")[2]
    for alternative in (*schema.get("oneOf", []), *schema.get("anyOf", [])):
        yield from _components_of(alternative)
