"""What auditors ask of the log."""

from __future__ import annotations

from uuid import UUID

from cronledger.directory import Directory
from cronledger.ledger import Ledger, TimelineEntry
from domain.directory import account_uuid, tenant_uuid
from domain.errors import InvalidState, NotFound


class Audit:
    def __init__(self, ledger: Ledger, directory: Directory) -> None:
        self.ledger = ledger
        self.directory = directory

    def resolve(self, key: str, tenant: str | None = None) -> UUID:
        """The log id behind a key: a log id itself, or an account id (in one tenant or any)."""
        try:
            if self.ledger.exists(UUID(key)):
                return UUID(key)
        except ValueError:
            pass
        tenants = [tenant_uuid(tenant)] if tenant else list(self.directory.tenants().values())
        found = [account_uuid(t, key) for t in tenants if self.ledger.exists(account_uuid(t, key))]
        if not found:
            raise NotFound("aggregate or account", key)
        if len(found) > 1:
            raise InvalidState(f"account {key} exists in {len(found)} tenants: name one (--tenant)")
        return found[0]

    def timeline(self, key: str, tenant: str | None = None) -> list[TimelineEntry]:
        return self.ledger.timeline(self.resolve(key, tenant))
