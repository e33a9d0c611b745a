"""Lists over HTTP: a page by cursor or by number, its `next_cursor`, and a `Link` to the first,
next and previous pages (docs/api.md#paging).

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
from marshmallow import Schema

from cronledger.application.directory import Page
from domain.messages import Message
from projections.approvals import ApprovalRow
from projections.keyset import ListSpec, Order, SortKey, Window
from projections.runs import RunRow
from web.api import Answered, dumper, services
from web.freshness import read_models_ready
from web.problems import SOME_FIELDS_INVALID, Problem
from web.schemas.base import NOT_A_CURSOR

PAGING = ("page", "cursor")  # what a next page's link sets afresh
CURSOR_NOT_SORTED = Message(
    "a cursor pages the list in its default order: with another sort, ask for pages by number"
)


def window(query: Mapping[str, Any], spec: ListSpec) -> Window:
    """The page a list's query asks for: after its cursor, or its numbered page; searched for
    its `q`, in its `sort`'s order (a cursor pages the default order only).

    Lists are read from the read models: while they are rebuilt after an upgrade, whose new
    columns their live tables lack until the rebuilt ones are swapped in, 503 `UNAVAILABLE`.
    """
    read_models_ready(services())
    search, sort = (query.get("q") or "").strip() or None, query.get("sort")
    if query["cursor"] is None:
        return Window(query["page_size"], query["page"] or 1, search=search, sort=sort)
    order = spec.order(sort)
    if order.numbered:
        errors: dict[str, list[str]] = {"cursor": [CURSOR_NOT_SORTED]}
        raise Problem("VALIDATION_FAILED", SOME_FIELDS_INVALID, errors)
    return Window.following(sort_key(query["cursor"], order), query["page_size"], search)


def listed(page: Page[Any], order: Order, item: type[Schema] | None = None) -> Answered:
    """The page's body with its `next_cursor`, and a `Link` to the first page, the next one if
    there is one, and the one before a numbered page.

    Given the `item` schema, the items are dumped here, one by one (see ItemDumps), and the
    body is the answer as `page_of(item)` would dump it.
    """
    cursor = None if page.next_key is None else cursor_of(order, page.next_key)
    items = page.items if item is None else [ITEM_DUMPS.dump(dumper(item), i) for i in page.items]
    body = {
        "items": items,
        "page": page.page,
        "page_size": page.page_size,
        "total": page.total,
        "total_capped": page.total_capped,
        "next_cursor": cursor,
    }
    return Answered(body, 200, {"Link": links(cursor, page.page)}, dumped=item is not None)


class ItemDumps:
    """What an item schema dumped of the listed runs and approval instances, by id and version:
    their answer changes only with their version (lists read them from rows that every event
    of theirs moves to its version), and dumping is most of a list's cost."""

    def __init__(self) -> None:
        self._kept: dict[tuple[type[Schema], str, int], dict[str, Any]] = {}

    def dump(self, schema: Schema, item: Any) -> Any:
        if not isinstance(item, VERSIONED_ITEMS):
            return schema.dump(item)
        key = (type(schema), item.id, item.version)
        kept = self._kept.get(key)
        if kept is None:
            kept = schema.dump(item)
            if len(self._kept) >= ITEM_DUMPS_KEPT:
                self._kept.clear()
            self._kept[key] = kept
        return kept


VERSIONED_ITEMS = (RunRow, ApprovalRow)  # ids unique across tenants; an account's is not
ITEM_DUMPS_KEPT = 2048
ITEM_DUMPS = ItemDumps()


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
        errors: dict[str, list[str]] = {"cursor": [NOT_A_CURSOR]}
        raise Problem("VALIDATION_FAILED", SOME_FIELDS_INVALID, errors) from None
    return key


def links(cursor: str | None, number: int | None) -> str:
    """An RFC 8288 `Link` to the first page, the next (by `cursor`) and, after page `number`
    1, the page before it. A page read by cursor has no `prev`: a cursor names a place to
    read forward from, and the page before it ends wherever earlier items were inserted."""
    found = [page_link([], "first")]
    if number is not None and number > 1:
        found.append(page_link([("page", str(number - 1))], "prev"))
    if cursor is not None:
        found.append(page_link([("cursor", cursor)], "next"))
    return ", ".join(found)


def page_link(paging: list[tuple[str, str]], relation: str) -> str:
    """A root-relative link to the request's URL with `paging` set instead of `page` or the
    cursor before, the other query parameters kept."""
    kept = [(name, value) for name, value in request.args.items(multi=True) if name not in PAGING]
    path = quote(request.script_root + request.path)
    query = urlencode([*kept, *paging])
    return f'<{path}{"?" if query else ""}{query}>; rel="{relation}"'


def _checksum(payload: str) -> str:
    """Catches a cursor edited by hand (it is no secret: the cursor only names a position)."""
    return hashlib.sha256(payload.encode()).hexdigest()[:12]
