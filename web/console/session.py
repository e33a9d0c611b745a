"""Signing in with a password or an account token, changing one's own password, and signing
out."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, flash, g, redirect, render_template, request, session, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext
from werkzeug.wrappers import Response

from cronledger.application.credentials import SAME_AS_CURRENT
from cronledger.application.sessions import StartedSession
from domain.credentials import (
    MAX_PASSWORD,
    MIN_PASSWORD,
    BackingOff,
    SignInFailed,
    same_text,
)
from domain.directory import Principal
from domain.errors import ValidationFailed
from web.api import services
from web.console.access import CHANGE_DUE_FIELD, SESSION_FIELD, sessions, signed_in
from web.console.forms import Errors
from web.console.shell import console_page

bp = Blueprint("session", __name__)
SIGN_IN_FIELDS = ("tenant", "account")  # shown again after a refusal; never the password
MAX_FIELD = 256  # characters of a sign-in field read
# The domain's words about passwords, as the console says them.
PASSWORD_WORDS = {
    f"use at least {MIN_PASSWORD} characters": lazy_gettext(
        "Use at least %(count)s characters.", count=MIN_PASSWORD
    ),
    f"use at most {MAX_PASSWORD} characters": lazy_gettext(
        "Use at most %(count)s characters.", count=MAX_PASSWORD
    ),
    "must not be the account's id or name": lazy_gettext(
        "The password must not be the account's id or name."
    ),
    "give the account's current password": lazy_gettext("Give your current password."),
    SAME_AS_CURRENT: lazy_gettext("The new password must differ from the current one."),
    "this is not the account's current password": lazy_gettext(
        "This is not your current password."
    ),
}


@bp.get("/sign-in")
def sign_in() -> str:
    return _sign_in_page()


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
        return _sign_in_page(token_error=error), 401
    return _signed_in(started)


Page = tuple[str, int] | tuple[str, int, dict[str, str]]  # a page, its status (and headers)


@bp.post("/sign-in/password")
def sign_in_with_password() -> Response | Page:
    form = {name: request.form.get(name, "").strip()[:MAX_FIELD] for name in SIGN_IN_FIELDS}
    password = request.form.get("password", "")
    if not (form["tenant"] and form["account"] and password):
        error = _("Give the tenant, the account and its password.")
        return _sign_in_page(form, password_error=error), 401
    try:
        started = sessions().start_with_password(
            form["tenant"], form["account"], password, request.remote_addr
        )
    except BackingOff as waiting:
        error = _(
            "Too many failed sign-ins. Try again in %(seconds)s s, or ask an administrator to "
            "reset the password.",
            seconds=waiting.retry_after,
        )
        page = _sign_in_page(form, password_error=error)
        return page, 429, {"Retry-After": str(waiting.retry_after)}
    except SignInFailed:
        error = _("The tenant, the account or the password is wrong.")
        return _sign_in_page(form, password_error=error), 401
    return _signed_in(started)


def _signed_in(started: StartedSession) -> Response:
    session.clear()  # a new session secret and a new CSRF secret: nothing carries over
    session[SESSION_FIELD] = started.secret
    g.viewer = started.principal
    if started.must_change:
        session[CHANGE_DUE_FIELD] = True
        return redirect(url_for(".change_password", next=_next_page()))
    return redirect(_next_page())


@bp.post("/sign-out")
def sign_out() -> Response:
    secret = session.get(SESSION_FIELD)
    if isinstance(secret, str):
        sessions().end(secret)
    session.clear()
    return redirect(url_for("console.session.sign_in"))


@bp.route("/password", methods=["GET", "POST"])
@signed_in()
def change_password(principal: Principal) -> Response | tuple[str, int]:
    """The signed-in account's own password; after a one-time password, before anything else."""
    account = services().directory.account_aggregate(principal.tenant_id, principal.account_id)
    errors: Errors = {}
    status = 200
    if request.method == "POST":
        errors, status = _change_own(principal)
        if not errors:
            return _password_changed(principal)
    page = render_template(
        "console/session/password.html",
        has_password=account.password_set_at is not None,
        must_change=bool(session.get(CHANGE_DUE_FIELD)),
        errors=errors,
        next=_next_page(),
        min_length=MIN_PASSWORD,
        max_length=MAX_PASSWORD,
    )
    return page, status


def _change_own(principal: Principal) -> tuple[Errors, int]:
    """Set the password the form gives; what is wrong with it by field, and the status."""
    if not same_text(request.form.get("password", ""), request.form.get("password_again", "")):
        return {"password_again": [_("The two new passwords differ.")]}, 422
    try:
        services().credentials.set_password(
            principal,
            principal.account_id,
            request.form.get("password", ""),
            current_password=request.form.get("current_password") or None,
        )
    except BackingOff as waiting:
        return {"current_password": [_too_many(waiting)]}, 429
    except ValidationFailed as failed:
        return password_errors(failed.errors), 422
    return {}, 200


def _password_changed(principal: Principal) -> Response:
    """The browser's session starts again with the new password: its old one stops working."""
    secret = session.get(SESSION_FIELD)
    renewed = sessions().renew(secret if isinstance(secret, str) else "", principal)
    session.clear()
    session[SESSION_FIELD] = renewed.secret
    flash(_("Your password was changed."), "good")
    return redirect(_next_page())


def password_errors(errors: Errors) -> Errors:
    """The domain's messages about a password in the console's words."""
    return {
        field: [str(PASSWORD_WORDS.get(message, message)) for message in messages]
        for field, messages in errors.items()
    }


def _too_many(waiting: BackingOff) -> str:
    return str(
        _("Too many wrong passwords. Try again in %(seconds)s s.", seconds=waiting.retry_after)
    )


def _sign_in_page(
    form: dict[str, Any] | None = None,
    password_error: str | None = None,
    token_error: str | None = None,
) -> str:
    hours = round(sessions().lifetime.total_seconds() / 3600)
    return render_template(
        "console/session/sign_in.html",
        next=_next_page(),
        form=form or {},
        password_error=password_error,
        error=token_error,
        session_hours=hours,
        max_password=MAX_PASSWORD,
    )


def _next_page() -> str:
    """Where to go after signing in: the console page asked for, else the console's home."""
    return console_page(request.values.get("next", ""))
