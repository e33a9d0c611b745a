"""Damage done with SQL to the events table is reported by the auditor's commands, never a crash."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from cronledger.application.services import open_services
from cronledger.config import Settings
from cronledger.persistence.signing_key import create_signing_key
from cronledger.persistence.store import Store
from domain.directory import account_uuid, tenant_uuid
from projections.engine import Sql
from projections.merkle import tree_head
from tests.processes import run_cli, signing_key_file
from tests.support import FakeClock

Damage = Callable[[Store, str, int], None]


def execute(store: Store, *statements: tuple[str, tuple[Any, ...]]) -> None:
    with store.connect() as conn:
        for statement, params in statements:
            native = statement.replace("?", "%s") if store.kind == "postgresql" else statement
            conn.execute(native, params)


def text_state(store: Store, table: str, position: int) -> None:
    pos = store.position_column
    execute(store, (f"UPDATE {table} SET state = CAST(state AS TEXT) WHERE {pos} = ?", (position,)))


def undecodable_bytes(store: Store, table: str, position: int) -> None:
    pos = store.position_column
    execute(
        store, (f"UPDATE {table} SET state = ? WHERE {pos} = ?", (b"\x00\xff\x00\xff", position))
    )


def deleted_row(store: Store, table: str, position: int) -> None:
    execute(store, (f"DELETE FROM {table} WHERE {store.position_column} = ?", (position,)))


def inserted_row(store: Store, table: str, position: int) -> None:
    """A forged event put at `position`, the events from there on moved one place up.

    Its bytes are not a valid event: a well-formed duplicate of an event that creates a row
    makes the replay stop on a unique key of a read model, a separate problem.
    """
    pos = store.position_column
    execute(
        store,
        (f"UPDATE {table} SET {pos} = {pos} + 1000000 WHERE {pos} >= ?", (position,)),
        (f"UPDATE {table} SET {pos} = {pos} - 999999 WHERE {pos} >= 1000000", ()),
        (
            f"INSERT INTO {table} (originator_id, originator_version, topic, state, {pos}) "
            f"SELECT originator_id, 99, topic, ?, ? FROM {table} WHERE {pos} = ?",
            (b"\x00", position, position + 1),
        ),
    )


def forged_duplicate(store: Store, table: str, position: int) -> None:
    """A well-formed copy of the event at `position`, appended to its aggregate as version 99."""
    pos = store.position_column
    execute(
        store,
        (
            f"INSERT INTO {table} (originator_id, originator_version, topic, state) "
            f"SELECT originator_id, 99, topic, state FROM {table} WHERE {pos} = ?",
            (position,),
        ),
    )


def swapped_positions(store: Store, table: str, position: int) -> None:
    pos = store.position_column
    execute(
        store,
        (f"UPDATE {table} SET {pos} = -1 WHERE {pos} = ?", (position,)),
        (f"UPDATE {table} SET {pos} = ? WHERE {pos} = ?", (position, position + 2)),
        (f"UPDATE {table} SET {pos} = ? WHERE {pos} = -1", (position + 2,)),
    )


def damaged_store(store_url: str, damage: Damage) -> int:
    """Two tenants bootstrapped and projected, then `damage` done at the position of the first
    event of account `root` of tenant `acme`; that position."""
    services = open_services(Settings(database_url=store_url), FakeClock())
    services.directory.bootstrap("acme", "root")
    services.directory.bootstrap("beta", "boss")
    store, table = services.store, services.ledger.events_table
    root = account_uuid(tenant_uuid("acme"), "root")
    stored_id = root.hex if store.kind == "sqlite" else root
    position = int(
        store.query(
            f"SELECT {store.position_column} FROM {table} "
            "WHERE originator_id = ? AND originator_version = 1",
            (stored_id,),
        )[0][0]
    )
    damage(store, table, position)
    services.close()
    return position


def verified_break(store_url: str) -> int:
    result = run_cli(store_url, "audit", "verify", "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    found = json.loads(result.stdout)
    assert (found["intact"], found["head"]) == (False, None)
    return int(found["break"]["position"])


@pytest.mark.parametrize("damage", [deleted_row, inserted_row, swapped_positions])
def test_rows_deleted_inserted_or_moved_break_the_chain_there(
    store_url: str, damage: Damage
) -> None:
    position = damaged_store(store_url, damage)
    assert verified_break(store_url) == position
    for command in (("audit", "replay"), ("audit", "timeline", "root", "--tenant", "acme")):
        result = run_cli(store_url, *command)
        assert result.returncode in (0, 1), result.stderr
        assert "Traceback" not in result.stderr


def test_a_forged_event_the_projections_cannot_apply_stops_the_replay_with_a_finding(
    store_url: str,
) -> None:
    damaged_store(store_url, forged_duplicate)
    result = run_cli(store_url, "audit", "replay")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "the replay stopped on an event it cannot apply" in result.stdout


@pytest.mark.parametrize(
    ("store_url", "damage"),
    [
        ("sqlite", undecodable_bytes),
        ("postgresql", undecodable_bytes),
        ("sqlite", text_state),  # a PostgreSQL bytea column holds bytes only, of one type
    ],
    indirect=["store_url"],
)
def test_an_unreadable_event_is_a_break_and_is_named(store_url: str, damage: Damage) -> None:
    position = damaged_store(store_url, damage)
    assert verified_break(store_url) == position

    replayed = run_cli(store_url, "audit", "replay")
    assert replayed.returncode == 1, replayed.stderr
    assert "Traceback" not in replayed.stderr
    assert f"undecodable_events: only in the replay: [{position}, " in replayed.stdout

    timeline = run_cli(store_url, "audit", "timeline", "root", "--tenant", "acme", "--json")
    assert timeline.returncode == 0, timeline.stderr
    first = json.loads(timeline.stdout)["items"][0]
    assert (first["position"], first["log_version"], first["type"]) == (
        position,
        1,
        "Undecodable",
    )

    at = "2030-01-01T00:00:00Z"
    state = run_cli(store_url, "audit", "state", "root", "--tenant", "acme", "--at", at)
    assert state.returncode == 1
    assert f"its event at position {position} cannot be decoded" in state.stderr


def test_verify_reports_what_it_checked(store_url: str) -> None:
    key_file = signing_key_file(store_url)
    create_signing_key(key_file)
    settings = Settings(database_url=store_url, signing_key_file=str(key_file))
    services = open_services(settings, FakeClock())
    services.directory.bootstrap("acme", "root")
    services.projector.catch_up()
    events, position, head = services.store.query(
        "SELECT events, position, hash FROM chain_head WHERE id = 1"
    )[0]
    services.evidence.checkpoint(force=True)
    with services.store.connect() as connection:
        tree = tree_head(Sql(services.store.kind, connection))
    services.close()
    found = run_cli(store_url, "audit", "verify", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout) == {
        "intact": True,
        "break": None,
        "events": events,
        "position": position,
        "head": head,
        "tree_size": events,
        "tree_root": tree.root.hex(),
        "proven": 1,
        "unproven": [],
        "authentication": {  # a store written without event keys authenticates none
            "authenticated_from": None,
            "authenticated": 0,
            "key_ids": [],
            "unauthenticated": {"from": 1, "to": position},
        },
        "skew_warnings": [],
    }
    text = run_cli(store_url, "audit", "verify").stdout
    assert f"{events} events checked, up to position {position}; chain head {head}" in text
    assert f"tree of {events} events, root {tree.root.hex()}; 1 signed checkpoints proven" in text


def test_a_state_before_the_first_event_is_one_clear_sentence(store_url: str) -> None:
    services = open_services(Settings(database_url=store_url), FakeClock())
    services.directory.bootstrap("acme", "root")
    services.close()
    at = "2000-01-01T00:00:00Z"
    result = run_cli(store_url, "audit", "state", "root", "--tenant", "acme", "--at", at)
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        == f"Error: root did not exist yet at {at}: its first event came later"
    )
