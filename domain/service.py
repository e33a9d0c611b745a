"""The service as a whole: the switch an operator flips for every tenant at once."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.directory import NAMESPACE


class Service(Aggregate):
    """One per store: whether the tick of every process is paused (when, who and why)."""

    @staticmethod
    def create_id() -> UUID:
        return uuid5(NAMESPACE, "service")

    class Started(Aggregate.Created):
        at: datetime
        actor: str

    @event(Started)
    def __init__(self, at: datetime, actor: str) -> None:
        self.tick_pause: dict[str, Any] | None = None

    def pause_tick(self, at: datetime, actor: str, reason: str) -> None:
        """Stop every tick registering cycles; pausing a paused tick records nothing."""
        if self.tick_pause is None:
            self._tick_paused(at=at, actor=actor, reason=reason)

    def resume_tick(self, at: datetime, actor: str, reason: str) -> None:
        """Let the ticks register cycles again; resuming a running tick records nothing."""
        if self.tick_pause is not None:
            self._tick_resumed(at=at, actor=actor, reason=reason)

    class TickPaused(Aggregate.Event):
        at: datetime
        actor: str
        reason: str

    @event(TickPaused)
    def _tick_paused(self, at: datetime, actor: str, reason: str) -> None:
        self.tick_pause = {"at": at, "actor": actor, "reason": reason}

    class TickResumed(Aggregate.Event):
        at: datetime
        actor: str
        reason: str

    @event(TickResumed)
    def _tick_resumed(self, at: datetime, actor: str, reason: str) -> None:
        self.tick_pause = None
