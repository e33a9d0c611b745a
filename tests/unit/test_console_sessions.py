"""Console sessions as the domain records them, and their settings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from cronledger.config import ConfigError, Settings, effective
from domain.directory import token_uuid
from domain.sessions import SIGNED_OUT, ConsoleSession, session_uuid

T0 = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


def started(hours: float = 12) -> ConsoleSession:
    return ConsoleSession(
        secret_hash=session_uuid("cls_secret"),
        tenant_id=UUID(int=1),
        account_id="ann",
        token_id=token_uuid("clt_token"),
        expires_at=T0 + timedelta(hours=hours),
        at=T0,
        actor="ann",
    )


def test_a_session_is_named_by_a_hash_of_its_secret_never_like_a_token() -> None:
    assert session_uuid("cls_a") == session_uuid("cls_a") != session_uuid("cls_b")
    assert session_uuid("same") != token_uuid("same")
    assert started().id == session_uuid("cls_secret")


def test_a_session_works_until_it_expires_or_ends_and_ends_once() -> None:
    session = started()
    assert session.works_at(T0 + timedelta(hours=12) - timedelta(microseconds=1))
    assert not session.works_at(T0 + timedelta(hours=12))
    session.end(at=T0 + timedelta(hours=1), actor="ann", reason=SIGNED_OUT)
    session.end(at=T0 + timedelta(hours=2), actor="ann", reason=SIGNED_OUT)
    assert not session.works_at(T0 + timedelta(hours=1))
    events = session.collect_events()
    assert [type(e).__qualname__ for e in events] == [
        "ConsoleSession.Started",
        "ConsoleSession.Ended",
    ]
    assert (events[1].at, events[1].reason) == (T0 + timedelta(hours=1), SIGNED_OUT)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("variable", "value", "rule"),
    [
        ("CRONLEDGER_SECRET_KEY", "too-short-a-key", "at least 32 characters"),
        ("CRONLEDGER_CONSOLE_SESSION_HOURS", "0", "from 1 to 720"),
        ("CRONLEDGER_CONSOLE_SESSION_HOURS", "1.5", "from 1 to 720"),
    ],
)
def test_console_settings_out_of_their_rule_are_refused(
    variable: str, value: str, rule: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({variable: value})
    assert rule in str(refused.value)
    assert "too-short" not in str(refused.value)


def test_the_secret_key_is_never_shown() -> None:
    key = "s" * 40
    settings = Settings.from_env(
        {"CRONLEDGER_SECRET_KEY": key, "CRONLEDGER_CONSOLE_SESSION_HOURS": "8"}
    )
    assert (settings.secret_key, settings.console_session_hours) == (key, 8)
    assert key not in repr(settings)
    shown = {row.variable: row.value for row in effective(settings, {})}
    assert shown["CRONLEDGER_SECRET_KEY"] == "***"
