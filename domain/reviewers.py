"""Who reviews an instance: a definition's `reviewers`, and the tasks that hold the review.

A definition names its reviewers as any mix of accounts, groups (their members), roles (the
accounts holding one) and the applicant's leader. The rule is read when a command arrives
(membership of a group or a role as it then is), and the rule that admitted a decider is kept on
the event. Definitions and instances saved before reviewers existed have none (`None`): anyone
who may decide reviews them, as before.

An instance holds its review work as tasks: one per required approval of its current level
(`FIRST_TASK` is the first; an instance without levels has that one), each with the candidates
frozen at submission, an assignee while claimed, a priority and its level.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from domain.errors import ValidationFailed
from domain.messages import Message

FIRST_TASK = "1"  # the id of an instance's one review task
# A task's states: claimable by its candidates, assigned to one of them, or closed with the
# instance's decision (or its withdrawal or expiry).
OPEN, ASSIGNED, CLOSED = "OPEN", "ASSIGNED", "CLOSED"
NORMAL, HIGH = "normal", "high"
# Which rule admitted a reviewer (kept on the events of the commands it admitted).
BY_ACCOUNT, BY_GROUP, BY_ROLE, BY_LEADER = "account", "group", "role", "applicant_leader"
BY_CANDIDATE = "candidate"  # a task's candidate the rule no longer names (an escalation target)
BY_ANYONE = "anyone"  # an instance from before reviewers: anyone who may decide
REVIEWER_KINDS = ("accounts", "groups", "roles")


NAME_THE_REVIEWERS = Message(
    'name at least one reviewer ({{"roles": ["operator"]}}: anyone holding the role)'
)


@dataclass(frozen=True)
class Reviewers:
    """Whom a definition's instances are for; at least one kind must name someone."""

    accounts: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    applicant_leader: bool = False

    @classmethod
    def of(cls, stored: Mapping[str, Any] | None) -> Reviewers | None:
        if stored is None:
            return None
        return cls(
            accounts=tuple(stored.get("accounts") or ()),
            groups=tuple(stored.get("groups") or ()),
            roles=tuple(stored.get("roles") or ()),
            applicant_leader=bool(stored.get("applicant_leader")),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            **{kind: list(getattr(self, kind)) for kind in REVIEWER_KINDS},
            "applicant_leader": self.applicant_leader,
        }

    def check(self) -> None:
        if not (self.accounts or self.groups or self.roles or self.applicant_leader):
            raise ValidationFailed.of("reviewers", NAME_THE_REVIEWERS)


@dataclass(frozen=True)
class Person:
    """An account as the reviewer rule sees it when a command arrives."""

    account_id: str
    roles: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()  # keys of the groups it is a member of now
    may_decide: bool = False  # active, and holding workflow:approval:decide


def admission_of(
    reviewers: Reviewers | None,
    person: Person,
    applicant_leader_id: str | None,
    candidates: frozenset[str] = frozenset(),
) -> dict[str, str] | None:
    """Which rule admits `person` as a reviewer (`{"rule": ..., and what it named}`), or None."""
    if reviewers is None:
        return {"rule": BY_ANYONE}
    if person.account_id in reviewers.accounts:
        return {"rule": BY_ACCOUNT}
    for group in reviewers.groups:
        if group in person.groups:
            return {"rule": BY_GROUP, "group": group}
    for role in reviewers.roles:
        if role in person.roles:
            return {"rule": BY_ROLE, "role": role}
    if reviewers.applicant_leader and person.account_id == applicant_leader_id:
        return {"rule": BY_LEADER}
    if person.account_id in candidates:
        return {"rule": BY_CANDIDATE}
    return None


@dataclass(frozen=True)
class Task:
    """An instance's review work: who may take it, who holds it, how urgent it is."""

    id: str
    candidates: tuple[str, ...] | None  # None: anyone who may decide (before reviewers)
    assignee_id: str | None = None
    claimed_at: datetime | None = None
    priority: str = NORMAL
    state: str = OPEN
    level: int = 1  # the review level it belongs to (domain/levels.py); 1 before levels

    @classmethod
    def of(cls, stored: Mapping[str, Any]) -> Task:
        candidates = stored["candidates"]
        return cls(**{**stored, "candidates": None if candidates is None else tuple(candidates)})

    def as_dict(self) -> dict[str, Any]:
        """As events keep it, its fields in their order (written out: `asdict` copies deeply,
        a tenth of a launch's time when an instance opens its tasks)."""
        return {
            "id": self.id,
            "candidates": None if self.candidates is None else list(self.candidates),
            "assignee_id": self.assignee_id,
            "claimed_at": self.claimed_at,
            "priority": self.priority,
            "state": self.state,
            "level": self.level,
        }

    def assigned(self, assignee_id: str, at: datetime) -> Task:
        candidates = self.candidates
        if candidates is not None and assignee_id not in candidates:
            candidates = (*candidates, assignee_id)
        return replace(
            self, candidates=candidates, assignee_id=assignee_id, claimed_at=at, state=ASSIGNED
        )

    def released(self) -> Task:
        return replace(self, assignee_id=None, claimed_at=None, state=OPEN)

    def closed(self) -> Task:
        return replace(self, state=CLOSED)

    def held_by_other(self, actor: str) -> str | None:
        """The assignee, when someone other than `actor` holds the task."""
        return self.assignee_id if self.assignee_id not in (None, actor) else None
