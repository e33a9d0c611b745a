"""The console's callback sources: the external systems whose signed callbacks the tenant
accepts, registered, rotated and deleted by accounts holding `directory:manage`; each secret is
shown once, on the page that made it (docs/webhooks.md#verified-callbacks)."""

from __future__ import annotations

from collections.abc import Callable

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from marshmallow import ValidationError
from werkzeug.wrappers import Response

from cronledger.application.callback_sources import SourceWithSecret
from domain.directory import Principal
from domain.errors import DomainError
from domain.permissions import DIRECTORY_MANAGE
from projections.callback_sources import CALLBACK_SOURCE_LISTING, CallbackSourceRow
from web.api import services
from web.console.access import signed_in
from web.console.forms import (
    PAGE_SIZE,
    Errors,
    confirmed,
    field_errors,
    form_version,
    or_404,
)
from web.console.lists import list_view
from web.schemas.callback_sources import CallbackSourceCreate

bp = Blueprint("callback_sources", __name__, url_prefix="/callback-sources")


@bp.get("/")
@signed_in(DIRECTORY_MANAGE)
def index(principal: Principal) -> str:
    return _index_page(principal, {}, {})[0]


@bp.post("/")
@signed_in(DIRECTORY_MANAGE)
def create(principal: Principal) -> tuple[str, int] | str:
    """The new source's secret is on this answer only: never stored, never shown again."""
    form = {name: request.form.get(name, "").strip() for name in ("name", "description")}
    try:
        body = CallbackSourceCreate().load(form)
        made = services().callback_sources.create(principal, body["name"], body["description"])
    except (ValidationError, DomainError) as error:
        return _index_page(principal, form, field_errors(error), 422)
    return _secret_page(made, _("Callback source %(name)s registered.", name=made.source.name))


@bp.route("/<source_id>/rotate", methods=["GET", "POST"])
@signed_in(DIRECTORY_MANAGE)
def rotate(principal: Principal, source_id: str) -> Response | tuple[str, int] | str:
    found = _found(principal, source_id)
    return _confirmed(
        found,
        _(
            "Make a new secret for %(name)s? The current one stops working at once: "
            "the sender must sign with the new one.",
            name=found.name,
        ),
        _("Rotate the secret"),
        lambda reason: _secret_page(
            services().callback_sources.rotate_secret(principal, source_id, form_version(), reason),
            _("A new secret was made for %(name)s.", name=found.name),
        ),
    )


@bp.route("/<source_id>/delete", methods=["GET", "POST"])
@signed_in(DIRECTORY_MANAGE)
def delete(principal: Principal, source_id: str) -> Response | tuple[str, int] | str:
    found = _found(principal, source_id)

    def deleted(reason: str | None) -> Response:
        services().callback_sources.delete(principal, source_id, form_version(), reason)
        flash(_("Callback source %(name)s deleted.", name=found.name), "good")
        return redirect(url_for(".index"))

    return _confirmed(
        found,
        _("Delete %(name)s? Its callbacks are refused from then on.", name=found.name),
        _("Delete the source"),
        deleted,
    )


def _confirmed(
    source: CallbackSourceRow,
    question: str,
    action: str,
    command: Callable[[str | None], Response | str],
) -> Response | tuple[str, int] | str:
    """A confirmation page (GET), then the command with the reason given (POST)."""
    return confirmed(
        lambda errors: render_template(
            "console/callback_sources/confirm.html",
            source=source,
            question=question,
            action=action,
            errors=errors,
        ),
        command,
    )


def _index_page(
    principal: Principal, form: dict[str, str], errors: Errors, status: int = 200
) -> tuple[str, int]:
    view = list_view(CALLBACK_SOURCE_LISTING, ".index", size=PAGE_SIZE)
    page = services().callback_sources.sources(principal.tenant_id, view.window)
    html = render_template(
        "console/callback_sources/index.html",
        page=page,
        view=view.found(page),
        form=form,
        errors=errors,
    )
    return html, status


def _secret_page(made: SourceWithSecret, done: str) -> str:
    return render_template("console/callback_sources/secret.html", made=made, done=done)


def _found(principal: Principal, source_id: str) -> CallbackSourceRow:
    return or_404(lambda: services().callback_sources.source(principal.tenant_id, source_id))
