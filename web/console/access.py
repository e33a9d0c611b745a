"""Who is signed in to the console, and what they may do.

`viewer()` is the signed-in account as the directory stands now: a session that was signed
out or has expired, or whose token was revoked, password set again or account deactivated, ends
at its next request (within a second when another process made that change). A session begun
with a one-time password opens no page but the one that changes it (and signing out).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from flask import current_app, g, request, session
from flask_babel import gettext as _
from werkzeug.exceptions import Forbidden

from cronledger.application.sessions import ConsoleSessions
from domain.directory import Principal

R = TypeVar("R")
SESSION_FIELD = "sid"  # the cookie keeps the session's random secret, never a token
CHANGE_DUE_FIELD = "password_change"  # signed in with a one-time password: change it
# What a session with a one-time password may open besides the page that changes it.
WHILE_CHANGING = frozenset(
    {"console.session.change_password", "console.session.sign_out", "console.language"}
)


class SignInNeeded(Exception):
    """No working session: the console sends the browser to the sign-in page."""


class PasswordChangeNeeded(Exception):
    """Signed in with a one-time password: the console sends the browser to change it."""


def viewer_or_none() -> Principal | None:
    if "viewer" not in g:
        g.viewer = _session_principal()
    return g.viewer  # type: ignore[no-any-return]


def sessions() -> ConsoleSessions:
    return current_app.extensions["console_sessions"]  # type: ignore[no-any-return]


def _session_principal() -> Principal | None:
    secret = session.get(SESSION_FIELD)
    if not isinstance(secret, str):
        return None
    principal = sessions().principal(secret)
    if principal is None:
        session.pop(SESSION_FIELD)
        session.pop(CHANGE_DUE_FIELD, None)
    return principal


def session_check() -> Callable[[], Principal | None]:
    """This request's session checked again later (by a long answer, e.g. an event stream):
    who it stands for then, or None once it was signed out, expired or lost its token."""
    secret = session.get(SESSION_FIELD)
    service = sessions()
    return lambda: service.principal(secret) if isinstance(secret, str) else None


def viewer() -> Principal:
    """The signed-in account, or SignInNeeded (PasswordChangeNeeded: it signed in with a
    one-time password, and this is not the page that changes it)."""
    principal = viewer_or_none()
    if principal is None:
        raise SignInNeeded()
    if session.get(CHANGE_DUE_FIELD) and request.endpoint not in WHILE_CHANGING:
        raise PasswordChangeNeeded()
    return principal


def can(permission: str) -> bool:
    """Whether the signed-in account holds `permission` (templates hide what it may not do)."""
    principal = viewer_or_none()
    return principal is not None and principal.can(permission)


def signed_in(
    permission: str | None = None, also: str | None = None
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """A page for signed-in accounts (holding `permission`, or `also`); the view gets
    `principal` first."""

    def decorate(view: Callable[..., R]) -> Callable[..., R]:
        @functools.wraps(view)
        def page(*args: Any, **kwargs: Any) -> R:
            principal = viewer()
            if permission is not None and not (
                principal.can(permission) or (also is not None and principal.can(also))
            ):
                raise Forbidden(_("This page needs the permission %(name)s.", name=permission))
            return view(principal, *args, **kwargs)

        return page

    return decorate
