"""Each person's contact details (docs/api.md#contact-details): an email address and the
language their notices are written in.

Contact details are personal data: they live in `account_contacts`, a mutable table outside
the log, so they are never in an event, an evidence bundle or an export, and erasing them
(`erase`) leaves nothing behind. An account reads and sets its own; `directory:manage` any
of the tenant's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cronledger.application.directory import Directory
from cronledger.persistence.ledger import Ledger
from cronledger.persistence.store import as_instant
from domain.directory import Principal
from domain.errors import Forbidden
from domain.messages import Message
from domain.notices import ZH_CN
from domain.permissions import DIRECTORY_MANAGE


@dataclass(frozen=True)
class Contact:
    """An account's contact details; `updated_at` None: none were ever given (or erased)."""

    account_id: str
    email: str | None
    language: str
    updated_at: datetime | None


class Contacts:
    def __init__(self, ledger: Ledger, directory: Directory) -> None:
        self.ledger = ledger
        self.directory = directory

    def contact(self, caller: Principal, account_id: str) -> Contact:
        self._check(caller, account_id)
        return self.of_account(caller, account_id)

    def of_account(self, caller: Principal, account_id: str) -> Contact:
        """The account's details in the caller's tenant, unchecked: for the service's own use."""
        rows = self.ledger.store.query(
            "SELECT email, language, updated_at FROM account_contacts "
            "WHERE tenant_id = ? AND account_id = ?",
            (str(caller.tenant_id), account_id),
        )
        if not rows:
            return Contact(account_id, None, ZH_CN, None)
        email, language, updated_at = rows[0]
        return Contact(account_id, email, str(language), as_instant(updated_at))

    def update(
        self, caller: Principal, account_id: str, email: str | None, language: str
    ) -> Contact:
        self._check(caller, account_id)
        self.ledger.store.write(
            "INSERT INTO account_contacts (tenant_id, account_id, email, language, updated_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant_id, account_id) DO UPDATE SET "
            "email = excluded.email, language = excluded.language, "
            "updated_at = excluded.updated_at",
            (str(caller.tenant_id), account_id, email, language, self.ledger.clock()),
        )
        return self.of_account(caller, account_id)

    def erase(self, caller: Principal, account_id: str) -> None:
        """Forget the account's details: nothing of them is left anywhere."""
        self._check(caller, account_id)
        self.ledger.store.write(
            "DELETE FROM account_contacts WHERE tenant_id = ? AND account_id = ?",
            (str(caller.tenant_id), account_id),
        )

    def _check(self, caller: Principal, account_id: str) -> None:
        """The account exists (else 404); the caller is it, or manages the directory."""
        self.directory.account(caller.tenant_id, account_id)
        if caller.account_id != account_id and not caller.can(DIRECTORY_MANAGE):
            raise Forbidden(
                Message(
                    "only {account} or an account with {permission} may",
                    account=account_id,
                    permission=DIRECTORY_MANAGE,
                )
            )
