"""`callback_sources`: each tenant's registered callback sources, as they are now."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from cronledger.persistence.store import Store, as_instant
from domain.callback_sources import CallbackSource
from projections.engine import EventClass, Handler, Projection, Sql, Stamped
from projections.keyset import ListSpec, Order, Row, Slice, Window, read_slice


class CallbackSourcesProjection(Projection):
    """One row per source ever registered; a deleted one keeps its row with `deleted_at` (the
    API lists only live ones), and registering its name again brings the row back, at its new
    position on the log."""

    name = "callback_sources"
    tables = ("callback_sources",)

    def ddl(self, sql: Sql) -> list[str]:
        ts = sql.timestamp_type
        return [
            "CREATE TABLE IF NOT EXISTS callback_sources ("
            "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, name TEXT NOT NULL, "
            "description TEXT NOT NULL, generation INTEGER NOT NULL, "
            f"created_at {ts} NOT NULL, secret_created_at {ts} NOT NULL, deleted_at {ts}, "
            "version INTEGER NOT NULL, position BIGINT NOT NULL)",
            "CREATE INDEX IF NOT EXISTS callback_sources_in_order "
            "ON callback_sources (tenant_id, position)",
        ]

    def handlers(self) -> dict[EventClass, Handler]:
        return {
            CallbackSource.Registered: _registered,
            CallbackSource.Reregistered: _setting(
                lambda e, position: {
                    "description": e.description,
                    "generation": e.generation,
                    "created_at": e.at,
                    "secret_created_at": e.at,
                    "deleted_at": None,
                    "position": position,
                }
            ),
            CallbackSource.SecretRotated: _setting(
                lambda e, position: {"generation": e.generation, "secret_created_at": e.at}
            ),
            CallbackSource.Deleted: _setting(lambda e, position: {"deleted_at": e.at}),
        }


def _registered(sql: Sql, event: CallbackSource.Registered, position: int) -> None:
    sql.write(
        "INSERT INTO callback_sources (id, tenant_id, name, description, generation, "
        "created_at, secret_created_at, deleted_at, version, position) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            str(event.originator_id),
            str(event.tenant_id),
            event.name,
            event.description,
            event.generation,
            event.at,
            event.at,
            None,
            event.originator_version,
            position,
        ),
    )


def _setting(columns_of: Callable[[Any, int], dict[str, Any]]) -> Handler:
    """A handler setting the event's columns and the row's `version`."""

    def handler(sql: Sql, event: Stamped, position: int) -> None:
        columns = {**columns_of(event, position), "version": event.originator_version}
        assignments = ", ".join(f"{name} = ?" for name in columns)
        sql.write(
            f"UPDATE callback_sources SET {assignments} WHERE id = ?",  # noqa: S608
            (*columns.values(), str(event.originator_id)),
        )

    return handler


# Oldest first, in the order they were registered (a name registered again: as of then).
CALLBACK_SOURCE_ORDER = Order("callback_sources", "position")
CALLBACK_SOURCE_LISTING = ListSpec(
    CALLBACK_SOURCE_ORDER,
    "created_at",
    {"name": "name", "created_at": "position", "secret_created_at": "secret_created_at"},
    tie="position",
    searched=("LOWER(name)", "LOWER(description)"),
)


class CallbackSourceRow(NamedTuple):
    """A live source as its row keeps it: everything the API answers of it (never its
    secret)."""

    id: str
    name: str
    description: str
    generation: int
    created_at: datetime
    secret_created_at: datetime
    version: int

    @classmethod
    def of(cls, row: Row) -> CallbackSourceRow:
        source_id, name, description, generation, created_at, secret_at, version = row
        created, made = as_instant(created_at), as_instant(secret_at)
        assert created is not None  # a NOT NULL column
        assert made is not None
        return cls(
            str(source_id),
            str(name),
            str(description),
            int(generation),
            created,
            made,
            int(version),
        )

    @classmethod
    def of_aggregate(cls, source: CallbackSource) -> CallbackSourceRow:
        """The source as a command saved it: what its row becomes."""
        return cls(
            id=str(source.id),
            name=source.name,
            description=source.description,
            generation=source.generation,
            created_at=source.created_at,
            secret_created_at=source.secret_created_at,
            version=source.version,
        )


def callback_source_page(store: Store, tenant_id: UUID, window: Window) -> Slice[CallbackSourceRow]:
    """One page of the tenant's live sources (oldest first unless sorted), and how many."""
    where = ("tenant_id = ? AND deleted_at IS NULL", [str(tenant_id)])
    columns = ", ".join(CallbackSourceRow._fields)
    found = read_slice(store, "callback_sources", where, CALLBACK_SOURCE_LISTING, window, columns)
    return found.mapped(CallbackSourceRow.of)


def callback_source_row(store: Store, tenant_id: UUID, source_id: UUID) -> CallbackSourceRow | None:
    """The tenant's live source of this id, if it has one."""
    columns = ", ".join(CallbackSourceRow._fields)
    rows = store.query(
        f"SELECT {columns} FROM callback_sources "  # noqa: S608
        "WHERE tenant_id = ? AND id = ? AND deleted_at IS NULL",
        (str(tenant_id), str(source_id)),
    )
    return CallbackSourceRow.of(rows[0]) if rows else None
