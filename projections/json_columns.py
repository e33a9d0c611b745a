"""Nested values kept in TEXT columns as JSON, as the API answers them."""

from __future__ import annotations

import json
from typing import Any

from cronledger.persistence.ledger import jsonable


def json_text(value: Any) -> str:
    """`value` as compact JSON text: keys in the order given, instants as ISO 8601 (`Z`)."""
    return json.dumps(jsonable(value), ensure_ascii=False, separators=(",", ":"))


def json_value(text: str | None) -> Any:
    """The value kept in a nullable JSON column (None where it holds none)."""
    return None if text is None else json.loads(text)
