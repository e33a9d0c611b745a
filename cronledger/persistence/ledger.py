"""The one event-sourced application: every aggregate of every tenant on one ordered log."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, is_dataclass
from datetime import UTC, datetime, tzinfo
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, ProcessingEvent
from eventsourcing.domain import Aggregate, DomainEventProtocol, MutableOrImmutableAggregate
from eventsourcing.persistence import IntegrityError, Recorder, Recording, StoredEvent, Transcoder
from eventsourcing.postgres import PostgresAggregateRecorder
from eventsourcing.sqlite import SQLiteAggregateRecorder
from eventsourcing.utils import Environment, EnvType
from psycopg import sql

from cronledger.clock import Clock
from cronledger.persistence.connections import store_unavailable
from cronledger.persistence.event_auth import (
    BOUNDARY_TABLE,
    INSERT_BOUNDARY,
    Authenticator,
    Boundary,
    boundary_row,
    read_boundary,
)
from cronledger.persistence.event_keys import EventKeys
from cronledger.persistence.store import Store
from cronledger.persistence.transcoding import LogTranscoder
from domain.approvals import ApprovalInstance
from domain.directory import Account, Definition, Tenant
from domain.errors import DomainError, NotFound
from domain.messages import Message
from domain.runs import Run
from domain.schedules import Schedule

A = TypeVar("A", bound=Aggregate)
T = TypeVar("T")
Item = TypeVar("Item")

ENVELOPE = frozenset({"originator_id", "originator_version", "timestamp", "originator_topic"})
NAMED = ("at", "actor", "command_id", "outcome", "reason", "reason_code", "reason_params")
GET_MANY_CHUNK = 500
UNDECODABLE = "Undecodable"
log = logging.getLogger("cronledger.persistence.ledger")
# A committed event and, when saved as one, its aggregate as it stood after the save.
Recorded = tuple[DomainEventProtocol[UUID], MutableOrImmutableAggregate[UUID] | None]


@dataclass(frozen=True)
class TimelineEntry:
    """One event of an aggregate; `log_version` is its place in the aggregate's log, not
    the `version` the API shows and takes (a schedule's counts its edits only)."""

    position: int
    log_version: int
    type: str
    at: datetime
    actor: str | None
    command_id: str | None
    outcome: str | None
    reason: str | None
    data: dict[str, Any]
    reason_code: str | None = None  # the reason's code and parameters, where the event keeps
    reason_params: dict[str, Any] | None = None  # them (domain/reason_codes.py)


@dataclass(frozen=True)
class Undecodable:
    """A stored event that cannot be read back: readers record it, skip it, and go on."""

    originator_id: UUID
    originator_version: int
    topic: str
    error: str


class UnreadableAggregate(DomainError):
    """Its history holds an event that cannot be decoded; only this aggregate is affected."""

    code = "INTERNAL"

    def __init__(self, kind: str, key: object) -> None:
        super().__init__(f"{kind} {key!s} cannot be read from the log; the cause has been logged")


class TooManyWriters(DomainError):
    """Other writers won every try of a command: nothing was written, the caller may retry."""

    code = "UNAVAILABLE"

    def __init__(self, attempts: int) -> None:
        super().__init__(
            Message(
                "other writers changed this resource first at each of {attempts} tries; "
                "nothing was written: try again shortly",
                attempts=attempts,
            )
        )


WRITER_LOCKS = 64  # stripes of the per-aggregate lock of `Ledger.retrying`


class _Deferring(threading.local):
    active = False
    saved = 0  # the log position of this thread's last committed save (0: none yet)


class Ledger(Application[UUID]):
    name = "cronledger"
    snapshotting_intervals: ClassVar[dict[type[MutableOrImmutableAggregate[Any]], int]] = {
        Tenant: 100,
        Account: 50,
        Definition: 50,
        Schedule: 50,
        Run: 50,
        ApprovalInstance: 50,
    }

    def __init__(
        self,
        store: Store,
        clock: Clock,
        create_tables: bool = True,
        event_keys: EventKeys | None = None,
    ) -> None:
        """With `create_tables` off, nothing is created: for commands that only read the log.
        `event_keys` authenticate the events this process writes (None: it has none)."""
        self.store = store
        self.clock = clock
        self.after_save: Callable[[int], object] | None = None
        # Told of each committed save's events with their aggregates (this process's meters).
        self.after_record: Callable[[Sequence[Recorded]], object] | None = None
        self._deferring = _Deferring()
        self._writers = [threading.Lock() for _ in range(WRITER_LOCKS)]
        super().__init__(
            {**store.eventsourcing_env(), "CREATE_TABLE": "y" if create_tables else "n"}
        )
        self.events_table = table_of(self.recorder)
        assert self.snapshots is not None  # snapshotting_intervals turn snapshots on
        self.snapshots_table = table_of(self.snapshots.recorder)
        self.recorder.authenticator = Authenticator(  # type: ignore[attr-defined]
            event_keys, store.has_table(BOUNDARY_TABLE)
        )

    @property
    def event_keys(self) -> EventKeys | None:
        """The keys this process authenticates its writes with (None: it has none yet)."""
        return self.recorder.authenticator.keys  # type: ignore[attr-defined,no-any-return]

    def use_event_keys(self, keys: EventKeys) -> None:
        """Authenticate this process's writes with `keys` from now on."""
        self.recorder.authenticator.keys = keys  # type: ignore[attr-defined]

    def take_event_keys_from(self, path: Path) -> None:
        """A process started without keys takes those a migration makes in `path` later, when
        it first finds the store authenticating its events (else each write would fail)."""
        self.recorder.authenticator.keys_file = path  # type: ignore[attr-defined]

    def authentication_boundary(self) -> Boundary | None:
        """Where the store authenticates its events from (None: it does not)."""
        if not self.store.has_table(BOUNDARY_TABLE):
            return None
        with self.store.connect() as connection:
            return read_boundary(_Native(self.store, connection))

    def start_authentication(self) -> Boundary | None:
        """Authenticate events from the next position on, unless the store does already (it
        needs this process's keys); the boundary then in force."""
        if self.event_keys is not None:
            with self.store.connect() as connection:
                _start_authentication(
                    _Native(self.store, connection),
                    self.events_table,
                    self.event_keys,
                    self.clock(),
                )
            self.recorder.authenticator.boundary_table = True  # type: ignore[attr-defined]
        return self.authentication_boundary()

    def save(
        self,
        *objs: MutableOrImmutableAggregate[UUID] | DomainEventProtocol[UUID] | None,
        **kwargs: Any,
    ) -> list[Recording[UUID]]:
        """`Application.save`, collecting aggregates without Python 3.11's slow protocol checks.

        `ProcessingEvent.collect_events` asks `isinstance` of two runtime-checkable protocols
        per object, which 3.11 answers by listing the protocol's attributes every time: a
        sixth of a big tick's cost. Anything but an `Aggregate` still goes that way.
        """
        processing_event = ProcessingEvent[UUID]()
        for obj in objs:
            if isinstance(obj, Aggregate):
                processing_event.events.extend(obj.collect_events())
                processing_event.aggregates[obj.id] = obj
            else:
                processing_event.collect_events(obj)
        processing_event.saved_kwargs.update(kwargs)
        recordings = self._record(processing_event)
        if recordings:
            self._deferring.saved = max(r.notification.id for r in recordings)
        # Committed: from here the store being away must not make the save look failed (its
        # caller would act again, or drop what it holds), so what follows is best effort.
        with _committed_anyway("snapshot"):
            self._take_snapshots(processing_event)
        with _committed_anyway("meters"):
            self._tell_recorded(processing_event)
        with _committed_anyway("read models"):
            self._notify(recordings)
        return recordings

    def _tell_recorded(self, processing_event: ProcessingEvent[UUID]) -> None:
        if self.after_record is not None and processing_event.events:
            aggregates = processing_event.aggregates
            self.after_record(
                [(event, aggregates.get(event.originator_id)) for event in processing_event.events]
            )

    def _notify(self, recordings: list[Recording[UUID]]) -> None:
        """After each save: let the read models reach it, so a read that follows sees it."""
        if recordings and self.after_save is not None and not self._deferring.active:
            self.after_save(max(r.notification.id for r in recordings))

    def saved_position(self) -> int:
        """Where this thread's last committed save ends on the log (0 if it saved nothing)."""
        return self._deferring.saved

    def forget_saved_position(self) -> None:
        """Start counting this thread's saves afresh (a web request, before its command)."""
        self._deferring.saved = 0

    @contextmanager
    def projections_deferred(self) -> Iterator[None]:
        """Saves in this block (this thread) do not wait for the read models."""
        self._deferring.active = True
        try:
            yield
        finally:
            self._deferring.active = False

    def construct_transcoder(self) -> Transcoder:
        """The library's transcodings and ours; callers' JSON is never interpreted."""
        return LogTranscoder()

    def decode(self, stored: StoredEvent) -> DomainEventProtocol[UUID] | Undecodable:
        """The domain event, or (logged) what made it unreadable: one event never stops a reader."""
        try:
            return self.mapper.to_domain_event(stored)
        except Exception as error:  # anything a stored event can make a decoder raise
            log.error(
                "an event on the log cannot be decoded",
                extra={
                    "originator_id": str(stored.originator_id),
                    "originator_version": stored.originator_version,
                    "topic": stored.topic,
                    "error": str(error),
                },
            )
            originator_id = stored.originator_id
            return Undecodable(
                originator_id if isinstance(originator_id, UUID) else UUID(str(originator_id)),
                stored.originator_version,
                stored.topic,
                f"{type(error).__name__}: {error}",
            )

    def construct_env(self, name: str, env: EnvType | None = None) -> Environment:
        """Only cronledger's own settings; stray POSTGRES_* variables are never read."""
        settings = dict(env or {})
        if self.snapshotting_intervals:
            settings["IS_SNAPSHOTTING_ENABLED"] = "y"
        return Environment(name, settings)

    def find(self, kind: type[A], aggregate_id: UUID, label: str, key: object) -> A:
        """The aggregate of that type, or NotFound naming what was asked for."""
        try:
            aggregate: Aggregate = self.repository.get(aggregate_id)
        except AggregateNotFoundError:
            raise NotFound(label, key) from None
        except Exception as error:  # an event of its history cannot be decoded
            if store_unavailable(error):
                raise  # the store is away, the aggregate is fine
            log.exception("an aggregate cannot be read", extra={"aggregate_id": str(aggregate_id)})
            raise UnreadableAggregate(label, key) from error
        if not isinstance(aggregate, kind):
            raise NotFound(label, key)
        return aggregate

    def find_in_tenant(self, kind: type[A], key: str, label: str, tenant_id: UUID) -> A:
        """The aggregate a public id names, if the tenant owns it; else not found, never 403."""
        try:
            aggregate_id = UUID(key)
        except ValueError:
            raise NotFound(label, key) from None
        aggregate = self.find(kind, aggregate_id, label, key)
        if getattr(aggregate, "tenant_id", None) != tenant_id:
            raise NotFound(label, key)
        return aggregate

    def exists(self, aggregate_id: UUID) -> bool:
        return aggregate_id in self.repository

    def recorded(self, aggregate_id: UUID) -> bool:
        """Whether the log holds any event of that id, readable or not (nothing is decoded)."""
        return bool(self.recorder.select_events(aggregate_id, limit=1))

    def missing_log(self) -> str | None:
        """Why there is no log to read here (no events table, or no events), or None."""
        if not self.store.has_table(self.events_table):
            return "it has no events table"
        if not self.recorder.max_notification_id():
            return "its log has no events"
        return None

    def retrying(
        self, command: Callable[[], T], attempts: int = 20, one_at_a_time: object = None
    ) -> T:
        """Run get-act-save again, after a short random pause, when another writer won.

        Commands of this process that name the same `one_at_a_time` key (an aggregate's id) run
        in turn, so a burst on one aggregate does not spend its retries racing itself."""
        if one_at_a_time is None:
            return self._retrying(command, attempts)
        with self._writers[hash(one_at_a_time) % WRITER_LOCKS]:
            return self._retrying(command, attempts)

    def _retrying(self, command: Callable[[], T], attempts: int) -> T:
        for attempt in range(1, attempts):
            try:
                return command()
            except IntegrityError:
                time.sleep(random.uniform(0, 0.002 * attempt))  # noqa: S311 (jitter, not crypto)
        try:
            return command()
        except IntegrityError as error:
            raise TooManyWriters(attempts) from error

    def save_batch_or_each(
        self,
        save_batch: Callable[[], list[T]],
        items: Iterable[Item],
        save_one: Callable[[Item], T],
    ) -> list[T]:
        """What `save_batch` gives, many aggregates in one transaction; if another writer won
        any of them, what `save_one` gives for each item instead, a get-act-save of its own."""
        try:
            return save_batch()
        except IntegrityError:
            return [self.retrying(partial(save_one, item)) for item in items]

    def timeline(self, aggregate_id: UUID, zone: tzinfo = UTC) -> list[TimelineEntry]:
        """Every event of one aggregate, oldest first, with its position on the log (instants
        in its data written in `zone`)."""
        return self.timeline_range(aggregate_id, 0, None, zone)

    def timeline_range(
        self, aggregate_id: UUID, after: int, upto: int | None, zone: tzinfo = UTC
    ) -> list[TimelineEntry]:
        """The events of one aggregate whose log versions are after `after` and up to `upto`
        (None: the last), oldest first: only those are read, so a page of a long timeline
        costs what the page holds."""
        last = upto if upto is not None else 2**62
        positions = {
            version: position
            for position, version in self.store.query(
                f"SELECT {self.store.position_column}, originator_version "  # noqa: S608
                f"FROM {self.events_table} WHERE originator_id = ? "
                "AND originator_version > ? AND originator_version <= ?",
                (self._stored_id(aggregate_id), after, last),
            )
        }
        return [
            timeline_entry(positions.get(stored.originator_version, 0), self.decode(stored), zone)
            for stored in self.recorder.select_events(aggregate_id, gt=after, lte=upto)
        ]

    def log_length(self, aggregate_id: UUID) -> int:
        """How many events one aggregate has: the log version of its last (0 for none)."""
        last = self.recorder.select_events(aggregate_id, desc=True, limit=1)
        return last[0].originator_version if last else 0

    def version_at(self, aggregate_id: UUID, at: datetime) -> int:
        """The log version of the aggregate's last event accepted by `at` (0: none yet), found
        by halving its log, one event read at each step: its events are accepted in order."""
        low, high = 0, self.log_length(aggregate_id)
        while low < high:
            middle = (low + high + 1) // 2
            (stored,) = self.recorder.select_events(aggregate_id, gt=middle - 1, lte=middle)
            if timeline_entry(0, self.decode(stored)).at <= at:
                low = middle
            else:
                high = middle - 1
        return low

    def get_many(self, ids: Sequence[UUID]) -> dict[UUID, Aggregate]:
        """What `repository.get` gives for each id that exists, in two queries per 500 ids."""
        wanted = list(dict.fromkeys(ids))
        found: dict[UUID, Aggregate] = {}
        for start in range(0, len(wanted), GET_MANY_CHUNK):
            found.update(self._get_chunk(wanted[start : start + GET_MANY_CHUNK]))
        return found

    def _get_chunk(self, ids: list[UUID]) -> dict[UUID, Aggregate]:
        """Each id's latest snapshot, then only the events after it, folded like the repository."""
        snapshots = self._decoded(
            _latest_snapshots_sql(self.snapshots_table, len(ids)),
            [self._stored_id(i) for i in ids],
        )
        histories: dict[UUID, list[DomainEventProtocol[UUID] | Undecodable]] = {
            s.originator_id: [s]
            for s in snapshots
            if not isinstance(s, Undecodable)  # a snapshot is a cache: read the events instead
        }
        after = {i: h[0].originator_version for i, h in histories.items()}
        for event in self._decoded(
            _events_after_sql(self.events_table, len(ids)),
            [v for i in ids for v in (self._stored_id(i), after.get(i, 0))],
        ):
            histories.setdefault(event.originator_id, []).append(event)
        found: dict[UUID, Aggregate] = {}
        for aggregate_id, history in histories.items():
            if any(isinstance(event, Undecodable) for event in history):
                continue  # unreadable, and logged: the others are still served
            aggregate = _fold(history)
            if aggregate is not None:
                found[aggregate_id] = aggregate
        return found

    def _decoded(
        self, statement: str, params: list[Any]
    ) -> list[DomainEventProtocol[UUID] | Undecodable]:
        """Rows of (originator_id, originator_version, topic, state) as domain events."""
        return [
            self.decode(
                StoredEvent(
                    originator_id=self._loaded_id(originator_id),
                    originator_version=version,
                    topic=topic,
                    state=bytes(state),
                )
            )
            for originator_id, version, topic, state in self.store.query(statement, params)
        ]

    def _stored_id(self, aggregate_id: UUID) -> Any:
        return aggregate_id.hex if self.store.kind == "sqlite" else aggregate_id

    def _loaded_id(self, stored: Any) -> UUID:
        return UUID(hex=stored) if self.store.kind == "sqlite" else stored


class _Native:
    """A DB-API connection taking `?` placeholders on both stores."""

    def __init__(self, store: Store, connection: Any) -> None:
        self.kind = store.kind
        self.store = store
        self.connection = connection

    def execute(self, statement: str, params: Sequence[Any] = ()) -> Any:
        return self.connection.execute(*self.store.native(statement, params))


def _start_authentication(sql: _Native, events: str, keys: EventKeys, now: datetime) -> None:
    """The boundary recorded after the log's last event, under the append lock (no event is
    written meanwhile), if there is none yet."""
    position = "rowid" if sql.kind == "sqlite" else "notification_id"
    if sql.kind == "sqlite":
        sql.execute("BEGIN IMMEDIATE")
    else:
        sql.execute("BEGIN")
        sql.execute(f"LOCK TABLE {events} IN EXCLUSIVE MODE")
    try:
        if read_boundary(sql) is None:
            last = sql.execute(f"SELECT MAX({position}) FROM {events}").fetchone()[0]  # noqa: S608
            sql.execute(INSERT_BOUNDARY, boundary_row(keys, int(last or 0) + 1, now))
    except BaseException:
        sql.execute("ROLLBACK")
        raise
    sql.execute("COMMIT")


@contextmanager
def _committed_anyway(what: str) -> Iterator[None]:
    """After a commit: a failure is logged, never raised, since raising would make the
    committed save look failed and its caller (a client, a worker) act again. A later
    snapshot or catch-up (the projections runner's) does what this one could not."""
    try:
        yield
    except Exception as error:
        if store_unavailable(error):
            log.warning(
                "saved; the %s could not follow, the store did not answer", what, exc_info=True
            )
        else:  # a bug (a projection's, say): the save stands, the step is logged to be fixed
            log.error("saved; the %s failed after the commit", what, exc_info=True)


def table_of(recorder: Recorder) -> str:
    """The table an eventsourcing recorder writes to, as SQL, by the name the recorder holds."""
    if isinstance(recorder, PostgresAggregateRecorder):
        return sql.Identifier(recorder.datastore.schema, recorder.events_table_name).as_string()
    if isinstance(recorder, SQLiteAggregateRecorder):
        return recorder.events_table_name
    raise TypeError(f"no SQL table behind {type(recorder).__name__}")


def _latest_snapshots_sql(table: str, count: int) -> str:
    """The newest snapshot of each of `count` ids (one `?` per id), found by primary key."""
    marks = ", ".join(["(?)"] * count)
    return (
        f"WITH wanted(id) AS (VALUES {marks}) "  # noqa: S608
        f"SELECT s.originator_id, s.originator_version, s.topic, s.state FROM {table} s "
        "JOIN wanted ON s.originator_id = wanted.id "
        f"WHERE s.originator_version = (SELECT MAX(m.originator_version) FROM {table} m "
        "WHERE m.originator_id = wanted.id)"
    )


def _events_after_sql(table: str, count: int) -> str:
    """The events of `count` ids after a version each (a `?, ?` pair per id), oldest first."""
    pairs = ", ".join(["(?, ?)"] * count)
    return (
        f"WITH wanted(id, after) AS (VALUES {pairs}) "  # noqa: S608
        f"SELECT e.originator_id, e.originator_version, e.topic, e.state FROM {table} e "
        "JOIN wanted ON e.originator_id = wanted.id AND e.originator_version > wanted.after "
        "ORDER BY e.originator_id, e.originator_version"
    )


def timeline_entry(position: int, event: Any, zone: tzinfo = UTC) -> TimelineEntry:
    """One event as a timeline entry: its envelope, the named fields, the rest as `data`
    (its instants written in `zone`)."""
    if isinstance(event, Undecodable):
        return undecodable_entry(position, event)
    state = {k: v for k, v in event.__dict__.items() if k not in ENVELOPE}
    named = {k: state.pop(k, None) for k in NAMED}
    return TimelineEntry(
        position=position,
        log_version=event.originator_version,
        type=type(event).__qualname__,
        at=named["at"] or event.timestamp.astimezone(UTC),
        actor=named["actor"],
        command_id=named["command_id"],
        outcome=named["outcome"],
        reason=named["reason"],
        data=jsonable(state, zone),
        reason_code=named["reason_code"],
        reason_params=jsonable(named["reason_params"], zone),
    )


def undecodable_entry(position: int, event: Undecodable) -> TimelineEntry:
    """An unreadable event in a timeline: where it stands and why it cannot be read."""
    return TimelineEntry(
        position=position,
        log_version=event.originator_version,
        type=UNDECODABLE,
        at=datetime.fromtimestamp(0, UTC),
        actor=None,
        command_id=None,
        outcome=None,
        reason=None,
        data={"topic": event.topic, "error": event.error},
    )


def _fold(history: list[Any]) -> Aggregate | None:
    """What eventsourcing's `project_aggregate` does, without its costly protocol checks."""
    aggregate = None
    for event in history:
        aggregate = event.mutate(aggregate)
    return aggregate


def jsonable(value: Any, zone: tzinfo = UTC) -> Any:
    """JSON values: ids as strings, instants as ISO 8601 in `zone` (UTC: with `Z`),
    dataclasses as objects."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, zone) for k, v in value.items()}
    if is_dataclass(value) and not isinstance(value, type):
        return jsonable(asdict(value), zone)
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v, zone) for v in value]
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        written = value.astimezone(zone).isoformat()
        return written.replace("+00:00", "Z") if zone is UTC else written
    return value
