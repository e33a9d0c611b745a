"""The log's Merkle tree against RFC 6962's reference vectors and properties, and checkpoints."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

from domain.evidence import Checkpoint, EvidenceError, key_id_of
from domain.merkle import (
    Nodes,
    ProofError,
    consistency_proof,
    frontier_after,
    inclusion_proof,
    leaf_hash,
    root,
    root_from_inclusion,
    root_of_frontier,
    verify_consistency,
)

# Certificate Transparency's reference tree (transparency-dev/merkle testonly/constants.go and
# proof/verify_test.go, the vectors of the original C++ log).
LEAVES = [
    bytes.fromhex(h)
    for h in (
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    )
]
ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
INCLUSION = {  # leaf index -> its path in the tree of 8
    0: [
        "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
    5: [
        "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
}
CONSISTENCY = {  # (old, new) -> the proof
    (1, 8): [
        "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
    (6, 8): [
        "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
        "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
    (2, 5): [
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    ],
}


def reference_root(hashes: Sequence[bytes]) -> bytes:
    """RFC 6962's MTH, written from its definition: the check on `root`'s own recursion."""
    if not hashes:
        return hashlib.sha256(b"").digest()
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    return hashlib.sha256(
        b"\x01" + reference_root(hashes[:k]) + reference_root(hashes[k:])
    ).digest()


def nodes_of(data: Sequence[bytes]) -> Nodes:
    """The complete subtrees of the tree of `data`, as the store would hold them."""
    hashes = [leaf_hash(d) for d in data]

    def node(level: int, index: int) -> bytes:
        width = 1 << level
        assert (index + 1) * width <= len(hashes), "a node of a subtree that is not complete"
        return reference_root(hashes[index * width : (index + 1) * width])

    return node


def hexes(path: Sequence[bytes]) -> list[str]:
    return [h.hex() for h in path]


def unhex(path: Sequence[str]) -> list[bytes]:
    return [bytes.fromhex(h) for h in path]


def includes(leaf: bytes, index: int, size: int, path: Sequence[bytes], expected: bytes) -> bool:
    try:
        return root_from_inclusion(leaf, index, size, path) == expected
    except ProofError:
        return False


def consistent(old: int, new: int, old_root: bytes, new_root: bytes, path: list[bytes]) -> bool:
    try:
        verify_consistency(old, new, old_root, new_root, path)
    except ProofError:
        return False
    return True


@pytest.mark.parametrize("size", range(9))
def test_the_roots_are_the_reference_roots(size: int) -> None:
    assert root(nodes_of(LEAVES), size).hex() == ROOTS[size]


@pytest.mark.parametrize("index", sorted(INCLUSION))
def test_inclusion_proofs_are_the_reference_proofs_and_verify(index: int) -> None:
    path = inclusion_proof(nodes_of(LEAVES), index, 8)
    assert hexes(path) == INCLUSION[index]
    leaf = leaf_hash(LEAVES[index])
    assert root_from_inclusion(leaf, index, 8, path).hex() == ROOTS[8]
    assert not includes(leaf, index ^ 1, 8, path, bytes.fromhex(ROOTS[8]))


@pytest.mark.parametrize(("old", "new"), sorted(CONSISTENCY))
def test_consistency_proofs_are_the_reference_proofs_and_verify(old: int, new: int) -> None:
    path = consistency_proof(nodes_of(LEAVES), old, new)
    assert hexes(path) == CONSISTENCY[old, new]
    old_root, new_root = bytes.fromhex(ROOTS[old]), bytes.fromhex(ROOTS[new])
    verify_consistency(old, new, old_root, new_root, unhex(CONSISTENCY[old, new]))
    assert not consistent(old, new, bytes.fromhex(ROOTS[old - 1]), new_root, path)
    assert not consistent(old, new, old_root, bytes.fromhex(ROOTS[new - 1]), path)


leaf_lists = st.lists(st.binary(max_size=12), min_size=1, max_size=70, unique=True)


@given(leaf_lists, st.data())
def test_every_inclusion_proof_verifies_and_a_changed_one_does_not(
    data: list[bytes], draw: st.DataObject
) -> None:
    size = len(data)
    nodes, expected = nodes_of(data), reference_root([leaf_hash(d) for d in data])
    index = draw.draw(st.integers(0, size - 1), label="index")
    path = inclusion_proof(nodes, index, size)
    leaf = leaf_hash(data[index])
    assert includes(leaf, index, size, path, expected)
    assert not includes(leaf_hash(data[index] + b"!"), index, size, path, expected)
    if size > 1:
        other = draw.draw(st.integers(0, size - 1).filter(lambda i: i != index), label="other")
        assert not includes(leaf, other, size, path, expected)
        sibling = draw.draw(st.integers(0, len(path) - 1), label="sibling")
        changed = [*path[:sibling], bytes(32), *path[sibling + 1 :]]
        assert not includes(leaf, index, size, changed, expected)


@given(leaf_lists, st.data())
def test_every_consistency_proof_verifies_and_not_after_a_change_before_old(
    data: list[bytes], draw: st.DataObject
) -> None:
    new = len(data)
    old = draw.draw(st.integers(1, new), label="old")
    nodes = nodes_of(data)
    old_root, new_root = root(nodes, old), root(nodes, new)
    path = consistency_proof(nodes, old, new)
    assert consistent(old, new, old_root, new_root, path)
    changed = draw.draw(st.integers(0, old - 1), label="changed leaf")
    rewritten = [*data[:changed], data[changed] + b"!", *data[changed + 1 :]]
    rewritten_nodes = nodes_of(rewritten)
    rewritten_path = consistency_proof(rewritten_nodes, old, new)
    assert not consistent(old, new, old_root, root(rewritten_nodes, new), rewritten_path)


@given(st.lists(st.binary(max_size=12), max_size=70))
def test_the_frontier_gives_the_root_of_every_size(data: list[bytes]) -> None:
    frontier: list[bytes] = []
    nodes = nodes_of(data)
    assert root_of_frontier(frontier) == root(nodes, 0)
    for size, item in enumerate(data):
        frontier = frontier_after(frontier, size, leaf_hash(item))
        assert root_of_frontier(frontier) == root(nodes, size + 1)
    assert len(frontier) == bin(len(data)).count("1")


def signed(key: Ed25519PrivateKey, size: int = 8) -> Checkpoint:
    unsigned = Checkpoint(
        size, bytes.fromhex(ROOTS[size]), 41, "2026-10-01T09:00:00.000000+00:00", key_of(key)
    )
    return replace(unsigned, signature=key.sign(unsigned.message()))


def key_of(key: Ed25519PrivateKey) -> str:
    return key_id_of(key.public_key())


def test_a_checkpoint_signature_survives_its_json_and_verifies() -> None:
    key = Ed25519PrivateKey.generate()
    checkpoint = signed(key)
    read = Checkpoint.from_json(checkpoint.as_json())
    assert read == checkpoint
    read.check_signature(key.public_key())


@pytest.mark.parametrize(
    "change",
    [
        {"tree_size": 7},
        {"root": bytes.fromhex(ROOTS[7])},
        {"signed_at": "2026-10-02T09:00:00.000000+00:00"},
    ],
)
def test_a_checkpoint_altered_after_signing_is_refused(change: dict[str, object]) -> None:
    key = Ed25519PrivateKey.generate()
    altered = replace(signed(key), **change)  # type: ignore[arg-type]
    with pytest.raises(EvidenceError, match="altered after it was signed"):
        Checkpoint.from_json(altered.as_json()).check_signature(key.public_key())


def test_a_checkpoint_checked_with_another_key_names_both_keys() -> None:
    key, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    with pytest.raises(EvidenceError) as refused:
        signed(key).check_signature(other.public_key())
    assert key_of(key) in str(refused.value)
    assert key_of(other) in str(refused.value)
    assert "signed by key" in str(refused.value)
