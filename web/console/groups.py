"""The console's groups (用户组): a tenant's departments, under the directory. Whoever may list
approvals reads them; accounts holding `directory:manage` create, edit and delete them
(docs/console/directory.md#groups). Every command is the API's (`/api/groups`): the same
schemas, the same service, the same refusals."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from marshmallow import ValidationError
from werkzeug.wrappers import Response

from domain.directory import Principal
from domain.errors import ValidationFailed
from domain.groups import MAX_MEMBERS, GroupIsParent
from domain.permissions import APPROVAL_LIST, DIRECTORY_MANAGE
from projections.directory import AccountRow
from projections.groups import GROUP_LISTING, GroupRow
from projections.keyset import Window
from web.api import services
from web.console import forms
from web.console.access import signed_in
from web.console.lists import account_names, list_view, read_picker, shown_names
from web.groups import group_fields
from web.schemas.groups import GroupCreate, GroupUpdate

bp = Blueprint("groups", __name__, url_prefix="/groups")
PICK_LIMIT = MAX_MEMBERS  # the most accounts, or groups, a form offers to pick from
FIELDS = ("key", "name", "leader_id", "parent_key", "reason")


@bp.get("/")
@signed_in(APPROVAL_LIST)
def index(principal: Principal) -> str:
    view = list_view(GROUP_LISTING, size=forms.PAGE_SIZE)
    page = services().groups.groups(principal.tenant_id, view.window)
    leaders = {group.leader_id for group in page.items if group.leader_id}
    return render_template(
        "console/groups/index.html",
        page=page,
        view=view.found(page),
        names=account_names(principal, leaders),
    )


@bp.get("/new")
@signed_in(DIRECTORY_MANAGE)
def new(principal: Principal) -> str:
    return _form_page(principal, None, {"members": []}, {})[0]


@bp.post("/")
@signed_in(DIRECTORY_MANAGE)
def create(principal: Principal) -> Response | tuple[str, int]:
    form = _form(principal)
    try:
        body = GroupCreate().load(_body(form))
        created = services().groups.create(principal, body["key"], group_fields(body))
    except (ValidationError, ValidationFailed) as error:
        return _form_page(principal, None, form, forms.by_field(forms.field_errors(error)), 422)
    flash(_("Group %(key)s created.", key=created.key), "good")
    return redirect(url_for(".detail", group_id=created.id))


@bp.get("/<group_id>")
@signed_in(APPROVAL_LIST)
def detail(principal: Principal, group_id: str) -> str:
    group = _group(principal, group_id)
    return _form_page(principal, group, group._asdict(), {})[0]


@bp.get("/by-key/<key>")
@signed_in(APPROVAL_LIST)
def by_key(principal: Principal, key: str) -> Response:
    group = forms.or_404(lambda: services().groups.group_by_key(principal.tenant_id, key))
    return redirect(url_for(".detail", group_id=group.id))


@bp.post("/<group_id>")
@signed_in(DIRECTORY_MANAGE)
def update(principal: Principal, group_id: str) -> Response | tuple[str, int]:
    group = _group(principal, group_id)
    form = _form(principal)
    try:
        body = GroupUpdate().load({**_body(form), "version": forms.form_version()})
        services().groups.replace(
            principal, group.id, group_fields(body), body["version"], body["reason"]
        )
    except (ValidationError, ValidationFailed) as error:
        return _form_page(principal, group, form, forms.by_field(forms.field_errors(error)), 422)
    flash(_("Group %(key)s saved.", key=group.key), "good")
    return redirect(url_for(".detail", group_id=group.id))


@bp.route("/<group_id>/delete", methods=["GET", "POST"])
@signed_in(DIRECTORY_MANAGE)
def delete(principal: Principal, group_id: str) -> Response | tuple[str, int]:
    group = _group(principal, group_id)

    def page(errors: forms.Errors) -> str:
        return render_template(
            "console/directory/confirm.html",
            version=group.version,
            back=url_for(".detail", group_id=group.id),
            question=_("Delete the group %(key)s (%(name)s)?", key=group.key, name=group.name),
            action=_("Delete the group"),
            subject="",
            errors=errors,
        )

    def deleted(reason: str | None) -> Response | tuple[str, int]:
        try:
            services().groups.delete(principal, group.id, forms.form_version(), reason)
        except GroupIsParent as refused:
            return page({"_schema": [is_parent_words(refused)]}), 409
        flash(_("Group %(key)s deleted.", key=group.key), "good")
        return redirect(url_for(".index"))

    return forms.confirmed(page, deleted)


def is_parent_words(refused: GroupIsParent) -> str:
    """GROUP_IS_PARENT in the page's language."""
    return str(
        _(
            "The group %(key)s cannot be deleted: it is the parent of %(children)s. "
            "Move those groups under another parent, or delete them, first.",
            key=refused.key,
            children=", ".join(refused.children),
        )
    )


def accounts_to_pick(tenant_id: UUID) -> list[AccountRow]:
    """The tenant's accounts a form offers (the oldest first, up to PICK_LIMIT)."""
    return services().directory.accounts(tenant_id, Window(PICK_LIMIT, 1)).items


def groups_to_pick(tenant_id: UUID) -> list[GroupRow]:
    """The tenant's live groups a form offers (the oldest first, up to PICK_LIMIT)."""
    return services().groups.groups(tenant_id, Window(PICK_LIMIT, 1)).items


def _group(principal: Principal, group_id: str) -> GroupRow:
    return forms.or_404(lambda: services().groups.group(principal.tenant_id, group_id))


def _form(principal: Principal) -> dict[str, Any]:
    """The form as posted; the parent picked (its key), or typed (a key, or a name looked up:
    what matches no group is sent as typed, for the API's check to refuse)."""
    form: dict[str, Any] = {name: request.form.get(name, "").strip() for name in FIELDS}
    form["members"] = request.form.getlist("members")
    parent = read_picker(principal, "groups", form["parent_key"])
    form["parent_key"] = parent.value or form["parent_key"]
    return form


def _body(form: dict[str, Any]) -> dict[str, Any]:
    """The form as the API's body: no leader or parent picked is null; no reason, none."""
    body = {
        **form,
        "leader_id": form["leader_id"] or None,
        "parent_key": form["parent_key"] or None,
    }
    return {name: value for name, value in body.items() if value != ""}


def _form_page(
    principal: Principal,
    group: GroupRow | None,
    form: dict[str, Any],
    errors: forms.Errors,
    status: int = 200,
) -> tuple[str, int]:
    """A new group's form (no `group`), or a group's page with its form for those who may
    change it."""
    accounts = accounts_to_pick(principal.tenant_id)
    parent = form.get("parent_key") or ""
    html = render_template(
        "console/groups/new.html" if group is None else "console/groups/detail.html",
        group=group,
        form=form,
        errors=errors,
        accounts=accounts,
        names={account.id: account.name for account in accounts},
        parent_name=shown_names(principal, "groups", [parent]).get(parent, ""),
    )
    return html, status
