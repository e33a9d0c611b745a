"""`tenants`, `accounts` and `definitions`: the names analysts join ids to."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from cronledger.persistence.ledger import jsonable
from cronledger.persistence.store import Store, as_instant
from domain.directory import UNPUBLISHED_REVISION, Account, Definition, Tenant, seconds_rule
from projections.engine import EventClass, Handler, Projection, Sql, Stamped
from projections.json_columns import json_text, json_value
from projections.keyset import ListSpec, Order, Row, Slice, Window, names_by_id, read_slice


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
            f"updated_at {ts} NOT NULL, version INTEGER NOT NULL, position BIGINT NOT NULL, "
            "revision INTEGER NOT NULL, schedule_presets TEXT NOT NULL, "
            "allow_self_approval BOOLEAN NOT NULL, reminders TEXT NOT NULL, escalation TEXT, "
            "reviewers TEXT, deadline_rule TEXT NOT NULL, levels TEXT, "
            "restart_deadline_on_revise BOOLEAN NOT NULL DEFAULT FALSE, "
            "max_pause_seconds INTEGER, return_to TEXT NOT NULL, cancellation_definition TEXT)",
            "CREATE UNIQUE INDEX IF NOT EXISTS definitions_by_tenant "
            "ON definitions (tenant_id, key)",
            "CREATE INDEX IF NOT EXISTS definitions_in_order ON definitions (tenant_id, position)",
        ]

    def outside_ddl(self, sql: Sql) -> list[str]:
        """Written by cronledger/application/credentials.py, never by an event: each account's
        password hash, and the failed sign-ins counted for the back-off (a row per account,
        and at most `ADDRESS_ROWS` rows of addresses)."""
        ts = sql.timestamp_type
        return [
            "CREATE TABLE IF NOT EXISTS account_credentials ("
            "tenant_id TEXT NOT NULL, account_id TEXT NOT NULL, password_hash TEXT NOT NULL, "
            f"set_at {ts} NOT NULL, PRIMARY KEY (tenant_id, account_id))",
            "CREATE TABLE IF NOT EXISTS sign_in_failures ("
            "subject TEXT PRIMARY KEY, kind TEXT NOT NULL, failures INTEGER NOT NULL, "
            f"last_failure_at {ts} NOT NULL, locked_until {ts})",
            "CREATE INDEX IF NOT EXISTS sign_in_failures_by_age "
            "ON sign_in_failures (kind, last_failure_at)",
        ]

    def handlers(self) -> dict[EventClass, Handler]:
        return {
            Tenant.Registered: self.tenant_registered,
            Account.Registered: self.account_registered,
            Account.Renamed: _setting("accounts", lambda e: {"name": e.name}),
            Account.RolesChanged: _setting("accounts", lambda e: {"roles": ",".join(e.new)}),
            Account.Deactivated: _setting("accounts", lambda e: {"active": False}),
            Account.Activated: _setting("accounts", lambda e: {"active": True}),
            Account.TokenIssued: _setting("accounts", lambda e: {}),
            Account.TokenRevoked: _setting("accounts", lambda e: {}),
            Account.PasswordSet: _setting("accounts", lambda e: {}),
            Definition.Registered: self.definition_registered,
            Definition.Updated: _setting(
                "definitions",
                lambda e: {
                    "name": e.name,
                    "external": e.external,
                    "review_window_seconds": e.review_window_seconds,
                    "revision": e.revision,
                    "schedule_presets": json_text(e.schedule_presets),
                    "allow_self_approval": e.allow_self_approval,
                    "reminders": json_text(e.reminders),
                    "escalation": _json_or_null(e.escalation),
                    "reviewers": _json_or_null(e.reviewers),
                    "deadline_rule": json_text(e.deadline_rule),
                    "max_pause_seconds": e.max_pause_seconds,
                    "return_to": e.return_to,
                    "levels": _json_or_null(e.levels),
                    "restart_deadline_on_revise": e.restart_deadline_on_revise,
                    "cancellation_definition": e.cancellation_definition,
                },
            ),
            Definition.Published: _setting(
                "definitions", lambda e: {"published": True, "revision": e.revision}
            ),
            Definition.Unpublished: _setting("definitions", lambda e: {"published": False}),
        }

    @staticmethod
    def tenant_registered(sql: Sql, event: Tenant.Registered, position: int) -> None:
        sql.write(
            "INSERT INTO tenants (id, name) VALUES (?, ?)",
            (str(event.originator_id), event.name),
        )

    @staticmethod
    def account_registered(sql: Sql, event: Account.Registered, position: int) -> None:
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
    def definition_registered(sql: Sql, event: Definition.Registered, position: int) -> None:
        sql.write(
            "INSERT INTO definitions (id, tenant_id, key, name, external, published, "
            "review_window_seconds, created_at, updated_at, version, position, revision, "
            "schedule_presets, allow_self_approval, reminders, escalation, reviewers, "
            "deadline_rule, levels, restart_deadline_on_revise, max_pause_seconds, return_to, "
            "cancellation_definition) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                UNPUBLISHED_REVISION,
                json_text(event.schedule_presets),
                event.allow_self_approval,
                json_text(event.reminders),
                _json_or_null(event.escalation),
                _json_or_null(event.reviewers),
                json_text(event.deadline_rule or seconds_rule(event.review_window_seconds)),
                _json_or_null(event.levels),
                event.restart_deadline_on_revise,
                event.max_pause_seconds,
                event.return_to,
                event.cancellation_definition,
            ),
        )


def _json_or_null(value: Any) -> str | None:
    return None if value is None else json_text(value)


def _setting(table: str, columns_of: Callable[[Any], dict[str, Any]]) -> Handler:
    """A handler setting the event's columns, `updated_at` and `version` of its row (an
    account's row by its `aggregate_id`: its `id` is the API's, unique in its tenant)."""
    key = "aggregate_id" if table == "accounts" else "id"

    def handler(sql: Sql, event: Stamped, position: int) -> None:
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
ACCOUNT_LISTING = ListSpec(
    ACCOUNT_ORDER,
    "created_at",
    {"id": "id", "name": "name", "created_at": "position", "updated_at": "updated_at"},
    tie="position",
    searched=("LOWER(id)", "LOWER(name)"),
)
DEFINITION_LISTING = ListSpec(
    DEFINITION_ORDER,
    "created_at",
    {
        "key": "key",
        "name": "name",
        "created_at": "position",
        "updated_at": "updated_at",
        "published": "published",
    },
    tie="position",
    searched=("LOWER(key)", "LOWER(name)"),
)


class AccountRow(NamedTuple):
    """An account as its `accounts` row keeps it: everything the API answers of it."""

    id: str
    name: str
    roles: list[str]
    active: bool
    version: int
    created_at: datetime

    @classmethod
    def of(cls, row: Row) -> AccountRow:
        account_id, name, roles, active, version, created_at = row
        created = as_instant(created_at)
        assert created is not None  # a NOT NULL column
        listed = roles.split(",") if roles else []
        return cls(str(account_id), str(name), listed, bool(active), int(version), created)

    @classmethod
    def of_aggregate(cls, account: Account) -> AccountRow:
        """The account as a command saved it: what its row becomes."""
        return cls(
            id=account.account_id,
            name=account.name,
            roles=list(account.roles),
            active=account.active,
            version=account.version,
            created_at=account.created_at,
        )


class DefinitionRow(NamedTuple):
    """A definition as its `definitions` row keeps it: everything the API answers of it."""

    id: str
    key: str
    name: str
    external: bool
    published: bool
    revision: int
    review_window_seconds: int
    schedule_presets: list[dict[str, Any]]
    allow_self_approval: bool
    reminders: list[dict[str, int]]
    escalation: dict[str, Any] | None
    version: int
    created_at: datetime
    reviewers: dict[str, Any] | None
    deadline_rule: dict[str, Any]
    max_pause_seconds: int | None
    return_to: str
    levels: list[dict[str, Any]] | None
    restart_deadline_on_revise: bool
    cancellation_definition: str | None

    @classmethod
    def of(cls, row: Row) -> DefinitionRow:
        values = dict(zip(cls._fields, row, strict=True))
        for name in ("external", "published", "allow_self_approval", "restart_deadline_on_revise"):
            values[name] = bool(values[name])
        values["schedule_presets"] = json.loads(values["schedule_presets"])
        values["reminders"] = json.loads(values["reminders"])
        values["escalation"] = json_value(values["escalation"])
        values["reviewers"] = json_value(values["reviewers"])
        values["levels"] = json_value(values["levels"])
        values["deadline_rule"] = json.loads(values["deadline_rule"])
        values["created_at"] = as_instant(values["created_at"])
        return cls(**values)

    @classmethod
    def of_aggregate(cls, definition: Definition) -> DefinitionRow:
        """The definition as a command saved it: what its row becomes (nested values as the
        row's JSON columns give them back)."""
        return cls(
            id=str(definition.id),
            key=definition.key,
            name=definition.name,
            external=definition.external,
            published=definition.published,
            revision=definition.revision,
            review_window_seconds=definition.review_window_seconds,
            schedule_presets=jsonable(definition.schedule_presets),
            allow_self_approval=definition.allow_self_approval,
            reminders=jsonable(definition.reminders),
            escalation=jsonable(definition.escalation),
            version=definition.version,
            created_at=definition.created_at,
            reviewers=jsonable(definition.reviewers),
            deadline_rule=dict(definition.deadline_rule),
            max_pause_seconds=definition.max_pause_seconds,
            return_to=definition.return_to,
            levels=jsonable(definition.levels),
            restart_deadline_on_revise=definition.restart_deadline_on_revise,
            cancellation_definition=definition.cancellation_definition,
        )


def account_page(store: Store, tenant_id: UUID, window: Window) -> Slice[AccountRow]:
    """One page of the tenant's accounts (oldest first unless sorted), and how many."""
    where = ("tenant_id = ?", [str(tenant_id)])
    columns = ", ".join(AccountRow._fields)
    found = read_slice(store, "accounts", where, ACCOUNT_LISTING, window, columns)
    return found.mapped(AccountRow.of)


def definition_page(store: Store, tenant_id: UUID, window: Window) -> Slice[DefinitionRow]:
    """One page of the tenant's definitions (oldest first unless sorted), and how many."""
    where = ("tenant_id = ?", [str(tenant_id)])
    columns = ", ".join(DefinitionRow._fields)
    found = read_slice(store, "definitions", where, DEFINITION_LISTING, window, columns)
    return found.mapped(DefinitionRow.of)


def account_row(store: Store, tenant_id: UUID, account_id: str) -> AccountRow | None:
    """The tenant's account of this id, if it has one."""
    if "\x00" in account_id:  # no account's id holds it, and PostgreSQL refuses it in text
        return None
    columns = ", ".join(AccountRow._fields)
    rows = store.query(
        f"SELECT {columns} FROM accounts WHERE tenant_id = ? AND id = ?",  # noqa: S608
        (str(tenant_id), account_id),
    )
    return AccountRow.of(rows[0]) if rows else None


def account_ids_named(store: Store, tenant_id: UUID, name: str) -> list[str]:
    """The ids of the tenant's accounts of this name (names need not be unique), at most two:
    enough to tell one from several."""
    if "\x00" in name:
        return []
    rows = store.query(
        "SELECT id FROM accounts WHERE tenant_id = ? AND name = ? ORDER BY position LIMIT 2",
        (str(tenant_id), name),
    )
    return [str(row[0]) for row in rows]


def definition_row(store: Store, tenant_id: UUID, definition_id: UUID) -> DefinitionRow | None:
    """The tenant's definition of this id, if it has one."""
    return _definition_where(
        store, "tenant_id = ? AND id = ?", (str(tenant_id), str(definition_id))
    )


def definition_row_of_key(store: Store, tenant_id: UUID, key: str) -> DefinitionRow | None:
    """The tenant's definition of this key (keys are unique in a tenant), if it has one."""
    if "\x00" in key:  # no definition's key holds it, and PostgreSQL refuses it in text
        return None
    return _definition_where(store, "tenant_id = ? AND key = ?", (str(tenant_id), key))


def _definition_where(
    store: Store, condition: str, params: tuple[str, ...]
) -> DefinitionRow | None:
    columns = ", ".join(DefinitionRow._fields)
    rows = store.query(f"SELECT {columns} FROM definitions WHERE {condition}", params)  # noqa: S608
    return DefinitionRow.of(rows[0]) if rows else None


def account_names(store: Store, tenant_id: UUID, ids: Iterable[str]) -> dict[str, str]:
    """The name of each of the tenant's accounts of these ids."""
    return {str(i): str(n) for i, n in names_by_id(store, "accounts", "name", tenant_id, ids)}


def definition_names(store: Store, tenant_id: UUID, ids: Iterable[str]) -> dict[str, str]:
    """The name of each of the tenant's definitions of these ids."""
    return {str(i): str(n) for i, n in names_by_id(store, "definitions", "name", tenant_id, ids)}
