"""`RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers): each a list of
Structured Fields items, one per quota, named by a string (docs/api.md#rate-limits)."""

from __future__ import annotations

from flask import Response

POLICY_HEADER = "RateLimit-Policy"
LIMIT_HEADER = "RateLimit"
RATE_LIMIT_HEADERS = (POLICY_HEADER, LIMIT_HEADER)  # on every 4xx answer (web.refusals)
CONCURRENT = "concurrent-requests"  # the draft's quota unit of what is held open at once


def policy_item(name: str, quota: int, window: int | None = None, unit: str | None = None) -> str:
    """One policy: its quota `q`, over `w` seconds, counted in `qu` (default: requests)."""
    return _item(name, q=quota, w=window, qu=f'"{unit}"' if unit else None)


def limit_item(name: str, remaining: int, reset: int | None = None) -> str:
    """One policy's state for this caller: `r` left, whole again in `t` seconds."""
    return _item(name, r=remaining, t=reset)


def add_items(response: Response, policy: str, limit: str) -> None:
    """Add one quota's items to the answer's two lists."""
    for header, item in ((POLICY_HEADER, policy), (LIMIT_HEADER, limit)):
        before = response.headers.get(header)
        response.headers[header] = f"{before}, {item}" if before else item


def _item(name: str, **parameters: object) -> str:
    given = "".join(f";{key}={value}" for key, value in parameters.items() if value is not None)
    return f'"{name}"{given}'
