"""Issue 21: the log edited in the database is named by an evidence bundle and by `audit verify`;
a log rewritten with its chain, tree and checkpoints is named by a checkpoint saved before."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from cronledger.application.launches import Worker
from cronledger.application.services import Services
from cronledger.persistence.signing_key import create_signing_key
from cronledger.persistence.store import Store
from domain.directory import account_uuid, tenant_uuid
from domain.evidence import Checkpoint, EvidenceError, consistency_problem, verify_bundle
from projections.chain import Break
from tests.support import T0, FakeClock, Opener, World

ANN = account_uuid(tenant_uuid("acme"), "ann")
CHAIN_TABLES = ("event_hashes", "chain_head", "chain_checkpoints")
TREE_TABLES = ("merkle_leaves", "merkle_nodes", "merkle_head")


@dataclass
class History:
    """A tenant's small history, a checkpoint signed of it and exported, and ann's bundle."""

    world: World
    public: Ed25519PublicKey
    saved: Checkpoint  # read back from its exported JSON, as a third party keeps it
    versions: dict[int, int]  # ann's account: version -> log position
    gap: int  # a position the log skipped (as PostgreSQL's sequence does after a rollback)

    @property
    def services(self) -> Services:
        return self.world.services

    @property
    def store(self) -> Store:
        return self.services.store

    def execute(self, statement: str, params: tuple[Any, ...] = ()) -> None:
        native = statement.replace("?", "%s") if self.store.kind == "postgresql" else statement
        with self.store.connect() as conn:
            conn.execute(native, params)

    def event(self, position: int) -> tuple[str, bytes]:
        """The topic and state stored at `position`."""
        table, pos = self.services.ledger.events_table, self.store.position_column
        statement = f"SELECT topic, state FROM {table} WHERE {pos} = ?"
        topic, state = self.store.query(statement, (position,))[0]
        return str(topic), bytes(state)

    def set_event(self, position: int, topic: str, state: bytes) -> None:
        table, pos = self.services.ledger.events_table, self.store.position_column
        self.execute(
            f"UPDATE {table} SET topic = ?, state = ? WHERE {pos} = ?",
            (topic, state, position),
        )

    def alter(self, position: int) -> None:
        """The event's state edited (still valid JSON: one more space at its end)."""
        topic, state = self.event(position)
        self.set_event(position, topic, state + b" ")

    def bundle(self, since: tuple[int, ...] = ()) -> dict[str, Any]:
        """ann's bundle as a third party receives it."""
        return json.loads(json.dumps(self.services.evidence.bundle(ANN, since)))

    def verified(self, since: tuple[int, ...] = (), saved: Checkpoint | None = None) -> Any:
        return verify_bundle(self.bundle(since), self.public, saved)

    def audit(self) -> Any:
        return self.services.audit.verify(lambda _: None)

    def recompute(self, *tables: str) -> None:
        """What an operator with the database can do: drop the tables and rebuild them from the
        log as it is now."""
        for table in tables:
            self.execute(f"DELETE FROM {table}")
        names = {"event_hashes": "audit_chain", "merkle_leaves": "merkle_tree"}
        for table, name in names.items():
            if table in tables:
                self.execute("UPDATE projection_positions SET position = 0 WHERE name = ?", (name,))
        self.services.projector.catch_up()


def skip_positions(world: World) -> int:
    """ann deactivated at a position after a gap in the log; the first free position."""
    services = world.services
    store, table = services.store, services.ledger.events_table
    last = services.ledger.recorder.max_notification_id() or 0
    if store.kind == "postgresql":
        sequence = f"pg_get_serial_sequence('{table}', 'notification_id')"
        store.query(f"SELECT setval({sequence}, {last + 2})")
        world.set_ann_active(False)
        return last + 1
    with services.ledger.projections_deferred():  # moved up before any read model reads it
        world.set_ann_active(False)
        with store.connect() as conn:
            conn.execute(f"UPDATE {table} SET rowid = ? WHERE rowid = ?", (last + 3, last + 1))
    return last + 1


@pytest.fixture
def history(open_with: Opener, tmp_path: Path) -> History:
    clock = FakeClock(T0)
    world = World(open_with(clock), clock)
    services = world.services
    key = create_signing_key(tmp_path / "k.pem")
    services.evidence.key = key
    gap = skip_positions(world)
    world.set_ann_active(True)
    world.run_now()
    Worker.of(services).drain()
    services.projector.catch_up()
    checkpoint = services.evidence.checkpoint(force=True)
    assert checkpoint is not None
    saved = Checkpoint.from_json(json.loads(json.dumps(checkpoint.as_json())))
    stored_id = ANN.hex if services.store.kind == "sqlite" else ANN
    pos = services.store.position_column
    rows = services.store.query(
        f"SELECT originator_version, {pos} FROM {services.ledger.events_table} "
        "WHERE originator_id = ?",
        (stored_id,),
    )
    versions = {int(v): int(p) for v, p in rows}
    assert gap < versions[2] < saved.position, (gap, versions, saved)
    leaves = services.store.query("SELECT position FROM merkle_leaves")
    assert gap not in {int(p) for (p,) in leaves}
    made = History(world, key.private.public_key(), saved, versions, gap)
    intact = made.verified()
    assert (intact.problems, [e.version for e in intact.proven]) == ([], [1, 2, 3])
    return made


def test_the_intact_history_is_proven_by_its_bundle_and_by_audit_verify(history: History) -> None:
    verification = history.audit()
    assert verification.found is None
    assert (verification.proven, verification.unproven) == (1, ())
    assert verification.tree.size == history.saved.tree_size
    assert verification.tree.root == history.saved.root


def test_an_altered_event_is_named(history: History) -> None:
    position = history.versions[2]
    history.alter(position)
    report = history.verified()
    assert report.problems[0].startswith(f"position {position} (version 2): altered: ")
    assert all("position" not in p for p in report.problems[1:]), report.problems
    assert [e.version for e in report.proven] == [1, 3]
    verification = history.audit()
    assert verification.found == Break(position, "the event was altered (its link does not match)")
    assert verification.unproven == (history.saved,)


def test_a_deleted_event_is_named(history: History) -> None:
    position = history.versions[2]
    table, pos = history.services.ledger.events_table, history.store.position_column
    history.execute(f"DELETE FROM {table} WHERE {pos} = ?", (position,))
    report = history.verified()
    assert report.problems == [
        f"position {position} (version 2): deleted: the signed tree holds this event, the log "
        "no longer does",
    ]
    verification = history.audit()
    assert verification.found == Break(position, "an event was deleted (its link has no event)")
    assert verification.unproven == (history.saved,)


def test_an_inserted_event_is_named(history: History) -> None:
    topic, state = history.event(history.versions[2])
    stored_id = ANN.hex if history.store.kind == "sqlite" else ANN
    table, pos = history.services.ledger.events_table, history.store.position_column
    history.execute(
        f"INSERT INTO {table} (originator_id, originator_version, topic, state, {pos}) "
        "VALUES (?, 99, ?, ?, ?)",
        (stored_id, topic, state, history.gap),
    )
    report = history.verified()
    assert report.problems == [
        f"position {history.gap} (version 99): inserted: the log holds this event, the signed "
        "tree it should be in does not"
    ]
    verification = history.audit()
    assert verification.found == Break(history.gap, "an event was inserted (it has no link)")
    assert verification.unproven == (history.saved,)


def test_two_swapped_events_are_both_named(history: History) -> None:
    second, third = history.versions[2], history.versions[3]
    two, three = history.event(second), history.event(third)
    history.set_event(second, *three)
    history.set_event(third, *two)
    report = history.verified()
    assert [p.split(": ")[:2] for p in report.problems] == [
        [f"position {second} (version 2)", "altered"],
        [f"position {third} (version 3)", "altered"],
    ]
    verification = history.audit()
    assert verification.found == Break(second, "the event was altered (its link does not match)")


def test_a_rewritten_history_verifies_alone_but_not_against_a_saved_checkpoint(
    history: History,
) -> None:
    services, old = history.services, history.saved
    history.alter(history.versions[2])
    history.recompute(*TREE_TABLES, *CHAIN_TABLES, "signed_checkpoints")
    history.world.run_now("after the rewrite")
    services.projector.catch_up()
    new = services.evidence.checkpoint(force=True)
    assert new is not None
    assert new.tree_size > old.tree_size
    alone = history.verified(since=(old.tree_size,))
    assert (alone.problems, [e.version for e in alone.proven]) == ([], [1, 2, 3])
    assert history.audit().found is None  # the operator's rewrite is whole: only a saved
    # checkpoint shows it
    against = history.verified(since=(old.tree_size,), saved=old)
    assert len(against.problems) == 1, against.problems
    assert against.problems[0].startswith(
        f"the log was rewritten since the saved checkpoint (tree size {old.tree_size}, signed "
        f"{old.signed_at}): "
    )
    proof = services.evidence.proof_between(old.tree_size, new.tree_size)
    problem = consistency_problem(old, new, proof, history.public)
    assert problem is not None
    assert problem.startswith(
        f"the log was rewritten between the checkpoint of tree size {old.tree_size} (signed "
        f"{old.signed_at}) and that of {new.tree_size}: "
    )
    assert consistency_problem(new, new, [], history.public) is None


def test_a_bundle_checked_with_another_key_is_refused_naming_both_keys(
    history: History, tmp_path: Path
) -> None:
    other = create_signing_key(tmp_path / "other.pem")
    with pytest.raises(EvidenceError) as refused:
        verify_bundle(history.bundle(), other.private.public_key(), None)
    assert str(refused.value) == (
        f"the checkpoint of tree size {history.saved.tree_size} was signed by key "
        f"{history.saved.key_id}, not by the public key given ({other.key_id})"
    )


def test_audit_verify_names_an_edit_the_chain_was_recomputed_over_by_its_leaf(
    history: History,
) -> None:
    position = history.versions[2]
    history.alter(position)
    history.recompute(*CHAIN_TABLES)
    verification = history.audit()
    assert verification.found == Break(position, "the event was altered (its leaf does not match)")
    assert (verification.proven, verification.unproven) == (0, (history.saved,))


def test_audit_verify_names_a_leaf_that_has_no_event_and_an_event_that_has_no_leaf(
    history: History,
) -> None:
    """The log and its chain untouched: the tree's own rows edited."""
    position = history.versions[2]
    history.execute(
        "UPDATE merkle_leaves SET position = ? WHERE position = ?", (history.gap, position)
    )
    verification = history.audit()
    assert verification.found == Break(history.gap, "an event was deleted (its leaf has no event)")
    assert (verification.proven, verification.unproven) == (1, ())  # the log gives the roots
    history.execute("DELETE FROM merkle_leaves WHERE position = ?", (history.gap,))
    verification = history.audit()
    assert verification.found == Break(position, "an event was inserted (it has no leaf)")


def test_audit_verify_names_a_signed_checkpoint_a_whole_rewrite_left_behind(
    history: History,
) -> None:
    old = history.saved
    history.alter(history.versions[2])
    history.recompute(*TREE_TABLES, *CHAIN_TABLES)
    new = history.services.evidence.checkpoint(force=True)
    assert new is None  # the old checkpoint still stands for this tree size
    history.world.run_now("after the rewrite")
    history.services.projector.catch_up()
    assert history.services.evidence.checkpoint(force=True) is not None
    verification = history.audit()
    assert verification.found == Break(
        old.position,
        f"the signed checkpoint of tree size {old.tree_size} (signed {old.signed_at}) is not "
        "the tree the log gives now: the log was rewritten at or before this position",
    )
    assert (verification.proven, verification.unproven) == (1, (old,))
