"""Groups (departments): creating, replacing and deleting them, and reading them.

The rules across groups and accounts are checked here, against the log: a group's members are
accounts of its tenant, its parent a live group of it, its parents never form a cycle, and a
group that live groups name as their parent is not deleted. Each change of a group is saved
with an event of its tenant (`Tenant.GroupChanged`), so changes in one tenant happen one after
the other and these checks hold when two are sent at once; the tenant keeps its groups' keys,
so `facts` reads every group from the log, never from a read model that may be behind it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from cronledger.application.directory import Directory, Page
from cronledger.application.idempotency import check_key, key_record
from cronledger.persistence.ledger import Ledger, TimelineEntry
from domain.directory import (
    Account,
    Principal,
    Tenant,
    account_uuid,
    check_expected_version,
    no_such_accounts,
    no_such_groups,
)
from domain.errors import NotFound, ValidationFailed, every_problem
from domain.groups import (
    KIND,
    Group,
    GroupFacts,
    GroupIsParent,
    applicant_leader,
    check_group,
    group_uuid,
    leaders_up,
    parent_cycle,
)
from domain.idempotency import KeyedRequest
from domain.messages import Message
from projections.groups import GroupRow, group_page, group_row, group_row_of_key
from projections.keyset import Window


@dataclass(frozen=True)
class GroupFields:
    """What a create or a replace sets (a group's key never changes)."""

    name: str
    members: list[str]
    leader_id: str | None
    parent_key: str | None


class Groups:
    def __init__(self, ledger: Ledger, directory: Directory) -> None:
        self.ledger = ledger
        self.directory = directory

    # -- commands ----------------------------------------------------------------------------

    def create(
        self, actor: Principal, key: str, fields: GroupFields, request: KeyedRequest | None = None
    ) -> GroupRow:
        """A new group, or a deleted one's key created again; a repeat of a keyed `request`
        stops with `AlreadyCreated`."""
        return self.ledger.retrying(lambda: self._create(actor, key, fields, request))

    def _create(
        self, actor: Principal, key: str, fields: GroupFields, request: KeyedRequest | None
    ) -> GroupRow:
        check_key(self.ledger, request)
        tenant = self.directory.tenant(actor.tenant_id)
        self._check(tenant, key, fields)
        at = self.ledger.clock()
        group_id = group_uuid(actor.tenant_id, key)
        if self.ledger.exists(group_id):
            check_key(self.ledger, request)  # made by a request racing with the same key?
            group = self.ledger.find(Group, group_id, KIND, key)
            group.create_again(*_values(fields), at=at, actor=actor.account_id)
        else:
            group = Group.create(actor.tenant_id, key, *_values(fields), at, actor.account_id)
        tenant.group_changed(key, at, actor.account_id)
        self.ledger.save(group, tenant, key_record(request, KIND, str(group.id), at))
        return GroupRow.of_aggregate(group)

    def replace(
        self,
        actor: Principal,
        group_id: str,
        fields: GroupFields,
        version: int | None,
        reason: str | None = None,
    ) -> GroupRow:
        """Replace a live group's fields; its key stays."""
        return self.ledger.retrying(lambda: self._replace(actor, group_id, fields, version, reason))

    def _replace(
        self,
        actor: Principal,
        group_id: str,
        fields: GroupFields,
        version: int | None,
        reason: str | None,
    ) -> GroupRow:
        group = self.aggregate(actor.tenant_id, group_id)
        check_expected_version(KIND, group.version, version)
        tenant = self.directory.tenant(actor.tenant_id)
        self._check(tenant, group.key, fields)
        at = self.ledger.clock()
        group.update(*_values(fields), at=at, actor=actor.account_id, reason=reason)
        tenant.group_changed(group.key, at, actor.account_id)
        self.ledger.save(group, tenant)
        return GroupRow.of_aggregate(group)

    def delete(
        self, actor: Principal, group_id: str, version: int | None, reason: str | None
    ) -> None:
        """Delete a live group that no live group names as its parent."""
        self.ledger.retrying(lambda: self._delete(actor, group_id, version, reason))

    def _delete(
        self, actor: Principal, group_id: str, version: int | None, reason: str | None
    ) -> None:
        group = self.aggregate(actor.tenant_id, group_id)
        check_expected_version(KIND, group.version, version)
        tenant = self.directory.tenant(actor.tenant_id)
        children = sorted(
            other.key for other in self._live_groups(tenant) if other.parent_key == group.key
        )
        if children:
            raise GroupIsParent(group.key, children)
        at = self.ledger.clock()
        group.delete(at, actor.account_id, reason)
        tenant.group_changed(group.key, at, actor.account_id)
        self.ledger.save(group, tenant)

    def check(self, tenant_id: UUID, key: str, fields: GroupFields) -> None:
        """Every rule a group's fields break, its own and those across the tenant, at once."""
        self._check(self.directory.tenant(tenant_id), key, fields)

    def _check(self, tenant: Tenant, key: str, fields: GroupFields) -> None:
        """A field the group's own rules refuse is named by them, not by those across."""
        errors = every_problem(
            lambda: self._check_across(tenant.id, key, fields, self._live_groups(tenant)),
            lambda: check_group(
                key, fields.name, fields.members, fields.leader_id, fields.parent_key
            ),
        )
        if errors:
            raise ValidationFailed(errors)

    def _check_across(
        self, tenant_id: UUID, key: str, fields: GroupFields, others: Sequence[Group]
    ) -> None:
        """The members are the tenant's accounts; the parent is a live group of the tenant,
        and the group is not among its parents (every wrong field named at once)."""
        errors: dict[str, list[str]] = {}
        unknown = self._unknown_accounts(tenant_id, fields.members)
        if unknown:
            errors["members"] = [no_such_accounts(unknown)]
        parent_of = {other.key: other.parent_key for other in others if other.key != key}
        if fields.parent_key is not None and fields.parent_key not in parent_of:
            errors["parent_key"] = [no_such_groups([fields.parent_key])]
        elif parent_cycle(key, fields.parent_key, parent_of):
            errors["parent_key"] = [
                Message(
                    "group {parent} is under group {key}: parents would form a cycle",
                    parent=fields.parent_key,
                    key=key,
                )
            ]
        if errors:
            raise ValidationFailed(errors)

    def _unknown_accounts(self, tenant_id: UUID, account_ids: Sequence[str]) -> list[str]:
        ids = {account_uuid(tenant_id, account_id): account_id for account_id in account_ids}
        found = self.ledger.get_many(list(ids))
        return sorted(
            account_id
            for aggregate_id, account_id in ids.items()
            if not isinstance(found.get(aggregate_id), Account)
        )

    def _live_groups(self, tenant: Tenant) -> list[Group]:
        """The tenant's live groups, from the log."""
        ids = [group_uuid(tenant.id, key) for key in tenant.group_keys]
        found = self.ledger.get_many(ids).values()
        return [group for group in found if isinstance(group, Group) and not group.deleted]

    # -- queries -----------------------------------------------------------------------------

    def facts(self, tenant_id: UUID) -> dict[str, GroupFacts]:
        """The tenant's live groups by key, as the log holds them now (what the approval rule
        reads when a command arrives)."""
        return {
            group.key: GroupFacts(
                group.key, frozenset(group.members), group.leader_id, group.parent_key
            )
            for group in self._live_groups(self.directory.tenant(tenant_id))
        }

    def groups_of(self, tenant_id: UUID, account_id: str) -> frozenset[str]:
        """The keys of the live groups the account is a member of (read from the log)."""
        facts = self.facts(tenant_id)
        return frozenset(key for key, group in facts.items() if account_id in group.members)

    def leader_of(self, tenant_id: UUID, account_id: str) -> str | None:
        """The leader who answers for the account (domain.groups.applicant_leader)."""
        return applicant_leader(account_id, self.facts(tenant_id))

    def leaders_up(self, tenant_id: UUID, key: str) -> list[str]:
        """The leaders of the group `key` and the groups above it (domain.groups.leaders_up)."""
        return leaders_up(key, self.facts(tenant_id))

    def group(self, tenant_id: UUID, group_id: str) -> GroupRow:
        """A live group of this tenant, from its rows; another tenant's, a deleted one, or an
        id that is none, is not found."""
        try:
            wanted = UUID(group_id)
        except ValueError:
            raise NotFound(KIND, group_id) from None
        row = group_row(self.ledger.store, tenant_id, wanted)
        if row is None:
            raise NotFound(KIND, group_id)
        return row

    def group_by_key(self, tenant_id: UUID, key: str) -> GroupRow:
        """The tenant's live group of this key, from its rows."""
        row = group_row_of_key(self.ledger.store, tenant_id, key)
        if row is None:
            raise NotFound(KIND, key)
        return row

    def current(self, tenant_id: UUID, group_id: str) -> GroupRow:
        """A live group of this tenant as its log holds it now: what a write checks If-Match
        against and merges a patch into, and what a repeated create answers."""
        return GroupRow.of_aggregate(self.aggregate(tenant_id, group_id))

    def groups(self, tenant_id: UUID, window: Window) -> Page[GroupRow]:
        """The tenant's live groups, oldest first unless sorted (with the window's search,
        those whose key or name holds it), from their rows."""
        found = group_page(self.ledger.store, tenant_id, window)
        return Page.of(found.rows, window, found)

    def timeline(self, tenant_id: UUID, group_id: str) -> list[TimelineEntry]:
        """Every event of one of the tenant's groups."""
        return self.ledger.timeline(self.aggregate(tenant_id, group_id).id)

    def aggregate(self, tenant_id: UUID, group_id: str) -> Group:
        """A live group of this tenant; another tenant's, or a deleted one, is not found."""
        group = self.ledger.find_in_tenant(Group, group_id, KIND, tenant_id)
        group.check_live()
        return group


def _values(fields: GroupFields) -> tuple[str, list[str], str | None, str | None]:
    return fields.name, list(fields.members), fields.leader_id, fields.parent_key
