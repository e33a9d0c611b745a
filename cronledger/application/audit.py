"""What auditors ask of the log: timelines, past states, replays, the hash chain and the
Merkle tree with its signed checkpoints."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator
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
from domain.evidence import Checkpoint
from domain.merkle import EMPTY_ROOT, frontier_after, root_of_frontier
from domain.messages import Message
from projections.chain import GENESIS, Break, first_break, stored_links
from projections.engine import Projector, Sql
from projections.maintenance import Difference, replay
from projections.merkle import TreeHead, signed_checkpoints, stored_leaf, stored_leaves, tree_head

Progress = Callable[[int], object]
LOG_PAGE = 5000
EMPTY_TREE = TreeHead(0, EMPTY_ROOT, 0)


@dataclass(frozen=True)
class ChainHead:
    """What the chain vouches for: its events, the last position, and the hash there."""

    events: int
    position: int
    hash: str


@dataclass(frozen=True)
class Verification:
    """The heads that were checked against the log, and where the log first broke, if it did.

    `found` is the first break of the hash chain or of the Merkle tree, whichever comes first;
    with neither, the first signed checkpoint the log no longer gives. `unproven` holds every
    such checkpoint, `proven` counts the others.
    """

    head: ChainHead
    found: Break | None
    tree: TreeHead = EMPTY_TREE
    proven: int = 0
    unproven: tuple[Checkpoint, ...] = ()


Read = Callable[[UUID, int, int], list[TimelineEntry]]  # an aggregate's events in a range


@dataclass(frozen=True)
class TimelinePage:
    """One page of an aggregate's timeline, oldest first: its events, its number and size,
    and how many events the aggregate has."""

    entries: list[TimelineEntry]
    number: int
    size: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.size))


class NotYetRecorded(DomainError):
    code = "NOT_FOUND"

    def __init__(self, key: str, at: datetime) -> None:
        super().__init__(
            Message(
                "{key} did not exist yet at {at}: its first event came later",
                key=key,
                at=jsonable(at),
            )
        )


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
            raise InvalidState(
                Message(
                    "account {key} exists in {count} tenants: name one (--tenant)",
                    key=key,
                    count=len(found),
                )
            )
        return found[0]

    def timeline(
        self, key: str, tenant: str | None = None, zone: tzinfo = UTC
    ) -> list[TimelineEntry]:
        """Every event of the aggregate, the instants in its data written in `zone`."""
        return self.ledger.timeline(self.resolve(key, tenant), zone)

    def timeline_page(
        self, aggregate_id: UUID, number: int, size: int, read: Read | None = None
    ) -> TimelinePage:
        """Page `number` (kept within the pages there are) of `size` events: only its events
        are read, by `read` (default: as stored)."""
        total = self.ledger.log_length(aggregate_id)
        number = min(max(number, 1), max(1, math.ceil(total / size)))
        reader = read or self.ledger.timeline_range
        entries = reader(aggregate_id, (number - 1) * size, number * size)
        return TimelinePage(entries, number, size, total)

    def version_at(self, aggregate_id: UUID, at: datetime) -> int:
        """The log version of the aggregate's last event accepted by `at` (0: none yet)."""
        return self.ledger.version_at(aggregate_id, at)

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
                Message(
                    "the state of {key} at {at} cannot be rebuilt: its event at position "
                    "{position} cannot be decoded (audit timeline shows it)",
                    key=key,
                    at=jsonable(at),
                    position=damaged[0],
                )
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
        return replay(self.ledger, self.projector.projections, progress)

    def verify(self, progress: Progress) -> Verification:
        """Recompute the hash chain and the Merkle tree from the log, in one pass; where either
        first stops matching, if anywhere, and which signed checkpoints the log still gives.

        The heads and checkpoints are read first: every link and leaf up to the heads (and any
        added meanwhile) is checked, and every checkpoint signed by then.
        """
        self.projector.catch_up()
        store = self.ledger.store
        with store.connect() as connection:
            sql = Sql(store.kind, connection)
            head, tree = _chain_head(sql), tree_head(sql)
            walk = TreeWalk(stored_leaves(sql), signed_checkpoints(sql))
            log = walk.through(self._log(progress))
            chain_break = first_break(log, stored_links(sql))
            for _ in log:  # the tree and the checkpoints go on past the chain's head or break
                pass
            walk.finish()
        breaks = [b for b in (chain_break, walk.found) if b is not None]
        found = min(breaks, key=lambda b: b.position) if breaks else _unproven(walk.unproven)
        return Verification(head, found, tree, walk.proven, tuple(walk.unproven))

    def _log(self, progress: Progress) -> Iterator[Notification]:
        start = 1
        while page := self.ledger.recorder.select_notifications(start=start, limit=LOG_PAGE):
            yield from page
            progress(len(page))
            start = page[-1].id + 1


class TreeWalk:
    """The log's Merkle tree recomputed event by event, against the stored leaves (the first
    position where they part) and against the signed checkpoints (each proven or not)."""

    def __init__(
        self, leaves: Iterable[tuple[int, str]], checkpoints: Iterable[Checkpoint]
    ) -> None:
        self.leaves = iter(leaves)
        self.expected = next(self.leaves, None)
        self.pending = deque(sorted(checkpoints, key=lambda c: c.tree_size))
        self.size = 0
        self.frontier: list[bytes] = []
        self.found: Break | None = None
        self.proven = 0
        self.unproven: list[Checkpoint] = []

    def through(self, log: Iterable[Notification]) -> Iterator[Notification]:
        """The log, each event taken into the tree as it passes."""
        for notification in log:
            self.add(notification)
            yield notification

    def add(self, notification: Notification) -> None:
        leaf = stored_leaf(notification)
        if self.found is None and self.expected is not None:
            self._compare(notification.id, leaf.hex())
        self.frontier = frontier_after(self.frontier, self.size, leaf)
        self.size += 1
        while self.pending and self.pending[0].tree_size <= self.size:
            self._prove(self.pending.popleft())

    def _compare(self, position: int, leaf: str) -> None:
        assert self.expected is not None
        stored_position, stored_hash = self.expected
        if stored_position < position:
            self.found = Break(stored_position, "an event was deleted (its leaf has no event)")
        elif stored_position > position:
            self.found = Break(position, "an event was inserted (it has no leaf)")
        elif stored_hash != leaf:
            self.found = Break(position, "the event was altered (its leaf does not match)")
        else:
            self.expected = next(self.leaves, None)

    def _prove(self, checkpoint: Checkpoint) -> None:
        if checkpoint.tree_size == self.size and checkpoint.root == root_of_frontier(self.frontier):
            self.proven += 1
        else:
            self.unproven.append(checkpoint)

    def finish(self) -> None:
        """The log has ended: leaves and checkpoints it did not reach are its missing events."""
        if self.found is None and self.expected is not None:
            self.found = Break(self.expected[0], "an event was deleted (its leaf has no event)")
        self.unproven.extend(self.pending)
        self.pending.clear()


def _unproven(checkpoints: list[Checkpoint]) -> Break | None:
    """The first checkpoint the log no longer gives, as a break at its last position."""
    if not checkpoints:
        return None
    first = checkpoints[0]
    return Break(
        first.position,
        f"the signed checkpoint of tree size {first.tree_size} (signed {first.signed_at}) is "
        "not the tree the log gives now: the log was rewritten at or before this position",
    )


def _chain_head(sql: Sql) -> ChainHead:
    row = sql.execute("SELECT events, position, hash FROM chain_head WHERE id = 1").fetchone()
    return ChainHead(int(row[0]), int(row[1]), str(row[2])) if row else ChainHead(0, 0, GENESIS)
