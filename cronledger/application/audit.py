"""What auditors ask of the log: timelines, past states, replays and the hash chain."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import Notification

from cronledger.application.directory import Directory
from cronledger.persistence.ledger import UNDECODABLE, Ledger, TimelineEntry, jsonable
from domain.directory import account_uuid, tenant_uuid
from domain.errors import DomainError, InvalidState, NotFound
from projections.catalog import all_projections
from projections.chain import GENESIS, Break, first_break, stored_links
from projections.engine import Projector, Sql
from projections.maintenance import Difference, replay

Progress = Callable[[int], object]
LOG_PAGE = 5000


@dataclass(frozen=True)
class ChainHead:
    """What the chain vouches for: its events, the last position, and the hash there."""

    events: int
    position: int
    hash: str


@dataclass(frozen=True)
class Verification:
    """The head that was checked against the log, and where the log first broke, if it did."""

    head: ChainHead
    found: Break | None


class NotYetRecorded(DomainError):
    code = "NOT_FOUND"

    def __init__(self, key: str, at: datetime) -> None:
        super().__init__(f"{key} did not exist yet at {jsonable(at)}: its first event came later")


class Audit:
    def __init__(self, ledger: Ledger, directory: Directory, projector: Projector) -> None:
        self.ledger = ledger
        self.directory = directory
        self.projector = projector

    def resolve(self, key: str, tenant: str | None = None) -> UUID:
        """The log id behind a key: a log id itself, or an account id (in one tenant or any).

        Found by its stored events, not by reading them: a damaged history is still found.
        """
        try:
            if self.ledger.recorded(UUID(key)):
                return UUID(key)
        except ValueError:
            pass
        tenants = [tenant_uuid(tenant)] if tenant else list(self.directory.tenants().values())
        found = [
            account_uuid(t, key) for t in tenants if self.ledger.recorded(account_uuid(t, key))
        ]
        if not found:
            raise NotFound("aggregate or account", key)
        if len(found) > 1:
            raise InvalidState(f"account {key} exists in {len(found)} tenants: name one (--tenant)")
        return found[0]

    def timeline(
        self, key: str, tenant: str | None = None, zone: tzinfo = UTC
    ) -> list[TimelineEntry]:
        """Every event of the aggregate, the instants in its data written in `zone`."""
        return self.ledger.timeline(self.resolve(key, tenant), zone)

    def state(
        self, key: str, at: datetime, tenant: str | None = None, zone: tzinfo = UTC
    ) -> dict[str, Any]:
        """The aggregate as it was at `at`: its last event accepted by then, and its fields
        (instants written in `zone`)."""
        entries = [e for e in self.timeline(key, tenant) if e.at <= at]
        if not entries:
            raise NotYetRecorded(key, at)
        damaged = [e.position for e in entries if e.type == UNDECODABLE]
        if damaged:
            raise InvalidState(
                f"the state of {key} at {jsonable(at)} cannot be rebuilt: its event at position "
                f"{damaged[0]} cannot be decoded (audit timeline shows it)"
            )
        aggregate_id = self.resolve(key, tenant)
        log_version = entries[-1].log_version
        aggregate: Aggregate = self.ledger.repository.get(aggregate_id, version=log_version)
        fields = {k: v for k, v in vars(aggregate).items() if not k.startswith("_")}
        return {
            "id": str(aggregate_id),
            "type": type(aggregate).__qualname__,
            "log_version": log_version,
            "as_of": jsonable(at, zone),
            "last_event": {"position": entries[-1].position, "type": entries[-1].type},
            "state": jsonable(fields, zone),
        }

    def replay(self, progress: Progress) -> list[Difference]:
        """Every projection rebuilt from the log and compared, row for row, with the live one."""
        return replay(self.ledger, all_projections(), progress)

    def verify(self, progress: Progress) -> Verification:
        """Recompute the hash chain from the log; where it first stops matching, if anywhere.

        The head is read first: every link up to it (and any added meanwhile) is checked.
        """
        self.projector.catch_up()
        store = self.ledger.store
        with store.connect() as connection:
            sql = Sql(store.kind, connection)
            head = _chain_head(sql)
            return Verification(head, first_break(self._log(progress), stored_links(sql)))

    def _log(self, progress: Progress) -> Iterator[Notification]:
        start = 1
        while page := self.ledger.recorder.select_notifications(start=start, limit=LOG_PAGE):
            yield from page
            progress(len(page))
            start = page[-1].id + 1


def _chain_head(sql: Sql) -> ChainHead:
    row = sql.execute("SELECT events, position, hash FROM chain_head WHERE id = 1").fetchone()
    return ChainHead(int(row[0]), int(row[1]), str(row[2])) if row else ChainHead(0, 0, GENESIS)
