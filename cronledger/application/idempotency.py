"""Creating requests sent with an Idempotency-Key: the first success creates, repeats replay it.

A service that creates checks the key first (`check_key`) inside its get-act-save, and saves
the key's record in the same transaction as what it creates. Two requests racing with one
key both pass the check; the log refuses the second record, the service's retry checks again
and finds the first one's record: `AlreadyCreated` carries it out of every retry to `once`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from cronledger.persistence.ledger import Ledger
from domain.idempotency import IdempotencyKey, KeyedRequest

T = TypeVar("T")


class AlreadyCreated(Exception):
    """The key's first request, the same as this one, succeeded: answer what it created."""

    def __init__(self, record: IdempotencyKey) -> None:
        super().__init__(f"{record.resource_kind} {record.resource_id} was already created")
        self.record = record


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What a request answers, and whether it repeats the answer of its key's first success."""

    value: T
    replayed: bool = False


def check_key(ledger: Ledger, request: KeyedRequest | None) -> None:
    """Go on if the key was never used: a repeat stops with `AlreadyCreated`, another
    request with the key is IDEMPOTENCY_KEY_REUSED (and a damaged record, INTERNAL)."""
    if request is None or not ledger.recorded(request.record_id):
        return
    record = ledger.find(IdempotencyKey, request.record_id, "idempotency key", request.key)
    record.check_repeat(request)
    raise AlreadyCreated(record)


def key_record(
    request: KeyedRequest | None, resource_kind: str, resource_id: str, at: datetime
) -> IdempotencyKey | None:
    """The record of a keyed request, saved with what it created; None without a key."""
    return None if request is None else request.recorded(resource_kind, resource_id, at)


def once(create: Callable[[], T], replay: Callable[[str], T]) -> Outcome[T]:
    """What `create` answers; for a repeat, what `replay` answers of the resource's id."""
    try:
        return Outcome(create())
    except AlreadyCreated as repeat:
        return Outcome(replay(repeat.record.resource_id), replayed=True)
