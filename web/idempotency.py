"""The Idempotency-Key header of creating requests and commands (docs/api.md#idempotency).

Approval commands and run-now have a key field of their own (`command_id`, `request_id`),
which the header fills in; the other creating requests record the key with what they create
(cronledger.application.idempotency).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import request
from marshmallow import Schema

from domain.directory import Principal
from domain.idempotency import KEY, KEY_RULE, KeyedRequest, request_fingerprint
from domain.messages import Message
from web.problems import SOME_FIELDS_INVALID, Problem

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"


def idempotency_key() -> str | None:
    """The request's Idempotency-Key, if it sent one (422 if it is malformed)."""
    key = request.headers.get(HEADER)
    if key is not None and not KEY.fullmatch(key):
        raise Problem("VALIDATION_FAILED", SOME_FIELDS_INVALID, {HEADER: [KEY_RULE]})
    return key


def with_key_field(shape: type[Schema], data: Mapping[str, Any], key: str | None) -> Any:
    """The body with the header's key as its key field, if its shape has one (`key_field`)."""
    field = getattr(shape, "key_field", None)
    if key is None or field is None:
        return data
    return {**data, field: key}


def key_field_errors(
    shape: type[Schema], data: Mapping[str, Any], key: str | None
) -> dict[str, list[str]]:
    """A body naming another key than the header's: 422 on its key field, with its other
    invalid fields."""
    field = getattr(shape, "key_field", None)
    if key is None or field is None or data.get(field, key) == key:
        return {}
    return {field: [Message("differs from the {header} header", header=HEADER)]}


def reuse_code(body: object) -> str:
    """The problem code (409) of a key sent again with another request, for an endpoint
    taking `body`: its key field's own (`COMMAND_ID_REUSED`, `REQUEST_ID_REUSED`), else
    IDEMPOTENCY_KEY_REUSED."""
    return str(getattr(body, "reuse_code", KEY_REUSED))


def keyed_request(principal: Principal, operation: str) -> KeyedRequest | None:
    """The caller's request to `operation`, if it sent an Idempotency-Key: the key, and the
    fingerprint of its path parameters and JSON body as sent (none counts as `{}`)."""
    key = idempotency_key()
    if key is None:
        return None
    body = request.get_json(force=True, silent=True) if request.get_data(cache=True) else {}
    fingerprint = request_fingerprint(request.view_args or {}, body)
    return KeyedRequest(principal.tenant_id, principal.account_id, operation, key, fingerprint)


def replay_headers(replayed: bool) -> dict[str, str]:
    """What tells a client it got the answer of an earlier request with its key."""
    return {REPLAYED: "true"} if replayed else {}
