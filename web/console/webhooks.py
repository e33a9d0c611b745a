"""The console's webhook pages: subscriptions (their secret shown once, rotated, pinged, edited,
deleted) and each one's deliveries, redelivered by hand; for accounts holding
`directory:manage` (docs/webhooks.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext
from markupsafe import Markup
from marshmallow import ValidationError
from werkzeug.exceptions import NotFound as PageNotFound
from werkzeug.wrappers import Response

from cronledger.application.webhooks import WebhookWithSecret
from domain.directory import Principal
from domain.errors import DomainError, NotFound, ValidationFailed
from domain.permissions import DIRECTORY_MANAGE
from domain.webhooks import EVENT_TYPES, SubscriptionFields, TooManyWebhooks
from projections.webhooks import DELIVERY_LISTING, WEBHOOK_LISTING, WebhookRow
from web.api import services
from web.console.access import signed_in
from web.console.code_words import code
from web.console.forms import (
    PAGE_SIZE,
    Errors,
    by_field,
    field_errors,
    form_version,
    or_404,
)
from web.console.lists import list_view
from web.schemas.webhooks import WebhookCreate

bp = Blueprint("webhooks", __name__, url_prefix="/webhooks")
TYPE_WORDS = {
    "run.dead_lettered": lazy_gettext("a run gave up after its last attempt"),
    "run.failed": lazy_gettext("a run failed for good"),
    "run.skipped": lazy_gettext("a cycle was skipped"),
    "schedule.auto_paused": lazy_gettext(
        "a schedule was paused after cycles in a row ended without launching"
    ),
    "approval.submitted": lazy_gettext("an instance was submitted"),
    "approval.decided": lazy_gettext("an instance was approved or withdrawn"),
    "approval.expired": lazy_gettext("an instance expired"),
    "approval.reminder_due": lazy_gettext("a reminder came due"),
    "approval.escalated": lazy_gettext("an instance was escalated"),
    "callback.late": lazy_gettext("a callback came late"),
    "callback.mismatched": lazy_gettext("a callback did not match its instance"),
    "checkpoint.signed": lazy_gettext("a checkpoint of the whole log was signed (auditors only)"),
    "ping": lazy_gettext("a test message"),
}
STATUS_WORDS = {
    "PENDING": lazy_gettext("Waiting to be sent"),
    "SENDING": lazy_gettext("Being sent"),
    "RETRY_WAIT": lazy_gettext("Waiting to retry"),
    "DELIVERED": lazy_gettext("Delivered"),
    "FAILED": lazy_gettext("Failed (given up)"),
    "CANCELLED": lazy_gettext("Cancelled"),
}


@bp.get("/")
@signed_in(DIRECTORY_MANAGE)
def index(principal: Principal) -> str:
    return _index_page(principal, {"enabled": True}, {})[0]


@bp.post("/")
@signed_in(DIRECTORY_MANAGE)
def create(principal: Principal) -> str | tuple[str, int]:
    """The new subscription's secret is on this answer only: never stored, never shown again."""
    form = _form()
    try:
        created = services().webhooks.create(principal, _fields(form))
    except (ValidationError, ValidationFailed) as error:
        return _index_page(principal, form, by_field(field_errors(error)), 422)
    except TooManyWebhooks as error:
        return _index_page(principal, form, {"_schema": [error.message]}, 409)
    return _secret_page(created, _("Webhook created. Copy its signing secret now."))


@bp.get("/<webhook_id>")
@signed_in(DIRECTORY_MANAGE)
def detail(principal: Principal, webhook_id: str) -> str:
    webhook = or_404(lambda: services().webhooks.webhook(principal.tenant_id, webhook_id))
    return _detail_page(principal, webhook, _as_form(webhook), {})[0]


@bp.post("/<webhook_id>")
@signed_in(DIRECTORY_MANAGE)
def update(principal: Principal, webhook_id: str) -> Response | tuple[str, int]:
    webhook = or_404(lambda: services().webhooks.webhook(principal.tenant_id, webhook_id))
    form = _form()
    try:
        services().webhooks.update(principal, webhook_id, _fields(form), form_version())
    except (ValidationError, ValidationFailed) as error:
        return _detail_page(principal, webhook, form, by_field(field_errors(error)), 422)
    except NotFound as error:
        raise PageNotFound(error.message) from None
    except DomainError as error:
        return _detail_page(principal, webhook, form, {"_schema": [error.message]}, 409)
    flash(_("Webhook saved."), "good")
    return redirect(url_for(".detail", webhook_id=webhook_id))


@bp.post("/<webhook_id>/ping")
@signed_in(DIRECTORY_MANAGE)
def ping(principal: Principal, webhook_id: str) -> Response:
    return _acted(
        webhook_id,
        lambda: services().webhooks.ping(principal, webhook_id),
        _("A test message was queued; it shows below once sent."),
    )


@bp.post("/<webhook_id>/deliveries/<delivery_id>/redeliver")
@signed_in(DIRECTORY_MANAGE)
def redeliver(principal: Principal, webhook_id: str, delivery_id: str) -> Response:
    return _acted(
        webhook_id,
        lambda: services().webhooks.redeliver(principal, webhook_id, delivery_id),
        Markup(  # noqa: S704 (the catalogue's words, and a code)
            _(
                "The message will be sent again, with the same %(header)s.",
                header=code("webhook-id"),
            )
        ),
    )


@bp.route("/<webhook_id>/rotate", methods=["GET", "POST"])
@signed_in(DIRECTORY_MANAGE)
def rotate(principal: Principal, webhook_id: str) -> str | tuple[str, int]:
    webhook = or_404(lambda: services().webhooks.webhook(principal.tenant_id, webhook_id))
    errors: Errors = {}
    if request.method == "POST":
        try:
            rotated = services().webhooks.rotate_secret(principal, webhook_id, form_version())
        except NotFound as error:
            raise PageNotFound(error.message) from None
        except DomainError as error:
            errors = {"_schema": [error.message]}
        else:
            return _secret_page(rotated, _("The secret was rotated. Copy the new one now."))
    question = _(
        "Rotate the signing secret of this webhook? Messages are signed with the new secret "
        "at once; the receiver must be given it."
    )
    return _confirm_page(webhook, question, _("Rotate the secret"), errors)


@bp.route("/<webhook_id>/delete", methods=["GET", "POST"])
@signed_in(DIRECTORY_MANAGE)
def delete(principal: Principal, webhook_id: str) -> Response | str | tuple[str, int]:
    webhook = or_404(lambda: services().webhooks.webhook(principal.tenant_id, webhook_id))
    errors: Errors = {}
    if request.method == "POST":
        reason = request.form.get("reason", "").strip() or None
        try:
            services().webhooks.delete(principal, webhook_id, form_version(), reason)
        except NotFound as error:
            raise PageNotFound(error.message) from None
        except DomainError as error:
            errors = {"_schema": [error.message]}
        else:
            flash(_("Webhook deleted."), "good")
            return redirect(url_for(".index"))
    question = _("Delete this webhook? Its messages still waiting are never sent.")
    return _confirm_page(webhook, question, _("Delete the webhook"), errors, reason=True)


# -- pages ----------------------------------------------------------------------------------


def _index_page(
    principal: Principal, form: dict[str, Any], errors: Errors, status: int = 200
) -> tuple[str, int]:
    view = list_view(WEBHOOK_LISTING, ".index", size=PAGE_SIZE)
    page = services().webhooks.webhooks(principal.tenant_id, view.window)
    html = render_template(
        "console/webhooks/index.html",
        page=page,
        view=view.found(page),
        form=form,
        errors=errors,
        **_words(),
    )
    return html, status


def _detail_page(
    principal: Principal,
    webhook: WebhookRow,
    form: dict[str, Any],
    errors: Errors,
    status: int = 200,
) -> tuple[str, int]:
    view = list_view(DELIVERY_LISTING, ".detail", size=PAGE_SIZE)
    view.view_args = {"webhook_id": webhook.id}
    deliveries = services().webhooks.deliveries(principal.tenant_id, webhook.id, view.window)
    html = render_template(
        "console/webhooks/detail.html",
        webhook=webhook,
        page=deliveries,
        view=view.found(deliveries),
        form=form,
        errors=errors,
        **_words(),
    )
    return html, status


def _secret_page(made: WebhookWithSecret, headline: str) -> str:
    return render_template(
        "console/webhooks/secret.html", webhook=made.webhook, secret=made.secret, headline=headline
    )


def _confirm_page(
    webhook: WebhookRow, question: str, action: str, errors: Errors, reason: bool = False
) -> str | tuple[str, int]:
    html = render_template(
        "console/webhooks/confirm.html",
        webhook=webhook,
        question=question,
        action=action,
        errors=errors,
        reason=reason,
    )
    return (html, 409) if errors else html


def _words() -> dict[str, Any]:
    return {"event_types": EVENT_TYPES, "type_words": TYPE_WORDS, "status_words": STATUS_WORDS}


# -- forms ----------------------------------------------------------------------------------


def _form() -> dict[str, Any]:
    return {
        "url": request.form.get("url", "").strip(),
        "event_types": request.form.getlist("event_types"),
        "description": request.form.get("description", "").strip(),
        "enabled": "enabled" in request.form,
    }


def _as_form(webhook: WebhookRow) -> dict[str, Any]:
    fields = ("url", "event_types", "description", "enabled")
    return {name: getattr(webhook, name) for name in fields}


def _fields(form: dict[str, Any]) -> SubscriptionFields:
    """The form checked as the API checks its body (ValidationError names the fields)."""
    body = WebhookCreate().load(form)
    return SubscriptionFields(
        body["url"], list(body["event_types"]), body["description"], body["enabled"]
    )


def _acted(webhook_id: str, command: Callable[[], object], done: str) -> Response:
    """Run a command of the detail page; its refusal is flashed there."""
    try:
        command()
    except NotFound as error:
        raise PageNotFound(error.message) from None
    except DomainError as error:
        flash(error.message, "bad")
    else:
        flash(done, "good")
    return redirect(url_for(".detail", webhook_id=webhook_id))
