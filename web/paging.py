"""Lists over HTTP: a page by cursor or by number, its `next_cursor`, and a `Link` to the next
page (docs/api.md#paging).

A cursor is the base64url of the list's name, its last item's sort key and a checksum: opaque
to clients, and refused (422 on `cursor`) unless it is exactly one the list gives.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

from flask import request

from cronledger.application.directory import Page
from projections.keyset import Order, SortKey, Window
from web.api import Answered
from web.problems import Problem
from web.schemas import NOT_A_CURSOR

PAGING = ("page", "cursor")  # what a next page's link sets afresh


def window(query: Mapping[str, Any], order: Order) -> Window:
    """The page a list's query asks for: after its cursor, or its numbered page."""
    if query["cursor"] is None:
        return Window(query["page_size"], query["page"] or 1)
    return Window.following(sort_key(query["cursor"], order), query["page_size"])


def listed(page: Page[Any], order: Order) -> Answered:
    """The page's body with its `next_cursor`, and a `Link` to the next page if there is one."""
    cursor = None if page.next_key is None else cursor_of(order, page.next_key)
    body = {
        "items": page.items,
        "page": page.page,
        "page_size": page.page_size,
        "total": page.total,
        "next_cursor": cursor,
    }
    return Answered(body, 200, {} if cursor is None else {"Link": next_link(cursor)})


def cursor_of(order: Order, key: SortKey) -> str:
    """The cursor of the page after the item whose sort key is `key`."""
    payload = json.dumps([order.name, *order.plain(key)], separators=(",", ":"))
    text = f"{payload}~{_checksum(payload)}".encode()
    return base64.urlsafe_b64encode(text).decode().rstrip("=")


def sort_key(cursor: str, order: Order) -> SortKey:
    """The sort key a cursor of this list carries; 422 on `cursor` for anything else."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        text = base64.b64decode(padded, altchars=b"-_", validate=True).decode()
        name, *values = json.loads(text.rpartition("~")[0])
        key = order.parsed(values)
        if name != order.name or cursor_of(order, key) != cursor:
            raise ValueError("not the cursor the list gives for that key")
    except (ValueError, TypeError, binascii.Error):  # UnicodeDecodeError is a ValueError
        errors = {"cursor": [NOT_A_CURSOR]}
        raise Problem("VALIDATION_FAILED", "some fields are invalid", errors) from None
    return key


def next_link(cursor: str) -> str:
    """An RFC 8288 `Link` to the request's URL (root-relative) with `cursor` set instead of
    `page` or the cursor before, the other query parameters kept."""
    kept = [(name, value) for name, value in request.args.items(multi=True) if name not in PAGING]
    path = quote(request.script_root + request.path)
    return f'<{path}?{urlencode([*kept, ("cursor", cursor)])}>; rel="next"'


def _checksum(payload: str) -> str:
    """Catches a cursor edited by hand (it is no secret: the cursor only names a position)."""
    return hashlib.sha256(payload.encode()).hexdigest()[:12]
