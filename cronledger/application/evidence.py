"""Evidence for third parties: signed checkpoints of the log's Merkle tree, consistency proofs
between them, and evidence bundles that prove one aggregate's events (docs/audit.md)."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from cronledger.application.operations import auditable
from cronledger.clock import Clock
from cronledger.persistence.event_auth import MAC_TABLE, event_problem, read_boundary
from cronledger.persistence.ledger import Ledger
from cronledger.persistence.signing_key import SigningKey
from domain.errors import DomainError, InvalidState, ValidationFailed
from domain.evidence import BUNDLE_FORMAT, Checkpoint
from domain.merkle import consistency_proof, inclusion_proof, root
from domain.messages import Message
from projections.chain import Break
from projections.engine import Projector, Sql
from projections.merkle import (
    checkpoint_of_size,
    latest_checkpoint,
    record_checkpoint,
    signed_checkpoints,
    tree_head,
    with_stored_nodes,
)

log = logging.getLogger("cronledger.application.evidence")
MAX_CHECKPOINTS = 1000  # a page of `GET /api/audit/checkpoints`
NO_KEY_TO_CHECK = "this process has no event key to check it with"


# The events that name a linked instance, and the relation each names it by.
LINKED_BY = {
    "ApprovalInstance.Submitted": ("resubmits", "cancellation_of"),
    "ApprovalInstance.Resubmitted": ("resubmitted_as",),
    "ApprovalInstance.CancellationRequested": ("cancellation",),
}
LINKED_FIELDS = frozenset({"resubmits", "cancellation_of"})  # named by their own field


class NoSigningKey(DomainError):
    code = "UNAVAILABLE"

    def __init__(self) -> None:
        super().__init__(
            Message(
                "this process has no signing key, so it signs no checkpoint: run `cronledger "
                "migrate` (it makes one) or set CRONLEDGER_SIGNING_KEY_FILE (docs/audit.md)"
            )
        )


class UnauthenticatedEvent(DomainError):
    """An event the signer will not vouch for: no checkpoint or bundle covers it."""

    code = "INVALID_STATE"

    def __init__(self, found: Break) -> None:
        super().__init__(
            Message(
                "the event at position {position} fails its authentication ({problem}): no "
                "checkpoint is signed over it and no evidence bundle vouches for it; "
                "`cronledger audit verify` reports the log",
                position=found.position,
                problem=found.problem,
            )
        )


class NoSuchCheckpoint(DomainError):
    code = "NOT_FOUND"

    def __init__(self, size: int) -> None:
        super().__init__(Message("no signed checkpoint of tree size {size}", size=size))


@dataclass(frozen=True)
class CheckpointPolicy:
    """When the tree is signed again: after `events` more events, or `seconds` after the last
    checkpoint if the tree grew at all."""

    events: int
    seconds: float


class Evidence:
    def __init__(
        self,
        ledger: Ledger,
        projector: Projector,
        key: SigningKey | None,
        clock: Clock,
        policy: CheckpointPolicy,
    ) -> None:
        self.ledger = ledger
        self.projector = projector
        self.key = key
        self.clock = clock
        self.policy = policy
        self.refused: Break | None = None  # the first event the signer last stopped before
        self._logged: set[int] = set()

    def checkpoint(self, force: bool = False) -> Checkpoint | None:
        """Sign the tree as the projection has it, if the policy (or `force`) says it is time;
        the checkpoint signed, or None. Two processes signing one size keep the first.

        Only the tree's longest prefix whose events are authenticated is signed (those
        written before the store authenticated its events count as such)."""
        if self.key is None:
            return None
        with self._sql() as sql:
            head = tree_head(sql)
            last = latest_checkpoint(sql)
            if head.size == 0 or (last is not None and last.tree_size >= head.size):
                return None
            size = self._authenticated_size(sql, last.tree_size if last else 0, head.size)
            if size == 0 or (last is not None and last.tree_size >= size):
                return None
            if not (force or last is None or self._due(last, size)):
                return None
            if size == head.size:
                signed = self._signed(head.size, head.root, head.position)
            else:
                signed = self._signed(size, *self._prefix(sql, size))
            record_checkpoint(sql, signed)
        log.info(
            "checkpoint signed", extra={"tree_size": signed.tree_size, "key_id": signed.key_id}
        )
        return signed

    def _authenticated_size(self, sql: Sql, start: int, size: int) -> int:
        """How many of the tree's first `size` leaves may be signed: up to the first event at
        or above the boundary (from leaf `start` on) whose MAC is missing or wrong."""
        self.refused = None
        boundary = read_boundary(sql)
        if boundary is None:
            return size
        pos, keys = self.ledger.store.position_column, self.ledger.event_keys
        rows = sql.execute(
            "SELECT l.leaf, l.position, e.originator_id, e.originator_version, e.topic, "  # noqa: S608
            f"e.state, m.key_id, m.mac FROM merkle_leaves l LEFT JOIN {self.ledger.events_table}"
            f" e ON e.{pos} = l.position LEFT JOIN {MAC_TABLE} m ON m.position = l.position "
            "WHERE l.leaf >= ? AND l.leaf < ? AND l.position >= ? ORDER BY l.leaf",
            (start, size, boundary.position),
        ).fetchall()
        for leaf, position, originator_id, version, topic, state, key_id, mac in rows:
            if keys is None:
                problem: str | None = NO_KEY_TO_CHECK
            elif originator_id is None:
                problem = "its event is no longer on the log"
            else:
                stored = (str(key_id), bytes(mac)) if key_id is not None else None
                event = (originator_id, int(version), str(topic), state)
                problem = event_problem(keys, int(position), event, stored)
            if problem is not None:
                self._refuse(Break(int(position), problem))
                return int(leaf)
        return size

    def _refuse(self, found: Break) -> None:
        self.refused = found
        if found.position not in self._logged:
            self._logged.add(found.position)
            log.error(
                "an event fails its authentication: no checkpoint is signed over it",
                extra={"position": found.position, "problem": found.problem},
            )

    def _prefix(self, sql: Sql, size: int) -> tuple[bytes, int]:
        """The root of the tree's first `size` leaves, and the position of the last."""
        prefix_root = with_stored_nodes(sql, lambda nodes: root(nodes, size))
        row = sql.execute("SELECT position FROM merkle_leaves WHERE leaf = ?", (size - 1,))
        return prefix_root, int(row.fetchone()[0])

    def _due(self, last: Checkpoint, size: int) -> bool:
        if size - last.tree_size >= self.policy.events:
            return True
        since = self.clock() - datetime.fromisoformat(last.signed_at)
        return since >= timedelta(seconds=self.policy.seconds)

    def _signed(self, size: int, tree_root: bytes, position: int) -> Checkpoint:
        assert self.key is not None
        signed_at = self.clock().astimezone(UTC).isoformat(timespec="microseconds")
        unsigned = Checkpoint(size, tree_root, position, signed_at, self.key.key_id)
        return replace(unsigned, signature=self.key.sign(unsigned.message()))

    def checkpoints(self, since: int = 0, limit: int = MAX_CHECKPOINTS) -> list[Checkpoint]:
        """The signed checkpoints of tree sizes above `since`, oldest first."""
        with self._sql() as sql:
            return signed_checkpoints(sql, since, limit)

    def latest(self) -> Checkpoint | None:
        with self._sql() as sql:
            return latest_checkpoint(sql)

    def consistency(self, old: int, new: int) -> dict[str, Any]:
        """The proof that the signed tree of `new` extends the signed tree of `old`."""
        with self._sql() as sql:
            older, newer = _signed_of(sql, old), _signed_of(sql, new)
            if old > new:
                raise InvalidState(
                    Message(
                        "tree size {old} is newer than {new}: give the older first",
                        old=old,
                        new=new,
                    )
                )
            proof = (
                []
                if old == new
                else with_stored_nodes(sql, lambda nodes: consistency_proof(nodes, old, new))
            )
        return {
            "from": older.as_json(),
            "to": newer.as_json(),
            "proof": [h.hex() for h in proof],
        }

    def proof_between(self, old: int, new: int) -> list[bytes]:
        """The consistency proof the stored tree gives from its first `old` leaves to its first
        `new` (whatever checkpoints say: a rewritten tree gives one that fails against them)."""
        with self._sql() as sql:
            size = tree_head(sql).size
            if new > size:
                raise InvalidState(
                    Message(
                        "the tree holds {size} events, not {new}: catch up first",
                        size=size,
                        new=new,
                    )
                )
            return with_stored_nodes(sql, lambda nodes: consistency_proof(nodes, old, new))

    def current_root(self, size: int) -> bytes:
        """The root the stored tree gives for its first `size` leaves (a rewritten log's tree
        gives another than the one signed before the rewrite)."""
        with self._sql() as sql:
            return with_stored_nodes(sql, lambda nodes: root(nodes, size))

    def bundle(
        self, aggregate_id: UUID, since: Sequence[int] = (), linked: bool = False
    ) -> dict[str, Any]:
        """One aggregate's events, each with its inclusion proof against a signed checkpoint
        that covers them all, and a consistency proof from each tree size in `since`; with
        `linked`, an instance's bundle holds the bundles of the instances it links to (its
        resubmission and cancellation links, one step), each under `linked` with its
        `relation`."""
        found = self._bundle(aggregate_id, since)
        if linked:
            found["linked"] = [
                {"relation": relation, **self._bundle(linked_id, since)}
                for relation, linked_id in self.linked_instances(aggregate_id)
            ]
        return found

    def linked_instances(self, aggregate_id: UUID) -> list[tuple[str, UUID]]:
        """The instances an approval instance links to, as its events name them: the one it
        resubmits or would cancel, the one it was resubmitted as, and every cancellation asked
        of it, oldest first (none for any other aggregate)."""
        links: list[tuple[str, UUID]] = []
        for entry in self.ledger.timeline(aggregate_id):
            for relation in LINKED_BY.get(entry.type, ()):
                named = entry.data.get(relation if relation in LINKED_FIELDS else "linked_id")
                if named:
                    links.append((relation, UUID(str(named))))
        return links

    def _bundle(self, aggregate_id: UUID, since: Sequence[int] = ()) -> dict[str, Any]:
        self.projector.catch_up()
        with self._sql() as sql:
            leaves = _leaves_of(sql, aggregate_id)
        events = self._stored_events(aggregate_id)
        self._bundle_check(aggregate_id, events)
        checkpoint = self._covering(max((leaf for leaf, *_ in leaves), default=-1) + 1)
        in_tree = {row[1]: row for row in leaves}
        with self._sql() as sql:
            proofs = with_stored_nodes(
                sql,
                lambda nodes: {
                    leaf: inclusion_proof(nodes, leaf, checkpoint.tree_size) for leaf, *_ in leaves
                },
            )
            consistency = [self._grown(sql, old, checkpoint) for old in since]
        bundle: dict[str, Any] = {
            "format": BUNDLE_FORMAT,
            "aggregate_id": str(aggregate_id),
            "checkpoint": checkpoint.as_json(),
            "events": [],
            "deleted": [],
            "inserted": [],
            "later": [],
            "consistency": consistency,
        }
        for position, version, topic, state in events:
            row = in_tree.pop(position, None)
            if row is not None:
                bundle["events"].append(
                    {
                        "leaf_index": row[0],
                        "position": position,
                        "aggregate_id": str(aggregate_id),
                        "version": version,
                        "topic": topic,
                        "state": base64.b64encode(state).decode(),
                        "inclusion_proof": [h.hex() for h in proofs[row[0]]],
                    }
                )
            elif position <= checkpoint.position:
                bundle["inserted"].append({"position": position, "version": version})
            else:
                bundle["later"].append({"position": position, "version": version})
        for leaf, position, version in sorted(in_tree.values()):
            bundle["deleted"].append({"leaf_index": leaf, "position": position, "version": version})
        return bundle

    def _bundle_check(self, aggregate_id: UUID, events: list[tuple[int, int, str, bytes]]) -> None:
        """Refuse a bundle any of whose events at or above the boundary fails its MAC."""
        store = self.ledger.store
        with self._sql() as sql:
            boundary = read_boundary(sql)
            if boundary is None:
                return
            pos = store.position_column
            macs = {
                int(p): (str(k), bytes(m))
                for p, k, m in sql.execute(
                    f"SELECT e.{pos}, m.key_id, m.mac FROM {self.ledger.events_table} e "  # noqa: S608
                    f"JOIN {MAC_TABLE} m ON m.position = e.{pos} WHERE e.originator_id = ?",
                    (aggregate_id.hex if store.kind == "sqlite" else aggregate_id,),
                ).fetchall()
            }
        keys = self.ledger.event_keys
        for position, version, topic, state in events:
            if position < boundary.position:
                continue
            problem = (
                NO_KEY_TO_CHECK
                if keys is None
                else event_problem(
                    keys, position, (aggregate_id, version, topic, state), macs.get(position)
                )
            )
            if problem is not None:
                self._refuse(Break(position, problem))
                raise UnauthenticatedEvent(Break(position, problem))

    def _covering(self, size: int) -> Checkpoint:
        """The latest signed checkpoint, signed anew first if it does not reach `size` leaves;
        refused when an unauthenticated event stops the signer short of them."""
        latest = self.latest()
        if latest is None or latest.tree_size < size:
            if self.key is None:
                raise NoSigningKey()
            self.checkpoint(force=True)
            latest = self.latest()
            if (latest is None or latest.tree_size < size) and self.refused is not None:
                raise UnauthenticatedEvent(self.refused)
        assert latest is not None
        return latest

    def _grown(self, sql: Sql, old: int, checkpoint: Checkpoint) -> dict[str, Any]:
        if not 0 < old <= checkpoint.tree_size:
            raise InvalidState(
                Message(
                    "no consistency proof from tree size {old} to {new}",
                    old=old,
                    new=checkpoint.tree_size,
                )
            )
        proof = with_stored_nodes(
            sql, lambda nodes: consistency_proof(nodes, old, checkpoint.tree_size)
        )
        return {"from_size": old, "proof": [h.hex() for h in proof]}

    def _stored_events(self, aggregate_id: UUID) -> list[tuple[int, int, str, bytes]]:
        """The aggregate's events as stored: position, version, topic and state bytes."""
        store = self.ledger.store
        stored_id = aggregate_id.hex if store.kind == "sqlite" else aggregate_id
        rows = store.query(
            f"SELECT {store.position_column}, originator_version, topic, state "  # noqa: S608
            f"FROM {self.ledger.events_table} WHERE originator_id = ? "
            f"ORDER BY {store.position_column}",
            (stored_id,),
        )
        return [(int(p), int(v), str(t), _stored_bytes(s)) for p, v, t, s in rows]

    @contextmanager
    def _sql(self) -> Iterator[Sql]:
        store = self.ledger.store
        with store.connect() as connection:
            yield Sql(store.kind, connection)

    def bundle_in_tenant(
        self, tenant_id: UUID, aggregate_id: str, since: Sequence[int] = (), linked: bool = False
    ) -> dict[str, Any]:
        """`bundle` of the tenant or one of the aggregates its auditors may read the timeline
        of; any other id, another tenant's included, is not found (never 403)."""
        subject = auditable(self.ledger, tenant_id, aggregate_id)
        try:
            return self.bundle(subject, since, linked)
        except InvalidState as error:  # only a `since` the checkpoint does not reach
            raise ValidationFailed.of("since", error.message) from None


def _stored_bytes(state: object) -> bytes:
    """A state as stored: bytes, or the text an edit of a SQLite database may have put there
    (its UTF-8 bytes, which then match no leaf and no MAC)."""
    return state.encode() if isinstance(state, str) else bytes(state)  # type: ignore[call-overload]


def _leaves_of(sql: Sql, aggregate_id: UUID) -> list[tuple[int, int, int]]:
    """The tree's leaves of one aggregate: leaf index, position, version."""
    rows = sql.execute(
        "SELECT leaf, position, originator_version FROM merkle_leaves "
        "WHERE originator_id IN (?, ?) ORDER BY leaf",
        (str(aggregate_id), aggregate_id.hex),
    ).fetchall()
    return [(int(leaf), int(position), int(version)) for leaf, position, version in rows]


def _signed_of(sql: Sql, size: int) -> Checkpoint:
    found = checkpoint_of_size(sql, size)
    if found is None:
        raise NoSuchCheckpoint(size)
    return found
