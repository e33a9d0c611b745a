"""Passwords (docs/security.md#passwords): setting one, and signing in with one.

A password's argon2id hash lives in `account_credentials`, a mutable table outside the log, so
it is never in an event, a snapshot, a timeline, an evidence bundle or an export; the log
records only that a password was set, changed or reset, and by whom (`Account.PasswordSet`).
The event is saved before the hash is written, and a hash counts only while its `set_at` is the
account's `password_set_at` on the log: a hash written without its event never works.

Failed sign-ins are counted in `sign_in_failures` (never on the log: whoever fails is not
signed in) and in the metric `cronledger_sign_in_failures_total`, by account and by address,
and each backs off as `domain.credentials` says. The table holds a row per account that
failed, and at most ADDRESS_ROWS rows of addresses (those of the oldest failures go first).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from prometheus_client import Counter

from cronledger.application.directory import Directory
from cronledger.persistence.ledger import Ledger
from cronledger.persistence.store import as_instant
from domain.credentials import (
    ACCOUNT_BACK_OFF,
    ADDRESS_BACK_OFF,
    MAX_PASSWORD,
    BackingOff,
    BackOff,
    SignInFailed,
    check_password,
    password_kind,
    same_text,
)
from domain.directory import TENANT_NAME, Account, Principal, account_uuid, tenant_uuid
from domain.errors import Forbidden, NotFound, ValidationFailed
from domain.messages import Message
from domain.permissions import DIRECTORY_MANAGE
from projections.directory import account_ids_named

# OWASP's argon2id settings: 19 MiB, 2 passes, 1 lane (about 50 ms a hash on one core).
HASHER = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)
ADDRESS_ROWS = 10_000  # rows of addresses `sign_in_failures` keeps at most
MAX_ADDRESS = 64  # characters of an address kept (an IPv6 address has at most 45)
WRONG_PASSWORD, UNKNOWN_ACCOUNT, LOCKED_OUT = "wrong_password", "unknown_account", "locked_out"
REASONS = (WRONG_PASSWORD, UNKNOWN_ACCOUNT, LOCKED_OUT)
ACCOUNT, ADDRESS = "account", "address"
SAME_AS_CURRENT = "must differ from the current password"
BACK_OFF = {ACCOUNT: ACCOUNT_BACK_OFF, ADDRESS: ADDRESS_BACK_OFF}


@dataclass(frozen=True)
class PasswordChange:
    """What the log recorded of a password set: never the password."""

    account_id: str
    kind: str
    must_change: bool
    set_at: datetime
    set_by: str


@dataclass(frozen=True)
class SignedIn:
    """Who signed in with a password, and whether it was a one-time password to change now."""

    principal: Principal
    must_change: bool


@dataclass(frozen=True)
class Subject:
    """What failures are counted for: an account (`tenant id/account id`) or an address."""

    kind: str
    key: str

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.key}"

    @property
    def policy(self) -> BackOff:
        return BACK_OFF[self.kind]


def account_subject(tenant_id: UUID, account_id: str) -> Subject:
    return Subject(ACCOUNT, f"{tenant_id}/{account_id}")


def address_subject(address: str | None) -> Subject:
    return Subject(ADDRESS, (address or "unknown")[:MAX_ADDRESS])


class Credentials:
    def __init__(self, ledger: Ledger, directory: Directory, hasher: PasswordHasher = HASHER):
        self.ledger = ledger
        self.directory = directory
        self.hasher = hasher
        self.failures = Counter(
            "cronledger_sign_in_failures",
            "Password sign-ins (and wrong current passwords) refused, by reason",
            ["reason"],
            registry=None,
        )
        for reason in REASONS:
            self.failures.labels(reason)
        self._dummy_hash: str | None = None

    # -- setting a password ------------------------------------------------------------------

    def set_password(
        self,
        caller: Principal,
        account_id: str,
        password: str,
        must_change: bool = False,
        current_password: str | None = None,
    ) -> PasswordChange:
        """Set the account's password: the account itself (giving its current one, if it has
        one), or a directory manager for any account of the tenant (`must_change`: a one-time
        password, changed at its next sign-in)."""
        account = self.directory.account_aggregate(caller.tenant_id, account_id)
        by_itself = caller.account_id == account.account_id
        if not by_itself and not caller.can(DIRECTORY_MANAGE):
            raise Forbidden(
                Message(
                    "only {account} or an account with {permission} may",
                    account=account_id,
                    permission=DIRECTORY_MANAGE,
                )
            )
        if by_itself and must_change:
            raise ValidationFailed.of(
                "must_change", "only a directory manager gives another account a one-time password"
            )
        check_password(password, account.account_id, account.name)
        if by_itself and account.password_set_at is not None:
            self._check_current(account, current_password)
            if same_text(password, current_password or ""):
                raise ValidationFailed.of("password", SAME_AS_CURRENT)
        hashed = self.hasher.hash(password)
        change = self.ledger.retrying(
            lambda: self._record(caller, account_id, by_itself, must_change)
        )
        self._keep_hash(caller.tenant_id, account_id, hashed, change.set_at)
        self.directory.recent.forget()
        return change

    def _check_current(self, account: Account, current_password: str | None) -> None:
        """The account's own change gives its current password: a wrong one is a failure of
        the account's, backed off as a sign-in's."""
        if not current_password:
            raise ValidationFailed.of("current_password", "give the account's current password")
        at = self.ledger.clock()
        subject = account_subject(account.tenant_id, account.account_id)
        self._check_lock(subject, at)
        if not self._verify(self._hash_of(account), current_password):
            self._failed(WRONG_PASSWORD, [subject], at)
            raise ValidationFailed.of(
                "current_password", "this is not the account's current password"
            )

    def _record(
        self, caller: Principal, account_id: str, by_itself: bool, must_change: bool
    ) -> PasswordChange:
        account = self.directory.account_aggregate(caller.tenant_id, account_id)
        kind = password_kind(by_itself, account.password_set_at is not None)
        at = self.ledger.clock()
        account.set_password(kind, must_change, at=at, actor=caller.account_id)
        self.ledger.save(account)
        return PasswordChange(account_id, kind, must_change, at, caller.account_id)

    def _keep_hash(self, tenant_id: UUID, account_id: str, hashed: str, at: datetime) -> None:
        self.ledger.store.write(
            "INSERT INTO account_credentials (tenant_id, account_id, password_hash, set_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (tenant_id, account_id) DO UPDATE SET "
            "password_hash = excluded.password_hash, set_at = excluded.set_at",
            (str(tenant_id), account_id, hashed, at),
        )

    def _hash_of(self, account: Account) -> str | None:
        """The account's hash, if it is active and the log says its password was set then."""
        if not account.active or account.password_set_at is None:
            return None
        rows = self.ledger.store.query(
            "SELECT password_hash, set_at FROM account_credentials "
            "WHERE tenant_id = ? AND account_id = ?",
            (str(account.tenant_id), account.account_id),
        )
        set_then = account.password_set_at  # an instant: compared as one
        if not rows or as_instant(rows[0][1]) != set_then:
            return None
        return str(rows[0][0])

    # -- signing in --------------------------------------------------------------------------

    def sign_in(
        self, tenant: str, account_ref: str, password: str, address: str | None
    ) -> SignedIn:
        """Who `password` signs in as: the account of this id (else of this name) in the tenant
        named `tenant`. Raises `BackingOff` while the address or the account waits after
        failures, and `SignInFailed` for any wrong part (counted)."""
        at = self.ledger.clock()
        from_address = address_subject(address)
        self._check_lock(from_address, at)
        account = self._find(tenant, account_ref)
        if account is None:
            self._verify(None, password)  # as long as a real check: the answer tells nothing
            self._failed(UNKNOWN_ACCOUNT, [from_address], at)
            raise SignInFailed()
        subject = account_subject(account.tenant_id, account.account_id)
        self._check_lock(subject, at)
        hashed = self._hash_of(account)
        if not self._verify(hashed, password):
            self._failed(WRONG_PASSWORD if hashed else UNKNOWN_ACCOUNT, [from_address, subject], at)
            raise SignInFailed()
        self._forget(subject)
        if hashed is not None and self.hasher.check_needs_rehash(hashed):
            self._keep_hash(account.tenant_id, account.account_id, self.hasher.hash(password), at)
        principal = Principal(account.tenant_id, account.account_id, account.permissions)
        return SignedIn(principal, account.password_must_change)

    def _find(self, tenant: str, account_ref: str) -> Account | None:
        """The tenant's account whose id is `account_ref`, else the one account so named."""
        if not TENANT_NAME.fullmatch(tenant) or not 0 < len(account_ref) <= MAX_PASSWORD:
            return None
        tenant_id = tenant_uuid(tenant)
        ids = [account_ref] if self.ledger.exists(account_uuid(tenant_id, account_ref)) else []
        ids = ids or account_ids_named(self.ledger.store, tenant_id, account_ref)
        if len(ids) != 1:
            return None
        try:
            return self.directory.account_aggregate(tenant_id, ids[0])
        except NotFound:
            return None

    def _verify(self, hashed: str | None, password: str) -> bool:
        """Whether `password` is the one `hashed` was made of; without a hash, the same work
        against a hash of nothing's, and False."""
        if len(password) > MAX_PASSWORD:
            return False
        if hashed is None:
            self._dummy_hash = self._dummy_hash or self.hasher.hash("no password at all")
            hashed, password = self._dummy_hash, ""
        try:
            return self.hasher.verify(hashed, password) and bool(password)
        except (VerificationError, InvalidHashError):
            return False

    # -- failures ----------------------------------------------------------------------------

    def _check_lock(self, subject: Subject, at: datetime) -> None:
        rows = self.ledger.store.query(
            "SELECT locked_until FROM sign_in_failures WHERE subject = ?", (subject.name,)
        )
        until = as_instant(rows[0][0]) if rows else None
        if until is not None and until > at:
            self.failures.labels(LOCKED_OUT).inc()
            raise BackingOff(until, at)

    def _failed(self, reason: str, subjects: list[Subject], at: datetime) -> None:
        self.failures.labels(reason).inc()
        for subject in subjects:
            self._count(subject, at)

    def _count(self, subject: Subject, at: datetime) -> None:
        """One more failure of `subject` (the first, if the last was long ago), and the lock
        that count makes."""
        policy = subject.policy
        with self.ledger.store.connect() as connection:
            failures = self._execute(
                connection,
                "INSERT INTO sign_in_failures (subject, kind, failures, last_failure_at) "
                "VALUES (?, ?, 1, ?) ON CONFLICT (subject) DO UPDATE SET failures = CASE "
                "WHEN sign_in_failures.last_failure_at <= ? THEN 1 "
                "ELSE sign_in_failures.failures + 1 END, "
                "last_failure_at = excluded.last_failure_at RETURNING failures",
                (subject.name, subject.kind, at, at - policy.forget_after),
            ).fetchall()[0][0]
            lock = policy.lock(int(failures))
            if lock:
                self._execute(
                    connection,
                    "UPDATE sign_in_failures SET locked_until = ? "
                    "WHERE subject = ? AND failures = ?",
                    (at + lock, subject.name, failures),
                )
            if failures == 1 and subject.kind == ADDRESS:
                self._evict(connection)

    def _evict(self, connection: Any) -> None:
        """Rows of addresses past the newest ADDRESS_ROWS go, oldest failure first."""
        self._execute(
            connection,
            "DELETE FROM sign_in_failures WHERE kind = ? AND last_failure_at < ("
            "SELECT last_failure_at FROM sign_in_failures WHERE kind = ? "
            "ORDER BY last_failure_at DESC LIMIT 1 OFFSET ?)",
            (ADDRESS, ADDRESS, ADDRESS_ROWS - 1),
        )

    def _forget(self, subject: Subject) -> None:
        """A sign-in that worked forgets the account's failures (never the address's)."""
        self.ledger.store.write("DELETE FROM sign_in_failures WHERE subject = ?", (subject.name,))

    def _execute(self, connection: Any, statement: str, params: tuple[Any, ...]) -> Any:
        return connection.execute(*self.ledger.store.native(statement, params))
