"""Why an operator did something: an optional reason recorded on the event it caused."""

from __future__ import annotations

from typing import Any

MAX_REASON = 500  # characters, like a deadline extension's reason


def given_no_reason(state: dict[str, Any]) -> None:
    """Upcast for an event stored before it could carry a reason: none was given."""
    state["reason"] = None
