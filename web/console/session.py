"""Signing in with an account token, and signing out."""

from __future__ import annotations

from flask import Blueprint, g, redirect, render_template, request, session, url_for
from flask_babel import gettext as _
from werkzeug.wrappers import Response

from web.console.access import SESSION_FIELD, sessions
from web.console.shell import console_page

bp = Blueprint("session", __name__)


@bp.get("/sign-in")
def sign_in() -> str:
    return _sign_in_page(None)


@bp.post("/sign-in")
def sign_in_with_token() -> Response | tuple[str, int]:
    token = request.form.get("token", "").strip()
    started = sessions().start(token) if token else None
    if started is None:
        error = (
            _("That token is unknown, revoked, or its account is inactive.")
            if token
            else _("Paste your account token.")
        )
        return _sign_in_page(error), 401
    session.clear()  # a new session secret and a new CSRF secret: nothing carries over
    session[SESSION_FIELD] = started.secret
    g.viewer = started.principal
    return redirect(_next_page())


@bp.post("/sign-out")
def sign_out() -> Response:
    secret = session.get(SESSION_FIELD)
    if isinstance(secret, str):
        sessions().end(secret)
    session.clear()
    return redirect(url_for("console.session.sign_in"))


def _sign_in_page(error: str | None) -> str:
    hours = round(sessions().lifetime.total_seconds() / 3600)
    return render_template(
        "console/session/sign_in.html", next=_next_page(), error=error, session_hours=hours
    )


def _next_page() -> str:
    """Where to go after signing in: the console page asked for, else the console's home."""
    return console_page(request.values.get("next", ""))
