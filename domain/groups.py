"""Groups (部门/用户组): a tenant's departments, each with its members and, maybe, a leader.

A group's `key` is unique in its tenant (its id is derived from the two); `parent_key` names
the group it belongs under, so groups form departments. What one group cannot know (its
members are accounts of the tenant, its parent a live group, no cycle of parents, a parent is
not deleted before its children) is the application's to check (cronledger.application.groups).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.directory import NAMESPACE
from domain.errors import DomainError, NotFound, ValidationFailed
from domain.messages import Message
from domain.reasons import ReasonedEvent

GROUP_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")  # as a definition's key
GROUP_KEY_RULE = Message("use 1-64 of A-Za-z0-9 _ . : - starting with a letter or digit")
MAX_GROUP_NAME = 100
MAX_MEMBERS = 1000
KIND = "group"


def group_uuid(tenant_id: UUID, key: str) -> UUID:
    """One group per key in a tenant: creating a taken key finds the first."""
    return uuid5(NAMESPACE, f"tenant/{tenant_id}/group/{key}")


class GroupIsParent(DomainError):
    """A group that live groups name as their parent cannot be deleted before them."""

    code = "GROUP_IS_PARENT"

    def __init__(self, key: str, children: Sequence[str]) -> None:
        super().__init__(
            Message(
                "group {key} is the parent of {children}: move or delete them first",
                key=key,
                children=", ".join(children),
            )
        )
        self.key, self.children = key, list(children)  # for a message in another language


def check_group(
    key: str, name: str, members: Sequence[str], leader_id: str | None, parent_key: str | None
) -> None:
    """The rules one group keeps by itself, every broken one named at once."""
    errors: dict[str, list[str]] = {}
    if not GROUP_KEY.fullmatch(key):
        errors["key"] = [GROUP_KEY_RULE]
    if not 1 <= len(name) <= MAX_GROUP_NAME:
        errors["name"] = [Message("use 1-{count} characters", count=MAX_GROUP_NAME)]
    repeated = sorted({member for member in members if members.count(member) > 1})
    if repeated:
        errors["members"] = [
            Message("listed more than once: {members}", members=", ".join(repeated))
        ]
    if leader_id is not None and leader_id not in members:
        errors["leader_id"] = [Message("{account} is not a member of the group", account=leader_id)]
    if parent_key == key:
        errors["parent_key"] = [Message("a group cannot be its own parent")]
    if errors:
        raise ValidationFailed(errors)


def parent_cycle(key: str, parent_key: str | None, parent_of: Mapping[str, str | None]) -> bool:
    """Whether putting `key` under `parent_key` would close a cycle of parents, given the
    other groups' parents (`parent_of`: key -> parent key)."""
    seen = {key}
    current = parent_key
    while current is not None:
        if current in seen:
            return True
        seen.add(current)
        current = parent_of.get(current)
    return False


class Group(Aggregate):
    """A department of a tenant: its members (account ids), its leader and its parent."""

    @staticmethod
    def create_id(tenant_id: UUID, key: str) -> UUID:
        return group_uuid(tenant_id, key)

    class Created(Aggregate.Created):
        tenant_id: UUID
        key: str
        name: str
        members: list[str]
        leader_id: str | None
        parent_key: str | None
        at: datetime
        actor: str

    @event(Created)
    def __init__(
        self,
        tenant_id: UUID,
        key: str,
        name: str,
        members: list[str],
        leader_id: str | None,
        parent_key: str | None,
        at: datetime,
        actor: str,
    ) -> None:
        self.tenant_id = tenant_id
        self.key = key
        self.created_at = at
        self._set(name, members, leader_id, parent_key, at)

    @classmethod
    def create(
        cls,
        tenant_id: UUID,
        key: str,
        name: str,
        members: list[str],
        leader_id: str | None,
        parent_key: str | None,
        at: datetime,
        actor: str,
    ) -> Group:
        """A new group, its rules checked first."""
        check_group(key, name, members, leader_id, parent_key)
        return cls(
            tenant_id=tenant_id,
            key=key,
            name=name,
            members=list(members),
            leader_id=leader_id,
            parent_key=parent_key,
            at=at,
            actor=actor,
        )

    def _set(
        self,
        name: str,
        members: list[str],
        leader_id: str | None,
        parent_key: str | None,
        at: datetime,
    ) -> None:
        self.name = name
        self.members = list(members)
        self.leader_id = leader_id
        self.parent_key = parent_key
        self.updated_at = at
        self.deleted = False

    def check_live(self) -> None:
        """A deleted group is not found."""
        if self.deleted:
            raise NotFound(KIND, self.key)

    def update(
        self,
        name: str,
        members: list[str],
        leader_id: str | None,
        parent_key: str | None,
        at: datetime,
        actor: str,
        reason: str | None = None,
    ) -> None:
        """Replace the group's fields (its key stays); a deleted group's key is created anew
        by `create_again`."""
        self.check_live()
        self._replace(name, members, leader_id, parent_key, at, actor, reason)

    def create_again(
        self,
        name: str,
        members: list[str],
        leader_id: str | None,
        parent_key: str | None,
        at: datetime,
        actor: str,
    ) -> None:
        """Create a deleted group's key anew, with these fields."""
        if not self.deleted:
            raise ValidationFailed.of("key", Message("a group with key {key} exists", key=self.key))
        self._replace(name, members, leader_id, parent_key, at, actor, None)

    def _replace(
        self,
        name: str,
        members: list[str],
        leader_id: str | None,
        parent_key: str | None,
        at: datetime,
        actor: str,
        reason: str | None,
    ) -> None:
        check_group(self.key, name, members, leader_id, parent_key)
        self._updated(
            name=name,
            members=list(members),
            leader_id=leader_id,
            parent_key=parent_key,
            at=at,
            actor=actor,
            reason=reason,
        )

    class Updated(ReasonedEvent):
        """The group's fields replaced; on a deleted group, its key created again."""

        name: str
        members: list[str]
        leader_id: str | None
        parent_key: str | None

    @event(Updated)
    def _updated(
        self,
        name: str,
        members: list[str],
        leader_id: str | None,
        parent_key: str | None,
        at: datetime,
        actor: str,
        reason: str | None,
    ) -> None:
        if self.deleted:
            self.created_at = at
        self._set(name, members, leader_id, parent_key, at)

    def delete(self, at: datetime, actor: str, reason: str | None = None) -> None:
        self.check_live()
        self._deleted(at=at, actor=actor, reason=reason)

    class Deleted(ReasonedEvent):
        pass

    @event(Deleted)
    def _deleted(self, at: datetime, actor: str, reason: str | None) -> None:
        self.deleted = True
        self.updated_at = at


@dataclass(frozen=True)
class GroupFacts:
    """What the approval rule needs of one live group."""

    key: str
    members: frozenset[str]
    leader_id: str | None
    parent_key: str | None


def applicant_leader(applicant_id: str, groups: Mapping[str, GroupFacts]) -> str | None:
    """The leader who answers for `applicant_id`: their group's leader; when the applicant
    leads that group, or it has none, the nearest leader up its parents who is not the
    applicant. None when there is none.

    An applicant in several groups counts as a member of the one with the smallest key, so
    the answer never depends on the order the groups are given in.
    """
    own = sorted(key for key, group in groups.items() if applicant_id in group.members)
    leaders = leaders_up(own[0], groups) if own else []
    return next((leader for leader in leaders if leader != applicant_id), None)


def leaders_up(key: str, groups: Mapping[str, GroupFacts]) -> list[str]:
    """The leaders of the group `key` and of the groups above it, nearest first, each once
    (groups without a leader are passed; a parent loop ends the walk)."""
    leaders: list[str] = []
    current, seen = groups.get(key), set[str]()
    while current is not None and current.key not in seen:
        if current.leader_id is not None and current.leader_id not in leaders:
            leaders.append(current.leader_id)
        seen.add(current.key)
        current = groups.get(current.parent_key) if current.parent_key else None
    return leaders
