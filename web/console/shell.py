"""What every console page shares: the blueprint, sessions' cookie, languages, CSRF, headers and
error pages."""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    Flask,
    Response,
    before_render_template,
    current_app,
    g,
    redirect,
    render_template,
    request,
    url_for,
)
from flask.sessions import SecureCookieSessionInterface
from flask_babel import gettext as _
from flask_wtf.csrf import CSRFError, CSRFProtect
from jinja2 import Template, pass_eval_context
from jinja2.filters import do_join
from jinja2.nodes import EvalContext
from markupsafe import Markup, escape
from werkzeug.exceptions import Forbidden, HTTPException, NotFound
from werkzeug.wrappers import Response as BaseResponse

from cronledger.application.services import Services
from cronledger.application.sessions import ConsoleSessions
from cronledger.persistence.connections import store_unavailable
from domain.errors import DomainError, ValidationFailed
from domain.messages import Joined, Message
from domain.permissions import APPROVAL_LIST, AUDIT_READ, DIRECTORY_MANAGE, SCHEDULE_LIST
from web import language
from web.api import services
from web.console import AREAS
from web.console.access import (
    PasswordChangeNeeded,
    SignInNeeded,
    can,
    viewer,
    viewer_or_none,
)
from web.console.clock import register_time_filters
from web.console.code_words import code, labelled, proper
from web.console.field_words import field_label
from web.console.reason_words import reason_words
from web.problems import STATUS_OF_CODE, UNAVAILABLE_RETRY_AFTER_SECONDS

HERE = Path(__file__).parent
# Where the console opens, by what the account may see, in this order.
HOME_AREAS = (
    (SCHEDULE_LIST, "console.schedules.index"),
    (APPROVAL_LIST, "console.tasks.index"),
    (AUDIT_READ, "console.timelines.index"),
    (DIRECTORY_MANAGE, "console.directory.index"),
)
LANGUAGES = ("zh", "en")  # Chinese first, as in the product's sources
LANGUAGE_COOKIE = "cronledger_lang"
SESSION_COOKIE = "cronledger_session"
YEAR_SECONDS = 365 * 24 * 3600
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
ANY_METHOD = ["GET", "POST", "PUT", "PATCH", "DELETE"]
# Scripts, styles and requests from this origin only; forms post back to it.
POLICY = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
CODE_SPAN = re.compile(r"`([^`]+)`")  # a code in a message's words, as the catalogues mark it
log = logging.getLogger("cronledger.web")


class SessionCookie(SecureCookieSessionInterface):
    """Flask's signed cookie, holding the session's random secret and the CSRF secret (never a
    token); Secure whenever the request came over HTTPS."""

    def get_cookie_secure(self, app: Flask) -> bool:
        return request.is_secure or super().get_cookie_secure(app)


def console_blueprint() -> Blueprint:
    """A new `console` blueprint for one app: the areas' blueprints are registered inside it."""
    bp = Blueprint(
        "console",
        __name__,
        url_prefix="/console",
        template_folder="templates",
        static_folder="static",
        static_url_path="/static",
    )
    bp.before_request(_guard_writes)
    bp.after_request(_page_headers)
    bp.context_processor(_shared_context)
    bp.register_error_handler(SignInNeeded, _to_sign_in)
    bp.register_error_handler(PasswordChangeNeeded, _to_password_change)
    bp.register_error_handler(HTTPException, _http_error_page)
    bp.register_error_handler(DomainError, _domain_error_page)
    bp.register_error_handler(Exception, _unexpected_error_page)
    bp.add_url_rule("/", "home", _home)
    bp.add_url_rule("/language", "language", _choose_language, methods=["POST"])
    # Any other path under /console/ is this blueprint's: its 404 is a page, not a problem.
    bp.add_url_rule("/<path:unknown>", "unknown", _unknown, methods=ANY_METHOD)
    return bp


def install(app: Flask, console: Blueprint) -> None:
    services: Services = app.extensions["cronledger"]
    settings = services.settings
    app.config.update(
        SECRET_KEY=app.config.get("SECRET_KEY") or settings.secret_key or _random_key(),
        SESSION_COOKIE_NAME=SESSION_COOKIE,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        WTF_CSRF_CHECK_DEFAULT=False,  # the API takes bearer tokens: only the console is checked
        WTF_CSRF_TIME_LIMIT=None,  # a form's token lives as long as its session
        BABEL_DEFAULT_LOCALE=LANGUAGES[0],
    )
    app.session_interface = SessionCookie()
    app.extensions["console_sessions"] = ConsoleSessions(
        services.ledger,
        services.directory,
        timedelta(hours=settings.console_session_hours),
        services.credentials,
    )
    CSRFProtect(app)
    language.install(app, _page_language, _translation_directories())
    register_time_filters(app)
    before_render_template.connect(_messages_in_reader_language, app)
    app.jinja_env.finalize = on_page
    app.jinja_env.filters["join"] = _joined
    app.jinja_env.globals.update(  # for the templates' macros too
        code=code, proper=proper, labelled=labelled, field_label=field_label
    )
    app.register_blueprint(console)
    app.add_url_rule("/", "root", lambda: redirect(url_for("console.home")))


def _messages_in_reader_language(
    sender: Flask, template: Template, context: dict[str, Any], **extra: Any
) -> None:
    """A console page shows the domain's messages in its reader's language: each `Message`
    of its context (alone, or in a dict, list or tuple: field errors) is said before the page
    renders (so also where a sentence of the page names it); any other is said as it is
    printed (the templates' `finalize`: an operation's summary) or joined (`_joined`)."""
    if (template.name or "").startswith("console/"):
        context.update((name, on_page(value)) for name, value in context.items())


@pass_eval_context
def _joined(context: EvalContext, value: Iterable[Any], d: str = "", attribute: Any = None) -> str:
    """Jinja's `join`, each `Message` said first (a field's errors, in an object's list)."""
    joined: str = do_join(context, [on_page(item) for item in value], d, attribute)
    return joined  # Markup when an item is: not made a plain str, which would be escaped


def on_page(value: Any) -> Any:
    """`value` with each `Message` in it said, as HTML: its `backticked` codes as <code>."""
    if isinstance(value, Message | Joined):
        escaped = str(escape(language.said(value)))
        return Markup(CODE_SPAN.sub(r"<code>\1</code>", escaped))  # noqa: S704 (escaped)
    if type(value) is dict:
        return {key: on_page(item) for key, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(on_page(item) for item in value)
    return value


def _random_key() -> str:
    log.warning(
        "CRONLEDGER_SECRET_KEY is unset: this process signs the console's cookies with a random "
        "key of its own, so sign-ins end when it restarts and other processes refuse them; "
        "set one key for every process (docs/console/README.md#sessions)"
    )
    return secrets.token_hex(32)


def _translation_directories() -> Iterable[str]:
    """Each area's Chinese catalogue is its own directory; Flask-Babel merges them."""
    return (str(HERE / "translations" / area) for area in AREAS)


def _page_language() -> str | None:
    """A console page's language; None for the API's answers."""
    return chosen_language() if "console" in request.blueprints else None


def chosen_language() -> str:
    """The language picked in the header (kept in a cookie), else the browser's, else Chinese."""
    picked = request.cookies.get(LANGUAGE_COOKIE)
    if picked in LANGUAGES:
        return picked
    return language.preferred_language(LANGUAGES)


def console_page(wanted: str) -> str:
    """`wanted` if it is a page of this console (never another site), else the console's home."""
    plain = wanted.isprintable() and "//" not in wanted and "\\" not in wanted
    return wanted if plain and wanted.startswith("/console/") else url_for("console.home")


def _guard_writes() -> None:
    """A form that changes state must come from this origin and carry its CSRF token."""
    if request.method in SAFE_METHODS:
        return
    origin = request.headers.get("Origin")
    foreign = origin is not None and origin != request.host_url.rstrip("/")
    if foreign or request.headers.get("Sec-Fetch-Site", "same-origin") not in (
        "same-origin",
        "none",
    ):
        raise Forbidden(_("This form was sent from another site, so it was refused."))
    current_app.extensions["csrf"].protect()


def _page_headers(response: Response) -> Response:
    response.headers.setdefault("Content-Security-Policy", POLICY)
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Cache-Control"] = "no-store"  # pages show one account's data
    response.headers["Referrer-Policy"] = "same-origin"
    return response


def _shared_context() -> dict[str, object]:
    return {
        "viewer": viewer_or_none(),
        "can": can,
        "language": chosen_language(),
        "languages": LANGUAGES,
        "reason_words": reason_words,
        "unread_notices": _unread_notices,
    }


def _unread_notices() -> int | None:
    """The bell's figure: the signed-in person's unread notices; None without an inbox, or
    while the store is away (the page says so)."""
    viewer = viewer_or_none()
    if viewer is None or not viewer.can(APPROVAL_LIST):
        return None
    try:
        return services().notifications.unread(viewer)
    except Exception as error:
        if store_unavailable(error):
            return None
        raise


def _home() -> BaseResponse:
    """The first area the signed-in account may see: a reviewer lands on the approvals."""
    principal = viewer()
    for permission, endpoint in HOME_AREAS:
        if principal.can(permission):
            return redirect(url_for(endpoint))
    raise Forbidden(_("This account may see no page of the console."))


def _unknown(unknown: str) -> NoReturn:
    raise NotFound()


def _choose_language() -> BaseResponse:
    picked = request.form.get("language", "")
    response = redirect(console_page(request.form.get("next", "")))
    if picked in LANGUAGES:
        response.set_cookie(
            LANGUAGE_COOKIE,
            picked,
            max_age=YEAR_SECONDS,
            samesite="Lax",
            httponly=True,
            secure=request.is_secure,
        )
    return response


def _to_sign_in(error: SignInNeeded) -> BaseResponse:
    if not request.headers.get("HX-Request"):
        back = request.full_path.rstrip("?")
        return redirect(url_for("console.session.sign_in", next=back))
    # htmx asked for a part of a page: the browser is sent to sign in, then back to the page.
    page = urlsplit(request.headers.get("HX-Current-URL", ""))
    back = console_page(page.path + (f"?{page.query}" if page.query else ""))
    target = url_for("console.session.sign_in", next=back)
    return BaseResponse(status=401, headers={"HX-Redirect": target})


def _to_password_change(error: PasswordChangeNeeded) -> BaseResponse:
    """A one-time password is changed before any other page opens (then that page does)."""
    back = request.full_path.rstrip("?") if request.method in SAFE_METHODS else ""
    target = url_for("console.session.change_password", next=console_page(back))
    if request.headers.get("HX-Request"):
        return BaseResponse(status=401, headers={"HX-Redirect": target})
    return redirect(target)


# -- error pages ----------------------------------------------------------------------------


def _titles() -> dict[int, str]:
    return {
        400: _("The request was refused"),
        403: _("Not allowed"),
        404: _("Page not found"),
        405: _("Not allowed this way"),
        409: _("This could not be done"),
        412: _("This could not be done"),
        413: _("Too much was sent"),
        422: _("Some values are invalid"),
        429: _("Too many refused requests"),
        500: _("Something went wrong"),
        503: _("The service is unavailable"),
    }


def _error_page(
    status: int,
    message: str,
    *,
    detail: str | None = None,
    errors: dict[str, list[str]] | None = None,
    headers: dict[str, str] | None = None,
) -> BaseResponse:
    """An error as a page of the console, in the chosen language; never fails itself."""
    if "viewer" not in g:
        try:
            viewer_or_none()
        except Exception:  # the store is away: the page is still shown, as to a stranger
            g.viewer = None
    fallback = _("The request was refused") if status < 500 else _("Something went wrong")
    page = render_template(
        "console/error.html",
        status=status,
        title=_titles().get(status, fallback),
        message=message,
        detail=detail,
        errors=errors or {},
        request_id=g.get("request_id"),
    )
    return BaseResponse(page, status, headers, mimetype="text/html")


def _http_error_page(error: HTTPException) -> BaseResponse:
    status = error.code or 500
    given = error.description if error.description != type(error).description else None
    if isinstance(error, CSRFError):
        message = _(
            "This form's security token is missing or has expired, so nothing was changed. "
            "Reload the page and send the form again."
        )
        return _error_page(status, message, detail=Message.verbatim(error.description or ""))
    if status == 404:
        where = Markup(_("There is no console page at %(path)s.", path=code(request.path)))  # noqa: S704
        return _error_page(status, given or where)
    if status == 429:
        wait = error.response.headers.get("Retry-After", "60") if error.response else "60"
        message = _(
            "Too many of this browser's requests were refused within a minute. "
            "Try again in %(seconds)s s.",
            seconds=wait,
        )
        return _error_page(status, message, headers={"Retry-After": wait})
    return _error_page(status, given or error.name)


def _domain_error_page(error: DomainError) -> BaseResponse:
    """A rule refused what a page asked for: its message, with the field errors if any."""
    errors = error.errors if isinstance(error, ValidationFailed) else None
    return _error_page(STATUS_OF_CODE.get(error.code, 409), error.message, errors=errors)


def _unexpected_error_page(error: Exception) -> BaseResponse:
    route = request.url_rule.rule if request.url_rule else None
    extra = {"request_id": g.get("request_id"), "method": request.method, "route": route}
    if store_unavailable(error) or store_unavailable(error.__cause__ or error):
        log.warning("the store is unavailable: %s", type(error).__name__, extra=extra)
        message = _("The store is unavailable; try again shortly.")
        return _error_page(
            503, message, headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_SECONDS)}
        )
    log.exception("unhandled error", exc_info=error, extra=extra)
    message = _("An internal error occurred. It has been logged with the request id below.")
    return _error_page(500, message)
