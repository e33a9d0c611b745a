"""One caller's live view of the log: its tenant's new events that its permissions can read.

Command detail (refused commands, others' command ids and reasons) is for `audit:read`, as on
the timelines; a replay reaches back a bounded number of positions.

The stream polls the log after a position and yields what the caller may see, in log order,
with a `Checkpoint` at the start and after each quiet spell: every position up to a
checkpoint has been examined, so a client that resumes after it misses nothing. Commits reach
the log in position order on both stores (PostgreSQL appends under a table lock, SQLite has
one writer), so a reader never passes over a position that is filled in later.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar, NamedTuple
from uuid import UUID

from eventsourcing.domain import Aggregate, DomainEventProtocol
from eventsourcing.persistence import Notification

from cronledger.persistence.ledger import Ledger, TimelineEntry, Undecodable, timeline_entry
from domain.approvals import ApprovalInstance
from domain.directory import Account, Definition, Principal, Tenant
from domain.permissions import APPROVAL_LIST, AUDIT_READ, DIRECTORY_MANAGE, SCHEDULE_LIST
from domain.runs import Run
from domain.schedules import Schedule

DIRECTORY_READERS = frozenset({DIRECTORY_MANAGE, AUDIT_READ})
# The only aggregate kinds ever streamed, each to a caller holding any of its permissions.
# Absent on purpose: ApiToken (a token's metadata), TenantRegistry (every tenant's name).
READERS: dict[str, frozenset[str]] = {
    Schedule.__name__: frozenset({SCHEDULE_LIST}),
    Run.__name__: frozenset({SCHEDULE_LIST}),
    ApprovalInstance.__name__: frozenset({APPROVAL_LIST}),
    Account.__name__: DIRECTORY_READERS,
    Definition.__name__: DIRECTORY_READERS,
    Tenant.__name__: DIRECTORY_READERS,
}
# Token ids are shown once, to whoever issues a token; the API never lists them.
WITHHELD_TYPES = frozenset({"Account.TokenIssued", "Account.TokenRevoked"})
# Records of something refused, which change no state: the API shows them to `audit:read` only.
REFUSALS = frozenset({"ApprovalInstance.CommandRejected", "Run.OutcomeRejected"})
REPLAY_POSITIONS = 1000
RUN, ACCOUNT = Run.__name__, Account.__name__


@dataclass(frozen=True)
class StreamedEvent:
    """An event the caller may see; a run's names its schedule, an account's its public id."""

    aggregate_id: UUID
    entry: TimelineEntry
    schedule_id: UUID | None = None
    account_id: str | None = None


class Origin(NamedTuple):
    """What an aggregate's first event says of it: its tenant, and a run's schedule or an
    account's public id."""

    tenant_id: UUID | None
    schedule_id: UUID | None
    account_id: str | None


@dataclass(frozen=True)
class Checkpoint:
    """Every position up to `position` has been examined and what the caller may see was sent."""

    position: int


@dataclass(frozen=True)
class Clipped:
    """The client asked to resume after `requested`, too far back: the stream starts later."""

    requested: int
    position: int


StreamItem = StreamedEvent | Checkpoint | Clipped


def kind_of(event: object) -> str:
    """The aggregate class an event belongs to, from its nested class name (`Run.Registered`)."""
    return type(event).__qualname__.partition(".")[0]


def readable_kinds(principal: Principal) -> frozenset[str]:
    """The aggregate kinds whose events this caller may be streamed."""
    return frozenset(kind for kind, needs in READERS.items() if needs & principal.permissions)


def never() -> bool:
    return False


def as_seen_by(principal: Principal, entry: TimelineEntry) -> TimelineEntry | None:
    """The entry as the caller may read it; None if it may not.

    With `audit:read`, everything. Without it, no refusal (not even its own), and what anyone
    else caused only as a state change: no command id, no reason, no fingerprint.
    """
    if AUDIT_READ in principal.permissions:
        return entry
    if entry.type in REFUSALS:
        return None
    return entry if entry.actor == principal.account_id else state_change(entry)


def state_change(entry: TimelineEntry) -> TimelineEntry:
    """The entry without the detail of the command that caused it."""
    data = {key: value for key, value in entry.data.items() if key != "fingerprint"}
    payload = data.get("payload")
    if isinstance(payload, dict):
        data["payload"] = {key: value for key, value in payload.items() if key != "reason"}
    return replace(entry, command_id=None, reason=None, data=data)


class Owners:
    """The origin of each aggregate, from its first event; the most recent ones remembered."""

    LIMIT: ClassVar[int] = 10_000

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._origins: OrderedDict[UUID, Origin] = OrderedDict()

    def tenant_of(self, event: DomainEventProtocol[UUID]) -> UUID | None:
        """The tenant owning the event's aggregate; None for an aggregate of no tenant."""
        if kind_of(event) == Tenant.__name__:
            return event.originator_id
        return self.origin_of(event).tenant_id

    def origin_of(self, event: DomainEventProtocol[UUID]) -> Origin:
        """What the first event of the event's aggregate says of it."""
        aggregate_id = event.originator_id
        if aggregate_id not in self._origins:
            self._origins[aggregate_id] = self._origin_in(self._created(event))
            if len(self._origins) > self.LIMIT:
                self._origins.popitem(last=False)
        self._origins.move_to_end(aggregate_id)
        return self._origins[aggregate_id]

    def _created(self, event: DomainEventProtocol[UUID]) -> DomainEventProtocol[UUID] | None:
        """The event that created the aggregate: this one, or its first one read from the log."""
        if event.originator_version == Aggregate.INITIAL_VERSION:
            return event
        stored = self.ledger.recorder.select_events(
            event.originator_id, lte=Aggregate.INITIAL_VERSION
        )
        first = [self.ledger.decode(s) for s in stored]
        return next((e for e in first if not isinstance(e, Undecodable)), None)

    @staticmethod
    def _origin_in(created: DomainEventProtocol[UUID] | None) -> Origin:
        tenant_id = getattr(created, "tenant_id", None)
        schedule_id = getattr(created, "schedule_id", None) if kind_of(created) == RUN else None
        account_id = getattr(created, "account_id", None) if kind_of(created) == ACCOUNT else None
        return Origin(
            tenant_id if isinstance(tenant_id, UUID) else None,
            schedule_id if isinstance(schedule_id, UUID) else None,
            account_id if isinstance(account_id, str) else None,
        )


class EventStream:
    """The caller's tenant's events after `after`, as they are committed, until `should_stop`.

    It starts at the log's end if `after` is None or past it, and replays at most
    `replay_positions` positions: from further back it starts that far before the end, and
    says so with a `Clipped` after the opening checkpoint.
    """

    POLL_SECONDS: ClassVar[float] = 0.2
    KEEP_ALIVE_SECONDS: ClassVar[float] = 15.0
    BATCH: ClassVar[int] = 500

    def __init__(
        self,
        ledger: Ledger,
        principal: Principal,
        after: int | None,
        *,
        replay_positions: int = REPLAY_POSITIONS,
        sleep: Callable[[float], object] = time.sleep,
        should_stop: Callable[[], bool] = never,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ledger = ledger
        self.principal = principal
        end = ledger.recorder.max_notification_id() or 0
        self.requested = end if after is None else after
        self.position = max(min(self.requested, end), end - replay_positions)
        self.sleep = sleep
        self.should_stop = should_stop
        self.clock = clock
        self.kinds = readable_kinds(principal)
        self.owners = Owners(ledger)

    def __iter__(self) -> Iterator[StreamItem]:
        yield Checkpoint(self.position)
        if self.requested < self.position:
            yield Clipped(self.requested, self.position)
        last_sent = self.clock()
        while not self.should_stop():
            events, more = self._read()
            yield from events
            if events:
                last_sent = self.clock()
            elif self.clock() - last_sent >= self.KEEP_ALIVE_SECONDS:
                yield Checkpoint(self.position)
                last_sent = self.clock()
            if not more:
                self.sleep(self.POLL_SECONDS)

    def _read(self) -> tuple[list[StreamedEvent], bool]:
        """The next batch's visible events, and whether more is waiting after the batch."""
        notifications = self.ledger.recorder.select_notifications(
            start=self.position + 1, limit=self.BATCH
        )
        if notifications:
            self.position = notifications[-1].id
        return self._visible(notifications), len(notifications) == self.BATCH

    def _visible(self, notifications: Sequence[Notification]) -> list[StreamedEvent]:
        streamed = []
        for notification in notifications:
            event = self.ledger.decode(notification)
            if isinstance(event, Undecodable) or not self._may_see(event):
                continue
            entry = as_seen_by(self.principal, timeline_entry(notification.id, event))
            if entry is not None:
                origin = self.owners.origin_of(event)
                streamed.append(
                    StreamedEvent(event.originator_id, entry, origin.schedule_id, origin.account_id)
                )
        return streamed

    def _may_see(self, event: DomainEventProtocol[UUID]) -> bool:
        return (
            kind_of(event) in self.kinds
            and type(event).__qualname__ not in WITHHELD_TYPES
            and self.owners.tenant_of(event) == self.principal.tenant_id
        )


class Lifetime:
    """Stops a stream at its deadline, or once its token no longer stands for the same caller.

    A revoked token, a deactivated account or changed roles end the stream within
    `RECHECK_SECONDS`; the client reconnects and is answered 401, 403 or its new view.
    """

    RECHECK_SECONDS: ClassVar[float] = 5.0

    def __init__(
        self,
        seconds: float,
        principal: Principal,
        authenticate: Callable[[], Principal | None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.principal = principal
        self.authenticate = authenticate
        self.clock = clock
        self.deadline = clock() + seconds
        self.next_check = clock() + self.RECHECK_SECONDS

    def __call__(self) -> bool:
        now = self.clock()
        if now >= self.deadline:
            return True
        if now < self.next_check:
            return False
        self.next_check = now + self.RECHECK_SECONDS
        return self.authenticate() != self.principal
