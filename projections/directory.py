"""`tenants`, `accounts` and `definitions`: the names analysts join ids to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from cronledger.persistence.store import Store
from projections.engine import Handler, Projection, Sql
from projections.keyset import Order, Row, Slice, Window, read_slice


class DirectoryProjection(Projection):
    """Accounts (roles as comma-separated text) and process definitions, as they are now;
    `position` is where each was registered on the log: the order the API lists them in."""

    name = "directory"
    tables = ("tenants", "accounts", "definitions")

    def ddl(self, sql: Sql) -> list[str]:
        ts = sql.timestamp_type
        return [
            "CREATE TABLE IF NOT EXISTS tenants (id TEXT PRIMARY KEY, name TEXT NOT NULL)",
            "CREATE UNIQUE INDEX IF NOT EXISTS tenants_by_name ON tenants (name)",
            "CREATE TABLE IF NOT EXISTS accounts ("
            "aggregate_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, id TEXT NOT NULL, "
            "name TEXT NOT NULL, roles TEXT NOT NULL, active BOOLEAN NOT NULL, "
            f"created_at {ts} NOT NULL, updated_at {ts} NOT NULL, version INTEGER NOT NULL, "
            "position BIGINT NOT NULL)",
            "CREATE UNIQUE INDEX IF NOT EXISTS accounts_by_tenant ON accounts (tenant_id, id)",
            "CREATE INDEX IF NOT EXISTS accounts_in_order ON accounts (tenant_id, position)",
            "CREATE TABLE IF NOT EXISTS definitions ("
            "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, key TEXT NOT NULL, "
            "name TEXT NOT NULL, external BOOLEAN NOT NULL, published BOOLEAN NOT NULL, "
            f"review_window_seconds INTEGER NOT NULL, created_at {ts} NOT NULL, "
            f"updated_at {ts} NOT NULL, version INTEGER NOT NULL, position BIGINT NOT NULL)",
            "CREATE UNIQUE INDEX IF NOT EXISTS definitions_by_tenant "
            "ON definitions (tenant_id, key)",
            "CREATE INDEX IF NOT EXISTS definitions_in_order ON definitions (tenant_id, position)",
        ]

    def handlers(self) -> dict[str, Handler]:
        return {
            "Tenant.Registered": self.tenant_registered,
            "Account.Registered": self.account_registered,
            "Account.Renamed": _setting("accounts", lambda e: {"name": e.name}),
            "Account.RolesChanged": _setting("accounts", lambda e: {"roles": ",".join(e.new)}),
            "Account.Deactivated": _setting("accounts", lambda e: {"active": False}),
            "Account.Activated": _setting("accounts", lambda e: {"active": True}),
            "Account.TokenIssued": _setting("accounts", lambda e: {}),
            "Account.TokenRevoked": _setting("accounts", lambda e: {}),
            "Definition.Registered": self.definition_registered,
            "Definition.Updated": _setting(
                "definitions",
                lambda e: {
                    "name": e.name,
                    "external": e.external,
                    "review_window_seconds": e.review_window_seconds,
                },
            ),
            "Definition.Published": _setting("definitions", lambda e: {"published": True}),
            "Definition.Unpublished": _setting("definitions", lambda e: {"published": False}),
        }

    @staticmethod
    def tenant_registered(sql: Sql, event: Any, position: int) -> None:
        sql.write(
            "INSERT INTO tenants (id, name) VALUES (?, ?)",
            (str(event.originator_id), event.name),
        )

    @staticmethod
    def account_registered(sql: Sql, event: Any, position: int) -> None:
        sql.write(
            "INSERT INTO accounts (aggregate_id, tenant_id, id, name, roles, active, created_at, "
            "updated_at, version, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                str(event.originator_id),
                str(event.tenant_id),
                event.account_id,
                event.name,
                ",".join(sorted(set(event.roles))),
                True,
                event.at,
                event.at,
                event.originator_version,
                position,
            ),
        )

    @staticmethod
    def definition_registered(sql: Sql, event: Any, position: int) -> None:
        sql.write(
            "INSERT INTO definitions (id, tenant_id, key, name, external, published, "
            "review_window_seconds, created_at, updated_at, version, position) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                str(event.originator_id),
                str(event.tenant_id),
                event.key,
                event.name,
                event.external,
                False,
                event.review_window_seconds,
                event.at,
                event.at,
                event.originator_version,
                position,
            ),
        )


def _setting(table: str, columns_of: Callable[[Any], dict[str, Any]]) -> Handler:
    """A handler setting the event's columns, `updated_at` and `version` of its row (an
    account's row by its `aggregate_id`: its `id` is the API's, unique in its tenant)."""
    key = "aggregate_id" if table == "accounts" else "id"

    def handler(sql: Sql, event: Any, position: int) -> None:
        columns = {**columns_of(event), "updated_at": event.at, "version": event.originator_version}
        assignments = ", ".join(f"{name} = ?" for name in columns)
        sql.write(
            f"UPDATE {table} SET {assignments} WHERE {key} = ?",  # noqa: S608
            (*columns.values(), str(event.originator_id)),
        )

    return handler


# Oldest first, in the order they were registered.
ACCOUNT_ORDER = Order("accounts", "position")
DEFINITION_ORDER = Order("definitions", "position")


def account_page(store: Store, tenant_id: UUID, window: Window) -> Slice[Row]:
    """One page of the ids (the API's) of the tenant's accounts, oldest first, and how many."""
    where = ("tenant_id = ?", [str(tenant_id)])
    return read_slice(store, "accounts", where, ACCOUNT_ORDER, window)


def definition_page(store: Store, tenant_id: UUID, window: Window) -> Slice[Row]:
    """One page of the ids of the tenant's definitions, oldest first, and how many."""
    where = ("tenant_id = ?", [str(tenant_id)])
    return read_slice(store, "definitions", where, DEFINITION_ORDER, window)
