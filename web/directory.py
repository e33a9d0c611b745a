"""Accounts, tokens and process definitions (docs/api.md)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from cronledger.application.contacts import Contact
from cronledger.application.credentials import PasswordChange
from cronledger.application.directory import DefinitionFields, IssuedToken, ReplayedToken
from cronledger.application.idempotency import Outcome, once
from cronledger.persistence.ledger import TimelineEntry
from domain.calendars import nominal_seconds, rule_problems
from domain.credentials import BackingOff
from domain.directory import Principal
from domain.errors import ValidationFailed, every_problem
from domain.idempotency import CREATE_ACCOUNT, CREATE_DEFINITION, ISSUE_TOKEN
from domain.messages import Message
from domain.permissions import APPROVAL_LIST, AUDIT_READ, DIRECTORY_MANAGE
from domain.working_time import SECONDS
from projections.directory import (
    ACCOUNT_LISTING,
    ACCOUNT_ORDER,
    DEFINITION_LISTING,
    DEFINITION_ORDER,
    AccountRow,
    DefinitionRow,
)
from web.api import Answered, MergePatch, endpoint, services
from web.command_keys import Replays
from web.idempotency import keyed_request, replay_headers
from web.paging import listed, window
from web.problems import SOME_FIELDS_INVALID, Problem
from web.schemas.audit import TimelineOut
from web.schemas.base import (
    ReasonBody,
    VersionBody,
    VersionReasonBody,
    defaults_of,
    page_of,
)
from web.schemas.directory import (
    MAX_REVIEW_WINDOW_SECONDS,
    AccountCreate,
    AccountFieldsIn,
    AccountListQuery,
    AccountOut,
    AccountPatch,
    AccountUpdate,
    ContactIn,
    ContactOut,
    DefinitionCreate,
    DefinitionFieldsIn,
    DefinitionListQuery,
    DefinitionOut,
    DefinitionPatch,
    DefinitionSettable,
    DefinitionUpdate,
    PasswordIn,
    PasswordOut,
    TokenOut,
)

bp = Blueprint("directory", __name__, url_prefix="/api")
ACCOUNTS = "accounts"
DEFINITIONS = "definitions"


def _account(principal: Principal, account_id: str) -> AccountRow:
    """The account as a write reads it: from its log, never behind it."""
    return services().directory.current_account(principal.tenant_id, account_id)


def _account_meaning(fields: dict[str, Any], principal: Principal) -> None:
    """The rules a new account's id keeps besides its shape."""
    if "id" in fields:
        services().directory.check_new_account(principal.tenant_id, fields["id"])


# What a definition's fields stand in for when their own are not there to check the others by.
STAND_INS = {**defaults_of(DefinitionFieldsIn), "name": "-", "external": False}
LONGEST = MAX_REVIEW_WINDOW_SECONDS  # a review window no reminder is refused by


def _definition_meaning(
    fields: dict[str, Any], principal: Principal, definition_id: str | None = None
) -> None:
    """The rules of meaning a definition's fields break (its deadline, presets, terms, key),
    all at once."""
    directory = services().directory
    given = {**STAND_INS, **fields}
    try:
        terms = definition_fields(given)
        errors: dict[str, list[str]] = {}
    except Problem as problem:
        errors = dict(problem.errors or {})
        terms = definition_fields(
            {**given, "deadline_rule": None, "review_window_seconds": LONGEST}
        )
    tenant_id, new, key = principal.tenant_id, definition_id is None, fields.get("key", "")
    errors.update(
        every_problem(
            lambda: directory.check_definition(tenant_id, terms, key, new),
            lambda: directory.check_new_definition_key(tenant_id, key) if new and key else None,
        )
    )
    if errors:
        raise ValidationFailed(errors)


def _definition(principal: Principal, definition_id: str) -> DefinitionRow:
    """The definition as a write reads it: from its log, never behind it."""
    return services().directory.current_definition(principal.tenant_id, definition_id)


@bp.post("/accounts")
@endpoint(
    "Create an account",
    tag=ACCOUNTS,
    permission=DIRECTORY_MANAGE,
    body=AccountCreate,
    versioned=True,
    response=AccountOut,
    status=201,
    location="/api/accounts/{id}",
    idempotent=True,
    meaning=_account_meaning,
)
def create_account(principal: Principal, body: dict[str, Any]) -> Answered:
    request = keyed_request(principal, CREATE_ACCOUNT)
    created = once(
        lambda: services().directory.create_account(
            principal, body.get("id"), body["name"], body["roles"], request
        ),
        lambda account_id: _account(principal, account_id),
    )
    return Answered(created.value, 201, replay_headers(created.replayed))


@bp.get("/accounts")
@endpoint(
    "List accounts",
    tag=ACCOUNTS,
    permission=DIRECTORY_MANAGE,
    query=AccountListQuery,
    response=page_of(AccountOut),
)
def list_accounts(principal: Principal, query: dict[str, Any]) -> Answered:
    page = services().directory.accounts(principal.tenant_id, window(query, ACCOUNT_LISTING))
    return listed(page, ACCOUNT_ORDER, AccountOut)


@bp.get("/accounts/<account_id>")
@endpoint(
    "Read an account",
    tag=ACCOUNTS,
    permission=DIRECTORY_MANAGE,
    versioned=True,
    response=AccountOut,
)
def get_account(principal: Principal, account_id: str) -> AccountRow:
    return services().directory.account(principal.tenant_id, account_id)


@bp.get("/accounts/<account_id>/timeline")
@endpoint("Every event of the account", tag=ACCOUNTS, permission=AUDIT_READ, response=TimelineOut)
def account_timeline(principal: Principal, account_id: str) -> dict[str, list[TimelineEntry]]:
    return {"items": services().directory.account_timeline(principal.tenant_id, account_id)}


@bp.put("/accounts/<account_id>")
@endpoint(
    "Rename an account or change its roles",
    tag=ACCOUNTS,
    permission=DIRECTORY_MANAGE,
    body=AccountUpdate,
    versioned=_account,
    response=AccountOut,
)
def update_account(principal: Principal, account_id: str, body: dict[str, Any]) -> AccountRow:
    return _replace_account(principal, account_id, body)


def _replace_account(principal: Principal, account_id: str, body: dict[str, Any]) -> AccountRow:
    return services().directory.update_account(
        principal, account_id, body["name"], body["roles"], body["version"], body.get("reason")
    )


@bp.patch("/accounts/<account_id>")
@endpoint(
    "Change an account's name or roles (JSON Merge Patch), saved as a PUT of the result",
    tag=ACCOUNTS,
    permission=DIRECTORY_MANAGE,
    body=MergePatch(
        AccountOut, AccountUpdate, AccountPatch, defaults_of(AccountFieldsIn), _account
    ),
    versioned=_account,
    response=AccountOut,
)
def patch_account(principal: Principal, account_id: str, body: dict[str, Any]) -> AccountRow:
    return _replace_account(principal, account_id, body)


@bp.post("/accounts/<account_id>/deactivate")
@endpoint(
    "Deactivate an account: its tokens stop working",
    tag=ACCOUNTS,
    permission=DIRECTORY_MANAGE,
    body=VersionReasonBody,
    versioned=_account,
    response=AccountOut,
    idempotent=Replays(_account),
)
def deactivate_account(principal: Principal, account_id: str, body: dict[str, Any]) -> AccountRow:
    return services().directory.set_active(
        principal, account_id, False, body.get("version"), body["reason"]
    )


@bp.post("/accounts/<account_id>/activate")
@endpoint(
    "Activate an account again",
    tag=ACCOUNTS,
    permission=DIRECTORY_MANAGE,
    body=VersionReasonBody,
    versioned=_account,
    response=AccountOut,
    idempotent=Replays(_account),
)
def activate_account(principal: Principal, account_id: str, body: dict[str, Any]) -> AccountRow:
    return services().directory.set_active(
        principal, account_id, True, body.get("version"), body["reason"]
    )


@bp.post("/accounts/<account_id>/tokens")
@endpoint(
    "Issue an API token (the secret is shown once)",
    tag=ACCOUNTS,
    permission=DIRECTORY_MANAGE,
    response=TokenOut,
    status=201,
    location="/api/accounts/{account_id}/tokens/{token_id}",
    idempotent=True,
)
def issue_token(principal: Principal, account_id: str) -> Answered:
    request = keyed_request(principal, ISSUE_TOKEN)
    issued: Outcome[IssuedToken | ReplayedToken] = once(
        lambda: services().directory.issue_token(principal, account_id, request),
        ReplayedToken,
    )
    return Answered(issued.value, 201, replay_headers(issued.replayed))


@bp.delete("/accounts/<account_id>/tokens/<token_id>")
@endpoint(
    "Revoke an API token",
    tag=ACCOUNTS,
    permission=DIRECTORY_MANAGE,
    body=ReasonBody,
    status=204,
)
def revoke_token(
    principal: Principal, account_id: str, token_id: str, body: dict[str, Any]
) -> None:
    services().directory.revoke_token(principal, account_id, token_id, body["reason"])


# A password's hash is kept outside the log (cronledger/application/credentials.py): the log
# records that it was set, and by whom.
@bp.post("/accounts/<account_id>/password")
@endpoint(
    "Set an account's password (the account itself with its current one, or directory:manage)",
    tag=ACCOUNTS,
    permission=APPROVAL_LIST,
    body=PasswordIn,
    response=PasswordOut,
    keyless=True,
)
def set_password(principal: Principal, account_id: str, body: dict[str, Any]) -> PasswordChange:
    try:
        return services().credentials.set_password(
            principal,
            account_id,
            body["password"],
            body["must_change"],
            body["current_password"],
        )
    except BackingOff as waiting:
        wait = str(waiting.retry_after)
        raise Problem(waiting.code, waiting.message, headers={"Retry-After": wait}) from None


# Contact details are personal data outside the log (cronledger/application/contacts.py):
# not fields of the account, whose answer is its row as its events made it.
@bp.get("/accounts/<account_id>/contact")
@endpoint(
    "Read an account's contact details (the account itself, or directory:manage)",
    tag=ACCOUNTS,
    permission=APPROVAL_LIST,
    response=ContactOut,
)
def get_contact(principal: Principal, account_id: str) -> Contact:
    return services().contacts.contact(principal, account_id)


@bp.put("/accounts/<account_id>/contact")
@endpoint(
    "Set an account's email address and language (the account itself, or directory:manage)",
    tag=ACCOUNTS,
    permission=APPROVAL_LIST,
    body=ContactIn,
    response=ContactOut,
)
def put_contact(principal: Principal, account_id: str, body: dict[str, Any]) -> Contact:
    return services().contacts.update(principal, account_id, body["email"], body["language"])


@bp.delete("/accounts/<account_id>/contact")
@endpoint(
    "Erase an account's contact details (the account itself, or directory:manage)",
    tag=ACCOUNTS,
    permission=APPROVAL_LIST,
    status=204,
)
def erase_contact(principal: Principal, account_id: str) -> None:
    services().contacts.erase(principal, account_id)


@bp.post("/definitions")
@endpoint(
    "Create a process definition (unpublished)",
    tag=DEFINITIONS,
    permission=DIRECTORY_MANAGE,
    body=DefinitionCreate,
    versioned=True,
    response=DefinitionOut,
    status=201,
    location="/api/definitions/{id}",
    idempotent=True,
    meaning=_definition_meaning,
)
def create_definition(principal: Principal, body: dict[str, Any]) -> Answered:
    request = keyed_request(principal, CREATE_DEFINITION)
    created = once(
        lambda: services().directory.create_definition(
            principal, body["key"], definition_fields(body), request
        ),
        lambda definition_id: _definition(principal, definition_id),
    )
    return Answered(created.value, 201, replay_headers(created.replayed))


@bp.get("/definitions")
@endpoint(
    "List process definitions",
    tag=DEFINITIONS,
    permission=DIRECTORY_MANAGE,
    query=DefinitionListQuery,
    response=page_of(DefinitionOut),
)
def list_definitions(principal: Principal, query: dict[str, Any]) -> Answered:
    wanted = window(query, DEFINITION_LISTING)
    page = services().directory.definitions(principal.tenant_id, wanted)
    return listed(page, DEFINITION_ORDER, DefinitionOut)


@bp.get("/definitions/<definition_id>")
@endpoint(
    "Read a process definition",
    tag=DEFINITIONS,
    permission=DIRECTORY_MANAGE,
    versioned=True,
    response=DefinitionOut,
)
def get_definition(principal: Principal, definition_id: str) -> DefinitionRow:
    return services().directory.definition(principal.tenant_id, definition_id)


@bp.get("/definitions/by-key/<key>")
@endpoint(
    "Read a process definition by its key",
    tag=DEFINITIONS,
    permission=DIRECTORY_MANAGE,
    versioned=True,
    response=DefinitionOut,
)
def get_definition_by_key(principal: Principal, key: str) -> DefinitionRow:
    return services().directory.definition_by_key(principal.tenant_id, key)


@bp.get("/definitions/<definition_id>/timeline")
@endpoint(
    "Every event of the process definition",
    tag=DEFINITIONS,
    permission=AUDIT_READ,
    response=TimelineOut,
)
def definition_timeline(principal: Principal, definition_id: str) -> dict[str, list[TimelineEntry]]:
    return {"items": services().directory.definition_timeline(principal.tenant_id, definition_id)}


@bp.put("/definitions/<definition_id>")
@endpoint(
    "Replace a process definition's fields (its key stays)",
    tag=DEFINITIONS,
    permission=DIRECTORY_MANAGE,
    body=DefinitionUpdate,
    versioned=_definition,
    response=DefinitionOut,
    meaning=_definition_meaning,
)
def update_definition(
    principal: Principal, definition_id: str, body: dict[str, Any]
) -> DefinitionRow:
    return _replace_definition(principal, definition_id, body)


def _replace_definition(
    principal: Principal, definition_id: str, body: dict[str, Any]
) -> DefinitionRow:
    """The fields given; reminders and escalation, when left out, as they are (the version
    checked with the write makes sure they are what was read), as are `max_pause_seconds`
    and `return_to`; the deadline rule too, as `_rule_kept` says."""
    current = _definition(principal, definition_id)
    if not {"reminders", "escalation"} <= body.keys():
        body = {"reminders": current.reminders, "escalation": current.escalation, **body}
    kept = {"max_pause_seconds": current.max_pause_seconds, "return_to": current.return_to}
    body = {
        "cancellation_definition": current.cancellation_definition,
        **kept,
        **body,
        "deadline_rule": _rule_kept(current, body),
    }
    return services().directory.update_definition(
        principal, definition_id, definition_fields(body), body["version"]
    )


@bp.patch("/definitions/<definition_id>")
@endpoint(
    "Change some of a process definition's fields (JSON Merge Patch), saved as a PUT",
    tag=DEFINITIONS,
    permission=DIRECTORY_MANAGE,
    body=MergePatch(
        DefinitionSettable,
        DefinitionUpdate,
        DefinitionPatch,
        defaults_of(DefinitionFieldsIn),
        _definition,
    ),
    versioned=_definition,
    response=DefinitionOut,
    meaning=_definition_meaning,
)
def patch_definition(
    principal: Principal, definition_id: str, body: dict[str, Any]
) -> DefinitionRow:
    return _replace_definition(principal, definition_id, body)


@bp.post("/definitions/<definition_id>/publish")
@endpoint(
    "Publish a definition",
    tag=DEFINITIONS,
    permission=DIRECTORY_MANAGE,
    body=VersionBody,
    versioned=_definition,
    response=DefinitionOut,
    idempotent=Replays(_definition),
)
def publish_definition(
    principal: Principal, definition_id: str, body: dict[str, Any]
) -> DefinitionRow:
    return services().directory.set_published(principal, definition_id, True, body.get("version"))


@bp.post("/definitions/<definition_id>/unpublish")
@endpoint(
    "Unpublish a definition",
    tag=DEFINITIONS,
    permission=DIRECTORY_MANAGE,
    body=VersionBody,
    versioned=_definition,
    response=DefinitionOut,
    idempotent=Replays(_definition),
)
def unpublish_definition(
    principal: Principal, definition_id: str, body: dict[str, Any]
) -> DefinitionRow:
    return services().directory.set_published(principal, definition_id, False, body.get("version"))


def _rule_kept(current: DefinitionRow, body: dict[str, Any]) -> dict[str, Any] | None:
    """The deadline rule a PUT or a merged PATCH sets: as given (null: the review window, in
    plain seconds). Left out of a PUT: the current rule when the review window is left out
    too, or is the current rule's nominal length (an older client sending back what it read);
    else the review window given, in plain seconds."""
    if "deadline_rule" in body:
        return None if body["deadline_rule"] is None else dict(body["deadline_rule"])
    window = body.get("review_window_seconds")
    if window is None or window == current.review_window_seconds:
        return dict(current.deadline_rule)
    return None


def definition_fields(body: dict[str, Any]) -> DefinitionFields:
    """A body as the service takes it (the console sends the same): a `deadline_rule` in
    working time sets the review window to its nominal length; one in seconds is the review
    window (which wins when both are given: a merge patch carries both)."""
    rule, window = body.get("deadline_rule"), body.get("review_window_seconds")
    if rule is None and window is None:
        raise Problem(
            "VALIDATION_FAILED",
            SOME_FIELDS_INVALID,
            {"review_window_seconds": [Message("give review_window_seconds or deadline_rule")]},
        )
    if (
        rule is not None
        and rule.get("kind") == SECONDS
        and window not in (None, rule.get("seconds"))
    ):
        raise Problem(
            "VALIDATION_FAILED",
            SOME_FIELDS_INVALID,
            {"deadline_rule.seconds": [Message("differs from review_window_seconds: give one")]},
        )
    if rule is not None and (rule.get("kind") != SECONDS or window is None):
        problems = rule_problems(rule, "deadline_rule")
        if problems:
            raise Problem("VALIDATION_FAILED", SOME_FIELDS_INVALID, problems)
        window = nominal_seconds(rule)
    else:
        rule = None
    assert window is not None  # one of the two was given
    return DefinitionFields(
        name=body["name"],
        external=body["external"],
        review_window_seconds=window,
        deadline_rule=rule,
        schedule_presets=body["schedule_presets"],
        allow_self_approval=body["allow_self_approval"],
        reminders=body["reminders"],
        escalation=body["escalation"],
        reviewers=body.get("reviewers"),
        max_pause_seconds=body["max_pause_seconds"],
        return_to=body["return_to"],
        levels=body.get("levels"),
        restart_deadline_on_revise=body.get("restart_deadline_on_revise"),
        cancellation_definition=body.get("cancellation_definition"),
    )
