"""The tenant's operations audit (requirement 002: configuration changes, enabling, disabling,
deletion and manual runs go to the platform's operations audit), and any aggregate's timeline.

Read from the log through the `operations` projection: not a second record.
"""

from __future__ import annotations

from uuid import UUID

from eventsourcing.domain import Aggregate

from cronledger.application.directory import Page
from cronledger.persistence.ledger import Ledger, TimelineEntry
from domain.approvals import ApprovalInstance
from domain.directory import Account, Definition
from domain.errors import NotFound
from domain.runs import Run
from domain.schedules import Schedule
from projections.keyset import Window
from projections.operations import Operation, OperationFilter, operation_page

# The aggregates a tenant's auditors may read the timeline of (never its tokens'), besides the
# tenant itself (its accounts and definitions added, its schedules paused and resumed).
WITH_TIMELINE = (Schedule, Run, ApprovalInstance, Account, Definition)


class Operations:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def list_page(self, wanted: OperationFilter, window: Window) -> Page[Operation]:
        """The tenant's operations, newest first (from the `operations` table)."""
        listed = operation_page(self.ledger.store, wanted, window)
        return Page.of(listed.rows, window, listed)

    def timeline(self, tenant_id: UUID, aggregate_id: str) -> list[TimelineEntry]:
        """Every event of the tenant, or of one of its schedules, runs, instances, accounts or
        definitions."""
        if aggregate_id == str(tenant_id):
            return self.ledger.timeline(tenant_id)
        aggregate = self.ledger.find_in_tenant(Aggregate, aggregate_id, "aggregate", tenant_id)
        if not isinstance(aggregate, WITH_TIMELINE):
            raise NotFound("aggregate", aggregate_id)
        return self.ledger.timeline(aggregate.id)
