"""The leaf of a stored event is the one docs/audit.md describes, forever: checkpoints signed by
earlier releases must keep verifying, and auditors' own checkers depend on it."""

from __future__ import annotations

import hashlib
from uuid import UUID

from domain.evidence import event_leaf
from domain.merkle import leaf_hash

AGGREGATE = UUID("77cea279-eaf9-5454-ba16-51f47dbee192")
TOPIC = "domain.directory:Account.TokenIssued"
STATE = b'{"a":1}'
# What release 0.10.0 hashed for this event: a change here breaks every signed checkpoint.
LEAF_0_10_0 = "9e9c82f631f7c66165eefeaa4cf81693fd3596a55d9a3b697b949e46f6f3736a"


def documented_leaf() -> bytes:
    """The leaf built from docs/audit.md's table, byte by byte."""
    data = (
        (6).to_bytes(8, "big")
        + AGGREGATE.bytes
        + (2).to_bytes(8, "big")
        + len(TOPIC.encode()).to_bytes(2, "big")
        + TOPIC.encode()
        + STATE
    )
    return hashlib.sha256(b"\x00" + data).digest()


def test_a_leaf_is_built_as_documented_and_as_release_0_10_0_built_it() -> None:
    leaf = leaf_hash(event_leaf(6, AGGREGATE, 2, TOPIC, STATE))
    assert leaf == documented_leaf()
    assert leaf.hex() == LEAF_0_10_0


def test_an_aggregate_id_read_as_hex_text_gives_the_same_leaf() -> None:
    """SQLite's recorder may hand the id over as text: the leaf must not depend on it."""
    as_text = event_leaf(6, AGGREGATE.hex, 2, TOPIC, STATE)
    assert as_text == event_leaf(6, AGGREGATE, 2, TOPIC, STATE)


def test_a_state_edited_into_text_never_hashes_like_its_bytes() -> None:
    assert event_leaf(6, AGGREGATE, 2, TOPIC, STATE.decode()) != event_leaf(
        6, AGGREGATE, 2, TOPIC, STATE
    )
