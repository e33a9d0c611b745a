"""Each person's notices (docs/api.md#notifications): their inbox, read from the
`notifications` read model, and marking a notice read.

Marking read is no event: it is the person's inbox state, not the instance's, and it is kept
in `notification_reads` (projections/notifications.py). Only the notice's own account may.
"""

from __future__ import annotations

from dataclasses import dataclass

from cronledger.application.directory import Page
from cronledger.persistence.ledger import Ledger
from domain.directory import Principal
from domain.errors import NotFound
from projections.keyset import Window
from projections.notifications import (
    NotificationRow,
    notification_page,
    notification_row,
    unread_count,
)

KIND = "notification"


@dataclass(frozen=True)
class Inbox:
    """A page of the caller's notices, and how many of all theirs are unread."""

    page: Page[NotificationRow]
    unread: int


class Notifications:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def inbox(self, caller: Principal, window: Window, *, unread_only: bool = False) -> Inbox:
        """The caller's own notices, newest first."""
        store, tenant, account = self.ledger.store, caller.tenant_id, caller.account_id
        found = notification_page(store, tenant, account, window, unread_only=unread_only)
        return Inbox(Page.of(found.rows, window, found), self.unread(caller))

    def unread(self, caller: Principal) -> int:
        """How many of the caller's notices are unread."""
        return unread_count(self.ledger.store, caller.tenant_id, caller.account_id)

    def mark_read(self, caller: Principal, notification_id: str) -> NotificationRow:
        """Mark the caller's notice read, once: marking it again keeps the first instant.
        Another account's notice, or none, is not found."""
        store, tenant, account = self.ledger.store, caller.tenant_id, caller.account_id
        if notification_row(store, tenant, account, notification_id) is None:
            raise NotFound(KIND, notification_id)
        store.write(
            "INSERT INTO notification_reads (notification_id, tenant_id, account_id, read_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (notification_id) DO NOTHING",
            (notification_id, str(tenant), account, self.ledger.clock()),
        )
        row = notification_row(store, tenant, account, notification_id)
        assert row is not None  # found above; notices are never deleted
        return row
