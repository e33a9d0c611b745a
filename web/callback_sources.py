"""Callback sources over HTTP, and the verification of signed signing callbacks
(docs/webhooks.md#verified-callbacks)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, g, request

from cronledger.application.callback_sources import HEADERS, UNSIGNED, SourceWithSecret
from cronledger.application.idempotency import Outcome, once
from domain.callback_sources import CREATE_CALLBACK_SOURCE, SIGN_CALLBACK
from domain.directory import Principal
from domain.idempotency import KeyedRequest, request_fingerprint
from domain.messages import Message
from domain.permissions import DIRECTORY_MANAGE
from projections.callback_sources import (
    CALLBACK_SOURCE_LISTING,
    CALLBACK_SOURCE_ORDER,
    CallbackSourceRow,
)
from web.api import Answered, Verified, endpoint, services
from web.command_keys import Replays
from web.idempotency import keyed_request, replay_headers
from web.json_depth import check_nesting
from web.paging import listed, window
from web.problems import SOME_FIELDS_INVALID, Problem
from web.schemas.base import VersionReasonBody, page_of
from web.schemas.callback_sources import (
    CallbackSourceCreate,
    CallbackSourceListQuery,
    CallbackSourceOut,
    CallbackSourceSecretOut,
)

bp = Blueprint("callback_sources", __name__, url_prefix="/api/callback-sources")
TAG = "callback-sources"
UNVERIFIED = Message(
    "a callback must be verified: signed by a registered callback source (webhook-id, "
    "webhook-timestamp, webhook-signature), or sent with Authorization: Bearer <token> of an "
    "account with workflow:approval:callback"
)


def _source(principal: Principal, source_id: str) -> CallbackSourceRow:
    """The source as a write reads it: from its log, never behind it."""
    return services().callback_sources.current(principal.tenant_id, source_id)


def _shown(made: SourceWithSecret) -> dict[str, Any]:
    """The source with its secret, as CallbackSourceSecretOut dumps it."""
    return {**made.source._asdict(), "secret": made.secret}


def _without_secret(principal: Principal, source_id: str) -> dict[str, Any]:
    """The source as a repeated rotation answers it: its secret is shown once."""
    return _shown(SourceWithSecret(_source(principal, source_id), None))


def _meaning(fields: dict[str, Any], principal: Principal) -> None:
    """A new source's name is no live source's of the tenant."""
    if "name" in fields:
        services().callback_sources.check_new(principal.tenant_id, fields["name"])


@bp.post("")
@endpoint(
    "Register a callback source (its signing secret is shown once)",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=CallbackSourceCreate,
    idempotent=True,
    versioned=True,
    response=CallbackSourceSecretOut,
    status=201,
    location="/api/callback-sources/{id}",
    meaning=_meaning,
)
def create_callback_source(principal: Principal, body: dict[str, Any]) -> Answered:
    keyed = keyed_request(principal, CREATE_CALLBACK_SOURCE)
    created: Outcome[SourceWithSecret] = once(
        lambda: services().callback_sources.create(
            principal, body["name"], body["description"], keyed
        ),
        lambda source_id: SourceWithSecret(_source(principal, source_id), None),
    )
    return Answered(_shown(created.value), 201, replay_headers(created.replayed))


@bp.get("")
@endpoint(
    "List the tenant's callback sources",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    query=CallbackSourceListQuery,
    response=page_of(CallbackSourceOut),
)
def list_callback_sources(principal: Principal, query: dict[str, Any]) -> Answered:
    page = services().callback_sources.sources(
        principal.tenant_id, window(query, CALLBACK_SOURCE_LISTING)
    )
    return listed(page, CALLBACK_SOURCE_ORDER, CallbackSourceOut)


@bp.get("/<source_id>")
@endpoint(
    "Read a callback source (never its secret)",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    versioned=True,
    response=CallbackSourceOut,
)
def get_callback_source(principal: Principal, source_id: str) -> CallbackSourceRow:
    return services().callback_sources.source(principal.tenant_id, source_id)


@bp.post("/<source_id>/rotate-secret")
@endpoint(
    "Make the source's next signing secret (shown once); the current one stops working",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=VersionReasonBody,
    versioned=_source,
    response=CallbackSourceSecretOut,
    idempotent=Replays(_without_secret),
)
def rotate_callback_source_secret(
    principal: Principal, source_id: str, body: dict[str, Any]
) -> dict[str, Any]:
    rotated = services().callback_sources.rotate_secret(
        principal, source_id, body.get("version"), body["reason"]
    )
    return _shown(rotated)


@bp.delete("/<source_id>")
@endpoint(
    "Delete a callback source: its deliveries are refused from then on",
    tag=TAG,
    permission=DIRECTORY_MANAGE,
    body=VersionReasonBody,
    versioned=_source,
    status=204,
)
def delete_callback_source(principal: Principal, source_id: str, body: dict[str, Any]) -> None:
    services().callback_sources.delete(principal, source_id, body.get("version"), body["reason"])


def signed_callback(instance_id: str) -> Verified | None:
    """The source a signed delivery to the instance comes from; None for an unsigned request
    with a bearer token, which the token authenticates. Neither is 401, counted.

    The body's `source` names the source, so the signature covers it; the `webhook-id` is the
    delivery's key, standing for its `command_id` (docs/webhooks.md#verified-callbacks)."""
    callbacks = services().callback_sources
    if not any(name in request.headers for name in HEADERS):
        if request.headers.get("Authorization", "").strip():
            return None
        callbacks.refused(UNSIGNED)
        raise Problem("UNAUTHENTICATED", UNVERIFIED)
    raw = request.get_data(cache=True)
    check_nesting(raw)
    body = request.get_json(force=True, silent=True) if raw else None
    named = body.get("source") if isinstance(body, dict) else None
    headers = {name: request.headers.get(name, "") for name in HEADERS}
    principal = callbacks.verify(instance_id, named if isinstance(named, str) else "", headers, raw)
    key = headers["webhook-id"]
    if isinstance(body, dict) and body.get("command_id", key) != key:
        raise Problem(
            "VALIDATION_FAILED",
            SOME_FIELDS_INVALID,
            {"command_id": [Message("differs from the webhook-id header")]},
        )
    g.principal = principal
    g.signed_delivery = KeyedRequest(
        principal.tenant_id,
        principal.account_id,
        SIGN_CALLBACK,
        key,
        request_fingerprint(request.view_args or {}, body),
    )
    return Verified(principal, key)


def signed_delivery() -> KeyedRequest | None:
    """This request's delivery key, if it is a verified signed delivery."""
    keyed: KeyedRequest | None = g.get("signed_delivery")
    return keyed
