"""Issue 32, item 6: someone who can write to the events table but holds none of the service's
keys copies, inserts or edits an event with SQL. Its MAC is missing or wrong, so `audit verify`
names it and no checkpoint or evidence bundle vouches for it."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from cronledger.application.evidence import UnauthenticatedEvent
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from cronledger.persistence.event_auth import BOUNDARY_TABLE, MAC_TABLE
from cronledger.persistence.event_keys import load_event_keys
from cronledger.persistence.store import Store
from domain.directory import account_uuid, tenant_uuid
from tests.e2e.test_audit_tampering import execute, inserted_row
from tests.processes import environment, event_keys_file, run_cli, run_in, signing_key_file
from tests.support import FakeClock

ROOT = account_uuid(tenant_uuid("acme"), "root")
Damage = Callable[[Store, str, int], int]  # the damage done; the position it names


def settings(store_url: str, **more: Any) -> Settings:
    return Settings(
        database_url=store_url,
        signing_key_file=str(signing_key_file(store_url)),
        event_keys_file=str(event_keys_file(store_url)),
        **more,
    )


def migrated(store_url: str) -> None:
    done = run_cli(store_url, "migrate")
    assert done.returncode == 0, done.stderr
    assert "event keys " in done.stdout


def history(store_url: str) -> Services:
    """Two tenants on a store that authenticates its events, projected."""
    migrated(store_url)
    services = open_services(settings(store_url), FakeClock())
    services.directory.bootstrap("acme", "root")
    services.directory.bootstrap("beta", "boss")
    services.projector.catch_up()
    return services


def root_rows(store: Store, table: str) -> list[tuple[int, int]]:
    stored_id = ROOT.hex if store.kind == "sqlite" else ROOT
    rows = store.query(
        f"SELECT {store.position_column}, originator_version FROM {table} "
        "WHERE originator_id = ? ORDER BY originator_version",
        (stored_id,),
    )
    return [(int(p), int(v)) for p, v in rows]


def earlier(value: Any, by: timedelta) -> Any:
    """The event's state with every instant `by` earlier and its actor changed."""
    if isinstance(value, dict):
        if value.get("_type_") == "datetime_iso":
            instant = datetime.fromisoformat(value["_data_"]) - by
            return {**value, "_data_": instant.isoformat()}
        return {k: "mallory" if k == "actor" else earlier(v, by) for k, v in value.items()}
    if isinstance(value, list):
        return [earlier(v, by) for v in value]
    return value


def appended(store: Store, table: str) -> int:
    """root's last event copied to the end of the log: the next version, the actor changed,
    its time four minutes before the event logged before it."""
    pos = store.position_column
    position, version = root_rows(store, table)[-1]
    topic, state = store.query(f"SELECT topic, state FROM {table} WHERE {pos} = ?", (position,))[0]
    forged = json.dumps(earlier(json.loads(bytes(state)), timedelta(minutes=4))).encode()
    execute(
        store,
        (
            f"INSERT INTO {table} (originator_id, originator_version, topic, state) "
            f"SELECT originator_id, ?, ?, ? FROM {table} WHERE {pos} = ?",
            (version + 1, topic, forged, position),
        ),
    )
    return int(store.query(f"SELECT MAX({pos}) FROM {table}")[0][0])


def inserted(store: Store, table: str) -> int:
    position = root_rows(store, table)[0][0]
    inserted_row(store, table, position)
    return position


def altered(store: Store, table: str) -> int:
    """root's first event edited: still valid JSON, one more space at its end."""
    position = root_rows(store, table)[0][0]
    pos = store.position_column
    state = bytes(store.query(f"SELECT state FROM {table} WHERE {pos} = ?", (position,))[0][0])
    execute(store, (f"UPDATE {table} SET state = ? WHERE {pos} = ?", (state + b" ", position)))
    return position


def altered_to_text(store: Store, table: str) -> int:
    """root's first event edited as a person at a SQL prompt would: the state stored as text
    (SQLite keeps what it is given; PostgreSQL's column takes only bytes)."""
    position = root_rows(store, table)[0][0]
    pos = store.position_column
    state = bytes(store.query(f"SELECT state FROM {table} WHERE {pos} = ?", (position,))[0][0])
    text = state.decode().replace("root", "mall")
    stored: object = text if store.kind == "sqlite" else text.encode()
    execute(store, (f"UPDATE {table} SET state = ? WHERE {pos} = ?", (stored, position)))
    return position


def verified(store_url: str, code: int) -> dict[str, Any]:
    done = run_cli(store_url, "audit", "verify", "--json")
    assert done.returncode == code, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    return dict(json.loads(done.stdout))


def test_a_legitimate_store_verifies_intact_with_every_event_authenticated(
    store_url: str,
) -> None:
    services = history(store_url)
    events = services.ledger.recorder.max_notification_id()
    services.close()
    found = verified(store_url, 0)
    keys = load_event_keys(event_keys_file(store_url))
    assert keys is not None
    assert found["intact"] is True
    assert found["authentication"] == {
        "authenticated_from": 1,
        "authenticated": events,
        "key_ids": [keys.writer.key_id],
        "unauthenticated": None,
    }
    assert found["skew_warnings"] == []
    text = run_cli(store_url, "audit", "verify").stdout
    assert f"events authenticated from position 1: {events} checked" in text


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (appended, "not authenticated"),
        (inserted, "its authentication does not match"),  # the position had a MAC
        (altered, "its authentication does not match"),
        (altered_to_text, "its authentication does not match"),
    ],
)
def test_an_event_written_with_sql_is_named_and_no_bundle_vouches_for_it(
    store_url: str, damage: Callable[[Store, str], int], problem: str
) -> None:
    services = history(store_url)
    position = damage(services.store, services.ledger.events_table)
    services.close()

    found = verified(store_url, 1)
    assert found["break"]["position"] == position
    assert problem in found["break"]["problem"]

    services = open_services(settings(store_url), FakeClock())
    try:
        with pytest.raises(UnauthenticatedEvent) as refused:
            services.evidence.bundle(ROOT)
        assert f"the event at position {position} fails its authentication" in str(
            refused.value.message
        )
        latest = services.evidence.latest()
        assert latest is None or latest.position < position  # no checkpoint covers it
    finally:
        services.close()


def test_a_forged_append_gives_a_skew_warning_and_no_checkpoint_covers_it(
    store_url: str,
) -> None:
    services = history(store_url)
    before = services.ledger.recorder.max_notification_id()
    position = appended(services.store, services.ledger.events_table)
    services.projector.catch_up()
    signed = services.evidence.checkpoint(force=True)
    services.close()
    assert signed is not None
    assert signed.position == before

    found = verified(store_url, 1)
    assert found["skew_warnings"] == [
        {"position": position, "previous_position": before, "seconds": 240.0}
    ]
    text = run_cli(store_url, "audit", "verify").stdout
    assert f"warning: the event at position {position} was recorded 240 s before" in text


def test_a_skewed_clock_warns_and_does_not_fail(store_url: str) -> None:
    migrated(store_url)
    clock = FakeClock()
    services = open_services(settings(store_url), clock)
    services.directory.bootstrap("acme", "root")
    first = services.ledger.recorder.max_notification_id()
    clock.now -= timedelta(seconds=10)
    services.directory.bootstrap("beta", "boss")
    services.close()
    found = verified(store_url, 0)
    assert found["intact"] is True
    assert found["skew_warnings"][0]["previous_position"] == first
    assert found["skew_warnings"][0]["seconds"] == 10.0
    assert verified_with(store_url, CRONLEDGER_AUDIT_CLOCK_SKEW_SECONDS="15")["skew_warnings"] == []


def verified_with(store_url: str, **env: str) -> dict[str, Any]:
    done = run_in(environment(store_url, **env), None, "audit", "verify", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(json.loads(done.stdout))


def test_events_under_an_old_and_a_new_key_verify_and_an_unknown_key_is_named(
    store_url: str,
) -> None:
    services = history(store_url)
    services.close()
    rotated = run_cli(store_url, "rotate-event-key")
    assert rotated.returncode == 0, rotated.stderr
    keys = load_event_keys(event_keys_file(store_url))
    assert keys is not None
    assert len(keys.keys) == 2
    services = open_services(settings(store_url), FakeClock())
    services.directory.bootstrap("gamma", "chief")
    last = services.ledger.recorder.max_notification_id()
    services.close()
    found = verified(store_url, 0)
    assert found["authentication"]["key_ids"] == sorted(k.key_id for k in keys.keys)

    execute(
        Store.from_url(store_url),
        (f"UPDATE {MAC_TABLE} SET key_id = ? WHERE position = ?", ("0" * 16, last)),
    )
    found = verified(store_url, 1)
    assert found["break"] == {
        "position": last,
        "problem": f"authenticated by key id {'0' * 16}, which no event key file holds",
    }


def test_a_store_written_before_authentication_shows_one_unauthenticated_range(
    store_url: str,
) -> None:
    services = open_services(Settings(database_url=store_url), FakeClock())  # no event keys
    services.directory.bootstrap("acme", "root")
    before = services.ledger.recorder.max_notification_id()
    services.close()
    migrated(store_url)
    services = open_services(settings(store_url), FakeClock())
    services.directory.bootstrap("beta", "boss")
    last = services.ledger.recorder.max_notification_id()
    services.close()

    found = verified(store_url, 0)
    assert found["authentication"]["authenticated_from"] == before + 1
    assert found["authentication"]["unauthenticated"] == {"from": 1, "to": before}
    assert found["authentication"]["authenticated"] == last - before
    text = run_cli(store_url, "audit", "verify").stdout
    assert f"positions 1 to {before} were written before, unauthenticated" in text


def test_a_process_started_before_the_migration_takes_the_keys_it_made(store_url: str) -> None:
    """`cronledger migrate` run beside a serving process (a rolling upgrade): the process,
    started without keys, finds the store authenticating its events and writes with the keys
    the migration made in its keys file, rather than failing every write."""
    services = open_services(settings(store_url), FakeClock())  # no keys file yet
    services.directory.bootstrap("acme", "root")
    before = services.ledger.recorder.max_notification_id()
    migrated(store_url)
    services.directory.bootstrap("beta", "boss")
    last = services.ledger.recorder.max_notification_id()
    services.close()
    found = verified(store_url, 0)
    assert found["authentication"]["unauthenticated"] == {"from": 1, "to": before}
    assert found["authentication"]["authenticated"] == last - before


def test_the_boundary_moved_or_deleted_is_a_break(store_url: str) -> None:
    history(store_url).close()
    store = Store.from_url(store_url)
    execute(store, (f"UPDATE {BOUNDARY_TABLE} SET authenticated_from = 100", ()))
    assert (
        "the record of the position events are authenticated from was altered"
        in (verified(store_url, 1)["break"]["problem"])
    )
    execute(store, (f"DELETE FROM {BOUNDARY_TABLE}", ()))
    assert "was deleted" in verified(store_url, 1)["break"]["problem"]


def test_the_boundary_and_every_mac_deleted_then_a_forged_append_is_a_break(
    store_url: str,
) -> None:
    """Wiping the store's whole authentication does not turn it into one written before."""
    services = history(store_url)
    table = services.ledger.events_table
    services.close()
    store = Store.from_url(store_url)
    execute(store, (f"DELETE FROM {BOUNDARY_TABLE}", ()))
    execute(store, (f"DELETE FROM {MAC_TABLE}", ()))
    appended(store, table)
    found = verified(store_url, 1)
    assert found["break"]["position"] == 1
    assert (
        "has no record of the position events are authenticated from" in (found["break"]["problem"])
    )


def test_a_process_without_the_key_writes_nothing_and_says_how_to_set_it(
    store_url: str,
) -> None:
    history(store_url).close()
    env = environment(
        store_url, CRONLEDGER_EVENT_KEYS_FILE=str(event_keys_file(store_url)) + "-none"
    )
    done = run_in(env, None, "bootstrap", "--tenant", "delta", "--admin", "dora")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "set CRONLEDGER_EVENT_KEYS_FILE" in done.stderr
    assert "delta" not in json.dumps(verified(store_url, 0))  # nothing written
    refused = run_in(env, None, "audit", "verify")
    assert refused.returncode == 1
    assert "set CRONLEDGER_EVENT_KEYS_FILE" in refused.stderr
