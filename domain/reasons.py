"""Why an operator did something: an optional reason recorded on the event it caused."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from eventsourcing.domain import Aggregate

MAX_REASON = 500  # characters, like a deadline extension's reason


def given_no_reason(state: dict[str, Any]) -> None:
    """Upcast for an event stored before it could carry a reason: none was given."""
    state["reason"] = None


class ReasonedEvent(Aggregate.Event):
    """An operator's command that may say why; version 1 could not, so its reason is None."""

    class_version = 2
    at: datetime
    actor: str
    reason: str | None

    upcast_v1_v2 = staticmethod(given_no_reason)
