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
from cronledger.persistence.event_auth import (
    BOUNDARY_DELETED,
    BOUNDARY_MISSING,
    Boundary,
    any_mac,
    boundary_problem,
    event_problem,
    macs_between,
    read_boundary,
)
from cronledger.persistence.event_keys import KEYS_VARIABLE, EventKeys
from cronledger.persistence.ledger import (
    UNDECODABLE,
    Ledger,
    TimelineEntry,
    jsonable,
)
from domain.directory import account_uuid, tenant_uuid
from domain.errors import DomainError, InvalidState, NotFound
from domain.evidence import Checkpoint
from domain.merkle import EMPTY_ROOT, frontier_after, root_of_frontier
from domain.messages import Message
from projections.chain import GENESIS, Break, first_break, stored_link, stored_links
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
class Skew:
    """An event recorded `seconds` before the event logged before it (at `previous`)."""

    position: int
    previous: int
    seconds: float


@dataclass(frozen=True)
class Authentication:
    """What the events' MACs say: how many were checked, under which keys, from which position
    (None: the store does not authenticate its events), and the range written before."""

    authenticated: int = 0
    key_ids: tuple[str, ...] = ()
    authenticated_from: int | None = None
    unauthenticated: tuple[int, int] | None = None  # first and last position


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
    authentication: Authentication = Authentication()
    skews: tuple[Skew, ...] = ()


@dataclass(frozen=True)
class RangeVerification:
    """What a pass over the events after position `after` checked: how many, the first and
    the last position (`to`: `after` when none were new), and where the log first broke, if
    it did."""

    after: int
    events: int
    first: int | None
    to: int
    found: Break | None


class Tally:
    """The events a walk of the log read: how many, the first and the last position."""

    def __init__(self) -> None:
        self.count = 0
        self.first: int | None = None
        self.last: int | None = None

    def through(self, log: Iterable[Notification]) -> Iterator[Notification]:
        for notification in log:
            self.count += 1
            self.first = notification.id if self.first is None else self.first
            self.last = notification.id
            yield notification


class NoEventKeysToVerify(DomainError):
    code = "UNAVAILABLE"

    def __init__(self) -> None:
        super().__init__(
            Message(
                "this store authenticates its events and this process has no event key to "
                "check them with: set {variable} to the service's event key file",
                variable=KEYS_VARIABLE,
            )
        )


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
    def __init__(
        self, ledger: Ledger, directory: Directory, projector: Projector, skew: float = 5.0
    ) -> None:
        self.ledger = ledger
        self.directory = directory
        self.projector = projector
        self.skew = skew  # seconds an event's time may fall before its predecessor's, unwarned

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
        """Recompute the hash chain and the Merkle tree from the log, and check each event's
        MAC, in one pass; where the log first stops matching, if anywhere, which signed
        checkpoints it still gives, and the events recorded earlier than the one before them.

        The heads and checkpoints are read first: every link and leaf up to the heads (and any
        added meanwhile) is checked, and every checkpoint signed by then.
        """
        self.projector.catch_up()
        store = self.ledger.store
        with store.connect() as connection:
            sql = Sql(store.kind, connection)
            head, tree = _chain_head(sql), tree_head(sql)
            walk = TreeWalk(stored_leaves(sql), signed_checkpoints(sql))
            macs = MacWalk(self.ledger, self.ledger.event_keys, read_boundary(sql), any_mac(sql))
            log = walk.through(macs.through(self._log(progress), self.skew))
            chain_break = first_break(log, stored_links(sql))
            for _ in log:  # the tree and the checkpoints go on past the chain's head or break
                pass
            walk.finish()
        # At one position, the MAC's finding first: it says whether the key wrote the event.
        breaks = [b for b in (macs.found, chain_break, walk.found) if b is not None]
        found = min(breaks, key=lambda b: b.position) if breaks else _unproven(walk.unproven)
        return Verification(
            head,
            found,
            tree,
            walk.proven,
            tuple(walk.unproven),
            macs.summary(),
            tuple(macs.skews),
        )

    def verify_since(self, after: int, progress: Progress) -> RangeVerification:
        """The events appended after position `after` (the last one an earlier pass vouched
        for), up to the chain's head: each link recomputed from the stored link at `after`,
        and each MAC checked, so the pass stays as short as what was appended. Earlier events,
        the Merkle tree and the signed checkpoints are a full pass's (`verify`)."""
        self.projector.catch_up()
        store = self.ledger.store
        with store.connect() as connection:
            sql = Sql(store.kind, connection)
            head = _chain_head(sql)
            start = stored_link(sql, after) if after else GENESIS
            if start is None:
                gone = Break(after, "the last verified event has no link (it was deleted)")
                return RangeVerification(after, 0, None, after, gone)
            macs = MacWalk(self.ledger, self.ledger.event_keys, read_boundary(sql), any_mac(sql))
            tally = Tally()
            log = tally.through(
                macs.through(self._log(progress, after + 1, head.position), self.skew)
            )
            chain_break = first_break(log, stored_links(sql, after, head.position), start)
        breaks = [b for b in (macs.found, chain_break) if b is not None]
        found = min(breaks, key=lambda b: b.position) if breaks else None
        return RangeVerification(after, tally.count, tally.first, tally.last or after, found)

    def _log(
        self, progress: Progress, start: int = 1, stop: int | None = None
    ) -> Iterator[Notification]:
        """The log's events from position `start` (up to `stop`, if given), a page at a time,
        `progress` told after each page."""
        if stop is not None and stop < start:
            return
        select = self.ledger.recorder.select_notifications
        while page := select(start=start, limit=LOG_PAGE, stop=stop):
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


class MacWalk:
    """Each event's MAC checked as the log passes (those at or above the boundary), the range
    written before the boundary, and each event's time against its predecessor's."""

    def __init__(
        self,
        ledger: Ledger,
        keys: EventKeys | None,
        boundary: Boundary | None,
        first_mac: int | None,
    ) -> None:
        self.ledger = ledger
        self.keys = keys
        self.boundary = boundary
        self.found: Break | None = None
        if boundary is None and first_mac is not None:
            self.found = Break(first_mac, BOUNDARY_DELETED)
        elif boundary is not None:
            if keys is None:
                raise NoEventKeysToVerify()
            problem = boundary_problem(keys, boundary)
            if problem is not None:
                self.found = Break(boundary.position, problem)
        self.authenticated = 0
        self.key_ids: set[str] = set()
        self.legacy: tuple[int, int] | None = None
        self.macs: dict[int, tuple[str, bytes]] = {}
        self.read_to = 0
        self.skews: list[Skew] = []
        self.previous: tuple[int, datetime] | None = None

    def through(self, log: Iterable[Notification], skew: float) -> Iterator[Notification]:
        for notification in log:
            self._timed(notification, skew)
            self.add(notification)
            yield notification

    def add(self, notification: Notification) -> None:
        position = notification.id
        if self.boundary is None and self.keys is not None and self.found is None:
            self.found = Break(position, BOUNDARY_MISSING)
        if self.boundary is None or position < self.boundary.position:
            self.legacy = (self.legacy[0] if self.legacy else position, position)
            return
        assert self.keys is not None
        if position > self.read_to:
            self.read_to = position + LOG_PAGE - 1
            with self.ledger.store.connect() as connection:
                self.macs = macs_between(
                    Sql(self.ledger.store.kind, connection), position, self.read_to
                )
        stored = self.macs.get(position)
        event = (
            notification.originator_id,
            notification.originator_version,
            notification.topic,
            notification.state,
        )
        problem = event_problem(self.keys, position, event, stored)
        if problem is None and stored is not None:
            self.authenticated += 1
            self.key_ids.add(stored[0])
        elif self.found is None and problem is not None:
            self.found = Break(position, problem)

    def _timed(self, notification: Notification, skew: float) -> None:
        """Events that record when they were accepted (`at`, the service's clock) only."""
        at = getattr(self.ledger.decode(notification), "at", None)
        if not isinstance(at, datetime):
            return
        if self.previous is not None:
            gap = (self.previous[1] - at).total_seconds()
            if gap > skew:
                self.skews.append(Skew(notification.id, self.previous[0], gap))
        self.previous = (notification.id, at)

    def summary(self) -> Authentication:
        return Authentication(
            self.authenticated,
            tuple(sorted(self.key_ids)),
            self.boundary.position if self.boundary else None,
            self.legacy,
        )


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
