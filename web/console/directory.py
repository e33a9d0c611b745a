"""The console's directory pages: accounts (roles, activation, tokens) and process definitions
(publishing, presets, reviewers), for accounts holding `directory:manage`; groups are their own
module under it (web/console/groups.py) (docs/console/directory.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext
from marshmallow import Schema, ValidationError
from werkzeug.exceptions import NotFound as PageNotFound
from werkzeug.wrappers import Response

from domain.approvals import NOTIFY, REASSIGN_TASK
from domain.credentials import MAX_PASSWORD, MIN_PASSWORD, same_text
from domain.directory import RETURN_TO_FIRST, RETURN_TO_RETURNING, Principal
from domain.errors import DomainError, InvalidState, NotFound, ValidationFailed
from domain.permissions import APPROVAL_DECIDE, DIRECTORY_MANAGE, ROLES
from projections.directory import ACCOUNT_LISTING, DEFINITION_LISTING, AccountRow, DefinitionRow
from projections.keyset import Window
from web.api import flatten, services
from web.console import groups
from web.console.access import signed_in
from web.console.definition_form import (
    NEW_DEFINITION,
    NEW_LEVEL,
    body_of,
    errors_by_field,
    form_of,
    moved_levels,
    read_form,
)
from web.console.forms import (
    PAGE_SIZE,
    Errors,
    by_field,
    confirmed,
    field_errors,
    form_version,
    or_404,
)
from web.console.lists import list_view
from web.console.session import password_errors
from web.directory import definition_fields
from web.schemas.directory import AccountCreate, DefinitionCreate, DefinitionFieldsIn

bp = Blueprint("directory", __name__, url_prefix="/directory")
bp.register_blueprint(groups.bp)  # /directory/groups/
MODE_WORDS = {
    REASSIGN_TASK: lazy_gettext("Hand the task to them, with a high priority"),
    NOTIFY: lazy_gettext("Tell them, and raise the task's priority"),
}
PICK_CALENDARS = 200  # the most calendars a definition's form offers
PICK_DEFINITIONS = 200  # the most definitions it offers as the cancellation definition
RETURN_WORDS = {
    RETURN_TO_FIRST: lazy_gettext("The first level"),
    RETURN_TO_RETURNING: lazy_gettext("The level that returned it"),
}
# The roles a definition's reviewers may be named by: those that may decide.
REVIEWER_ROLES = sorted(role for role, granted in ROLES.items() if APPROVAL_DECIDE in granted)
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
        return _accounts_page(principal, form, by_field(field_errors(error)), 422)
    flash(_("Account %(id)s created.", id=created.id), "good")
    return redirect(url_for(".account", account_id=created.id))


def _accounts_page(
    principal: Principal, form: dict[str, Any], errors: Errors, status: int = 200
) -> tuple[str, int]:
    view = list_view(ACCOUNT_LISTING, ".index", size=PAGE_SIZE)
    page = services().directory.accounts(principal.tenant_id, view.window)
    page_html = render_template(
        "console/directory/accounts.html",
        page=page,
        view=view.found(page),
        roles=sorted(ROLES),
        form=form,
        errors=errors,
    )
    return page_html, status


@bp.get("/accounts/<account_id>")
@signed_in(DIRECTORY_MANAGE)
def account(principal: Principal, account_id: str) -> str:
    found = or_404(lambda: services().directory.account(principal.tenant_id, account_id))
    tokens = services().directory.tokens(principal.tenant_id, account_id)
    state = services().directory.account_aggregate(principal.tenant_id, account_id)
    return render_template(
        "console/directory/account.html",
        account=found,
        tokens=tokens,
        password_set_at=state.password_set_at,
        password_must_change=state.password_must_change,
    )


@bp.route("/accounts/<account_id>/password", methods=["GET", "POST"])
@signed_in(DIRECTORY_MANAGE)
def set_password(principal: Principal, account_id: str) -> Response | tuple[str, int]:
    """Give another account a password (one-time by default); one's own is changed on the
    session's page, with the current one."""
    if account_id == principal.account_id:
        return redirect(url_for("console.session.change_password"))
    found = or_404(lambda: services().directory.account(principal.tenant_id, account_id))
    errors: Errors = {}
    must_change = request.method == "GET" or "must_change" in request.form
    if request.method == "POST":
        errors = _give_password(principal, account_id, must_change)
        if not errors:
            flash(_("A password was set for %(id)s.", id=account_id), "good")
            return redirect(url_for(".account", account_id=account_id))
    page = render_template(
        "console/directory/password.html",
        account=found,
        must_change=must_change,
        errors=errors,
        min_length=MIN_PASSWORD,
        max_length=MAX_PASSWORD,
    )
    return page, 422 if errors else 200


def _give_password(principal: Principal, account_id: str, must_change: bool) -> Errors:
    """Set the password the form gives; what is wrong with it, by field."""
    password = request.form.get("password", "")
    if not same_text(password, request.form.get("password_again", "")):
        return {"password_again": [_("The two new passwords differ.")]}
    try:
        services().credentials.set_password(principal, account_id, password, must_change)
    except ValidationFailed as failed:
        return password_errors(failed.errors)
    except InvalidState as refused:
        return {"_schema": [refused.message]}
    return {}


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
    found = or_404(lambda: services().directory.account(principal.tenant_id, account_id))
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
    found = or_404(lambda: services().directory.account(principal.tenant_id, account_id))
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
            principal, account_id, active, form_version(), reason
        ),
        done,
    )


def _confirmed(
    account: AccountRow,
    question: str,
    action: str,
    command: Callable[[str | None], object],
    done: str,
    subject: str = "",
) -> Response | tuple[str, int]:
    """A confirmation page (GET), then the command with the reason given (POST)."""
    back = url_for(".account", account_id=account.id)

    def run(reason: str | None) -> Response:
        command(reason)
        flash(done, "good")
        return redirect(back)

    return confirmed(
        lambda errors: render_template(
            "console/directory/confirm.html",
            version=account.version,
            back=back,
            question=question,
            action=action,
            subject=subject,
            errors=errors,
        ),
        run,
    )


# -- definitions ----------------------------------------------------------------------------


@bp.get("/definitions")
@signed_in(DIRECTORY_MANAGE)
def definitions(principal: Principal) -> str:
    return _definitions_page(principal, {}, {})[0]


@bp.post("/definitions")
@signed_in(DIRECTORY_MANAGE)
def create_definition(principal: Principal) -> Response | tuple[str, int]:
    form = read_form()
    if moved_levels(form):
        return _definitions_page(principal, form, {})
    created, errors, status = _saved(
        form,
        DefinitionCreate,
        lambda body: services().directory.create_definition(
            principal, body["key"], definition_fields(body)
        ),
    )
    if created is None:
        return _definitions_page(principal, form, errors, status)
    flash(_("Definition %(key)s created, unpublished.", key=created.key), "good")
    return redirect(url_for(".definitions", _anchor=f"definition-{created.key}"))


@bp.get("/definitions/<definition_id>/edit")
@signed_in(DIRECTORY_MANAGE)
def edit_definition(principal: Principal, definition_id: str) -> str:
    definition = _definition(principal, definition_id)
    return _edit_page(principal, definition, form_of(definition), {})[0]


@bp.post("/definitions/<definition_id>/edit")
@signed_in(DIRECTORY_MANAGE)
def save_definition(principal: Principal, definition_id: str) -> Response | tuple[str, int]:
    definition = _definition(principal, definition_id)
    form = read_form()
    if moved_levels(form):
        return _edit_page(principal, definition, form, {})
    saved, errors, status = _saved(
        form,
        DefinitionFieldsIn,
        lambda body: services().directory.update_definition(
            principal, definition_id, definition_fields(body), form_version() or 0
        ),
    )
    if saved is None:
        return _edit_page(principal, definition, form, errors, status)
    flash(_("Definition %(key)s saved.", key=saved.key), "good")
    return redirect(url_for(".definitions", _anchor=f"definition-{saved.key}"))


def _definition(principal: Principal, definition_id: str) -> DefinitionRow:
    return or_404(lambda: services().directory.definition(principal.tenant_id, definition_id))


def _saved(
    form: dict[str, Any],
    schema: type[Schema],
    save: Callable[[dict[str, Any]], DefinitionRow],
) -> tuple[DefinitionRow | None, Errors, int]:
    """The definition the form saved; else why not, by field, and the page's status (409 when
    it changed since the form was shown)."""
    given, errors = body_of(form)
    if schema is DefinitionFieldsIn:
        given.pop("key", None)  # it stays
    try:
        body = schema().load(given)
    except ValidationError as error:
        errors = {**flatten(error.messages), **errors}
    if errors:
        return None, errors_by_field(errors), 422
    try:
        return save(body), {}, 200
    except ValidationFailed as failed:
        return None, errors_by_field(failed.errors), 422
    except DomainError as error:
        return None, {"_schema": [error.message]}, 409


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
            principal, definition_id, published, form_version()
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
    view = list_view(DEFINITION_LISTING, ".definitions", size=PAGE_SIZE)
    page = services().directory.definitions(principal.tenant_id, view.window)
    page_html = render_template(
        "console/directory/definitions.html",
        page=page,
        view=view.found(page),
        definitions=page.items,
        **_form_context(principal, {**NEW_DEFINITION, **form}, errors, None),
    )
    return page_html, status


def _edit_page(
    principal: Principal,
    definition: DefinitionRow,
    form: dict[str, Any],
    errors: Errors,
    status: int = 200,
) -> tuple[str, int]:
    page_html = render_template(
        "console/directory/definition_edit.html",
        definition=definition,
        **_form_context(principal, form, errors, definition),
    )
    return page_html, status


def _form_context(
    principal: Principal, form: dict[str, Any], errors: Errors, editing: DefinitionRow | None
) -> dict[str, Any]:
    """What the definition form shows: the choices of its pickers, the form and its errors."""
    tenant_id = principal.tenant_id
    known = services().directory.definitions(tenant_id, Window(PICK_DEFINITIONS, 1)).items
    return {
        "form": form,
        "errors": errors,
        "editing": editing,
        "accounts": groups.accounts_to_pick(tenant_id),
        "calendars": services().calendars.calendars(tenant_id, Window(PICK_CALENDARS, 1)).items,
        "groups": groups.groups_to_pick(tenant_id),
        "reviewer_roles": REVIEWER_ROLES,
        "mode_words": MODE_WORDS,
        "return_words": RETURN_WORDS,
        "new_level": NEW_LEVEL,
        "cancellations": [d for d in known if editing is None or d.id != editing.id],
        "definition_by_id": {d.id: d for d in known},
        "preset_errors": sorted(
            (name, messages)
            for name, messages in errors.items()
            if name.startswith("schedule_presets")
        ),
        "presets_example": json.dumps(PRESETS_EXAMPLE, ensure_ascii=False, indent=2),
        "as_json": lambda value: json.dumps(value, ensure_ascii=False, sort_keys=True),
    }
