"""Passwords as the domain rules them: what is accepted, which kind of change a set is, how
sign-ins back off after failures, and what the account (and its older snapshots) records."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest
from eventsourcing.domain import Snapshot

from domain.credentials import (
    ACCOUNT_BACK_OFF,
    ADDRESS_BACK_OFF,
    CHANGED,
    MAX_PASSWORD,
    MIN_PASSWORD,
    RESET,
    SET,
    BackingOff,
    check_password,
    password_kind,
    password_problems,
    same_text,
)
from domain.directory import Account
from domain.errors import InvalidState, ValidationFailed
from domain.sessions import ConsoleSession, session_uuid
from tests.unit.test_reminders import stored_at_version

T0 = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


def olga() -> Account:
    return Account(UUID(int=1), "olga", "Olga Petrova", ["operator"], at=T0, actor="root")


@pytest.mark.parametrize(
    ("password", "problems"),
    [
        ("a" * (MIN_PASSWORD - 1), [f"use at least {MIN_PASSWORD} characters"]),
        ("a" * (MAX_PASSWORD + 1), [f"use at most {MAX_PASSWORD} characters"]),
        ("OLGA PETROVA", ["must not be the account's id or name"]),
        ("correct horse battery", []),
        ("一二三四五六七八九十", []),  # characters, not bytes: ten Chinese characters will do
        ("a" * MAX_PASSWORD, []),
    ],
)
def test_a_password_is_long_enough_bounded_and_not_the_accounts_id_or_name(
    password: str, problems: list[str]
) -> None:
    assert password_problems(password, "olga", "Olga Petrova") == problems


def test_an_id_that_is_long_enough_is_still_refused_as_a_password() -> None:
    with pytest.raises(ValidationFailed) as refused:
        check_password("olga.petrova", "olga.petrova", "Olga", field="password")
    assert refused.value.errors == {"password": ["must not be the account's id or name"]}


def test_passwords_are_compared_as_whole_texts_chinese_too() -> None:
    assert same_text("一二三四五六七八九十", "一二三四五六七八九十")
    assert not same_text("一二三四五六七八九十", "一二三四五六七八九")
    assert not same_text("Password-1", "password-1")


@pytest.mark.parametrize(
    ("by_itself", "had_password", "kind"),
    [(True, False, SET), (False, False, SET), (True, True, CHANGED), (False, True, RESET)],
)
def test_the_kind_of_a_set_says_who_replaced_what(
    by_itself: bool, had_password: bool, kind: str
) -> None:
    assert password_kind(by_itself, had_password) == kind


def test_an_account_locks_at_its_fifth_failure_for_longer_each_time_up_to_a_cap() -> None:
    locks = [ACCOUNT_BACK_OFF.lock(n).total_seconds() for n in range(1, 12)]
    assert locks == [0, 0, 0, 0, 30, 60, 120, 240, 480, 900, 900]
    assert ACCOUNT_BACK_OFF.lock(10_000) == timedelta(minutes=15)


def test_an_address_locks_later_than_an_account() -> None:
    assert ADDRESS_BACK_OFF.lock(19) == timedelta(0)
    assert ADDRESS_BACK_OFF.lock(20) == timedelta(seconds=30)


def test_failures_are_forgotten_a_day_after_the_last() -> None:
    later = T0 + timedelta(hours=23, minutes=59)
    assert ACCOUNT_BACK_OFF.failures_after(7, T0, later) == 8
    assert ACCOUNT_BACK_OFF.failures_after(7, T0, T0 + timedelta(hours=24)) == 1


def test_backing_off_says_how_long_to_wait_in_whole_seconds() -> None:
    waiting = BackingOff(T0 + timedelta(seconds=29, milliseconds=100), T0)
    assert (waiting.retry_after, waiting.code) == (30, "TOO_MANY_REQUESTS")
    assert "try again in 30 s" in waiting.message
    assert BackingOff(T0, T0).retry_after == 1


def test_setting_a_password_records_that_it_was_set_and_by_whom_never_the_password() -> None:
    account = olga()
    account.set_password(SET, True, at=T0 + timedelta(hours=1), actor="root")
    *_, event = account.collect_events()
    assert type(event).__qualname__ == "Account.PasswordSet"
    assert event.__dict__ == {
        "originator_id": account.id,
        "originator_version": 2,
        "timestamp": event.timestamp,
        "kind": SET,
        "must_change": True,
        "at": T0 + timedelta(hours=1),
        "actor": "root",
    }
    assert (account.password_set_at, account.password_must_change) == (
        T0 + timedelta(hours=1),
        True,
    )


def test_a_sign_in_with_a_password_holds_until_the_password_is_set_again() -> None:
    account = olga()
    assert not account.password_works_for(T0)  # no password yet
    account.set_password(SET, False, at=T0, actor="root")
    assert account.password_works_for(T0)
    account.set_password(RESET, True, at=T0 + timedelta(minutes=5), actor="root")
    assert not account.password_works_for(T0 + timedelta(minutes=1))
    assert account.password_works_for(T0 + timedelta(minutes=5))
    account.deactivate(at=T0 + timedelta(minutes=6), actor="root")
    assert not account.password_works_for(T0 + timedelta(minutes=7))


def test_a_deactivated_account_gets_no_password() -> None:
    account = olga()
    account.deactivate(at=T0, actor="root")
    with pytest.raises(InvalidState):
        account.set_password(SET, False, at=T0, actor="root")


def test_an_account_snapshot_from_before_passwords_reads_as_having_none() -> None:
    account = olga()
    account.issue_token("t-1", at=T0, actor="root")
    older = stored_at_version(Snapshot.take(account), 1, "password_set_at", "password_must_change")
    restored = older.mutate(None)
    assert (restored.password_set_at, restored.password_must_change) == (None, False)
    assert restored.tokens == {"t-1": False}


def test_a_session_signed_in_with_a_password_names_no_token_and_keeps_when_it_started() -> None:
    session = ConsoleSession(
        secret_hash=session_uuid("cls_secret"),
        tenant_id=UUID(int=1),
        account_id="olga",
        token_id=None,
        expires_at=T0 + timedelta(hours=12),
        at=T0,
        actor="olga",
    )
    assert (session.token_id, session.started_at) == (None, T0)
