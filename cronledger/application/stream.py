"""One caller's live view of the log: its tenant's new events that its permissions can read.

Command detail (refused commands, others' command ids and reasons) is for `audit:read`, as on
the timelines; a replay reaches back a bounded number of positions.

A process reads the log's new events once, in one `LogTail` thread (every `POLL_SECONDS`),
which decodes each event and finds its tenant once and keeps the latest ones in memory. Every
open `EventStream` follows that tail and picks out what its
caller may see, in log order, with a `Checkpoint` at the start and after each quiet spell:
every position up to a checkpoint has been examined, so a client that resumes after it misses
nothing. A stream further back than the tail's memory (a replay) reads the log itself until it
catches up. Commits reach the log in position order on both stores (PostgreSQL appends under a
table lock, SQLite has one writer), so a reader never passes over a position that is filled in
later.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator
from contextlib import AbstractContextManager, closing, contextmanager, nullcontext
from dataclasses import dataclass, replace
from functools import cached_property
from typing import ClassVar, NamedTuple
from uuid import UUID

from eventsourcing.domain import Aggregate, DomainEventProtocol
from eventsourcing.persistence import Notification

from cronledger.health import Health
from cronledger.logs import Outage
from cronledger.persistence.ledger import Ledger, TimelineEntry, Undecodable, timeline_entry
from domain.approvals import ApprovalInstance
from domain.directory import Account, ApiToken, Definition, Principal, Tenant, TenantRegistry
from domain.permissions import APPROVAL_LIST, AUDIT_READ, DIRECTORY_MANAGE, SCHEDULE_LIST
from domain.runs import Run
from domain.schedules import Schedule

log = logging.getLogger("cronledger.application.stream")
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
# What a token stands for is written in these aggregates' events: a stream's caller is
# authenticated again after one of them was appended (see `Lifetime`).
CALLER_KINDS = frozenset(kind.__name__ for kind in (Account, ApiToken, Tenant, TenantRegistry))
RUN, ACCOUNT = Run.__name__, Account.__name__


@dataclass(frozen=True, eq=False)
class StreamedEvent:
    """An event the caller may see; a run's names its schedule, an account's its public id.

    One object stands for one view of one event, shared by every stream shown that view.
    """

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


def as_seen_by(principal: Principal, event: Streamable) -> StreamedEvent | None:
    """The event as the caller may read it; None if it may not.

    With `audit:read`, everything. Without it, no refusal (not even its own), and what anyone
    else caused only as a state change: no command id, no reason, no fingerprint.
    """
    if AUDIT_READ in principal.permissions:
        return event.full
    entry = event.full.entry
    if entry.type in REFUSALS:
        return None
    return event.full if entry.actor == principal.account_id else event.state_change


def state_change(entry: TimelineEntry) -> TimelineEntry:
    """The entry without the detail of the command that caused it."""
    data = {key: value for key, value in entry.data.items() if key != "fingerprint"}
    payload = data.get("payload")
    if isinstance(payload, dict):
        data["payload"] = {key: value for key, value in payload.items() if key != "reason"}
    return replace(entry, command_id=None, reason=None, data=data)


@dataclass(eq=False)
class Streamable:
    """An event of a kind streams carry, read from the log once for every stream."""

    kind: str
    tenant_id: UUID | None
    full: StreamedEvent

    @property
    def position(self) -> int:
        return self.full.entry.position

    @cached_property
    def state_change(self) -> StreamedEvent:
        """The event as shown to a caller without `audit:read` who did not cause it."""
        return replace(self.full, entry=state_change(self.full.entry))

    def seen_by(self, principal: Principal, kinds: frozenset[str]) -> StreamedEvent | None:
        """The event as this caller, reading `kinds`, may see it; None if it may not."""
        if self.kind not in kinds or self.tenant_id != principal.tenant_id:
            return None
        return as_seen_by(principal, self)


class Owners:
    """The origin of each aggregate, from its first event; the most recent ones remembered."""

    LIMIT: ClassVar[int] = 10_000

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._origins: OrderedDict[UUID, Origin] = OrderedDict()
        self._lock = threading.Lock()  # the tail and streams catching up ask at once

    def tenant_of(self, event: DomainEventProtocol[UUID]) -> UUID | None:
        """The tenant owning the event's aggregate; None for an aggregate of no tenant."""
        if kind_of(event) == Tenant.__name__:
            return event.originator_id
        return self.origin_of(event).tenant_id

    def origin_of(self, event: DomainEventProtocol[UUID]) -> Origin:
        """What the first event of the event's aggregate says of it."""
        aggregate_id = event.originator_id
        with self._lock:
            origin = self._origins.get(aggregate_id)
            if origin is None:
                origin = self._origins[aggregate_id] = self._origin_in(self._created(event))
                if len(self._origins) > self.LIMIT:
                    self._origins.popitem(last=False)
            self._origins.move_to_end(aggregate_id)
            return origin

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


class LogReader:
    """The log's events of streamed kinds after a position, decoded and placed in a tenant."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.owners = Owners(ledger)
        self.caller_changes = 0  # events read that may change what a token stands for

    def read(self, after: int, limit: int) -> tuple[list[Streamable], int, bool]:
        """What `limit` positions after `after` hold, the last position examined, and whether
        more positions may be waiting beyond it."""
        notifications = self.ledger.recorder.select_notifications(start=after + 1, limit=limit)
        position = notifications[-1].id if notifications else after
        found = [self._streamable(notification) for notification in notifications]
        return [s for s in found if s is not None], position, len(notifications) == limit

    def _streamable(self, notification: Notification) -> Streamable | None:
        event = self.ledger.decode(notification)
        if isinstance(event, Undecodable):
            return None
        kind = kind_of(event)
        if kind in CALLER_KINDS:
            self.caller_changes += 1
        if kind not in READERS or type(event).__qualname__ in WITHHELD_TYPES:
            return None
        tenant_id = self.owners.tenant_of(event)
        origin = self.owners.origin_of(event)
        entry = timeline_entry(notification.id, event)
        full = StreamedEvent(event.originator_id, entry, origin.schedule_id, origin.account_id)
        return Streamable(kind, tenant_id, full)


@dataclass(frozen=True)
class Kept:
    """What the tail read lately, as one value that streams read without a lock: every streamed
    event after position `after`, up to position `position`."""

    after: int
    position: int
    events: tuple[Streamable, ...] = ()

    def since(self, after: int, limit: int) -> tuple[list[Streamable], int, bool]:
        """As `LogReader.read`, for a position within what is kept."""
        newer: list[Streamable] = []
        for event in reversed(self.events):
            if event.position <= after:
                break
            newer.append(event)
        newer.reverse()
        if len(newer) > limit:
            return newer[:limit], newer[limit - 1].position, True
        return newer, max(after, self.position), False


class LogTail(LogReader):
    """The log's new events, read by one thread for every stream of the process that follows.

    The thread reads every `POLL_SECONDS` (a backlog at once, batch after batch), so that a
    burst of commits wakes the streams twice a second, each time with all that is new: a NOTIFY
    per commit would only wake them more often. It runs
    while some stream follows: the last one to leave waits until it has stopped, so that
    nothing reads the log once every stream is closed. It keeps the last `KEPT` streamed events
    in memory: a stream within them reads them from there, one further back reads the log
    itself. Each stream waits on an event of its own, set when the tail moves, every
    `WAKE_ALL_SECONDS` (so that streams whose client left, or whose time is up, end) and at each
    poll while `health` is draining: hundreds of streams never queue for a lock, and wake
    together rather than one by one.
    """

    POLL_SECONDS: ClassVar[float] = 0.5  # each read wakes every stream: CPU against latency
    WAKE_ALL_SECONDS: ClassVar[float] = 2.0  # every stream looks whether it should stop
    BATCH: ClassVar[int] = 500
    KEPT: ClassVar[int] = 2000
    STOP_SECONDS: ClassVar[float] = 5.0  # the longest the last stream waits for the tail to stop

    def __init__(self, ledger: Ledger, health: Health) -> None:
        super().__init__(ledger)
        self.health = health
        self._unreadable = Outage(
            log,
            "the event streams cannot read the log; trying again",
            "the event streams read the log again",
        )
        self._kept: Kept | None = None  # None while stopped
        self._changed = threading.Condition()  # who follows, whether the thread runs
        self._followers: set[threading.Event] = set()
        self._thread: threading.Thread | None = None
        self._unfollowed = threading.Event()  # cuts the thread's wait short once none follows
        self._woke_all = 0.0  # when every stream was last woken

    @property
    def position(self) -> int | None:
        """The last position the tail examined; None while it is stopped."""
        kept = self._kept
        return None if kept is None else kept.position

    @contextmanager
    def following(self) -> Iterator[threading.Event]:
        """One more stream follows the tail while the block runs (the first starts its thread):
        the event it waits on."""
        woken = threading.Event()
        with self._changed:
            self._followers.add(woken)
            self._changed.notify_all()  # the tail stopping for the last stream goes on instead
            if self._thread is None:
                self._start()
        try:
            yield woken
        finally:
            with self._changed:
                self._followers.discard(woken)
                if not self._followers:
                    self._unfollowed.set()
                    self._changed.wait_for(
                        lambda: self._thread is None or bool(self._followers), self.STOP_SECONDS
                    )

    def read(self, after: int, limit: int) -> tuple[list[Streamable], int, bool]:
        kept = self._kept
        if kept is not None and after >= kept.after:
            return kept.since(after, limit)
        return super().read(after, limit)

    def wait_past(self, woken: threading.Event, position: int, timeout: float) -> None:
        """Until the tail has examined a position after `position`, or `timeout` passes."""
        woken.clear()  # before looking: a move after the look sets it again
        kept = self._kept
        if kept is None or kept.position <= position:
            woken.wait(timeout)

    def _start(self) -> None:
        position = self.ledger.recorder.max_notification_id() or 0
        self._kept = Kept(position, position)
        self._thread = threading.Thread(target=self._run, name="log-tail", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while self._followed():
            started = time.monotonic()
            if not self._advance():  # else a backlog: read on
                self._unfollowed.wait(max(0.0, started + self.POLL_SECONDS - time.monotonic()))

    def _followed(self) -> bool:
        """Whether some stream still follows the open log; if none does, the tail stops (under
        the lock, so that a stream arriving now starts it again)."""
        with self._changed:
            self._unfollowed.clear()
            if not self._followers or self.ledger.closing.is_set():
                self._thread, self._kept = None, None
                self._changed.notify_all()
            return self._thread is not None

    def _advance(self) -> bool:
        """Read one batch after the tail's position, and wake the streams; whether more is
        waiting."""
        kept = self._kept
        assert kept is not None
        try:
            found, position, more = super().read(kept.position, self.BATCH)
        except Exception:  # the store is away: streams wait, and it is tried again
            self._unreadable.failed(logging.WARNING)
            return False
        self._unreadable.succeeded()
        events, after = kept.events + tuple(found), kept.after
        if len(events) > self.KEPT:
            after, events = events[-self.KEPT - 1].position, events[-self.KEPT :]
        self._kept = Kept(after, position, events)
        now = time.monotonic()
        if position != kept.position or self.health.draining or self._due_to_wake(now):
            self._woke_all = now
            with self._changed:
                followers = tuple(self._followers)
            for woken in followers:
                woken.set()
        return more

    def _due_to_wake(self, now: float) -> bool:
        return now - self._woke_all >= self.WAKE_ALL_SECONDS


class EventStream:
    """The caller's tenant's events after `after`, as they are committed, until `should_stop`.

    It starts at the log's end if `after` is None or past it, and replays at most
    `replay_positions` positions: from further back it starts that far before the end, and
    says so with a `Clipped` after the opening checkpoint. It follows `tail` if given; without
    one it reads the log itself every `POLL_SECONDS`.
    """

    POLL_SECONDS: ClassVar[float] = 0.2  # without a tail: how often it reads the log itself
    CHECK_SECONDS: ClassVar[float] = 5.0  # following a tail: the longest between two `should_stop`
    KEEP_ALIVE_SECONDS: ClassVar[float] = 15.0
    BATCH: ClassVar[int] = 500

    def __init__(
        self,
        ledger: Ledger,
        principal: Principal,
        after: int | None,
        *,
        replay_positions: int = REPLAY_POSITIONS,
        tail: LogTail | None = None,
        sleep: Callable[[float], object] = time.sleep,
        should_stop: Callable[[], bool] = never,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.principal = principal
        end = ledger.recorder.max_notification_id() or 0
        self.requested = end if after is None else after
        self.position = max(min(self.requested, end), end - replay_positions)
        self.tail = tail
        self.reader = tail or LogReader(ledger)
        self.sleep = sleep
        self.should_stop = should_stop
        self.clock = clock
        self.kinds = readable_kinds(principal)

    def __iter__(self) -> Iterator[StreamItem]:
        with closing(self.batches()) as batches:
            for batch in batches:
                yield from batch

    def batches(self) -> Generator[list[StreamItem], None, None]:
        """The stream's items, a batch at a time: what one read of the log had for the caller."""
        with self._following() as woken:
            opening: list[StreamItem] = [Checkpoint(self.position)]
            if self.requested < self.position:
                opening.append(Clipped(self.requested, self.position))
            yield opening
            last_sent = self.clock()
            while not self.should_stop():
                examined = self.position
                events, more = self._read()
                if events:
                    yield events
                    last_sent = self.clock()
                elif self.clock() - last_sent >= self.KEEP_ALIVE_SECONDS:
                    yield [Checkpoint(self.position)]
                    last_sent = self.clock()
                if not more and self.position == examined:  # else ask `should_stop` first
                    self._wait(woken)

    def _following(self) -> AbstractContextManager[threading.Event | None]:
        return nullcontext() if self.tail is None else self.tail.following()

    def _read(self) -> tuple[list[StreamItem], bool]:
        """The next batch's visible events, and whether more is waiting after the batch."""
        found, self.position, more = self.reader.read(self.position, self.BATCH)
        seen = (event.seen_by(self.principal, self.kinds) for event in found)
        return [event for event in seen if event is not None], more

    def _wait(self, woken: threading.Event | None) -> None:
        if self.tail is None or woken is None:
            self.sleep(self.POLL_SECONDS)
        else:
            self.tail.wait_past(woken, self.position, self.CHECK_SECONDS)


class Lifetime:
    """Stops a stream at its deadline, or once its token no longer stands for the same caller.

    A revoked token, a deactivated account or changed roles end the stream within
    `RECHECK_SECONDS`; the client reconnects and is answered 401, 403 or its new view. Given
    `caller_changes` (a count of the events read that may change what a token stands for), it
    authenticates again only when that count moved since its last check, the first check
    excepted: hundreds of open streams do not each read the directory every few seconds.
    """

    RECHECK_SECONDS: ClassVar[float] = 5.0

    def __init__(
        self,
        seconds: float,
        principal: Principal,
        authenticate: Callable[[], Principal | None],
        clock: Callable[[], float] = time.monotonic,
        caller_changes: Callable[[], int] | None = None,
    ) -> None:
        self.principal = principal
        self.authenticate = authenticate
        self.clock = clock
        self.caller_changes = caller_changes
        self.changes_checked: int | None = None  # the count at the last check
        self.deadline = clock() + seconds
        self.next_check = clock() + self.RECHECK_SECONDS

    def __call__(self) -> bool:
        now = self.clock()
        if now >= self.deadline:
            return True
        if now < self.next_check:
            return False
        if self.caller_changes is not None:
            changes = self.caller_changes()  # before authenticating: a later change is seen
            if changes == self.changes_checked:
                return False
            self.changes_checked = changes
        self.next_check = now + self.RECHECK_SECONDS
        return self.authenticate() != self.principal
