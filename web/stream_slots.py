"""Open event streams, counted per account, per tenant and in the process, each count capped.

Every open stream holds a web-server thread of its own (the server has one per stream the
process allows, beside the API's), so streams are rationed: a caller beyond a limit is refused
until one of the streams counted against it ends, and no account or tenant can take them all.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import TypeVar
from uuid import UUID

from cronledger.config import Settings
from domain.directory import Principal
from domain.messages import Message

K = TypeVar("K")


class TooManyStreams(Exception):
    """Opening one more stream would pass a limit; the message names which, `policy` names it
    in `RateLimit-Policy` and `quota` is how many streams it allows."""

    def __init__(self, message: str, policy: str, quota: int) -> None:
        super().__init__(message)
        self.policy = policy
        self.quota = quota


@dataclass(frozen=True)
class StreamLimits:
    per_account: int
    per_tenant: int
    per_process: int

    @classmethod
    def of(cls, settings: Settings) -> StreamLimits:
        return cls(
            settings.streams_per_account,
            settings.streams_per_tenant,
            settings.streams_per_process,
        )


@dataclass(eq=False)
class StreamSlot:
    """One open stream's place in the counts, until it is released."""

    slots: StreamSlots
    owner: tuple[UUID, str]
    released: bool = False

    def release(self) -> None:
        """Give the place back; a second call does nothing."""
        self.slots.give_back(self)


class StreamSlots:
    """The counts of open streams; safe to share between the web server's threads."""

    def __init__(self, limits: StreamLimits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._per_account: Counter[tuple[UUID, str]] = Counter()
        self._per_tenant: Counter[UUID] = Counter()
        self._total = 0

    def take(self, principal: Principal) -> StreamSlot:
        """A slot for one more stream of this caller; TooManyStreams if a limit is reached."""
        owner = (principal.tenant_id, principal.account_id)
        with self._lock:
            self._check(owner)
            self._per_account[owner] += 1
            self._per_tenant[principal.tenant_id] += 1
            self._total += 1
        return StreamSlot(self, owner)

    def give_back(self, slot: StreamSlot) -> None:
        with self._lock:
            if slot.released:
                return
            slot.released = True
            _decrement(self._per_account, slot.owner)
            _decrement(self._per_tenant, slot.owner[0])
            self._total -= 1

    def _check(self, owner: tuple[UUID, str]) -> None:
        limits = self.limits
        if self._per_account[owner] >= limits.per_account:
            raise TooManyStreams(
                Message("this account already has {count} open streams", count=limits.per_account),
                "streams-per-account",
                limits.per_account,
            )
        if self._per_tenant[owner[0]] >= limits.per_tenant:
            raise TooManyStreams(
                Message("this tenant already has {count} open streams", count=limits.per_tenant),
                "streams-per-tenant",
                limits.per_tenant,
            )
        if self._total >= limits.per_process:
            raise TooManyStreams(
                Message("the server has no stream to spare"),
                "streams-per-process",
                limits.per_process,
            )


def _decrement(counter: Counter[K], key: K) -> None:
    """One less of `key`, forgetting it at zero so that the counter holds open streams only."""
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]
