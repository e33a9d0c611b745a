"""Shapes of exports (docs/api.md#exports): a list's query without its paging and sort, and
the file's `format`."""

from __future__ import annotations

from marshmallow import Schema

from domain.exports import CSV, MAX_EXPORT_ROWS
from web.schemas.base import Choice
from web.schemas.enums import EXPORT_FORMAT

NOT_EXPORTED = ("page", "page_size", "cursor", "sort")  # an export reads the default order


def export_query(listed: type[Schema], name: str) -> type[Schema]:
    """The query of a list's export: the list's filters and `q`, not its paging and `sort`
    (an export reads the whole list, in its default order), and the file's `format`."""
    meta = type("Meta", (), {"exclude": NOT_EXPORTED})
    file_format = Choice(
        EXPORT_FORMAT,
        load_default=CSV,
        metadata={
            "description": f"the file's format (default `{CSV}`); at most {MAX_EXPORT_ROWS:,} "
            "rows, else 422 `TOO_MANY_ROWS`"
        },
    )
    return type(name, (listed,), {"Meta": meta, "format": file_format})
