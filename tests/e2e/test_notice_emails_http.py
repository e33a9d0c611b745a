"""Notices by email (issue 30, item 8): through a real SMTP server on loopback, in the
account's language, retried when refused, each attempt recorded without the address."""

from __future__ import annotations

import email.header
from typing import Any

from cronledger.application.mailer import Mailer
from cronledger.application.services import Services
from cronledger.config import Settings
from tests.e2e.helpers import account, submit
from tests.smtp_receiver import smtp_server
from tests.support import Api, FakeClock

EMAIL = "rita@example.com"


def decided(admin: Api, definition_id: str, language: str) -> tuple[Api, dict[str, Any]]:
    """rita, with an address and a language, and her instance approved by olga."""
    rita = account(admin, "rita", ["requester"])
    olga = account(admin, "olga", ["operator"])
    rita.put("/api/accounts/rita/contact", {"email": EMAIL, "language": language})
    instance = submit(rita, definition_id).json
    olga.post(
        f"/api/approvals/{instance['id']}/approve", {"command_id": "ok", "material_version": 2}
    )
    return rita, instance


def mailer(services: Services, url: str) -> Mailer:
    return Mailer(services.ledger, Settings(smtp_url=url, webhook_retry_base_seconds=30))


def subject(message: Any) -> str:
    return str(email.header.make_header(email.header.decode_header(message["Subject"])))


def test_an_approved_applicant_reads_the_notice_and_gets_the_email_in_english(
    admin: Api, services: Services, definition_id: str
) -> None:
    rita, _ = decided(admin, definition_id, "en")
    (notice,) = rita.get("/api/notifications").json["items"]
    rita.post(f"/api/notifications/{notice['id']}/read")
    assert rita.get("/api/notifications").json["unread"] == 0
    with smtp_server() as (receiver, url):
        assert mailer(services, url).send_due() == 1
        assert mailer(services, url).send_due() == 0  # sent: never again
    (message,) = receiver.messages
    assert message["To"] == EMAIL
    assert subject(message) == 'Your application "Open account" was approved'
    assert "APPLICATION_DECIDED" in message.get_payload()


def test_chinese_by_default(admin: Api, services: Services, definition_id: str) -> None:
    decided(admin, definition_id, "zh-CN")
    with smtp_server() as (receiver, url):
        mailer(services, url).send_due()
    assert subject(receiver.messages[0]) == "您的申请「Open account」已通过"


def test_a_refused_email_is_retried_after_a_backoff_and_the_instance_is_untouched(
    admin: Api, services: Services, definition_id: str, clock: FakeClock
) -> None:
    _, instance = decided(admin, definition_id, "en")
    before = admin.get(f"/api/approvals/{instance['id']}").json
    with smtp_server(refusals=1) as (receiver, url):
        sender = mailer(services, url)
        assert sender.send_due() == 0
        assert sender.send_due() == 0  # not due before the backoff
        clock.advance(30)
        assert sender.send_due() == 1
    assert len(receiver.messages) == 1
    attempts = services.store.query(
        "SELECT attempt, outcome, error FROM notice_emails ORDER BY attempt"
    )
    assert [(a, o) for a, o, _ in attempts] == [(1, "FAILED"), (2, "SENT")]
    assert "451" in attempts[0][2]
    assert not [row for row in attempts if EMAIL in str(row)]
    assert admin.get(f"/api/approvals/{instance['id']}").json == before


def test_a_server_that_is_away_fails_the_attempt_only(
    admin: Api, services: Services, definition_id: str
) -> None:
    decided(admin, definition_id, "en")
    with smtp_server() as (_, url):
        pass  # stopped: nothing answers on its port
    assert mailer(services, url).send_due() == 0
    (outcome,) = services.store.query("SELECT outcome FROM notice_emails")
    assert outcome == ("FAILED",)
