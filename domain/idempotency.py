"""Idempotency keys of creating requests: what each key's first success created, for ever.

A key is an account's own: it names one record per (tenant, account, operation, key), whose
id is derived from the four, so two requests racing with one key both try to write that
record's first event and the log lets only one of them succeed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.directory import NAMESPACE
from domain.errors import DomainError
from domain.messages import Message

KEY = re.compile(r"[\x21-\x7e]{1,128}")  # 1-128 visible ASCII characters
KEY_RULE = Message("use 1-128 visible ASCII characters (no spaces)")
# The operations whose requests record their keys; part of each record's id, so never renamed.
CREATE_SCHEDULE = "schedule.create"
CREATE_ACCOUNT = "account.create"
CREATE_DEFINITION = "definition.create"
CREATE_GROUP = "group.create"
CREATE_CALENDAR = "calendar.create"
ISSUE_TOKEN = "token.issue"  # noqa: S105 (an operation, not a secret)


def idempotency_key_uuid(tenant_id: UUID, actor: str, operation: str, key: str) -> UUID:
    """The one record of an account's key for one operation (account ids hold no `/`)."""
    return uuid5(NAMESPACE, f"tenant/{tenant_id}/account/{actor}/idempotency/{operation}/{key}")


def request_fingerprint(path: Mapping[str, Any], body: Any) -> str:
    """What a repeat is compared with: the path's parameters and the JSON body as sent,
    whatever the order of its keys or its spacing."""
    canonical = json.dumps(
        {"path": dict(path), "body": body}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class IdempotencyKeyReused(DomainError):
    code = "IDEMPOTENCY_KEY_REUSED"

    def __init__(self, key: str) -> None:
        super().__init__(
            Message(
                "Idempotency-Key {key} was already used with a different request; use a new one",
                key=key,
            )
        )


@dataclass(frozen=True)
class KeyedRequest:
    """A creating request an account sent with an Idempotency-Key."""

    tenant_id: UUID
    actor: str
    operation: str  # what the request does, e.g. `schedule.create`
    key: str
    fingerprint: str

    @property
    def record_id(self) -> UUID:
        return idempotency_key_uuid(self.tenant_id, self.actor, self.operation, self.key)

    def recorded(self, resource_kind: str, resource_id: str, at: datetime) -> IdempotencyKey:
        """The key's record, to be saved with the resource the request created."""
        return IdempotencyKey(
            tenant_id=self.tenant_id,
            actor=self.actor,
            operation=self.operation,
            key=self.key,
            fingerprint=self.fingerprint,
            resource_kind=resource_kind,
            resource_id=resource_id,
            at=at,
        )


class IdempotencyKey(Aggregate):
    """An account's key and the resource its first successful request created."""

    @staticmethod
    def create_id(tenant_id: UUID, actor: str, operation: str, key: str) -> UUID:
        return idempotency_key_uuid(tenant_id, actor, operation, key)

    class Recorded(Aggregate.Created):
        tenant_id: UUID
        actor: str
        operation: str
        key: str
        fingerprint: str
        resource_kind: str
        resource_id: str
        at: datetime

    @event(Recorded)
    def __init__(
        self,
        tenant_id: UUID,
        actor: str,
        operation: str,
        key: str,
        fingerprint: str,
        resource_kind: str,
        resource_id: str,
        at: datetime,
    ) -> None:
        self.tenant_id = tenant_id
        self.actor = actor
        self.operation = operation
        self.key = key
        self.fingerprint = fingerprint
        self.resource_kind = resource_kind
        self.resource_id = resource_id
        self.at = at

    def check_repeat(self, request: KeyedRequest) -> None:
        """A repeat asks what the first request asked; another request is refused."""
        if request.fingerprint != self.fingerprint:
            raise IdempotencyKeyReused(self.key)
