"""`cronledger projections` signs checkpoints of the log's Merkle tree as they fall due, with
the key `cronledger migrate` made; without a key it keeps the tree and says why it signs none."""

from __future__ import annotations

from cronledger.persistence.signing_key import load_signing_key
from cronledger.persistence.store import Store
from domain.evidence import Checkpoint, public_key_from_pem
from projections.engine import Sql
from projections.merkle import signed_checkpoints, tree_head
from tests.processes import run_cli, signing_key_file, started

EVERY_EVENT = {"CRONLEDGER_CHECKPOINT_EVERY_EVENTS": "1"}


def bootstrap(store_url: str, tenant: str) -> None:
    done = run_cli(store_url, "bootstrap", "--tenant", tenant, "--admin", "root")
    assert done.returncode == 0, done.stderr


def signed_after(store_url: str, size: int) -> list[Checkpoint]:
    """The checkpoints of trees larger than `size`, as the store holds them."""
    store = Store.from_url(store_url)
    try:
        with store.connect() as connection:
            return signed_checkpoints(Sql(store.kind, connection), since=size)
    finally:
        store.close()


def tree_size(store_url: str) -> int:
    store = Store.from_url(store_url)
    try:
        with store.connect() as connection:
            return tree_head(Sql(store.kind, connection)).size
    finally:
        store.close()


def test_the_projections_process_signs_each_checkpoint_as_it_falls_due(store_url: str) -> None:
    assert run_cli(store_url, "migrate").returncode == 0
    bootstrap(store_url, "acme")
    with started(store_url, "projections", "--interval", "0.1", **EVERY_EVENT) as child:
        first = child.wait_for(lambda: signed_after(store_url, 0), "a checkpoint")
        bootstrap(store_url, "beta")
        grown = child.wait_for(
            lambda: signed_after(store_url, first[-1].tree_size), "a checkpoint of the grown log"
        )
        child.wait_for(
            lambda: signed_after(store_url, tree_size(store_url) - 1), "the whole log signed"
        )
    key = load_signing_key(signing_key_file(store_url))
    assert key is not None
    public = public_key_from_pem(key.public_pem().encode())
    for checkpoint in [*first, *grown]:
        checkpoint.check_signature(public)


def test_without_a_key_the_projections_process_keeps_the_tree_and_says_why(
    bare_store_url: str,
) -> None:
    bootstrap(bare_store_url, "acme")  # no `migrate`: no key
    with started(bare_store_url, "projections", "--interval", "0.1", **EVERY_EVENT) as child:
        child.wait_for(lambda: "no signing key" in child.stderr, "the warning")
        child.wait_for(lambda: tree_size(bare_store_url) > 0, "the tree")
    assert signed_after(bare_store_url, 0) == []
