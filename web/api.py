"""The `endpoint` decorator: authentication, permission, input and output in one place.

Each view names its permission and schemas once; the decorator enforces them and the
OpenAPI document is generated from the same declaration.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from flask import Response, current_app, g, jsonify, request
from flask.typing import ResponseReturnValue
from marshmallow import RAISE, Schema, ValidationError

from cronledger.application.services import Services
from domain.directory import Principal
from domain.errors import DomainError, ValidationFailed
from domain.messages import Message
from web.command_keys import Replays, first_answered, remember
from web.freshness import (
    read_models_ready,
    wait_until_projected,
    wanted_position,
    written_headers,
)
from web.idempotency import (
    HEADER,
    idempotency_key,
    key_field_errors,
    keyed_request,
    replay_headers,
    with_key_field,
)
from web.json_depth import check_nesting
from web.merge_patch import merge_patch
from web.preconditions import (
    Versioned,
    check_agrees,
    conflicts_as_failed_preconditions,
    content_tag,
    etag_header,
    expecting,
    if_match_precondition,
    not_modified,
)
from web.problems import SOME_FIELDS_INVALID, Problem
from web.schemas.base import PageQuery

View = Callable[..., Any]


@dataclass(frozen=True)
class Either:
    """A body of one of two shapes, told apart by whether `key` is present."""

    key: str
    with_key: type[Schema]
    without_key: type[Schema]

    def pick(self, data: Mapping[str, Any]) -> type[Schema]:
        return self.with_key if self.key in data else self.without_key


@dataclass(frozen=True)
class MergePatch:
    """A JSON Merge Patch (RFC 7396) of the resource `current` reads (given the principal
    and the path) and `shown_as` dumps, validated once merged as the PUT body `replaces`;
    a key the patch removes with null becomes its `defaults` entry (or is missing, so 422)."""

    shown_as: type[Schema]
    replaces: type[Schema]
    documented: type[Schema]
    defaults: Mapping[str, Any]
    current: Callable[..., Any]


Body = type[Schema] | Either | MergePatch
# The rules of meaning a body's fields must keep (given the principal, the path and the fields
# that kept their shape): a lookup, a parse, a zone. Run when some field lost its shape, so
# that one 422 names every invalid field; a rule raises ValidationFailed with what it found.
Meaning = Callable[..., None]
Errors = dict[str, list[str]]
MERGE_PATCH_TYPES = ("application/merge-patch+json", "application/json")
KEYLESS_METHODS = frozenset({"PUT", "PATCH", "DELETE"})  # Idempotency-Key is 400 on them


@dataclass(frozen=True)
class Answered:
    """A result whose status depends on what happened, e.g. 409 for a rejected command."""

    body: Any
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    dumped: bool = False  # the body is the answer's JSON already (a list's: see web.paging)


@dataclass(frozen=True)
class Verified:
    """A caller authenticated otherwise than by a bearer token (a signed delivery), and the key
    that stands for its body's key field, as an Idempotency-Key would."""

    principal: Principal
    key: str


@dataclass(frozen=True)
class Download:
    """An answer that is a file, not JSON: the view returns it as a `Response` of one of
    `media_types` (by media type, what it holds), with `headers` (by name, what each says)."""

    media_types: Mapping[str, str]
    headers: Mapping[str, str]


# Another way to authenticate, tried before the bearer token (given the path): None leaves it
# to the token.
Verifier = Callable[..., Verified | None]


@dataclass(frozen=True)
class EndpointSpec:
    summary: str
    permission: str | None
    seen_with: str | None
    body: Body | None
    query: type[Schema] | None
    response: type[Schema] | None
    status: int
    tag: str
    operation_id: str
    # Takes an Idempotency-Key header and may answer Idempotent-Replayed: True, the view keeps
    # the key; `Replays`, the endpoint does (a command that creates nothing of its own).
    idempotent: bool | Replays = False
    # True: answers an ETag; a reader of the resource (principal, path): also honours If-Match
    versioned: Versioned = False
    verifier: Verifier | None = None
    also: str | None = None  # another permission that serves as well as `permission`
    download: Download | None = None  # a file (the view's `Response`), not `response`'s JSON
    location: str | None = None  # a 201's `Location`, formatted with the path and the answer
    meaning: Meaning | None = None  # the body's rules of meaning, checked with its shape
    keyless: bool = False  # a POST that a repeat does no more than once: Idempotency-Key is 400


def services() -> Services:
    return cast(Services, current_app.extensions["cronledger"])


def endpoint(
    summary: str,
    *,
    tag: str,
    permission: str | None = None,
    seen_with: str | None = None,
    body: Body | None = None,
    query: type[Schema] | None = None,
    response: type[Schema] | None = None,
    status: int = 200,
    idempotent: bool | Replays = False,
    versioned: Versioned = False,
    verifier: Verifier | None = None,
    also: str | None = None,
    download: Download | None = None,
    location: str | None = None,
    meaning: Meaning | None = None,
    keyless: bool = False,
) -> Callable[[View], View]:
    """Declare a view: who may call it, what it takes and what it answers.

    A caller lacking `permission` but holding `seen_with` (who can see the resource) still
    reaches the view, whose service records the refusal and answers it 403. A caller holding
    `also` instead of `permission` is served as well. A request that `verifier` verifies
    needs no token. A `download` view answers a file: its `Response` as it is. A view that
    creates (201) names its new resource's URL as `location`, e.g. `/api/groups/{id}`. A
    body that breaks its shape is checked by `meaning` too (on the fields that kept their
    shape), and answered with every error of both at once. A `keyless` POST (a preview, a
    bulk action, a repeatable setting) refuses an Idempotency-Key, as a PUT does.
    """

    def decorate(view: View) -> View:
        spec = EndpointSpec(
            summary,
            permission,
            seen_with,
            body,
            query,
            response,
            status,
            tag,
            operation_id=view.__name__,
            idempotent=idempotent,
            versioned=versioned,
            verifier=verifier,
            also=also,
            download=download,
            location=location,
            meaning=meaning,
            keyless=keyless,
        )

        @functools.wraps(view)
        def handle(**path: Any) -> ResponseReturnValue:
            inputs: dict[str, Any] = dict(path)
            verified = verifier(**path) if verifier is not None else None
            if verified is not None:
                inputs["principal"] = verified.principal
            elif permission is not None:
                inputs["principal"] = authorize(permission, seen_with or also)
            refuse_key_without_meaning(spec)
            precondition = if_match_precondition(versioned, permission, inputs)
            key = verified.key if verified else (idempotency_key() if idempotent else None)
            rules = functools.partial(meaning, **inputs) if meaning else None
            if isinstance(body, MergePatch):
                inputs["body"] = patched(body, inputs, precondition.version, rules)
            elif body is not None:
                data = json_object()
                shape = body.pick(data) if isinstance(body, Either) else body
                differs = key_field_errors(shape, data, key)
                data = expecting(shape, with_key_field(shape, data, key), precondition.version)
                inputs["body"] = load(shape(), data, rules, differs)
            given = expecting(query, request.args.to_dict(), precondition.version)
            arguments = load(loader(query), given)
            if query is not None:
                inputs["query"] = arguments
            if precondition.failure is not None and rules is not None and "body" in inputs:
                refuse_broken_meaning(rules, inputs["body"])
            expected = precondition.enforced()  # 412 only for a request that is valid
            check_agrees(expected, inputs.get("body"), arguments)
            reading = request.method == "GET"
            if reading and versioned:  # a single resource, read from its row
                read_models_ready(services())
            if reading and permission is not None and (wanted := wanted_position()) is not None:
                wait_until_projected(services(), wanted)
            if not reading:
                services().ledger.forget_saved_position()
            with conflicts_as_failed_preconditions(expected):
                result = acted(view, spec, inputs)
            if download is not None:
                return cast(Response, result)
            written = {} if reading else written_headers(services())
            if response is None:
                return "", status, written
            answer = result if isinstance(result, Answered) else Answered(result, status)
            dumped = answer.body if answer.dumped else dumper(response).dump(answer.body)
            tagged = entity_tag(spec, dumped) if reading or versioned else {}
            if reading and tagged and not_modified(tagged["ETag"]):
                return "", 304, tagged
            where = located(location, answer.status, path, dumped)
            return jsonify(dumped), answer.status, {**tagged, **where, **answer.headers, **written}

        handle.endpoint_spec = spec  # type: ignore[attr-defined]
        return handle

    return decorate


def refuse_key_without_meaning(spec: EndpointSpec) -> None:
    """400 for an Idempotency-Key on a write that takes none: a PUT, PATCH or DELETE is
    idempotent already (or checked by If-Match), so a key would promise what it cannot; so is
    a `keyless` POST."""
    if spec.idempotent or HEADER not in request.headers:
        return
    if request.method in KEYLESS_METHODS:
        raise Problem(
            "BAD_REQUEST",
            Message(
                "{header} has no meaning on {method}: repeating it does no more than once "
                "(If-Match makes it conditional); send it without the header",
                header=HEADER,
                method=request.method,
            ),
        )
    if spec.keyless:
        raise Problem(
            "BAD_REQUEST",
            Message(
                "{header} has no meaning on this operation: it changes nothing, or repeating "
                "it does no more than once (a bulk action's items are each their own "
                "command); send it without the header",
                header=HEADER,
            ),
        )


def acted(view: View, spec: EndpointSpec, inputs: dict[str, Any]) -> Any:
    """What the view answers; for a command whose key the endpoint keeps (`Replays`), a repeat
    of the key's first success answers what it acted on as it is now, marked replayed."""
    replays = spec.idempotent
    if not isinstance(replays, Replays):
        return view(**inputs)
    keyed = keyed_request(inputs["principal"], spec.operation_id)
    if keyed is None:
        return view(**inputs)
    first = first_answered(services(), keyed)
    if first is not None:
        found = {name: value for name, value in inputs.items() if name not in ("body", "query")}
        answered = {"answered": first} if replays.by_answer else {}
        return Answered(replays.read(**found, **answered), spec.status, replay_headers(True))
    result = view(**inputs)
    remember(services(), keyed, result)
    return result


def entity_tag(spec: EndpointSpec, dumped: Any) -> dict[str, str]:
    """`ETag` of an answer: a versioned resource's version, a list page's digest."""
    if spec.versioned:
        return etag_header(spec.versioned, dumped)
    return {"ETag": content_tag(dumped)} if is_list(spec) else {}


def is_list(spec: EndpointSpec) -> bool:
    """Whether the endpoint answers a list's pages (and may `Link` to others)."""
    paged = spec.query is not None and issubclass(spec.query, PageQuery)
    return paged and spec.download is None


def located(
    template: str | None, status: int, path: Mapping[str, Any], dumped: Any
) -> dict[str, str]:
    """`Location` of a 201: the URL of what it created (root-relative)."""
    if template is None or status != 201 or not isinstance(dumped, Mapping):
        return {}
    names = {**path, **dumped}
    return {"Location": request.script_root + template.format_map(names)}


@functools.cache
def loader(query: type[Schema] | None) -> Schema:
    """One instance of each query's schema (or of an empty one), refusing unknown parameters."""
    return (query or Schema)(unknown=RAISE)


@functools.cache
def dumper(response: type[Schema]) -> Schema:
    """One instance of each answer's schema, shared by every request: making one (its fields,
    each nested schema's) costs more than dumping a small answer with it."""
    return response()


def authorize(permission: str, seen_with: str | None = None, *, fresh: bool = False) -> Principal:
    """The caller, if its bearer token works and grants `permission` (or `seen_with`): as the
    directory told this process within the last second, or (`fresh`) as it stands now."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Problem("UNAUTHENTICATED", Message("send Authorization: Bearer <token>"))
    directory = services().directory
    lookup = directory.authenticate if fresh else directory.authenticate_recent
    principal = lookup(token.strip())
    if principal is None:
        raise Problem(
            "UNAUTHENTICATED", Message("the token is unknown, revoked or its account inactive")
        )
    g.principal = principal
    if not principal.can(permission) and not (seen_with and principal.can(seen_with)):
        raise Problem(
            "FORBIDDEN", Message("this needs the permission {permission}", permission=permission)
        )
    return principal


def patched(
    patch: MergePatch,
    inputs: Mapping[str, Any],
    expected: int | None = None,
    meaning: Callable[[dict[str, Any]], None] | None = None,
) -> Any:
    """The PUT body the merge patch makes of the current representation's settable fields.

    Without a `version` the patch applies to the version If-Match matched (`expected`), else
    to the version it was merged with, so a change made in between is 412 or 409 rather than
    silently undone.
    """
    if request.mimetype not in MERGE_PATCH_TYPES:
        raise Problem(
            "UNSUPPORTED_MEDIA_TYPE", Message("send Content-Type: application/merge-patch+json")
        )
    changes = expecting(patch.replaces, json_object(), expected)
    current = patch.shown_as().dump(patch.current(**inputs))
    settable = {key: current[key] for key in patch.replaces().fields if key in current}
    merged = {**patch.defaults, **merge_patch(settable, changes)}
    return load(patch.replaces(), merged, meaning)


def json_object() -> dict[str, Any]:
    """The body as a JSON object; an empty body counts as `{}`."""
    raw = request.get_data(cache=True)
    if not raw:
        return {}
    check_nesting(raw)
    data = request.get_json(force=True, silent=True)
    if not isinstance(data, dict):
        raise Problem("BAD_REQUEST", Message("the body must be a JSON object"))
    return data


NUL_REFUSED = Message("contains the NUL character (U+0000), which is not accepted")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
SURROGATE_REFUSED = Message(
    "contains a lone surrogate (U+D800 to U+DFFF), which is not Unicode text"
)


def refusal_of(text: str) -> str | None:
    """Why no store keeps `text`: U+0000 (PostgreSQL refuses it in text) or a lone surrogate
    (JSON's `\\ud800` escape reads into one; no UTF-8 encoder writes it)."""
    if "\x00" in text:
        return NUL_REFUSED
    if LONE_SURROGATE.search(text):
        return SURROGATE_REFUSED
    return None


def unstorable(value: object, path: str = "") -> dict[str, list[str]]:
    """The strings in `value`, keys included, that no field takes, by path (as `flatten` names
    them), each with why."""
    if isinstance(value, str):
        why = refusal_of(value)
        return {path or "_schema": [why]} if why else {}
    if not isinstance(value, Mapping | list):
        return {}
    found: dict[str, list[str]] = {}
    for key, item in value.items() if isinstance(value, Mapping) else enumerate(value):
        shown = str(key).encode("utf-8", "backslashreplace").decode()  # a surrogate escaped
        inner = f"{path}.{shown}" if path else shown
        why = refusal_of(key) if isinstance(key, str) else None
        if why:
            found[inner] = [why]
        found.update(unstorable(item, inner))
    return found


def load(
    schema: Schema,
    data: Mapping[str, Any],
    meaning: Callable[[dict[str, Any]], None] | None = None,
    refused: Errors | None = None,
) -> Any:
    """`data` (a body, or a query's parameters) as `schema` loads it; else 422 naming every
    field that broke its shape (or was `refused` already), and every one of the others that
    breaks a rule of `meaning`."""
    refused = {**unstorable(data), **(refused or {})}
    try:
        loaded = schema.load(data)
    except ValidationError as error:
        shape = {**flatten(error.messages), **refused}
        kept = error.valid_data if isinstance(error.valid_data, dict) else {}
    else:
        if not refused:
            return loaded
        shape, kept = refused, loaded
    errors = {**meaning_errors(meaning, kept, shape), **shape}
    raise Problem("VALIDATION_FAILED", SOME_FIELDS_INVALID, errors)


def refuse_broken_meaning(meaning: Callable[[dict[str, Any]], None], body: Any) -> None:
    """422 naming what `meaning` finds wrong with a body of the right shape (a write whose
    If-Match failed is checked before its 412; other writes are checked as they act)."""
    if isinstance(body, dict) and (errors := meaning_errors(meaning, body, {})):
        raise Problem("VALIDATION_FAILED", SOME_FIELDS_INVALID, errors)


def meaning_errors(
    meaning: Callable[[dict[str, Any]], None] | None, kept: Mapping[str, Any], shape: Errors
) -> Errors:
    """What `meaning` finds wrong with the fields that kept their shape (a field with a shape
    error, or one of its parts, is left out of what it checks and of what it answers)."""
    if meaning is None:
        return {}
    broken = {name.split(".")[0] for name in shape}
    try:
        meaning({name: value for name, value in kept.items() if name not in broken})
    except ValidationFailed as failed:
        return {f: m for f, m in failed.errors.items() if f.split(".")[0] not in broken}
    except DomainError:  # e.g. the path names no resource: the shape's errors answer alone
        return {}
    return {}


def as_message(said: object) -> Message:
    """One of marshmallow's messages as a `Message` (its own English is its template)."""
    return Message.verbatim(said if isinstance(said, str) else str(said))


def flatten(messages: Any, prefix: str = "") -> dict[str, list[str]]:
    """Marshmallow's nested messages as `{"field.sub.0": ["message"]}`, each a `Message`."""
    if isinstance(messages, list):
        return {prefix or "_schema": [as_message(m) for m in messages]}
    flat: dict[str, list[str]] = {}
    for key, value in messages.items():
        flat.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat
