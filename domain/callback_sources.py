"""Callback sources (回调来源): the external systems a tenant lets post signed callbacks.

A source is registered under a name unique in its tenant (its id is derived from the two), and
signs each delivery with a secret derived from the service's key, its id and its `generation`
(cronledger.application.secrets): rotating the secret, or deleting the source and registering
the name again, moves to a new generation, so an old secret never works again. Events hold
the generation, never the secret.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.directory import NAMESPACE
from domain.errors import NotFound, ValidationFailed
from domain.messages import Message
from domain.reasons import ReasonedEvent

SOURCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SOURCE_NAME_RULE = Message("use 1-64 of A-Za-z0-9 . _ - starting with a letter or digit")
MAX_DESCRIPTION = 500
# How far a delivery's `webhook-timestamp` may be from the server's time (Standard Webhooks).
TIMESTAMP_TOLERANCE = timedelta(minutes=5)
ACTOR_PREFIX = "source:"  # a verified delivery's actor: `source:<id>`, never an account id
# Idempotency operations (part of each key record's id, so never renamed): registering a
# source with an Idempotency-Key, and a signed delivery, keyed by (source, webhook-id).
CREATE_CALLBACK_SOURCE = "callback_source.create"
SIGN_CALLBACK = "callback.sign"
KIND = "callback source"


def callback_source_uuid(tenant_id: UUID, name: str) -> UUID:
    """One source per name in a tenant: registering a taken name finds the first."""
    return uuid5(NAMESPACE, f"tenant/{tenant_id}/callback-source/{name}")


def source_actor(source_id: UUID) -> str:
    """Who a verified delivery acts as, on the events it causes."""
    return f"{ACTOR_PREFIX}{source_id}"


def check_source_name(name: str) -> None:
    if not SOURCE_NAME.fullmatch(name):
        raise ValidationFailed.of("name", SOURCE_NAME_RULE)


def timestamp_problem(sent_at: datetime, now: datetime) -> str | None:
    """Why a delivery signed at `sent_at` is refused at `now`: too old or too new; else None."""
    if sent_at < now - TIMESTAMP_TOLERANCE:
        return Message("webhook-timestamp is more than 5 minutes before the server's time")
    if sent_at > now + TIMESTAMP_TOLERANCE:
        return Message("webhook-timestamp is more than 5 minutes after the server's time")
    return None


class CallbackSource(Aggregate):
    """A tenant's registered sender of signed callbacks, until it is deleted."""

    @staticmethod
    def create_id(tenant_id: UUID, name: str) -> UUID:
        return callback_source_uuid(tenant_id, name)

    class Registered(Aggregate.Created):
        tenant_id: UUID
        name: str
        description: str
        generation: int
        at: datetime
        actor: str

    @event(Registered)
    def __init__(
        self,
        tenant_id: UUID,
        name: str,
        description: str,
        generation: int,
        at: datetime,
        actor: str,
    ) -> None:
        self.tenant_id = tenant_id
        self.name = name
        self._registered(description, generation, at)

    def _registered(self, description: str, generation: int, at: datetime) -> None:
        self.description = description
        self.generation = generation
        self.created_at = at
        self.secret_created_at = at  # when the current generation's secret was made
        self.deleted = False

    def check_live(self) -> None:
        """A deleted source is not found: it signs nothing and answers 404."""
        if self.deleted:
            raise NotFound(KIND, self.id)

    def register_again(self, description: str, at: datetime, actor: str) -> None:
        """Register a deleted source's name anew, with a secret of a new generation."""
        if not self.deleted:
            raise ValidationFailed.of(
                "name", Message("a callback source named {name} exists", name=self.name)
            )
        self._reregistered(
            description=description, generation=self.generation + 1, at=at, actor=actor
        )

    class Reregistered(Aggregate.Event):
        description: str
        generation: int
        at: datetime
        actor: str

    @event(Reregistered)
    def _reregistered(self, description: str, generation: int, at: datetime, actor: str) -> None:
        self._registered(description, generation, at)

    def rotate_secret(self, at: datetime, actor: str, reason: str | None = None) -> None:
        """Move to a secret of the next generation: the current one stops working at once."""
        self.check_live()
        self._secret_rotated(generation=self.generation + 1, at=at, actor=actor, reason=reason)

    class SecretRotated(ReasonedEvent):
        generation: int

    @event(SecretRotated)
    def _secret_rotated(
        self, generation: int, at: datetime, actor: str, reason: str | None
    ) -> None:
        self.generation = generation
        self.secret_created_at = at

    def delete(self, at: datetime, actor: str, reason: str | None = None) -> None:
        self.check_live()
        self._deleted(at=at, actor=actor, reason=reason)

    class Deleted(ReasonedEvent):
        pass

    @event(Deleted)
    def _deleted(self, at: datetime, actor: str, reason: str | None) -> None:
        self.deleted = True
