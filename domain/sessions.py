"""Console sessions: a browser signed in with an account token or password, until it signs out
or expires."""

from __future__ import annotations

import hashlib
from datetime import datetime
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.directory import NAMESPACE

SIGNED_OUT = "signed out"  # the reason of an `Ended` event the browser asked for


def session_uuid(secret: str) -> UUID:
    """Sessions are found by a hash of their secret, as tokens are; the secret is never stored."""
    digest = hashlib.sha256(secret.encode()).hexdigest()
    return uuid5(NAMESPACE, f"console-session/{digest}")


class ConsoleSession(Aggregate):
    """One browser's sign-in: which account, with which token (None: with its password), until
    when.

    It works while it has not ended, `expires_at` has not passed, and its token still works, or
    for a password's, the password has not been set since it started (the account's say,
    checked at each request).
    """

    @staticmethod
    def create_id(secret_hash: UUID) -> UUID:
        return secret_hash

    class Started(Aggregate.Created):
        secret_hash: UUID
        tenant_id: UUID
        account_id: str
        token_id: UUID | None  # None: signed in with the account's password
        expires_at: datetime
        at: datetime
        actor: str

    @event(Started)
    def __init__(
        self,
        secret_hash: UUID,
        tenant_id: UUID,
        account_id: str,
        token_id: UUID | None,
        expires_at: datetime,
        at: datetime,
        actor: str,
    ) -> None:
        self.started_at = at
        self.tenant_id = tenant_id
        self.account_id = account_id
        self.token_id = token_id
        self.expires_at = expires_at
        self.ended_at: datetime | None = None

    def works_at(self, instant: datetime) -> bool:
        return self.ended_at is None and instant < self.expires_at

    def end(self, at: datetime, actor: str, reason: str) -> None:
        """End it; ending an ended session records nothing."""
        if self.ended_at is None:
            self._ended(at=at, actor=actor, reason=reason)

    class Ended(Aggregate.Event):
        at: datetime
        actor: str
        reason: str

    @event(Ended)
    def _ended(self, at: datetime, actor: str, reason: str) -> None:
        self.ended_at = at
