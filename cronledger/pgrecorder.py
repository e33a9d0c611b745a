"""PostgreSQL appends in psycopg's binary format (no per-row text escaping of the events)."""

from __future__ import annotations

from typing import Any

from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg.sql import SQL, Identifier


class BinaryAppendRecorder(PostgresApplicationRecorder):
    """eventsourcing's recorder, sending the array of new events as binary (`%b`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.insert_events_statement = SQL(
            "INSERT INTO {schema}.{table} AS t (originator_id, originator_version, topic, state)"
            " SELECT originator_id, originator_version, topic, state"
            " FROM unnest(%b::{schema}.{stored_event_type}[]) RETURNING notification_id"
        ).format(
            schema=Identifier(self.datastore.schema),
            table=Identifier(self.events_table_name),
            stored_event_type=Identifier(self.stored_event_type_name),
        )
