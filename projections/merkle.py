"""The log's Merkle tree (RFC 6962), kept by a projection, and the proofs read from it.

`merkle_leaves` holds each event's leaf hash in log order, `merkle_nodes` the hash of every
complete subtree above the leaves, and `merkle_head` the tree's size and right edge (the roots
of its complete subtrees, largest first), from which each batch goes on. Complete subtrees never
change, so any past tree size's root and proofs are read from the same rows.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from eventsourcing.persistence import Notification

from domain.evidence import Checkpoint, event_leaf
from domain.merkle import Nodes, appended, leaf_hash, root_of_frontier
from projections.engine import EventClass, Handler, Projection, Sql

T = TypeVar("T")
KEYS_PER_QUERY = 500


@dataclass(frozen=True)
class TreeHead:
    """The tree as the projection has it: its size, root, and the last position it covers."""

    size: int
    root: bytes
    position: int


def stored_leaf(notification: Notification) -> bytes:
    """The leaf hash of one event as stored."""
    return leaf_hash(
        event_leaf(
            notification.id,
            notification.originator_id,
            notification.originator_version,
            notification.topic,
            notification.state,
        )
    )


class MerkleTreeProjection(Projection):
    name = "merkle_tree"
    tables = ("merkle_leaves", "merkle_nodes", "merkle_head")
    rebuildable = False  # rebuilt from an edited log, it would vouch for the edit

    def ddl(self, sql: Sql) -> list[str]:
        # SQLite: the leaf is the table's rowid, and a node's key the table itself (one b-tree
        # each instead of two): the tree is written for every event on the log.
        leaf_key, nodes_table = (
            ("INTEGER", " WITHOUT ROWID") if sql.kind == "sqlite" else ("BIGINT", "")
        )
        return [
            "CREATE TABLE IF NOT EXISTS merkle_leaves ("
            f"leaf {leaf_key} PRIMARY KEY, position BIGINT NOT NULL, originator_id TEXT NOT NULL, "
            "originator_version BIGINT NOT NULL, hash TEXT NOT NULL)",
            "CREATE INDEX IF NOT EXISTS merkle_leaves_originator "
            "ON merkle_leaves (originator_id, originator_version)",
            "CREATE TABLE IF NOT EXISTS merkle_nodes ("
            "level INTEGER NOT NULL, idx BIGINT NOT NULL, hash TEXT NOT NULL, "
            f"PRIMARY KEY (level, idx)){nodes_table}",
            "CREATE TABLE IF NOT EXISTS merkle_head ("
            "id INTEGER PRIMARY KEY, size BIGINT NOT NULL, position BIGINT NOT NULL, "
            "frontier TEXT NOT NULL)",
            # Not the projection's own (not in `tables`: a replay signs nothing): the
            # checkpoints `Evidence.checkpoint` signs of this tree.
            "CREATE TABLE IF NOT EXISTS signed_checkpoints ("
            "tree_size BIGINT PRIMARY KEY, root_hash TEXT NOT NULL, position BIGINT NOT NULL, "
            "signed_at TEXT NOT NULL, key_id TEXT NOT NULL, signature TEXT NOT NULL)",
        ]

    def handlers(self) -> dict[EventClass, Handler]:
        return {}

    def apply(self, sql: Sql, batch: Sequence[tuple[Notification, Any]]) -> None:
        row = sql.execute("SELECT size, frontier FROM merkle_head WHERE id = 1").fetchone()
        size, frontier = (int(row[0]), _edge(str(row[1]))) if row else (0, [])
        leaves, nodes = [], []
        for notification, _ in batch:
            leaf = stored_leaf(notification)
            leaves.append(
                (
                    size,
                    notification.id,
                    str(notification.originator_id),
                    notification.originator_version,
                    leaf.hex(),
                )
            )
            frontier, completed = appended(frontier, size, leaf)
            nodes += [(level, index, digest.hex()) for level, index, digest in completed]
            size += 1
        sql.write_rows(
            "INSERT INTO merkle_leaves (leaf, position, originator_id, originator_version, hash) "
            "VALUES (?, ?, ?, ?, ?)",
            leaves,
        )
        sql.write_rows("INSERT INTO merkle_nodes (level, idx, hash) VALUES (?, ?, ?)", nodes)
        sql.write(
            "INSERT INTO merkle_head (id, size, position, frontier) VALUES (1, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET size = excluded.size, "
            "position = excluded.position, frontier = excluded.frontier",
            (size, batch[-1][0].id, ",".join(h.hex() for h in frontier)),
        )


def _edge(text: str) -> list[bytes]:
    return [bytes.fromhex(h) for h in text.split(",") if h]


def tree_head(sql: Sql) -> TreeHead:
    row = sql.execute("SELECT size, frontier, position FROM merkle_head WHERE id = 1").fetchone()
    if row is None:
        return TreeHead(0, root_of_frontier([]), 0)
    return TreeHead(int(row[0]), root_of_frontier(_edge(str(row[1]))), int(row[2]))


def with_stored_nodes(sql: Sql, compute: Callable[[Nodes], T]) -> T:
    """`compute` given the stored tree: run once to learn which nodes it reads, then again
    with them all fetched at once (a proof's shape does not depend on the hashes)."""
    wanted: set[tuple[int, int]] = set()

    def note(level: int, index: int) -> bytes:
        wanted.add((level, index))
        return b""

    compute(note)
    found = _fetch(sql, wanted)

    def stored(level: int, index: int) -> bytes:
        try:
            return found[level, index]
        except KeyError:
            raise LookupError(f"the tree has no node at level {level}, index {index}") from None

    return compute(stored)


def _fetch(sql: Sql, wanted: Collection[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
    leaves = [index for level, index in wanted if level == 0]
    nodes = [(level, index) for level, index in wanted if level > 0]
    if sql.kind == "postgresql":
        rows = _joined(sql, leaves, nodes)
    else:
        rows = [(0, leaf, digest) for leaf, digest in _chunked(sql, LEAVES_IN, leaves)]
        for level in {level for level, _ in nodes}:
            indexes = [index for at, index in nodes if at == level]
            rows += [(level, i, h) for i, h in _chunked(sql, NODES_IN, indexes, level)]
    return {(int(level), int(index)): bytes.fromhex(str(h)) for level, index, h in rows}


LEAVES_IN = "SELECT leaf, hash FROM merkle_leaves WHERE leaf IN ({})"
NODES_IN = "SELECT idx, hash FROM merkle_nodes WHERE idx IN ({}) AND level = ?"


def _chunked(sql: Sql, statement: str, keys: list[int], *more: object) -> list[Any]:
    """SQLite: `statement` for KEYS_PER_QUERY keys at a time."""
    rows: list[Any] = []
    for start in range(0, len(keys), KEYS_PER_QUERY):
        chunk = keys[start : start + KEYS_PER_QUERY]
        marks = ", ".join("?" for _ in chunk)
        rows += sql.execute(statement.format(marks), [*chunk, *more]).fetchall()
    return rows


def _joined(sql: Sql, leaves: list[int], nodes: list[tuple[int, int]]) -> list[Any]:
    """PostgreSQL: every wanted hash in one statement of three arrays, joined on the primary
    keys (a nested loop of index lookups, whatever the tables' statistics say)."""
    return list(
        sql.execute(
            "SELECT 0, l.leaf, l.hash FROM unnest(?::bigint[]) AS w(leaf) "
            "JOIN merkle_leaves l ON l.leaf = w.leaf "
            "UNION ALL SELECT n.level, n.idx, n.hash "
            "FROM unnest(?::integer[], ?::bigint[]) AS w(level, idx) "
            "JOIN merkle_nodes n ON n.level = w.level AND n.idx = w.idx",
            (leaves, [level for level, _ in nodes], [index for _, index in nodes]),
        ).fetchall()
    )


def stored_leaves(sql: Sql, page: int = 10_000) -> Iterator[tuple[int, str]]:
    """Every stored leaf's log position and hash, in leaf order."""
    after = -1
    while True:
        rows = sql.execute(
            "SELECT leaf, position, hash FROM merkle_leaves WHERE leaf > ? ORDER BY leaf LIMIT ?",
            (after, page),
        ).fetchall()
        if not rows:
            return
        yield from ((int(position), str(digest)) for _, position, digest in rows)
        after = int(rows[-1][0])


CHECKPOINT_COLUMNS = "tree_size, root_hash, position, signed_at, key_id, signature"
CHECKPOINTS = f"SELECT {CHECKPOINT_COLUMNS} FROM signed_checkpoints"  # noqa: S608


def signed_checkpoints(sql: Sql, since: int = 0, limit: int | None = None) -> list[Checkpoint]:
    """The checkpoints signed of trees larger than `since`, smallest tree first."""
    page = "" if limit is None else f" LIMIT {int(limit)}"
    rows = sql.execute(f"{CHECKPOINTS} WHERE tree_size > ? ORDER BY tree_size{page}", (since,))
    return [_checkpoint(row) for row in rows.fetchall()]


def latest_checkpoint(sql: Sql) -> Checkpoint | None:
    row = sql.execute(f"{CHECKPOINTS} ORDER BY tree_size DESC LIMIT 1").fetchone()
    return None if row is None else _checkpoint(row)


def checkpoint_of_size(sql: Sql, size: int) -> Checkpoint | None:
    row = sql.execute(f"{CHECKPOINTS} WHERE tree_size = ?", (size,)).fetchone()
    return None if row is None else _checkpoint(row)


def record_checkpoint(sql: Sql, checkpoint: Checkpoint) -> None:
    """Keep a signed checkpoint; of two signed of one tree size, the first."""
    sql.execute(
        f"INSERT INTO signed_checkpoints ({CHECKPOINT_COLUMNS}) "  # noqa: S608
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tree_size) DO NOTHING",
        (
            checkpoint.tree_size,
            checkpoint.root.hex(),
            checkpoint.position,
            checkpoint.signed_at,
            checkpoint.key_id,
            base64.b64encode(checkpoint.signature).decode(),
        ),
    )


def _checkpoint(row: Sequence[Any]) -> Checkpoint:
    size, root, position, signed_at, key_id, signature = row
    return Checkpoint(
        int(size),
        bytes.fromhex(str(root)),
        int(position),
        str(signed_at),
        str(key_id),
        base64.b64decode(str(signature)),
    )
