"""Every part of the eventsourcing library's insides that cronledger relies on, checked in one
place, so that an upgrade of the library that moves one fails here, by name.

cronledger/persistence/recorders.py overrides `_insert_events` (and calls `_lock_table`) and
unwraps the library's retry decorator (`__wrapped__`); cronledger/persistence/ledger.py and
store.py read the recorders' table names (`table_of`) and the log position's column
(`Store.position_column`); cronledger/persistence/wakeup.py listens on the recorder's
`channel_name`; and caller-supplied JSON is kept as text because the library's JSON
transcoder reads any object whose keys are `_type_` and `_data_` as an encoded value.
"""

from __future__ import annotations

import inspect
from uuid import uuid4

import pytest
from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresAggregateRecorder, PostgresApplicationRecorder
from eventsourcing.sqlite import SQLiteApplicationRecorder

from cronledger.application.services import Services
from cronledger.persistence.ledger import table_of
from cronledger.persistence.recorders import BinaryAppendRecorder, CheckingSQLiteRecorder
from cronledger.persistence.transcoding import LogTranscoder

RETRIED = {
    PostgresApplicationRecorder: (
        "insert_events",
        "select_events",
        "select_notifications",
        "max_notification_id",
    ),
    PostgresAggregateRecorder: ("insert_events", "select_events"),
}


def parameters(method: object) -> list[str]:
    return list(inspect.signature(method).parameters)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "recorder", [PostgresApplicationRecorder, SQLiteApplicationRecorder], ids=lambda r: r.__name__
)
def test_an_append_goes_through_insert_events_with_the_cursor_and_the_events(
    recorder: type,
) -> None:
    """`BinaryAppendRecorder` and `CheckingSQLiteRecorder` override it and call it."""
    names = parameters(recorder._insert_events)
    assert (names[0], names[2]) == ("self", "stored_events")  # the cursor between them
    assert inspect.Parameter.VAR_KEYWORD in {
        p.kind for p in inspect.signature(recorder._insert_events).parameters.values()
    }


def test_postgresql_takes_its_append_lock_with_lock_table() -> None:
    """A checked append takes it first, so that what it checked stays true until the commit."""
    assert parameters(PostgresApplicationRecorder._lock_table) == ["self", "curs"]


@pytest.mark.parametrize("recorder", list(RETRIED), ids=lambda r: r.__name__)
def test_the_retrying_methods_keep_the_method_they_wrap(recorder: type) -> None:
    """`_retried_once` unwraps them to retry once instead of ten times."""
    for name in RETRIED[recorder]:
        assert callable(getattr(getattr(recorder, name), "__wrapped__", None)), name


def test_the_recorders_name_their_tables_and_the_log_position_has_its_column(
    services: Services,
) -> None:
    ledger, store = services.ledger, services.store
    expected = BinaryAppendRecorder if store.kind == "postgresql" else CheckingSQLiteRecorder
    assert isinstance(ledger.recorder, expected)
    services.directory.bootstrap("acme", "root")
    end = ledger.recorder.max_notification_id()
    positions = store.query(
        f"SELECT {store.position_column} FROM {table_of(ledger.recorder)} "
        f"ORDER BY {store.position_column}"
    )
    listed = ledger.recorder.select_notifications(start=1, limit=1000)
    assert [int(row[0]) for row in positions] == [n.id for n in listed]
    assert positions[-1][0] == end
    assert table_of(ledger.recorder) == ledger.events_table


def test_postgresql_recorders_notify_on_a_channel_they_name(services: Services) -> None:
    """The projections loop listens on it (cronledger/persistence/wakeup.py)."""
    channel = getattr(services.ledger.recorder, "channel_name", None)
    if services.store.kind == "postgresql":
        assert isinstance(channel, str)
        assert channel
    else:
        assert channel is None


def test_the_json_transcoder_reads_type_and_data_objects_as_encoded_values() -> None:
    """Why caller-supplied JSON (form data, presets) is stored as text, never as an object: an
    object with these two keys is decoded as the type it names, and an unknown type fails."""
    value = uuid4()
    encoded = f'{{"x": {{"_type_": "uuid_hex", "_data_": "{value.hex}"}}}}'.encode()
    assert LogTranscoder().decode(encoded) == {"x": value}
    with pytest.raises(TypeError):
        LogTranscoder().decode(b'{"x": {"_type_": "no_such_type", "_data_": 1}}')


def test_a_stored_event_is_its_id_version_topic_and_state() -> None:
    """The fixture stores of earlier releases are copied in as these (tests/release_stores.py)."""
    fields = list(StoredEvent.__dataclass_fields__)
    assert fields == ["originator_id", "originator_version", "topic", "state"]
