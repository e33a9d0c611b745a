"""Entity tags and `If-Match` (RFC 9110): a versioned resource's `ETag` is its `version`, strong.

A write to a versioned resource checks `If-Match` against the resource as it is, after the
caller's permission, and answers 412 only once its body and query proved valid (a bad body is
422 first); the version the check matched is then the
`version` the write expects, so the store's optimistic check closes the race between the check
and the write, and a write that loses that race is 412 as well. A resource whose writes take no
`version` (approval instances) has its service check If-Match with the write instead
(`InService`), which also lets a repeated command get its first answer.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from flask import request
from marshmallow import Schema
from werkzeug.datastructures import ETags
from werkzeug.http import unquote_etag

from domain.errors import VersionConflict
from domain.messages import Message
from web.problems import Problem

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# True: answers an ETag. A reader of the resource (from the principal and the path): a write
# that honours If-Match too.
Versioned = bool | Callable[..., Any]
NO_ETAG = Message("this resource has no ETag: only If-Match: * matches")
EMPTY_IF_MATCH = Message(
    "If-Match is empty: send the ETag you read, a list of them, or *; nothing was changed"
)


@dataclass(frozen=True)
class InService:
    """The reader of a resource whose service checks If-Match itself, with the write
    (`if_match_accepts`), rather than before it."""

    read: Callable[..., Any]

    def __call__(self, **inputs: Any) -> Any:
        return self.read(**inputs)


def etag(version: int) -> str:
    """The strong entity tag of a resource at `version`: `"4"`."""
    return f'"{version}"'


def content_tag(answer: Any) -> str:
    """The strong entity tag of an answer that has no version (a list's page): a digest of
    its JSON, so it changes whenever any byte of the answer would."""
    canonical = json.dumps(answer, sort_keys=True, separators=(",", ":"), default=str)
    return f'"{hashlib.sha256(canonical.encode()).hexdigest()[:32]}"'


def not_modified(tag: str) -> bool:
    """Whether the read's `If-None-Match` names the answer's entity tag (`tag`, quoted): weak
    comparison, as RFC 9110 has it for If-None-Match, so `W/"4"` matches `"4"`; `*` matches."""
    if "If-None-Match" not in request.headers:
        return False
    return request.if_none_match.contains_weak(unquote_etag(tag)[0])


def etag_header(versioned: Versioned, answer: Any) -> dict[str, str]:
    """`ETag` for an answer that is a versioned resource; nothing for anything else."""
    version = answer.get("version") if versioned and isinstance(answer, Mapping) else None
    return {"ETag": etag(version)} if isinstance(version, int) else {}


@dataclass(frozen=True)
class Precondition:
    """What a write's `If-Match` found: the version the write expects, and the 412 it
    answers once its input proved valid (a bad body is 422 whatever If-Match says)."""

    version: int | None = None
    failure: Problem | None = None

    def enforced(self) -> int | None:
        """The version matched; 412 if If-Match matched none."""
        if self.failure is not None:
            raise self.failure
        return self.version


def if_match_precondition(
    versioned: Versioned, permission: str | None, inputs: Mapping[str, Any]
) -> Precondition:
    """What a write's `If-Match` matches: the version it names, or the 412 to answer (with
    the current version, which the input is validated with meanwhile); nothing without one.

    Reads do not evaluate it, and neither does a write its caller lacks the permission for
    (its 403 comes first), nor one whose service checks it (`InService`). `versioned` reads
    the resource from the principal and the path; without one, a resource has no entity tag,
    so only `*` matches it.
    """
    if "If-Match" not in request.headers or request.method in SAFE_METHODS:
        return Precondition()
    tags = if_match_tags()
    principal = inputs.get("principal")
    if permission is not None and principal is not None and not principal.can(permission):
        return Precondition()
    if isinstance(versioned, InService):
        return Precondition()
    if not callable(versioned):
        if tags.star_tag:
            return Precondition()
        return Precondition(failure=Problem("PRECONDITION_FAILED", NO_ETAG))
    version = int(versioned(**inputs).version)
    if tags.contains(str(version)):
        return Precondition(version)
    stale = Message(
        "the resource's ETag is {etag}, which If-Match does not name "
        "(a weak tag never matches): reload it; nothing was changed",
        etag=etag(version),
    )
    return Precondition(version, Problem("PRECONDITION_FAILED", stale))


def if_match_tags() -> ETags:
    """The request's `If-Match` tags; an empty header is 400 (it names no tag at all)."""
    if not request.headers.get("If-Match", "").strip():
        raise Problem("BAD_REQUEST", EMPTY_IF_MATCH)
    return request.if_match


def if_match_accepts() -> Callable[[int], bool] | None:
    """Which versions the request's If-Match accepts, for a service that checks it with its
    write; None without If-Match."""
    if "If-Match" not in request.headers:
        return None
    tags = if_match_tags()
    return lambda version: tags.contains(str(version))


def expecting(schema: type[Schema] | None, data: Mapping[str, Any], version: int | None) -> Any:
    """`data` naming the If-Match `version` as its `version`, if its shape takes one and it
    names none itself (so `If-Match` stands in for a body's or query's `version`)."""
    if version is not None and schema is not None and "version" in schema._declared_fields:
        return {"version": version, **data}
    return data


def check_agrees(version: int | None, *inputs: Any) -> None:
    """412 if a body or query names another `version` than the one If-Match matched."""
    for given in inputs:
        named = given.get("version") if isinstance(given, Mapping) else None
        if version is not None and named is not None and named != version:
            raise Problem(
                "PRECONDITION_FAILED",
                Message(
                    "If-Match matched the current version, {etag}, but `version` is {named}: "
                    "send one of them, or both alike; nothing was changed",
                    etag=etag(version),
                    named=named,
                ),
            )


@contextmanager
def conflicts_as_failed_preconditions(version: int | None) -> Iterator[None]:
    """A version conflict on the version If-Match matched is 412: the resource changed
    between the check and the write."""
    try:
        yield
    except VersionConflict as conflict:
        if version is None:
            raise
        raise Problem("PRECONDITION_FAILED", conflict.message) from None
