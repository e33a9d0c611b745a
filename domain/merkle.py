"""The log's Merkle tree: RFC 6962 / RFC 9162 hashing, proofs, and their verification.

A tree of `size` leaves is the one Certificate Transparency defines: its left subtree holds the
largest power of two below `size` leaves. Proofs are built from the hashes of complete subtrees
(`Nodes`: level and index to hash), which never change once the log has grown past them, so one
stored set of them answers for every past size. Verification needs nothing but the proof.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
EMPTY_ROOT = hashlib.sha256(b"").digest()

# The hash of the complete subtree at `level` (0 is a leaf) and `index` along that level: it
# covers leaves index * 2**level up to (index + 1) * 2**level.
Nodes = Callable[[int, int], bytes]


class ProofError(ValueError):
    """A proof that does not lead from what it proves to the tree head it claims."""


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def split(size: int) -> int:
    """How many leaves the left subtree of a tree of `size` (at least 2) holds."""
    return 1 << ((size - 1).bit_length() - 1)


def root(nodes: Nodes, size: int) -> bytes:
    """The root hash of the tree of the first `size` leaves."""
    return EMPTY_ROOT if size == 0 else subtree_root(nodes, 0, size)


def subtree_root(nodes: Nodes, start: int, end: int) -> bytes:
    """The hash of the leaves from `start` to `end` (exclusive), as the tree splits them."""
    width = end - start
    if width & (width - 1) == 0 and start % width == 0:
        return nodes(width.bit_length() - 1, start // width)
    left = split(width)
    return node_hash(
        subtree_root(nodes, start, start + left), subtree_root(nodes, start + left, end)
    )


def inclusion_proof(nodes: Nodes, index: int, size: int) -> list[bytes]:
    """RFC 6962 PATH: the siblings from leaf `index` up to the root of the first `size`."""
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} is not in a tree of {size}")
    path: list[bytes] = []
    start, end = 0, size
    while end - start > 1:
        middle = start + split(end - start)
        if index < middle:
            path.append(subtree_root(nodes, middle, end))
            end = middle
        else:
            path.append(subtree_root(nodes, start, middle))
            start = middle
    return path[::-1]


def consistency_proof(nodes: Nodes, old: int, new: int) -> list[bytes]:
    """RFC 6962 PROOF: what shows the tree of `new` leaves extends the tree of `old`."""
    if not 0 < old <= new:
        raise ProofError(f"no consistency proof from a tree of {old} to one of {new}")
    path: list[bytes] = []
    start, end, whole = 0, new, True
    while old != end:
        middle = start + split(end - start)
        if old <= middle:
            path.append(subtree_root(nodes, middle, end))
            end = middle
        else:
            path.append(subtree_root(nodes, start, middle))
            start, whole = middle, False
    if not whole:
        path.append(subtree_root(nodes, start, end))
    return path[::-1]


def root_from_inclusion(leaf: bytes, index: int, size: int, path: Sequence[bytes]) -> bytes:
    """RFC 9162 2.1.3.2: the root the proof leads to from `leaf` at `index` of `size`."""
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} is not in a tree of {size}")
    fn, sn, result = index, size - 1, leaf
    for sibling in path:
        if sn == 0:
            raise ProofError("the inclusion proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            result = node_hash(sibling, result)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            result = node_hash(result, sibling)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("the inclusion proof is shorter than the tree is deep")
    return result


def verify_consistency(
    old: int, new: int, old_root: bytes, new_root: bytes, path: Sequence[bytes]
) -> None:
    """RFC 9162 2.1.4.2: raise ProofError unless the proof shows `new_root`'s tree extends
    `old_root`'s."""
    if old == new:
        if path or old_root != new_root:
            raise ProofError(f"two different trees of the same size {old}")
        return
    if not 0 < old < new:
        raise ProofError(f"a tree of {new} cannot extend one of {old}")
    if not path:
        raise ProofError("the consistency proof is empty")
    hashes = [old_root, *path] if old & (old - 1) == 0 else list(path)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    old_result = new_result = hashes[0]
    for sibling in hashes[1:]:
        if sn == 0:
            raise ProofError("the consistency proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            old_result = node_hash(sibling, old_result)
            new_result = node_hash(sibling, new_result)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            new_result = node_hash(new_result, sibling)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("the consistency proof is shorter than the tree is deep")
    if old_result != old_root:
        raise ProofError(f"the tree of {new} does not start with the tree of {old}: rewritten")
    if new_result != new_root:
        raise ProofError(f"the proof does not lead to the root of the tree of {new}")


def frontier_after(frontier: Sequence[bytes], size: int, leaf: bytes) -> list[bytes]:
    """The roots of the complete subtrees along the right edge, largest first, after `leaf`
    is appended to a tree of `size` whose right edge was `frontier`."""
    return appended(frontier, size, leaf)[0]


def appended(
    frontier: Sequence[bytes], size: int, leaf: bytes
) -> tuple[list[bytes], list[tuple[int, int, bytes]]]:
    """`frontier_after`, and the subtrees above the leaves that `leaf` completes: (level,
    index, hash) of each, lowest first."""
    right, merged, count, level = list(frontier), leaf, size, 0
    completed = []
    while count & 1:
        merged = node_hash(right.pop(), merged)
        count, level = count >> 1, level + 1
        completed.append((level, size >> level, merged))
    right.append(merged)
    return right, completed


def root_of_frontier(frontier: Sequence[bytes]) -> bytes:
    """The root of the tree whose right edge is `frontier` (largest subtree first)."""
    if not frontier:
        return EMPTY_ROOT
    result = frontier[-1]
    for subtree in reversed(frontier[:-1]):
        result = node_hash(subtree, result)
    return result
