"""The console's directory pages: accounts (roles, activation, tokens) and process definitions
(publishing, presets), for accounts holding `directory:manage` (docs/console/directory.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from marshmallow import ValidationError
from werkzeug.exceptions import NotFound as PageNotFound
from werkzeug.wrappers import Response

from cronledger.application.directory import DefinitionFields
from domain.directory import Principal
from domain.errors import DomainError, NotFound, ValidationFailed
from domain.permissions import DIRECTORY_MANAGE, ROLES
from projections.directory import AccountRow
from projections.keyset import Window
from web.api import flatten, services
from web.console.access import signed_in
from web.schemas.base import ReasonBody
from web.schemas.directory import AccountCreate, DefinitionCreate

bp = Blueprint("directory", __name__, url_prefix="/directory")
PAGE_SIZE = 50
Errors = dict[str, list[str]]
PRESETS_EXAMPLE = [
    {
        "id": "weekday-morning",
        "title": "Morning check {{date}}",
        "timezone": "Asia/Shanghai",
        "trigger": {"kind": "cron", "expression": "0 9 * * MON-FRI"},
        "form_data": {"region": "east"},
    }
]


# -- accounts -------------------------------------------------------------------------------


@bp.get("/")
@signed_in(DIRECTORY_MANAGE)
def index(principal: Principal) -> str:
    return _accounts_page(principal, {}, {})[0]


@bp.post("/accounts")
@signed_in(DIRECTORY_MANAGE)
def create_account(principal: Principal) -> Response | tuple[str, int]:
    form = {
        "id": request.form.get("id", "").strip(),
        "name": request.form.get("name", "").strip(),
        "roles": request.form.getlist("roles"),
    }
    try:
        body = AccountCreate().load({key: value for key, value in form.items() if value != ""})
        created = services().directory.create_account(
            principal, body.get("id"), body["name"], body["roles"]
        )
    except (ValidationError, ValidationFailed) as error:
        return _accounts_page(principal, form, _by_field(_field_errors(error)), 422)
    flash(_("Account %(id)s created.", id=created.id), "good")
    return redirect(url_for(".account", account_id=created.id))


def _accounts_page(
    principal: Principal, form: dict[str, Any], errors: Errors, status: int = 200
) -> tuple[str, int]:
    page = services().directory.accounts(principal.tenant_id, _window())
    page_html = render_template(
        "console/directory/accounts.html",
        page=page,
        roles=sorted(ROLES),
        form=form,
        errors=errors,
    )
    return page_html, status


@bp.get("/accounts/<account_id>")
@signed_in(DIRECTORY_MANAGE)
def account(principal: Principal, account_id: str) -> str:
    found = _found(lambda: services().directory.account(principal.tenant_id, account_id))
    tokens = services().directory.tokens(principal.tenant_id, account_id)
    return render_template("console/directory/account.html", account=found, tokens=tokens)


@bp.post("/accounts/<account_id>/tokens")
@signed_in(DIRECTORY_MANAGE)
def issue_token(principal: Principal, account_id: str) -> Response | str:
    """The new token's secret is on this answer only: never stored, never shown again."""
    try:
        issued = services().directory.issue_token(principal, account_id)
    except NotFound as error:
        raise PageNotFound(error.message) from None
    except DomainError as error:
        flash(error.message, "bad")
        return redirect(url_for(".account", account_id=account_id))
    return render_template("console/directory/token.html", account_id=account_id, issued=issued)


@bp.route("/accounts/<account_id>/tokens/<token_id>/revoke", methods=["GET", "POST"])
@signed_in(DIRECTORY_MANAGE)
def revoke_token(
    principal: Principal, account_id: str, token_id: str
) -> Response | tuple[str, int]:
    found = _found(lambda: services().directory.account(principal.tenant_id, account_id))
    question = _("Revoke this token of %(id)s? Whoever uses it is signed out.", id=account_id)
    return _confirmed(
        found,
        question,
        _("Revoke the token"),
        lambda reason: services().directory.revoke_token(principal, account_id, token_id, reason),
        _("The token was revoked."),
        subject=token_id,
    )


@bp.route("/accounts/<account_id>/deactivate", methods=["GET", "POST"])
@signed_in(DIRECTORY_MANAGE)
def deactivate(principal: Principal, account_id: str) -> Response | tuple[str, int]:
    return _set_active(principal, account_id, False)


@bp.route("/accounts/<account_id>/activate", methods=["GET", "POST"])
@signed_in(DIRECTORY_MANAGE)
def activate(principal: Principal, account_id: str) -> Response | tuple[str, int]:
    return _set_active(principal, account_id, True)


def _set_active(principal: Principal, account_id: str, active: bool) -> Response | tuple[str, int]:
    found = _found(lambda: services().directory.account(principal.tenant_id, account_id))
    if active:
        question = _("Activate %(id)s again? Its tokens work again.", id=account_id)
        action, done = _("Activate"), _("Account %(id)s activated.", id=account_id)
    else:
        question = _(
            "Deactivate %(id)s? Its tokens stop working and its console sessions end.",
            id=account_id,
        )
        action, done = _("Deactivate"), _("Account %(id)s deactivated.", id=account_id)
    return _confirmed(
        found,
        question,
        action,
        lambda reason: services().directory.set_active(
            principal, account_id, active, _version(), reason
        ),
        done,
    )


def _confirmed(
    found: AccountRow,
    question: str,
    action: str,
    command: Callable[[str | None], object],
    done: str,
    subject: str = "",
) -> Response | tuple[str, int]:
    """A confirmation page (GET), then the command with the reason given (POST)."""
    errors: Errors = {}
    if request.method == "POST":
        reason = request.form.get("reason", "").strip()
        try:
            ReasonBody().load({"reason": reason} if reason else {})
            command(reason or None)
        except NotFound as error:
            raise PageNotFound(error.message) from None
        except (ValidationError, DomainError) as error:
            errors = _field_errors(error)
        else:
            flash(done, "good")
            return redirect(url_for(".account", account_id=found.id))
    page = render_template(
        "console/directory/confirm.html",
        account=found,
        question=question,
        action=action,
        subject=subject,
        errors=errors,
    )
    return page, 422 if errors else 200


# -- definitions ----------------------------------------------------------------------------


@bp.get("/definitions")
@signed_in(DIRECTORY_MANAGE)
def definitions(principal: Principal) -> str:
    return _definitions_page(principal, {}, {})[0]


@bp.post("/definitions")
@signed_in(DIRECTORY_MANAGE)
def create_definition(principal: Principal) -> Response | tuple[str, int]:
    form: dict[str, Any] = {
        name: request.form.get(name, "").strip()
        for name in (
            "key",
            "name",
            "review_window_seconds",
            "schedule_presets",
            "reminders",
            "escalation_after_seconds",
            "escalation_to",
        )
    }
    form.update({name: name in request.form for name in ("external", "allow_self_approval")})
    given, errors = _definition_body(form)
    try:
        body = DefinitionCreate().load(given)
    except ValidationError as error:
        errors = {**flatten(error.messages), **errors}
    if not errors:
        try:
            created = services().directory.create_definition(
                principal, body["key"], _definition_fields(body)
            )
        except ValidationFailed as failed:
            errors = failed.errors
    errors = _reminder_errors_together(errors)
    if errors:
        return _definitions_page(principal, form, errors, 422)
    flash(_("Definition %(key)s created, unpublished.", key=created.key), "good")
    return redirect(url_for(".definitions", _anchor=f"definition-{created.key}"))


def _definition_body(form: dict[str, Any]) -> tuple[dict[str, Any], Errors]:
    """The form as the API's body (a whole number of seconds, presets parsed from JSON), and
    what cannot be read as JSON; a field that is no number is passed on for the schema to name."""
    body = {key: value for key, value in form.items() if value != ""}
    window = body.get("review_window_seconds", "")
    if window.isdigit():
        body["review_window_seconds"] = int(window)
    _notices_body(body)
    if "schedule_presets" not in body:
        return body, {}
    try:
        body["schedule_presets"] = json.loads(body["schedule_presets"])
    except ValueError as error:
        del body["schedule_presets"]
        return body, {"schedule_presets": [_("This is not JSON: %(why)s", why=str(error))]}
    return body, {}


def _notices_body(body: dict[str, Any]) -> None:
    """Reminders typed as "86400, 3600" and the escalation's two fields, as the API takes them
    (what is no number is passed on for the schema to name)."""
    if "reminders" in body:
        body["reminders"] = [
            {"before_seconds": _number(part.strip())} for part in body["reminders"].split(",")
        ]
    after, to = body.pop("escalation_after_seconds", None), body.pop("escalation_to", None)
    if after is not None or to is not None:
        body["escalation"] = {
            **({} if after is None else {"after_seconds": _number(after)}),
            **({} if to is None else {"account_id": to}),
        }


def _number(text: str) -> int | str:
    return int(text) if text.isdigit() else text


def _reminder_errors_together(errors: Errors) -> Errors:
    """Each reminder's messages under the one reminders field, naming the reminder."""
    together: Errors = {}
    for name, messages in errors.items():
        if name.startswith("reminders."):
            position = int(name.split(".")[1]) + 1
            together.setdefault("reminders", []).extend(
                _("Reminder %(n)d: %(message)s", n=position, message=m) for m in messages
            )
        else:
            together.setdefault(name, []).extend(messages)
    return together


def _definition_fields(body: dict[str, Any]) -> DefinitionFields:
    return DefinitionFields(
        name=body["name"],
        external=body["external"],
        review_window_seconds=body["review_window_seconds"],
        schedule_presets=body["schedule_presets"],
        allow_self_approval=body["allow_self_approval"],
        reminders=body["reminders"],
        escalation=body["escalation"],
    )


@bp.post("/definitions/<definition_id>/publish")
@signed_in(DIRECTORY_MANAGE)
def publish(principal: Principal, definition_id: str) -> Response:
    return _publish(principal, definition_id, True)


@bp.post("/definitions/<definition_id>/unpublish")
@signed_in(DIRECTORY_MANAGE)
def unpublish(principal: Principal, definition_id: str) -> Response:
    return _publish(principal, definition_id, False)


def _publish(principal: Principal, definition_id: str, published: bool) -> Response:
    try:
        changed = services().directory.set_published(
            principal, definition_id, published, _version()
        )
    except NotFound as error:
        raise PageNotFound(error.message) from None
    except DomainError as error:
        flash(error.message, "bad")
        return redirect(url_for(".definitions"))
    if published:
        flash(
            _(
                "%(key)s published as revision %(revision)s.",
                key=changed.key,
                revision=changed.revision,
            ),
            "good",
        )
    else:
        flash(_("%(key)s unpublished.", key=changed.key), "good")
    return redirect(url_for(".definitions", _anchor=f"definition-{changed.key}"))


def _definitions_page(
    principal: Principal, form: dict[str, Any], errors: Errors, status: int = 200
) -> tuple[str, int]:
    page = services().directory.definitions(principal.tenant_id, _window())
    page_html = render_template(
        "console/directory/definitions.html",
        page=page,
        definitions=page.items,
        form=form,
        errors=errors,
        preset_errors=sorted(
            (name, messages)
            for name, messages in errors.items()
            if name.startswith("schedule_presets")
        ),
        presets_example=json.dumps(PRESETS_EXAMPLE, ensure_ascii=False, indent=2),
        as_json=lambda value: json.dumps(value, ensure_ascii=False, sort_keys=True),
    )
    return page_html, status


# -- shared ---------------------------------------------------------------------------------


def _window() -> Window:
    """The page of a list the query asks for (`?page=`, 1 when missing or not a number)."""
    number = request.args.get("page", "1")
    return Window(PAGE_SIZE, int(number) if number.isdigit() and int(number) > 0 else 1)


def _version() -> int | None:
    """The version the form was shown at: a change made since is refused, not overwritten."""
    given = request.form.get("version", "")
    return int(given) if given.isdigit() else None


def _found(read: Callable[[], AccountRow]) -> AccountRow:
    try:
        return read()
    except NotFound as error:
        raise PageNotFound(error.message) from None


def _field_errors(error: ValidationError | DomainError) -> Errors:
    """The messages by field (`_schema` for the form as a whole)."""
    if isinstance(error, ValidationError):
        return flatten(error.messages)
    if isinstance(error, ValidationFailed):
        return error.errors
    return {"_schema": [error.message]}


def _by_field(errors: Errors) -> Errors:
    """Messages about a list's items (`roles.0`) under the list's own field (`roles`)."""
    merged: Errors = {}
    for name, messages in errors.items():
        merged.setdefault(name.split(".")[0], []).extend(messages)
    return merged
