"""Entity tags and `If-Match` (RFC 9110): a versioned resource's `ETag` is its `version`, strong.

A write to a versioned resource checks `If-Match` against the resource as it is, after the
caller's permission and before the body is read; the version the check matched is then the
`version` the write expects, so the store's optimistic check closes the race between the check
and the write, and a write that loses that race is 412 as well. A resource whose writes take no
`version` (approval instances) has its service check If-Match with the write instead
(`InService`), which also lets a repeated command get its first answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from flask import request
from marshmallow import Schema

from domain.errors import VersionConflict
from domain.messages import Message
from web.problems import Problem

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# True: answers an ETag. A reader of the resource (from the principal and the path): a write
# that honours If-Match too.
Versioned = bool | Callable[..., Any]


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


def etag_header(versioned: Versioned, answer: Any) -> dict[str, str]:
    """`ETag` for an answer that is a versioned resource; nothing for anything else."""
    version = answer.get("version") if versioned and isinstance(answer, Mapping) else None
    return {"ETag": etag(version)} if isinstance(version, int) else {}


def if_match_version(
    versioned: Versioned, permission: str | None, inputs: Mapping[str, Any]
) -> int | None:
    """The version a write's `If-Match` matched (412 if it matches none); None without one.

    Reads do not evaluate it, and neither does a write its caller lacks the permission for
    (its 403 comes first), nor one whose service checks it (`InService`). `versioned` reads
    the resource from the principal and the path; without one, a resource has no entity tag,
    so only `*` matches it.
    """
    if "If-Match" not in request.headers or request.method in SAFE_METHODS:
        return None
    principal = inputs.get("principal")
    if permission is not None and principal is not None and not principal.can(permission):
        return None
    if isinstance(versioned, InService):
        return None
    tags = request.if_match
    if not callable(versioned):
        if tags.star_tag:
            return None
        raise Problem(
            "PRECONDITION_FAILED", Message("this resource has no ETag: only If-Match: * matches")
        )
    version = int(versioned(**inputs).version)
    if not tags.contains(str(version)):
        raise Problem(
            "PRECONDITION_FAILED",
            Message(
                "the resource's ETag is {etag}, which If-Match does not name "
                "(a weak tag never matches): reload it; nothing was changed",
                etag=etag(version),
            ),
        )
    return version


def if_match_accepts() -> Callable[[int], bool] | None:
    """Which versions the request's If-Match accepts, for a service that checks it with its
    write; None without If-Match."""
    if "If-Match" not in request.headers:
        return None
    tags = request.if_match
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
