"""The tenant's operations audit (requirement 002: configuration changes, enabling, disabling,
deletion and manual runs go to the platform's operations audit), and any aggregate's timeline.

Read from the log through the `operations` projection: not a second record.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

from eventsourcing.domain import Aggregate

from cronledger.application.directory import Page
from cronledger.persistence.ledger import Ledger, TimelineEntry
from domain.approvals import ApprovalInstance
from domain.directory import Account, Definition
from domain.errors import NotFound
from domain.runs import Run
from domain.schedules import Schedule
from projections.hourly import (
    LagHour,
    OutcomeHour,
    hour_key,
    launch_outcomes_by_hour,
    registration_lag_by_hour,
    skipped_cycles_by_hour,
)
from projections.keyset import Window
from projections.operations import Operation, OperationFilter, operation_page

# The aggregates a tenant's auditors may read the timeline of (never its tokens'), besides the
# tenant itself (its accounts and definitions added, its schedules paused and resumed).
WITH_TIMELINE = (Schedule, Run, ApprovalInstance, Account, Definition)
HOURS_SHOWN = 24  # the operations charts: the last day, this hour included


@dataclass(frozen=True)
class Hour:
    """One UTC hour of the last day: the runs planned in it, the attempts started in it, and
    the cycles skipped in it."""

    start: datetime
    lag: LagHour
    outcomes: OutcomeHour
    skipped: int = 0


class Operations:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def list_page(self, wanted: OperationFilter, window: Window) -> Page[Operation]:
        """The tenant's operations, newest first (from the `operations` table)."""
        listed = operation_page(self.ledger.store, wanted, window)
        return Page.of(listed.rows, window, listed)

    def last_day(self, tenant_id: UUID) -> list[Hour]:
        """The last HOURS_SHOWN hours, oldest first, read from the `runs` and `attempts` rows."""
        now = self.ledger.clock().astimezone(UTC)
        first = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=HOURS_SHOWN - 1)
        lags = registration_lag_by_hour(self.ledger.store, tenant_id, first)
        outcomes = launch_outcomes_by_hour(self.ledger.store, tenant_id, first)
        skipped = skipped_cycles_by_hour(self.ledger.store, tenant_id, first)
        starts = [first + timedelta(hours=n) for n in range(HOURS_SHOWN)]
        return [
            Hour(
                start,
                lags.get(hour_key(start), LagHour()),
                outcomes.get(hour_key(start), OutcomeHour()),
                skipped.get(hour_key(start), 0),
            )
            for start in starts
        ]

    def timeline(self, tenant_id: UUID, aggregate_id: str) -> list[TimelineEntry]:
        """Every event of the tenant, or of one of its schedules, runs, instances, accounts or
        definitions."""
        return self.ledger.timeline(auditable(self.ledger, tenant_id, aggregate_id))


def auditable(ledger: Ledger, tenant_id: UUID, aggregate_id: str) -> UUID:
    """The id of the tenant itself, or of one of its aggregates its auditors may read (the
    timeline, an evidence bundle); anything else, another tenant's included, is not found."""
    if aggregate_id == str(tenant_id):
        return tenant_id
    aggregate = ledger.find_in_tenant(Aggregate, aggregate_id, "aggregate", tenant_id)
    if not isinstance(aggregate, WITH_TIMELINE):
        raise NotFound("aggregate", aggregate_id)
    return aggregate.id
