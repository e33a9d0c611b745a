"""Idempotency-Key on commands (docs/api.md#idempotency): the endpoint keeps the key.

A command that creates nothing of its own (enable, retry, rotate-secret, ping, ...) records
its key once it succeeded, naming what it acted on; a repeat with the key answers that
resource as it is now, and the key with another request is 409 `IDEMPOTENCY_KEY_REUSED`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from eventsourcing.persistence import IntegrityError

from cronledger.application.idempotency import AlreadyCreated, check_key
from cronledger.application.services import Services
from domain.idempotency import KeyedRequest


@dataclass(frozen=True)
class Replays:
    """A command whose key the endpoint keeps: `read` finds what a repeat answers, given the
    principal and the path, and (`by_answer`) the `id` its first answer had as `answered`."""

    read: Callable[..., Any]
    by_answer: bool = False


def first_answered(services: Services, keyed: KeyedRequest | None) -> str | None:
    """The id of what the key's first request answered, if this is a repeat of it; None for
    a fresh key (409 `IDEMPOTENCY_KEY_REUSED` if the key came with another request)."""
    try:
        check_key(services.ledger, keyed)
    except AlreadyCreated as repeat:
        return repeat.record.resource_id
    return None


def remember(services: Services, keyed: KeyedRequest, result: object) -> None:
    """Record the key of a command that succeeded, with the `id` of what it answered; a
    request racing it with the same key that recorded it first leaves it as it is."""
    found = result.get("id") if isinstance(result, Mapping) else getattr(result, "id", None)
    answered = "" if found is None else str(found)
    record = keyed.recorded(keyed.operation, answered, services.ledger.clock())
    try:
        services.ledger.save(record)
    except IntegrityError:
        return
