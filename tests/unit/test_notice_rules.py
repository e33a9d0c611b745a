"""Which notices an approval event makes, and for whom (issue 30, item 8)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

from domain.notices import (
    APPLICATION_DECIDED,
    CALLBACK_LATE_OR_MISMATCHED,
    MAX_EMAIL_ATTEMPTS,
    TASK_ASSIGNED,
    Handled,
    NoticeDraft,
    email_due,
    email_of,
    notice_id,
    notices_of_command,
)

APPLICANT = "rita"
INSTANCE = "i-1"


def notices(
    command: str, outcome: str, actor: str, params: dict[str, Any] | None = None
) -> list[NoticeDraft]:
    handled = Handled(INSTANCE, command, outcome, actor, params)
    return notices_of_command(APPLICANT, "Open account", handled)


def test_a_decision_by_someone_else_notifies_the_applicant() -> None:
    assert notices("approve", "APPROVED", "olga") == [
        NoticeDraft(
            APPLICANT,
            APPLICATION_DECIDED,
            INSTANCE,
            {"title": "Open account", "outcome": "APPROVED", "actor": "olga"},
        )
    ]
    assert [n.params["outcome"] for n in notices("sweep", "EXPIRED", "system:sweeper")] == [
        "EXPIRED"
    ]


def test_the_applicant_is_not_told_of_what_they_did_themselves() -> None:
    assert notices("withdraw", "WITHDRAWN", APPLICANT) == []


def test_an_expiry_is_the_deadlines_decision_even_on_the_applicants_late_withdrawal() -> None:
    assert [n.kind for n in notices("withdraw", "EXPIRED", APPLICANT)] == [APPLICATION_DECIDED]


def test_commands_that_decide_nothing_notify_nobody() -> None:
    for outcome in ("STALE_MATERIAL", "SELF_APPROVAL", "CONFLICT", "EXTENDED", "FORBIDDEN"):
        assert notices("approve", outcome, "olga") == []
    assert notices("sign", "OBSERVED", "esign") == []  # a callback in time, matching


def test_a_late_callback_notifies_the_applicant() -> None:
    late = notices("sign", "LATE_OR_CONFLICT", "esign")
    assert [(n.kind, n.params["late"]) for n in late] == [(CALLBACK_LATE_OR_MISMATCHED, True)]


def test_a_callback_after_the_deadline_tells_of_the_expiry_and_of_the_callback() -> None:
    kinds = [n.kind for n in notices("sign", "EXPIRED", "esign")]
    assert kinds == [APPLICATION_DECIDED, CALLBACK_LATE_OR_MISMATCHED]


def test_a_mismatched_callback_notifies_the_applicant_with_the_mismatches_codes() -> None:
    params = {"mismatches": [{"code": "MATERIAL_STALE", "params": {"offered": 1, "current": 2}}]}
    (notice,) = notices("sign", "OBSERVED", "esign", params)
    assert (notice.kind, notice.params["late"], notice.params["mismatches"]) == (
        CALLBACK_LATE_OR_MISMATCHED,
        False,
        ["MATERIAL_STALE"],
    )


def test_a_refused_callers_callback_notifies_nobody() -> None:
    assert notices("sign", "FORBIDDEN", "sales") == []


def test_a_notices_id_is_the_same_for_the_same_event_account_and_kind() -> None:
    instance = uuid4()
    first = notice_id(instance, 2, APPLICANT, APPLICATION_DECIDED)
    assert first == notice_id(instance, 2, APPLICANT, APPLICATION_DECIDED)
    assert first != notice_id(instance, 3, APPLICANT, APPLICATION_DECIDED)
    assert first != notice_id(instance, 2, "olga", APPLICATION_DECIDED)
    assert first != notice_id(instance, 2, APPLICANT, CALLBACK_LATE_OR_MISMATCHED)


def test_an_email_is_tried_at_once_then_after_doubling_waits_then_no_more() -> None:
    at = datetime(2026, 10, 1, 9, tzinfo=UTC)
    assert email_due(0, None, at, 30)
    assert not email_due(1, at, at + timedelta(seconds=29), 30)
    assert email_due(1, at, at + timedelta(seconds=30), 30)
    assert not email_due(3, at, at + timedelta(seconds=119), 30)
    assert email_due(3, at, at + timedelta(seconds=120), 30)
    assert not email_due(MAX_EMAIL_ATTEMPTS, at, at + timedelta(days=365), 30)


def test_an_email_is_worded_in_the_accounts_language_with_its_code() -> None:
    params = {"title": "Open account", "outcome": "EXPIRED", "actor": "system:sweeper"}
    assert email_of(APPLICATION_DECIDED, params, "en")[0] == (
        'Your application "Open account" was expired'
    )
    subject, body = email_of(APPLICATION_DECIDED, params, "zh-CN")
    assert subject == "您的申请「Open account」已过期"
    assert body.endswith("[APPLICATION_DECIDED]")
    late = {"title": "T", "late": True, "mismatches": []}
    assert "迟到" in email_of(CALLBACK_LATE_OR_MISMATCHED, late, "fr")[1]  # Chinese otherwise
    handed = {"title": "T", "actor": "bo"}
    assert email_of(TASK_ASSIGNED, handed, "en")[0] == '"T" is yours to review'
    assert email_of("A_LATER_KIND", {}, "en")[0] == "New notice"  # a kind this release lacks


def test_an_escalation_tells_its_target_and_whom_it_took_the_task_from() -> None:
    from domain.notices import TaskFacts, escalation_notices, reminder_notices

    held = TaskFacts("i", "T", ("bo", "cy"), "bo")
    told = [(d.account_id, d.kind) for d in escalation_notices(held, "boss", "boss")]
    assert told == [("boss", "TASK_ESCALATED_TO"), ("bo", "TASK_ESCALATED_AWAY")]
    assert [d.account_id for d in escalation_notices(held, "boss", None)] == ["boss"]  # notify
    assert [d.account_id for d in reminder_notices(held, 3600)] == ["bo"]
    open_task = TaskFacts("i", "T", ("bo", "cy"), None)
    assert [d.account_id for d in reminder_notices(open_task, 3600)] == ["bo", "cy"]
