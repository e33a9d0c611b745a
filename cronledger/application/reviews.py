"""Who reviews an instance, read from the directory when a command or a submission arrives.

The reviewer rule (domain/reviewers.py) is pure; this service gives it the facts as they are
now: an account's roles and activity from the log, and its groups and leader from the groups
the tenant keeps (`GroupFacts`; none until groups are wired in).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any, Protocol, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain.approvals import REASSIGN, REJECT, ApprovalInstance, Command, Parties, Review
from domain.directory import Account, Definition, DefinitionTerms, Principal, Tenant, account_uuid
from domain.errors import NoEligibleReviewer, NotEnoughReviewers
from domain.levels import definition_levels, level_of
from domain.messages import Message
from domain.permissions import APPROVAL_DECIDE, DIRECTORY_MANAGE
from domain.reviewers import Person, Reviewers, admission_of


class GroupFacts(Protocol):
    """What the reviewer rule needs of the tenant's groups."""

    def groups_of(self, tenant_id: UUID, account_id: str) -> frozenset[str]:
        """The keys of the groups the account is a member of."""
        ...

    def leader_of(self, tenant_id: UUID, account_id: str) -> str | None:
        """The leader above the account (see domain.groups.applicant_leader)."""
        ...

    def leaders_up(self, tenant_id: UUID, key: str) -> list[str]:
        """The leaders of a group and the groups above it (see domain.groups.leaders_up)."""
        ...


class NoGroups:
    """A directory without groups: nobody is a member, nobody leads."""

    def groups_of(self, tenant_id: UUID, account_id: str) -> frozenset[str]:
        return frozenset()

    def leader_of(self, tenant_id: UUID, account_id: str) -> str | None:
        return None

    def leaders_up(self, tenant_id: UUID, key: str) -> list[str]:
        return []


A = TypeVar("A", bound=Aggregate)


class DirectoryReads(Protocol):
    """What reviewing reads of the log."""

    def get_many(self, ids: Sequence[UUID]) -> dict[UUID, Aggregate]: ...

    def find(self, kind: type[A], aggregate_id: UUID, label: str, key: object) -> A: ...


class ReadOnce:
    """The log's aggregates, each read at most once: the directory as one batch sees it."""

    def __init__(self, ledger: DirectoryReads) -> None:
        self.ledger = ledger
        self.read: dict[UUID, Aggregate | None] = {}

    def get_many(self, ids: Sequence[UUID]) -> dict[UUID, Aggregate]:
        missing = [i for i in dict.fromkeys(ids) if i not in self.read]
        if missing:
            found = self.ledger.get_many(missing)
            self.read.update((i, found.get(i)) for i in missing)
        return {i: aggregate for i in ids if (aggregate := self.read[i]) is not None}

    def find(self, kind: type[A], aggregate_id: UUID, label: str, key: object) -> A:
        aggregate = self.get_many([aggregate_id]).get(aggregate_id)
        if isinstance(aggregate, kind):
            return aggregate
        return self.ledger.find(kind, aggregate_id, label, key)  # NotFound, as the log says


class GroupsReadOnce:
    """Group facts, each answer read from the log once: the groups as one batch sees them."""

    def __init__(self, groups: GroupFacts) -> None:
        self._groups_of = cache(groups.groups_of)
        self._leader_of = cache(groups.leader_of)
        self._leaders_up = cache(groups.leaders_up)

    def groups_of(self, tenant_id: UUID, account_id: str) -> frozenset[str]:
        return self._groups_of(tenant_id, account_id)

    def leader_of(self, tenant_id: UUID, account_id: str) -> str | None:
        return self._leader_of(tenant_id, account_id)

    def leaders_up(self, tenant_id: UUID, key: str) -> list[str]:
        return list(self._leaders_up(tenant_id, key))


class Reviewing:
    def __init__(self, ledger: DirectoryReads, groups: GroupFacts | None = None) -> None:
        self.ledger = ledger
        self.groups = groups or NoGroups()

    def read_once(self) -> Reviewing:
        """This reviewing over the directory read once: for many instances launched in one
        commit, each tenant's accounts and groups are read from the log once, not once each."""
        return Reviewing(ReadOnce(self.ledger), GroupsReadOnce(self.groups))

    def review(self, instance: ApprovalInstance, actor: Principal, command: Command) -> Review:
        """The review `command` is decided under: its task, the rule that admits `actor`, and
        for a reassignment whether the target is an eligible reviewer."""
        task = instance.task(instance.task_id_for(command, actor.account_id))
        rule = instance.reviewer_rule
        if rule is None:
            return instance.review(task.id)
        tally = instance.tally(task.id)
        if command.kind == REJECT and not tally.any_reject_rejects:
            pool = instance.levels[tally.level - 1]["candidates"] or []
            eligible = self.eligible(instance.tenant_id, rule, instance.parties, pool)
            tally = instance.tally(task.id, eligible)
        candidates = frozenset(task.candidates or ())
        leader = self._leader(rule, instance.tenant_id, instance.applicant_id)
        admission = admission_of(
            rule, self.person(instance.tenant_id, actor.account_id), leader, candidates
        )
        target = command.payload.get("assignee_id") if command.kind == REASSIGN else None
        return Review(
            task,
            admission,
            admin=DIRECTORY_MANAGE in actor.permissions,
            target_eligible=target is None
            or target in self.eligible(instance.tenant_id, rule, instance.parties, [target]),
            tally=tally,
        )

    def candidates(
        self, tenant_id: UUID, reviewers: Reviewers | None, parties: Parties
    ) -> list[str] | None:
        """The accounts a new instance's task goes to: every active account of the tenant the
        rule admits that may approve it (None for a definition without reviewers: anyone who
        may decide); refused when there is nobody."""
        if reviewers is None:
            return None
        found = self.eligible(tenant_id, reviewers, parties, self._tenant_accounts(tenant_id))
        if not found:
            raise NoEligibleReviewer(
                Message("the definition's reviewers name nobody who may approve this instance")
            )
        return found

    def levels(
        self, tenant_id: UUID, terms: Definition | DefinitionTerms, parties: Parties
    ) -> tuple[list[str] | None, list[dict[str, Any]] | None]:
        """Level 1's candidates, and a definition's own levels as the instance keeps them,
        each with its candidates fixed now; refused (NOT_ENOUGH_REVIEWERS, naming the level)
        when a level has fewer eligible reviewers than approvals it requires. A definition
        without levels: its reviewers' candidates, and no levels."""
        if not terms.levels:
            return self.candidates(tenant_id, Reviewers.of(terms.reviewers), parties), None
        accounts = self._tenant_accounts(tenant_id)
        kept = []
        for number, level in enumerate(definition_levels(None, terms.levels) or [], start=1):
            found = self.eligible(tenant_id, level.reviewers, parties, accounts)
            if len(found) < level.approvals_required:
                raise NotEnoughReviewers(number, len(found), level.approvals_required)
            kept.append(level_of(number, level, found))
        return kept[0]["candidates"], kept

    def eligible(
        self,
        tenant_id: UUID,
        rule: Reviewers | None,
        parties: Parties,
        account_ids: Iterable[str],
    ) -> list[str]:
        """Those of `account_ids` the rule admits, active, holding the permission to decide,
        and free of the self-approval rule."""
        leader = self._leader(rule, tenant_id, parties.applicant_id)
        accounts = self.ledger.get_many([account_uuid(tenant_id, a) for a in account_ids])
        return sorted(
            account.account_id
            for account in accounts.values()
            if isinstance(account, Account)
            and APPROVAL_DECIDE in account.permissions
            and parties.interest_of(account.account_id) is None
            and admission_of(rule, self._person(account), leader) is not None
        )

    def person(self, tenant_id: UUID, account_id: str) -> Person:
        """The account as the rule sees it now; an unknown one holds no role."""
        found = self.ledger.get_many([account_uuid(tenant_id, account_id)])
        account = next(iter(found.values()), None)
        if not isinstance(account, Account):
            return Person(account_id)
        return self._person(account)

    def _person(self, account: Account) -> Person:
        groups = self.groups.groups_of(account.tenant_id, account.account_id)
        roles = frozenset(account.roles) if account.active else frozenset()
        return Person(account.account_id, roles, groups, APPROVAL_DECIDE in account.permissions)

    def _leader(self, rule: Reviewers | None, tenant_id: UUID, applicant_id: str) -> str | None:
        wanted = rule is not None and rule.applicant_leader
        return self.groups.leader_of(tenant_id, applicant_id) if wanted else None

    def _tenant_accounts(self, tenant_id: UUID) -> list[str]:
        tenant = self.ledger.find(Tenant, tenant_id, "tenant", str(tenant_id))
        return list(tenant.account_ids)
