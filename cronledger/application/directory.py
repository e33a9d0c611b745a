"""Directory commands and queries: tenants, accounts, tokens and process definitions."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Generic, TypeVar
from uuid import UUID, uuid4

from cronledger.application.idempotency import check_key, key_record
from cronledger.persistence.ledger import Ledger, TimelineEntry
from domain.calendars import calendar_uuid, kept_rule, rule_problems
from domain.directory import (
    ADMIN_ROLE,
    RETURN_TO_FIRST,
    SYSTEM_ACTOR,
    TENANT_NAME,
    Account,
    ApiToken,
    Definition,
    Principal,
    Tenant,
    TenantRegistry,
    account_uuid,
    check_account_id,
    check_expected_version,
    check_notices,
    check_roles,
    definition_uuid,
    no_such_accounts,
    no_such_groups,
    notice_terms,
    seconds_rule,
    tenant_uuid,
    token_uuid,
)
from domain.errors import InvalidState, NotFound, ValidationFailed, every_problem
from domain.groups import Group, group_uuid
from domain.idempotency import KeyedRequest
from domain.launch import definition_problem, initiator_problem
from domain.levels import check_levels
from domain.messages import Message
from domain.reviewers import NAME_THE_REVIEWERS, Reviewers
from domain.schedules import ScheduleSettings, checked_presets
from domain.working_time import SECONDS
from projections.directory import (
    AccountRow,
    DefinitionRow,
    account_names,
    account_page,
    account_row,
    definition_names,
    definition_page,
    definition_row,
    definition_row_of_key,
)
from projections.keyset import Slice, SortKey, Window

T = TypeVar("T")
TOKEN_PREFIX = "clt_"  # noqa: S105 (a prefix, not a secret)
# How long an answer of `Directory.authenticate_recent` is reused (docs/security.md#tokens).
TOKEN_CACHE_SECONDS = 1.0
TOKEN_CACHE_ENTRIES = 10_000


@dataclass(frozen=True)
class Page(Generic[T]):
    """A page of a list: its items, the page's number (None when read after a cursor's sort
    key), its size, how many items match (up to COUNT_CAP: `total_capped` when more do), and
    its last item's sort key when more follow."""

    items: list[T]
    page: int | None
    page_size: int
    total: int
    next_key: SortKey | None = None
    total_capped: bool = False

    @classmethod
    def of(cls, items: list[T], window: Window, found: Slice[Any]) -> Page[T]:
        """The page `window` asked for, of the items read for `found`."""
        return cls(items, window.page, window.size, found.total, found.next_key, found.capped)


@dataclass(frozen=True)
class DefinitionFields:
    name: str
    external: bool
    review_window_seconds: int
    schedule_presets: list[dict[str, Any]]
    allow_self_approval: bool = False
    reminders: list[dict[str, int]] = field(default_factory=list)  # before the deadline
    escalation: dict[str, Any] | None = None  # after how long waiting, and to whom
    reviewers: dict[str, Any] | None = None  # who reviews (domain/reviewers.py); None: anyone
    deadline_rule: dict[str, Any] | None = None  # None: review_window_seconds, in seconds
    max_pause_seconds: int | None = None  # the longest a pause stands; None: no limit
    return_to: str = RETURN_TO_FIRST  # where a revise after a return goes
    levels: list[dict[str, Any]] | None = None  # ordered review levels; win over `reviewers`
    restart_deadline_on_revise: bool | None = None  # None: as it was (false when new)
    cancellation_definition: str | None = None  # the key or id of another of the tenant's


@dataclass(frozen=True)
class IssuedToken:
    token: str
    token_id: str


@dataclass(frozen=True)
class TokenView:
    """One of an account's tokens, as its events tell it: never its secret."""

    token_id: str
    issued_at: datetime
    issued_by: str | None
    revoked_at: datetime | None = None


@dataclass(frozen=True)
class ReplayedToken:
    """A token answered again to a repeated request: its secret was shown once, and is gone."""

    token_id: str
    token: None = None


class RecentPrincipals:
    """Who working tokens stood for, each kept TOKEN_CACHE_SECONDS, by the token's hash: what
    every request asks, answered without reading the directory's history each time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._kept: dict[UUID, tuple[Principal, float]] = {}
        self._lock = threading.Lock()
        self.generation = 0  # how many times `forget` ran: a lookup begun before is not kept

    def get(self, token_id: UUID) -> Principal | None:
        kept = self._kept.get(token_id)
        if kept is None or kept[1] <= self.clock():
            return None
        return kept[0]

    def keep(self, token_id: UUID, principal: Principal, generation: int) -> None:
        """Keep what a lookup begun at `generation` found, unless `forget` ran since."""
        with self._lock:
            if generation != self.generation:
                return
            if len(self._kept) >= TOKEN_CACHE_ENTRIES:
                self._kept.clear()
            self._kept[token_id] = (principal, self.clock() + TOKEN_CACHE_SECONDS)

    def forget(self) -> None:
        """After a change to what tokens stand for: every token is looked up afresh."""
        with self._lock:
            self._kept.clear()
            self.generation += 1


class Directory:
    def __init__(self, ledger: Ledger, default_timezone: str = "UTC") -> None:
        self.ledger = ledger
        self.default_timezone = default_timezone
        self.recent = RecentPrincipals()

    # -- tenants -------------------------------------------------------------

    def bootstrap(self, tenant_name: str, admin_id: str) -> IssuedToken:
        """Create a tenant with its first admin account, and that admin's first token."""
        if not TENANT_NAME.fullmatch(tenant_name):
            raise ValidationFailed.of(
                "tenant", Message("use 1-63 lower-case letters, digits, - or _")
            )
        check_account_id(admin_id, "admin")
        self.ledger.retrying(lambda: self._register_tenant(tenant_name))
        system = Principal(tenant_uuid(tenant_name), SYSTEM_ACTOR, frozenset())
        self.create_account(system, admin_id, admin_id, [ADMIN_ROLE])
        return self.issue_token(system, admin_id)

    def _register_tenant(self, name: str) -> None:
        if self.ledger.exists(tenant_uuid(name)):
            raise InvalidState(Message("tenant {name} already exists", name=name))
        at = self.ledger.clock()
        registry = self._registry(at)
        tenant = Tenant(name=name, at=at, actor=SYSTEM_ACTOR)
        registry.add(name=name, tenant_id=tenant.id, at=at, actor=SYSTEM_ACTOR)
        self.ledger.save(registry, tenant)

    def _registry(self, at: datetime) -> TenantRegistry:
        registry_id = TenantRegistry.create_id()
        if self.ledger.exists(registry_id):
            return self.ledger.find(TenantRegistry, registry_id, "registry", "tenants")
        return TenantRegistry(at=at, actor=SYSTEM_ACTOR)

    def tenants(self) -> dict[str, UUID]:
        registry_id = TenantRegistry.create_id()
        if not self.ledger.exists(registry_id):
            return {}
        return dict(self.ledger.find(TenantRegistry, registry_id, "registry", "tenants").tenants)

    def tenant(self, tenant_id: UUID) -> Tenant:
        return self.ledger.find(Tenant, tenant_id, "tenant", tenant_id)

    # -- accounts ------------------------------------------------------------

    def create_account(
        self,
        actor: Principal,
        account_id: str | None,
        name: str,
        roles: list[str],
        request: KeyedRequest | None = None,
    ) -> AccountRow:
        """A new account; a repeat of a keyed `request` stops with `AlreadyCreated`."""
        check_roles(roles)
        chosen_id = account_id or str(uuid4())
        check_account_id(chosen_id)
        return self.ledger.retrying(
            lambda: self._create_account(actor, chosen_id, name, roles, request)
        )

    def check_new_account(self, tenant_id: UUID, account_id: str) -> None:
        """The rules a new account's id keeps: its form, and no account of the tenant has it."""
        check_account_id(account_id)
        if self.ledger.exists(account_uuid(tenant_id, account_id)):
            raise ValidationFailed.of(
                "id", Message("an account with id {id} already exists", id=account_id)
            )

    def _create_account(
        self,
        actor: Principal,
        account_id: str,
        name: str,
        roles: list[str],
        request: KeyedRequest | None,
    ) -> AccountRow:
        check_key(self.ledger, request)
        if self.ledger.exists(account_uuid(actor.tenant_id, account_id)):
            check_key(self.ledger, request)  # made by a request racing with the same key?
            raise ValidationFailed.of(
                "id", Message("an account with id {id} already exists", id=account_id)
            )
        tenant = self.tenant(actor.tenant_id)
        at = self.ledger.clock()
        account = Account(
            tenant_id=tenant.id,
            account_id=account_id,
            name=name,
            roles=roles,
            at=at,
            actor=actor.account_id,
        )
        tenant.add_account(account_id)
        self.ledger.save(account, tenant, key_record(request, "account", account_id, at))
        return AccountRow.of_aggregate(account)

    def account(self, tenant_id: UUID, account_id: str) -> AccountRow:
        """One of the tenant's accounts, from its row."""
        row = account_row(self.ledger.store, tenant_id, account_id)
        if row is None:
            raise NotFound("account", account_id)
        return row

    def current_account(self, tenant_id: UUID, account_id: str) -> AccountRow:
        """One of the tenant's accounts as its log holds it now, never behind it as its row
        may be: what a write checks If-Match against and merges a patch into, and what a
        repeated create answers."""
        return AccountRow.of_aggregate(self._account(tenant_id, account_id))

    def account_timeline(self, tenant_id: UUID, account_id: str) -> list[TimelineEntry]:
        """Every event of one of the tenant's accounts, named by its public id."""
        return self.ledger.timeline(self._account(tenant_id, account_id).id)

    def accounts(self, tenant_id: UUID, window: Window) -> Page[AccountRow]:
        """The tenant's accounts, oldest first, from their `accounts` rows."""
        found = account_page(self.ledger.store, tenant_id, window)
        return Page.of(found.rows, window, found)

    def update_account(
        self,
        actor: Principal,
        account_id: str,
        name: str,
        roles: list[str],
        version: int,
        reason: str | None = None,
    ) -> AccountRow:
        check_roles(roles)
        return self.ledger.retrying(
            lambda: self._update_account(actor, account_id, name, roles, version, reason)
        )

    def _update_account(
        self,
        actor: Principal,
        account_id: str,
        name: str,
        roles: list[str],
        version: int,
        reason: str | None,
    ) -> AccountRow:
        account = self._account(actor.tenant_id, account_id)
        check_expected_version("account", account.version, version)
        at = self.ledger.clock()
        losing_admin = account.is_active_admin and ADMIN_ROLE not in roles
        tenant = self._removing_admin(account, at, actor) if losing_admin else None
        account.update(name=name, roles=roles, at=at, actor=actor.account_id, reason=reason)
        self.ledger.save(account, tenant)
        self.recent.forget()
        return AccountRow.of_aggregate(account)

    def set_active(
        self,
        actor: Principal,
        account_id: str,
        active: bool,
        version: int | None,
        reason: str | None = None,
    ) -> AccountRow:
        return self.ledger.retrying(
            lambda: self._set_active(actor, account_id, active, version, reason)
        )

    def _set_active(
        self,
        actor: Principal,
        account_id: str,
        active: bool,
        version: int | None,
        reason: str | None,
    ) -> AccountRow:
        account = self._account(actor.tenant_id, account_id)
        check_expected_version("account", account.version, version)
        at = self.ledger.clock()
        tenant: Tenant | None = None
        if active:
            account.activate(at=at, actor=actor.account_id, reason=reason)
        else:
            tenant = self._removing_admin(account, at, actor) if account.is_active_admin else None
            account.deactivate(at=at, actor=actor.account_id, reason=reason)
        self.ledger.save(account, tenant)
        self.recent.forget()
        return AccountRow.of_aggregate(account)

    def _removing_admin(self, account: Account, at: datetime, actor: Principal) -> Tenant:
        """The account's tenant, recording that it loses an active admin (never its last)."""
        tenant = self.tenant(account.tenant_id)
        found = self.ledger.get_many([account_uuid(tenant.id, key) for key in tenant.account_ids])
        admins = [
            a.account_id for a in found.values() if isinstance(a, Account) and a.is_active_admin
        ]
        tenant.remove_admin(account.account_id, admins, at=at, actor=actor.account_id)
        return tenant

    def account_aggregate(self, tenant_id: UUID, account_id: str) -> Account:
        """One of the tenant's accounts as its log holds it; another tenant's is not found."""
        return self._account(tenant_id, account_id)

    def _account(self, tenant_id: UUID, account_id: str) -> Account:
        return self.ledger.find(Account, account_uuid(tenant_id, account_id), "account", account_id)

    # -- tokens --------------------------------------------------------------

    def issue_token(
        self, actor: Principal, account_id: str, request: KeyedRequest | None = None
    ) -> IssuedToken:
        """A new token, its secret shown this once; a repeat of a keyed `request` stops with
        `AlreadyCreated`."""
        return self.ledger.retrying(lambda: self._issue_token(actor, account_id, request))

    def _issue_token(
        self, actor: Principal, account_id: str, request: KeyedRequest | None
    ) -> IssuedToken:
        check_key(self.ledger, request)
        account = self._account(actor.tenant_id, account_id)
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        secret_hash = token_uuid(secret)
        at = self.ledger.clock()
        account.issue_token(token_id=str(secret_hash), at=at, actor=actor.account_id)
        token = ApiToken(
            secret_hash=secret_hash,
            tenant_id=actor.tenant_id,
            account_id=account_id,
            at=at,
            actor=actor.account_id,
        )
        self.ledger.save(account, token, key_record(request, "token", str(secret_hash), at))
        return IssuedToken(token=secret, token_id=str(secret_hash))

    def tokens(self, tenant_id: UUID, account_id: str) -> list[TokenView]:
        """The account's tokens, oldest first, from its events: when issued, by whom, revoked."""
        issued: dict[str, TokenView] = {}
        for entry in self.account_timeline(tenant_id, account_id):
            token_id = str(entry.data.get("token_id"))
            if entry.type == "Account.TokenIssued":
                issued[token_id] = TokenView(token_id, entry.at, entry.actor)
            elif entry.type == "Account.TokenRevoked" and token_id in issued:
                issued[token_id] = replace(issued[token_id], revoked_at=entry.at)
        return list(issued.values())

    def revoke_token(
        self, actor: Principal, account_id: str, token_id: str, reason: str | None = None
    ) -> None:
        account = self._account(actor.tenant_id, account_id)
        if token_id not in account.tokens:
            raise NotFound("token", token_id)
        at = self.ledger.clock()
        account.revoke_token(token_id=token_id, at=at, actor=actor.account_id, reason=reason)
        self.ledger.save(account)
        self.recent.forget()

    def authenticate_recent(self, secret: str) -> Principal | None:
        """`authenticate`, or what it answered for this working token within the last
        TOKEN_CACHE_SECONDS, unless this process changed an account or token since: a token
        revoked here stops at once, one revoked by another process within that time."""
        if not secret.startswith(TOKEN_PREFIX):
            return None
        token_id = token_uuid(secret)
        principal = self.recent.get(token_id)
        if principal is None:
            generation = self.recent.generation
            principal = self.authenticate(secret)
            if principal is not None:
                self.recent.keep(token_id, principal, generation)
        return principal

    def authenticate(self, secret: str) -> Principal | None:
        """The principal a bearer token stands for, or None if it does not (or no longer) work."""
        if not secret.startswith(TOKEN_PREFIX):
            return None
        return self.authenticate_token_id(token_uuid(secret))

    def authenticate_token_id(self, token_id: UUID) -> Principal | None:
        """`authenticate` for a token known by its id (a console session keeps only the id)."""
        try:
            token = self.ledger.find(ApiToken, token_id, "token", "")
            account = self._account(token.tenant_id, token.account_id)
        except NotFound:
            return None
        if not account.holds_live_token(str(token.id)):
            return None
        return Principal(token.tenant_id, account.account_id, account.permissions)

    # -- definitions ---------------------------------------------------------

    def create_definition(
        self,
        actor: Principal,
        key: str,
        fields: DefinitionFields,
        request: KeyedRequest | None = None,
    ) -> DefinitionRow:
        """A new definition; a repeat of a keyed `request` stops with `AlreadyCreated`."""
        return self.ledger.retrying(lambda: self._create_definition(actor, key, fields, request))

    def _create_definition(
        self,
        actor: Principal,
        key: str,
        fields: DefinitionFields,
        request: KeyedRequest | None,
    ) -> DefinitionRow:
        check_key(self.ledger, request)
        self.check_definition(actor.tenant_id, fields, key, new=True)
        presets = checked_presets(
            fields.schedule_presets, self.default_timezone, self.ledger.clock()
        )
        reminders, escalation = notice_terms(fields.reminders, fields.escalation)
        if self.ledger.exists(definition_uuid(actor.tenant_id, key)):
            check_key(self.ledger, request)  # made by a request racing with the same key?
            self.check_new_definition_key(actor.tenant_id, key)
        tenant = self.tenant(actor.tenant_id)
        at = self.ledger.clock()
        definition = Definition(
            tenant_id=tenant.id,
            key=key,
            name=fields.name,
            external=fields.external,
            review_window_seconds=fields.review_window_seconds,
            schedule_presets=presets,
            allow_self_approval=fields.allow_self_approval,
            at=at,
            actor=actor.account_id,
            reminders=reminders,
            escalation=escalation,
            reviewers=None if fields.levels else fields.reviewers,
            deadline_rule=_rule_of(fields),
            max_pause_seconds=fields.max_pause_seconds,
            return_to=fields.return_to,
            levels=fields.levels,
            restart_deadline_on_revise=bool(fields.restart_deadline_on_revise),
            cancellation_definition=self._cancellation_definition(actor.tenant_id, fields, key),
        )
        tenant.add_definition(str(definition.id))
        self.ledger.save(
            definition, tenant, key_record(request, "definition", str(definition.id), at)
        )
        return DefinitionRow.of_aggregate(definition)

    def update_definition(
        self, actor: Principal, definition_id: str, fields: DefinitionFields, version: int
    ) -> DefinitionRow:
        definition = self.definition_aggregate(actor.tenant_id, definition_id)
        check_expected_version("definition", definition.version, version)
        self.check_definition(actor.tenant_id, fields, definition.key, new=False)
        presets = checked_presets(
            fields.schedule_presets, self.default_timezone, self.ledger.clock()
        )
        definition.update(
            name=fields.name,
            external=fields.external,
            review_window_seconds=fields.review_window_seconds,
            schedule_presets=presets,
            allow_self_approval=fields.allow_self_approval,
            at=self.ledger.clock(),
            actor=actor.account_id,
            reminders=fields.reminders,
            escalation=fields.escalation,
            reviewers=fields.reviewers,
            deadline_rule=_rule_of(fields),
            max_pause_seconds=fields.max_pause_seconds,
            return_to=fields.return_to,
            levels=fields.levels,
            restart_deadline_on_revise=fields.restart_deadline_on_revise,
            cancellation_definition=self._cancellation_definition(
                actor.tenant_id, fields, definition.key
            ),
        )
        self.ledger.save(definition)
        return DefinitionRow.of_aggregate(definition)

    def check_new_definition_key(self, tenant_id: UUID, key: str) -> None:
        """No definition of the tenant has the key a new one is given."""
        if self.ledger.exists(definition_uuid(tenant_id, key)):
            raise ValidationFailed.of(
                "key", Message("a definition with key {key} already exists", key=key)
            )

    def check_definition(
        self, tenant_id: UUID, fields: DefinitionFields, key: str, new: bool
    ) -> None:
        """Every rule of meaning a definition's fields break, at once: its presets, its terms
        and its cancellation definition (a `new` one names its reviewers)."""
        errors = every_problem(
            lambda: checked_presets(
                fields.schedule_presets, self.default_timezone, self.ledger.clock()
            ),
            lambda: self._check_terms(tenant_id, fields, new),
            lambda: self._cancellation_definition(tenant_id, fields, key),
        )
        if errors:
            raise ValidationFailed(errors)

    def _check_terms(self, tenant_id: UUID, fields: DefinitionFields, new: bool) -> None:
        """The reminders fit the review window; the escalation names one of the tenant's
        accounts or groups; a new definition names its reviewers, who exist (every wrong field
        named at once)."""
        errors: dict[str, list[str]] = {}
        try:
            check_notices(fields.reminders, fields.escalation, fields.review_window_seconds)
        except ValidationFailed as failed:
            errors = dict(failed.errors)
        escalation = fields.escalation or {}
        to = escalation.get("account_id")
        if to is not None and self._maybe(lambda: self._account(tenant_id, to)) is None:
            errors["escalation.account_id"] = [no_such_accounts([to])]
        leader_of = escalation.get("group_leader_of")
        if leader_of is not None and self._missing_groups(tenant_id, [leader_of]):
            errors["escalation.group_leader_of"] = [no_such_groups([leader_of])]
        if new and fields.reviewers is None and not fields.levels:
            errors["reviewers"] = [NAME_THE_REVIEWERS]
        if fields.levels:
            errors.update(self._level_problems(tenant_id, fields.levels))
        else:
            errors.update(self._reviewer_problems(tenant_id, fields.reviewers))
        errors.update(self._rule_problems(tenant_id, fields.deadline_rule))
        if errors:
            raise ValidationFailed(errors)

    def _cancellation_definition(
        self, tenant_id: UUID, fields: DefinitionFields, key: str
    ) -> str | None:
        """The id of the definition whose instances cancel this one's approved instances
        (docs/approvals.md#resubmit-and-cancel): another of the tenant's, by key or id."""
        named = fields.cancellation_definition
        if named is None:
            return None
        found = self.find_definition(tenant_id, named) or self.find_definition(
            tenant_id, str(definition_uuid(tenant_id, named))
        )
        if found is None:
            raise ValidationFailed.of(
                "cancellation_definition",
                Message("the tenant has no definition {key}", key=named),
            )
        if found.id == definition_uuid(tenant_id, key):
            raise ValidationFailed.of(
                "cancellation_definition", Message("must name another definition")
            )
        return str(found.id)

    def _rule_problems(self, tenant_id: UUID, rule: dict[str, Any] | None) -> dict[str, list[str]]:
        """What is wrong with a deadline rule: its shape, or a calendar the tenant lacks."""
        if rule is None:
            return {}
        problems = rule_problems(rule, "deadline_rule")
        if not problems and rule["kind"] != SECONDS:
            key = rule["calendar"]
            if not self.ledger.exists(calendar_uuid(tenant_id, key)):
                problems["deadline_rule.calendar"] = [
                    Message("the tenant has no calendar {key}", key=key)
                ]
        return problems

    def _reviewer_problems(
        self, tenant_id: UUID, reviewers: dict[str, Any] | None
    ) -> dict[str, list[str]]:
        """What is wrong with a definition's reviewers: none named, an unknown role or account."""
        rule = Reviewers.of(reviewers)
        if rule is None:
            return {}
        problems: dict[str, list[str]] = {}
        try:
            rule.check()
            check_roles(list(rule.roles))
        except ValidationFailed as failed:
            problems.update({_under_reviewers(k): v for k, v in failed.errors.items()})
        unknown = [a for a in rule.accounts if not self.ledger.exists(account_uuid(tenant_id, a))]
        if unknown:
            problems["reviewers.accounts"] = [no_such_accounts(unknown)]
        missing = self._missing_groups(tenant_id, rule.groups)
        if missing:
            problems["reviewers.groups"] = [no_such_groups(missing)]
        return problems

    def _level_problems(
        self, tenant_id: UUID, levels: list[dict[str, Any]]
    ) -> dict[str, list[str]]:
        """What is wrong with a definition's levels: their number, each level's reviewers and
        approvals (each field under `levels.N.`, N from 0)."""
        try:
            check_levels(levels)
        except ValidationFailed as failed:
            return dict(failed.errors)
        problems: dict[str, list[str]] = {}
        for index, level in enumerate(levels):
            found = self._reviewer_problems(tenant_id, level["reviewers"])
            problems.update({f"levels.{index}.{k}": v for k, v in found.items()})
        return problems

    def _missing_groups(self, tenant_id: UUID, keys: Sequence[str]) -> list[str]:
        """Those of `keys` that name no live group of the tenant."""
        found = self.ledger.get_many([group_uuid(tenant_id, key) for key in keys])
        live = {g.key for g in found.values() if isinstance(g, Group) and not g.deleted}
        return [key for key in keys if key not in live]

    def set_published(
        self, actor: Principal, definition_id: str, published: bool, version: int | None
    ) -> DefinitionRow:
        definition = self.definition_aggregate(actor.tenant_id, definition_id)
        check_expected_version("definition", definition.version, version)
        at = self.ledger.clock()
        if published:
            definition.publish(at=at, actor=actor.account_id)
        else:
            definition.unpublish(at=at, actor=actor.account_id)
        self.ledger.save(definition)
        return DefinitionRow.of_aggregate(definition)

    def definition(self, tenant_id: UUID, definition_id: str) -> DefinitionRow:
        """One of the tenant's definitions, from its row; another tenant's, or an id that is
        none, is not found."""
        try:
            wanted = UUID(definition_id)
        except ValueError:
            raise NotFound("definition", definition_id) from None
        row = definition_row(self.ledger.store, tenant_id, wanted)
        if row is None:
            raise NotFound("definition", definition_id)
        return row

    def current_definition(self, tenant_id: UUID, definition_id: str) -> DefinitionRow:
        """One of the tenant's definitions as its log holds it now, never behind it as its
        row may be: what a write checks If-Match against and merges a patch into, and what a
        repeated create answers."""
        return DefinitionRow.of_aggregate(self.definition_aggregate(tenant_id, definition_id))

    def definition_by_key(self, tenant_id: UUID, key: str) -> DefinitionRow:
        """The tenant's definition of this key (keys are unique in a tenant), from its row."""
        row = definition_row_of_key(self.ledger.store, tenant_id, key)
        if row is None:
            raise NotFound("definition", key)
        return row

    def definition_timeline(self, tenant_id: UUID, definition_id: str) -> list[TimelineEntry]:
        """Every event of one of the tenant's definitions."""
        return self.ledger.timeline(self.definition_aggregate(tenant_id, definition_id).id)

    def account_names(self, tenant_id: UUID, ids: Iterable[str]) -> dict[str, str]:
        """The names of the tenant's accounts of these ids (a page's, in one query)."""
        return account_names(self.ledger.store, tenant_id, ids)

    def definition_names(self, tenant_id: UUID, ids: Iterable[str]) -> dict[str, str]:
        """The names of the tenant's definitions of these ids (a page's, in one query)."""
        return definition_names(self.ledger.store, tenant_id, ids)

    def definitions(self, tenant_id: UUID, window: Window) -> Page[DefinitionRow]:
        """The tenant's definitions, oldest first, from their `definitions` rows."""
        found = definition_page(self.ledger.store, tenant_id, window)
        return Page.of(found.rows, window, found)

    def launch_problems(self, tenant_id: UUID, settings: ScheduleSettings) -> dict[str, list[str]]:
        """What stops the definition or the initiator from being used by a schedule."""
        return self.launch_problems_of(tenant_id, settings.definition_id, settings.initiator_id)

    def launch_problems_of(
        self, tenant_id: UUID, definition_id: str, initiator_id: str
    ) -> dict[str, list[str]]:
        """What stops this definition or this initiator from launching an instance now."""
        problems = {
            "definition_id": definition_problem(self.find_definition(tenant_id, definition_id)),
            "initiator_id": initiator_problem(
                self._maybe(lambda: self._account(tenant_id, initiator_id))
            ),
        }
        return {field: [problem.reason] for field, problem in problems.items() if problem}

    def find_definition(self, tenant_id: UUID, definition_id: str) -> Definition | None:
        return self._maybe(lambda: self.definition_aggregate(tenant_id, definition_id))

    @staticmethod
    def _maybe(find: Callable[[], T]) -> T | None:
        try:
            return find()
        except NotFound:
            return None

    def definition_aggregate(self, tenant_id: UUID, definition_id: str) -> Definition:
        """A definition of this tenant; another tenant's is not found, never forbidden."""
        return self.ledger.find_in_tenant(Definition, definition_id, "definition", tenant_id)


def _under_reviewers(name: str) -> str:
    return name if name.startswith("reviewers") else f"reviewers.{name}"


def _rule_of(fields: DefinitionFields) -> dict[str, Any]:
    """The definition's deadline rule as events keep it (checked by then)."""
    if fields.deadline_rule is None:
        return seconds_rule(fields.review_window_seconds)
    return kept_rule(fields.deadline_rule)
