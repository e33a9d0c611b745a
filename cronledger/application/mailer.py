"""Notices by email (docs/operations.md#email-delivery): each notice whose account has an
address is sent in the account's language, at least once, retried with exponential backoff.

Each attempt is a row of `notice_emails` (its outcome and error, never the address). Sending
touches nothing but that table: a failed email never changes an instance.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
from email.message import EmailMessage
from typing import Any

from cronledger.config import Settings, SmtpTarget
from cronledger.persistence.ledger import Ledger
from cronledger.persistence.store import as_instant
from domain.notices import FAILED, SENT, email_due, email_of
from projections.json_columns import json_value

log = logging.getLogger("cronledger.mailer")
BATCH = 50  # notices looked at in one pass
TIMEOUT_SECONDS = 10.0
PENDING = (
    "SELECT n.id, n.kind, n.params, c.email, c.language, "
    "(SELECT COUNT(*) FROM notice_emails e WHERE e.notice_id = n.id), "
    "(SELECT MAX(e.at) FROM notice_emails e WHERE e.notice_id = n.id) "
    "FROM notifications n JOIN account_contacts c "
    "ON c.tenant_id = n.tenant_id AND c.account_id = n.account_id "
    "WHERE c.email IS NOT NULL AND NOT EXISTS (SELECT 1 FROM notice_emails s "
    "WHERE s.notice_id = n.id AND s.outcome = 'SENT') ORDER BY n.position LIMIT ?"
)


class Mailer:
    def __init__(self, ledger: Ledger, settings: Settings) -> None:
        self.ledger = ledger
        self.target = SmtpTarget.parse(settings.smtp_url) if settings.smtp_url else None
        self.sender = settings.smtp_from
        self.retry_base_seconds = settings.webhook_retry_base_seconds

    def send_due(self) -> int:
        """Try each notice's email that is due; how many were sent. Nothing without a server."""
        if self.target is None:
            return 0
        now = self.ledger.clock()
        sent = 0
        for notice_id, kind, params, email, language, attempts, last_at in self.ledger.store.query(
            PENDING, (BATCH,)
        ):
            if email_due(int(attempts), as_instant(last_at), now, self.retry_base_seconds):
                message = self._message(str(email), kind, json_value(params), str(language))
                sent += self._attempt(str(notice_id), int(attempts) + 1, message)
        return sent

    def _message(self, to: str, kind: str, params: Any, language: str) -> EmailMessage:
        subject, body = email_of(kind, params, language)
        message = EmailMessage()
        message["From"], message["To"], message["Subject"] = self.sender, to, subject
        message["Content-Language"] = language
        message.set_content(body)
        return message

    def _attempt(self, notice_id: str, attempt: int, message: EmailMessage) -> int:
        """Send once and record it; an error is recorded (without the address), not raised."""
        error = None
        try:
            self._send(message)
        except (OSError, smtplib.SMTPException) as failed:
            error = f"{type(failed).__name__}: {failed}".replace(str(message["To"]), "<address>")
            log.warning("notice email failed", extra={"notice_id": notice_id, "attempt": attempt})
        self.ledger.store.write(
            "INSERT INTO notice_emails (notice_id, attempt, at, outcome, error) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (notice_id, attempt) DO NOTHING",
            (notice_id, attempt, self.ledger.clock(), FAILED if error else SENT, error),
        )
        return 0 if error else 1

    def _send(self, message: EmailMessage) -> None:
        target = self.target
        assert target is not None  # send_due checked
        context = ssl.create_default_context()
        kind = smtplib.SMTP_SSL if target.tls else smtplib.SMTP
        extra: dict[str, Any] = {"context": context} if target.tls else {}
        with kind(target.host, target.port, timeout=TIMEOUT_SECONDS, **extra) as smtp:
            if target.starttls:
                smtp.starttls(context=context)
            if target.user is not None:
                smtp.login(target.user, target.password or "")
            smtp.send_message(message)
