"""Console sessions: signing in with an account token or password, each request's check,
signing out.

A session is a `ConsoleSession` on the log, named by a hash of a random secret that only the
browser's cookie holds. A request's session works while it has not ended, its lifetime has not
passed, and its token still works (for a password's: the account is active and its password was
not set since the session started); what a check found is reused for up to
`TOKEN_CACHE_SECONDS`, in the directory's memory of recent principals, so that a revocation,
deactivation or role change in this process is seen at once, and in another within that time.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from uuid import UUID

from cronledger.application.credentials import Credentials
from cronledger.application.directory import Directory
from cronledger.persistence.ledger import Ledger
from domain.directory import Principal, token_uuid
from domain.errors import NotFound
from domain.sessions import SIGNED_OUT, ConsoleSession, session_uuid

SESSION_PREFIX = "cls_"  # a session secret, told apart from an API token (clt_)


@dataclass(frozen=True)
class StartedSession:
    """A new session: its secret (for the browser's cookie alone), who signed in, and whether
    they signed in with a one-time password, which they must change before anything else."""

    secret: str
    principal: Principal
    must_change: bool = False


class ConsoleSessions:
    def __init__(
        self,
        ledger: Ledger,
        directory: Directory,
        lifetime: timedelta,
        credentials: Credentials,
    ) -> None:
        self.ledger = ledger
        self.directory = directory
        self.lifetime = lifetime
        self.credentials = credentials

    def start(self, token: str) -> StartedSession | None:
        """A session for the account `token` stands for, or None if the token does not work."""
        principal = self.directory.authenticate(token)
        if principal is None:
            return None
        return StartedSession(self._begin(principal, token_uuid(token)), principal)

    def start_with_password(
        self, tenant: str, account: str, password: str, address: str | None
    ) -> StartedSession:
        """A session for the account `password` signs in as (`Credentials.sign_in`, which
        raises `BackingOff` or `SignInFailed` instead)."""
        signed_in = self.credentials.sign_in(tenant, account, password, address)
        principal = signed_in.principal
        return StartedSession(self._begin(principal, None), principal, signed_in.must_change)

    def renew(self, secret: str, principal: Principal) -> StartedSession:
        """After the account changed its own password: this session ends (a password's would
        stop working anyway) and a new one with the new password begins."""
        self.end(secret)
        return StartedSession(self._begin(principal, None), principal)

    def _begin(self, principal: Principal, token_id: UUID | None) -> str:
        """A new session on the log (`token_id` None: signed in with a password); its secret."""
        secret = SESSION_PREFIX + secrets.token_urlsafe(32)
        at = self.ledger.clock()
        session = ConsoleSession(
            secret_hash=session_uuid(secret),
            tenant_id=principal.tenant_id,
            account_id=principal.account_id,
            token_id=token_id,
            expires_at=at + self.lifetime,
            at=at,
            actor=principal.account_id,
        )
        self.ledger.save(session)
        return secret

    def principal(self, secret: str) -> Principal | None:
        """Who a working session stands for now (or within the last second), else None."""
        if not secret.startswith(SESSION_PREFIX):
            return None
        session_id = session_uuid(secret)
        recent = self.directory.recent
        principal = recent.get(session_id)
        if principal is None:
            generation = recent.generation
            principal = self._check(session_id)
            if principal is not None:
                recent.keep(session_id, principal, generation)
        return principal

    def _check(self, session_id: UUID) -> Principal | None:
        session = self._find(session_id)
        if session is None or not session.works_at(self.ledger.clock()):
            return None
        if session.token_id is None:
            return self._password_principal(session)
        principal = self.directory.authenticate_token_id(session.token_id)
        if principal is None or principal.account_id != session.account_id:
            return None
        return principal

    def _password_principal(self, session: ConsoleSession) -> Principal | None:
        """Who a password's session stands for: its account while active, until its password
        is set again (by the account itself or a reset)."""
        try:
            account = self.directory.account_aggregate(session.tenant_id, session.account_id)
        except NotFound:
            return None
        if not account.password_works_for(session.started_at):
            return None
        return Principal(session.tenant_id, account.account_id, account.permissions)

    def end(self, secret: str) -> None:
        """Sign out: the session ends on the log, so a copy of its cookie stops working too."""
        if secret.startswith(SESSION_PREFIX):
            self.ledger.retrying(lambda: self._end(session_uuid(secret)))
            self.directory.recent.forget()

    def _end(self, session_id: UUID) -> None:
        session = self._find(session_id)
        if session is not None:
            session.end(at=self.ledger.clock(), actor=session.account_id, reason=SIGNED_OUT)
            self.ledger.save(session)

    def _find(self, session_id: UUID) -> ConsoleSession | None:
        try:
            return self.ledger.find(ConsoleSession, session_id, "session", "")
        except NotFound:
            return None
