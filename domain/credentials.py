"""Passwords: what makes one acceptable, which kind of change setting one is, and how sign-ins
back off after failures (docs/security.md#passwords).

Pure rules: the hashes and the failure counts live outside the log, in the application's
tables (cronledger/application/credentials.py); the log records only that a password was set.
"""

from __future__ import annotations

import hmac
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from domain.errors import DomainError, ValidationFailed

MIN_PASSWORD = 10  # characters
MAX_PASSWORD = 256  # characters: bounded input, and bounded hashing work
SET = "set"  # the account had no password
CHANGED = "changed"  # the account changed its own, giving the current one
RESET = "reset"  # another account (a directory manager) replaced it
PASSWORD_KINDS = (SET, CHANGED, RESET)


def password_problems(password: str, account_id: str, name: str) -> list[str]:
    """What is wrong with `password` as the password of this account (nothing: empty)."""
    problems = []
    if len(password) < MIN_PASSWORD:
        problems.append(f"use at least {MIN_PASSWORD} characters")
    if len(password) > MAX_PASSWORD:
        problems.append(f"use at most {MAX_PASSWORD} characters")
    if password.strip().casefold() in {account_id.casefold(), name.strip().casefold()}:
        problems.append("must not be the account's id or name")
    return problems


def check_password(password: str, account_id: str, name: str, field: str = "password") -> None:
    """`password_problems`, raised as 422 on `field`."""
    problems = password_problems(password, account_id, name)
    if problems:
        raise ValidationFailed({field: problems})


def same_text(given: str, other: str) -> bool:
    """Whether two texts are the same, compared in constant time (passwords never as `==`)."""
    return hmac.compare_digest(given.encode(), other.encode())


def password_kind(by_itself: bool, had_password: bool) -> str:
    """What setting a password is: the first one, the account's own change, or a reset."""
    if not had_password:
        return SET
    return CHANGED if by_itself else RESET


@dataclass(frozen=True)
class BackOff:
    """How long sign-ins of one account, or from one address, wait after failures.

    The `locks_after`-th failure in a row locks for `first_lock`, and each further one (tried
    once the lock has passed) for twice as long as the last, never longer than `longest_lock`.
    Failures are forgotten `forget_after` the last one.
    """

    locks_after: int
    first_lock: timedelta = timedelta(seconds=30)
    longest_lock: timedelta = timedelta(minutes=15)
    forget_after: timedelta = timedelta(hours=24)

    def lock(self, failures: int) -> timedelta:
        """How long the `failures`-th failure in a row locks for (zero: not at all)."""
        if failures < self.locks_after:
            return timedelta(0)
        doublings = min(failures - self.locks_after, 32)  # far past the cap already
        return min(self.first_lock * (1 << doublings), self.longest_lock)

    def failures_after(self, failures: int, last_failure_at: datetime, at: datetime) -> int:
        """The count once a failure at `at` follows `failures` (the last at `last_failure_at`)."""
        return 1 if at - last_failure_at >= self.forget_after else failures + 1


ACCOUNT_BACK_OFF = BackOff(locks_after=5)
# An office behind one address shares it: more failures before a lock than one account gets.
ADDRESS_BACK_OFF = BackOff(locks_after=20)


class BackingOff(DomainError):
    """Sign-ins of this account, or from this address, wait after failures: 429 with
    Retry-After. Nothing was checked, and nothing counted."""

    code = "TOO_MANY_REQUESTS"

    def __init__(self, until: datetime, at: datetime) -> None:
        self.retry_after = max(1, math.ceil((until - at).total_seconds()))
        super().__init__(
            f"too many failed sign-ins: try again in {self.retry_after} s "
            "(an administrator may reset the password meanwhile)"
        )


class SignInFailed(DomainError):
    """The tenant, the account or the password is wrong, or the account has no password or is
    inactive: one answer for all, so that a caller learns nothing of which."""

    code = "UNAUTHENTICATED"

    def __init__(self) -> None:
        super().__init__("the tenant, account or password is wrong")
