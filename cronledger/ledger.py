"""The one event-sourced application: every aggregate of every tenant on one ordered log."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate, MutableOrImmutableAggregate
from eventsourcing.persistence import IntegrityError
from eventsourcing.utils import Environment, EnvType

from cronledger.clock import Clock
from cronledger.store import Store
from domain.directory import Account, Definition, Tenant
from domain.errors import NotFound

A = TypeVar("A", bound=Aggregate)
T = TypeVar("T")

ENVELOPE = frozenset({"originator_id", "originator_version", "timestamp", "originator_topic"})
NAMED = ("at", "actor", "command_id", "outcome", "reason")


@dataclass(frozen=True)
class TimelineEntry:
    position: int
    version: int
    type: str
    at: datetime
    actor: str | None
    command_id: str | None
    outcome: str | None
    reason: str | None
    data: dict[str, Any]


class Ledger(Application[UUID]):
    name = "cronledger"
    snapshotting_intervals: ClassVar[dict[type[MutableOrImmutableAggregate[Any]], int]] = {
        Tenant: 100,
        Account: 50,
        Definition: 50,
    }

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        super().__init__(store.eventsourcing_env())

    def construct_env(self, name: str, env: EnvType | None = None) -> Environment:
        """Only cronledger's own settings; stray POSTGRES_* variables are never read."""
        settings = dict(env or {})
        if self.snapshotting_intervals:
            settings["IS_SNAPSHOTTING_ENABLED"] = "y"
        return Environment(name, settings)

    def find(self, kind: type[A], aggregate_id: UUID, label: str, key: object) -> A:
        """The aggregate of that type, or NotFound naming what was asked for."""
        try:
            aggregate: Aggregate = self.repository.get(aggregate_id)
        except AggregateNotFoundError:
            raise NotFound(label, key) from None
        if not isinstance(aggregate, kind):
            raise NotFound(label, key)
        return aggregate

    def exists(self, aggregate_id: UUID) -> bool:
        return aggregate_id in self.repository

    def retrying(self, command: Callable[[], T], attempts: int = 20) -> T:
        """Run get-act-save again, after a short random pause, when another writer won."""
        for attempt in range(1, attempts):
            try:
                return command()
            except IntegrityError:
                time.sleep(random.uniform(0, 0.002 * attempt))  # noqa: S311 (jitter, not crypto)
        return command()

    def timeline(self, aggregate_id: UUID) -> list[TimelineEntry]:
        """Every event of one aggregate, oldest first, with its position on the log."""
        positions = {
            version: position
            for position, version in self.store.query(
                f"SELECT {self.store.position_column}, originator_version "  # noqa: S608
                f"FROM {self.store.events_table} WHERE originator_id = ?",
                (self._stored_id(aggregate_id),),
            )
        }
        return [
            _entry(positions.get(e.originator_version, 0), e) for e in self.events.get(aggregate_id)
        ]

    def _stored_id(self, aggregate_id: UUID) -> Any:
        return aggregate_id.hex if self.store.kind == "sqlite" else aggregate_id


def _entry(position: int, event: Any) -> TimelineEntry:
    state = {k: v for k, v in event.__dict__.items() if k not in ENVELOPE}
    named = {k: state.pop(k, None) for k in NAMED}
    return TimelineEntry(
        position=position,
        version=event.originator_version,
        type=type(event).__qualname__,
        at=named["at"] or event.timestamp.astimezone(UTC),
        actor=named["actor"],
        command_id=named["command_id"],
        outcome=named["outcome"],
        reason=named["reason"],
        data=jsonable(state),
    )


def jsonable(value: Any) -> Any:
    """Event data as JSON values: ids as strings, instants as UTC ISO 8601 with `Z`."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return value
