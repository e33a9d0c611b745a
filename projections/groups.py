"""`groups` and `group_members`: each tenant's groups (departments) as they are now."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple
from uuid import UUID

from cronledger.persistence.store import Store, as_instant
from domain.groups import Group
from projections.engine import EventClass, Handler, Projection, Sql, Stamped
from projections.keyset import ListSpec, Order, Row, Slice, Window, read_slice

# Clears a group's members, found by the row's id (all that later events carry).
CLEAR_MEMBERS = (
    "DELETE FROM group_members WHERE (tenant_id, group_key) IN "
    "(SELECT tenant_id, key FROM groups WHERE id = ?)"
)


class GroupsProjection(Projection):
    """One row per group ever created, and one `group_members` row per member of a live
    group; a deleted group keeps its row with `deleted_at` (the API lists only live ones) and
    loses its members' rows; creating its key again brings it back at its new position."""

    name = "groups"
    tables = ("groups", "group_members")

    def ddl(self, sql: Sql) -> list[str]:
        ts = sql.timestamp_type
        return [
            "CREATE TABLE IF NOT EXISTS groups ("
            "id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, key TEXT NOT NULL, "
            "name TEXT NOT NULL, leader_id TEXT, parent_key TEXT, "
            f"created_at {ts} NOT NULL, updated_at {ts} NOT NULL, deleted_at {ts}, "
            "version INTEGER NOT NULL, position BIGINT NOT NULL)",
            "CREATE INDEX IF NOT EXISTS groups_in_order ON groups (tenant_id, position)",
            "CREATE TABLE IF NOT EXISTS group_members ("
            "tenant_id TEXT NOT NULL, group_key TEXT NOT NULL, account_id TEXT NOT NULL, "
            "PRIMARY KEY (tenant_id, group_key, account_id))",
            "CREATE INDEX IF NOT EXISTS group_members_of_account "
            "ON group_members (tenant_id, account_id)",
        ]

    def handlers(self) -> dict[EventClass, Handler]:
        return {
            Group.Created: _created,
            Group.Updated: _updated,
            Group.Deleted: _deleted,
        }


def _created(sql: Sql, event: Group.Created, position: int) -> None:
    sql.write(
        "INSERT INTO groups (id, tenant_id, key, name, leader_id, parent_key, created_at, "
        "updated_at, deleted_at, version, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            str(event.originator_id),
            str(event.tenant_id),
            event.key,
            event.name,
            event.leader_id,
            event.parent_key,
            event.at,
            event.at,
            None,
            event.originator_version,
            position,
        ),
    )
    _members(sql, event, event.members)


def _updated(sql: Sql, event: Group.Updated, position: int) -> None:
    """The fields replaced; on a deleted group, its key created again (as of this event)."""
    sql.write(
        "UPDATE groups SET created_at = CASE WHEN deleted_at IS NULL THEN created_at ELSE ? END, "
        "position = CASE WHEN deleted_at IS NULL THEN position ELSE ? END, "
        "name = ?, leader_id = ?, parent_key = ?, updated_at = ?, deleted_at = NULL, version = ? "
        "WHERE id = ?",
        (
            event.at,
            position,
            event.name,
            event.leader_id,
            event.parent_key,
            event.at,
            event.originator_version,
            str(event.originator_id),
        ),
    )
    _members(sql, event, event.members)


def _deleted(sql: Sql, event: Group.Deleted, position: int) -> None:
    _members(sql, event, [])
    sql.write(
        "UPDATE groups SET deleted_at = ?, updated_at = ?, version = ? WHERE id = ?",
        (event.at, event.at, event.originator_version, str(event.originator_id)),
    )


def _members(sql: Sql, event: Stamped, members: Sequence[str]) -> None:
    """The group's `group_members` rows become `members`."""
    group_id = str(event.originator_id)
    sql.write(CLEAR_MEMBERS, (group_id,))
    for account_id in members:
        sql.write(
            "INSERT INTO group_members (tenant_id, group_key, account_id) "
            "SELECT tenant_id, key, ? FROM groups WHERE id = ?",
            (account_id, group_id),
        )


# Oldest first, in the order they were created (a key created again: as of then).
GROUP_ORDER = Order("groups", "position")
GROUP_LISTING = ListSpec(
    GROUP_ORDER,
    "created_at",
    {"key": "key", "name": "name", "created_at": "position", "updated_at": "updated_at"},
    tie="position",
    searched=("LOWER(key)", "LOWER(name)"),
)
COLUMNS = "id, key, name, leader_id, parent_key, created_at, updated_at, version"


class GroupRow(NamedTuple):
    """A live group as its rows keep it: everything the API answers of it."""

    id: str
    key: str
    name: str
    members: list[str]  # account ids, sorted
    leader_id: str | None
    parent_key: str | None
    created_at: datetime
    updated_at: datetime
    version: int

    @classmethod
    def of(cls, row: Row, members: Sequence[str]) -> GroupRow:
        """The row of `groups`, with its members from `group_members`."""
        group_id, key, name, leader_id, parent_key, created_at, updated_at, version = row
        created, updated = as_instant(created_at), as_instant(updated_at)
        assert created is not None  # NOT NULL columns
        assert updated is not None
        return cls(
            str(group_id),
            str(key),
            str(name),
            sorted(members),
            None if leader_id is None else str(leader_id),
            None if parent_key is None else str(parent_key),
            created,
            updated,
            int(version),
        )

    @classmethod
    def of_aggregate(cls, group: Group) -> GroupRow:
        """The group as a command saved it: what its rows become."""
        return cls(
            id=str(group.id),
            key=group.key,
            name=group.name,
            members=sorted(group.members),
            leader_id=group.leader_id,
            parent_key=group.parent_key,
            created_at=group.created_at,
            updated_at=group.updated_at,
            version=group.version,
        )


def group_page(store: Store, tenant_id: UUID, window: Window) -> Slice[GroupRow]:
    """One page of the tenant's live groups (oldest first unless sorted), and how many; with
    the window's search, only those whose key or name holds it (any case)."""
    where = ("tenant_id = ? AND deleted_at IS NULL", [str(tenant_id)])
    found = read_slice(store, "groups", where, GROUP_LISTING, window, COLUMNS)
    return Slice(_rows(store, tenant_id, found.rows), found.total, found.next_key, found.capped)


def group_row(store: Store, tenant_id: UUID, group_id: UUID) -> GroupRow | None:
    """The tenant's live group of this id, if it has one."""
    return _one(store, "tenant_id = ? AND id = ?", (str(tenant_id), str(group_id)))


def group_row_of_key(store: Store, tenant_id: UUID, key: str) -> GroupRow | None:
    """The tenant's live group of this key, if it has one."""
    return _one(store, "tenant_id = ? AND key = ?", (str(tenant_id), key))


def live_group_keys(store: Store, tenant_id: UUID) -> list[str]:
    """The keys of the tenant's live groups, as the read model has them."""
    rows = store.query(
        "SELECT key FROM groups WHERE tenant_id = ? AND deleted_at IS NULL ORDER BY key",
        (str(tenant_id),),
    )
    return [str(key) for (key,) in rows]


def _one(store: Store, condition: str, params: tuple[str, ...]) -> GroupRow | None:
    rows = store.query(
        f"SELECT {COLUMNS} FROM groups WHERE {condition} AND deleted_at IS NULL",  # noqa: S608
        params,
    )
    tenant_id = UUID(params[0])
    return _rows(store, tenant_id, rows)[0] if rows else None


def _rows(store: Store, tenant_id: UUID, rows: Sequence[Row]) -> list[GroupRow]:
    """The rows with their members, read in one query."""
    keys = [str(row[1]) for row in rows]
    members: dict[str, list[str]] = {key: [] for key in keys}
    if keys:
        marks = ", ".join("?" for _ in keys)
        found = store.query(
            "SELECT group_key, account_id FROM group_members "  # noqa: S608
            f"WHERE tenant_id = ? AND group_key IN ({marks})",
            (str(tenant_id), *keys),
        )
        for key, account_id in found:
            members[str(key)].append(str(account_id))
    return [GroupRow.of(row, members[str(row[1])]) for row in rows]
