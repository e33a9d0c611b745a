"""Example bodies for the OpenAPI document, by component schema name."""

from __future__ import annotations

from typing import Any

EXAMPLES: dict[str, Any] = {}
