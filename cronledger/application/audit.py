"""What auditors ask of the log: timelines, past states, replays and the hash chain."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import Notification

from cronledger.application.directory import Directory
from cronledger.persistence.ledger import Ledger, TimelineEntry, jsonable
from domain.directory import account_uuid, tenant_uuid
from domain.errors import InvalidState, NotFound
from projections.catalog import all_projections
from projections.chain import Break, first_break, stored_links
from projections.engine import Projector, Sql
from projections.maintenance import Difference, replay

Progress = Callable[[int], object]
LOG_PAGE = 5000


class Audit:
    def __init__(self, ledger: Ledger, directory: Directory, projector: Projector) -> None:
        self.ledger = ledger
        self.directory = directory
        self.projector = projector

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

    def state(self, key: str, at: datetime, tenant: str | None = None) -> dict[str, Any]:
        """The aggregate as it was at `at`: its last event accepted by then, and its fields."""
        entries = [e for e in self.timeline(key, tenant) if e.at <= at]
        if not entries:
            raise NotFound("state at that time (the aggregate did not exist yet)", key)
        aggregate_id = self.resolve(key, tenant)
        version = entries[-1].version
        aggregate: Aggregate = self.ledger.repository.get(aggregate_id, version=version)
        fields = {k: v for k, v in vars(aggregate).items() if not k.startswith("_")}
        return {
            "id": str(aggregate_id),
            "type": type(aggregate).__qualname__,
            "version": version,
            "as_of": jsonable(at.astimezone(UTC)),
            "last_event": {"position": entries[-1].position, "type": entries[-1].type},
            "state": jsonable(fields),
        }

    def replay(self, progress: Progress) -> list[Difference]:
        """Every projection rebuilt from the log and compared, row for row, with the live one."""
        return replay(self.ledger, all_projections(), progress)

    def verify(self, progress: Progress) -> Break | None:
        """Recompute the hash chain from the log; where it first stops matching, if anywhere."""
        self.projector.catch_up()
        store = self.ledger.store
        with store.connect() as connection:
            return first_break(self._log(progress), stored_links(Sql(store.kind, connection)))

    def _log(self, progress: Progress) -> Iterator[Notification]:
        start = 1
        while page := self.ledger.recorder.select_notifications(start=start, limit=LOG_PAGE):
            yield from page
            progress(len(page))
            start = page[-1].id + 1
