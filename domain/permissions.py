"""Roles and the permissions they grant (docs/api.md#authentication-and-permissions)."""

from __future__ import annotations

from collections.abc import Iterable

SCHEDULE_LIST = "workflow:schedule:list"
SCHEDULE_CREATE = "workflow:schedule:create"
SCHEDULE_EDIT = "workflow:schedule:edit"
SCHEDULE_DELETE = "workflow:schedule:delete"
APPROVAL_LIST = "workflow:approval:list"
APPROVAL_SUBMIT = "workflow:approval:submit"
APPROVAL_DECIDE = "workflow:approval:decide"
APPROVAL_CALLBACK = "workflow:approval:callback"
DIRECTORY_MANAGE = "directory:manage"
AUDIT_READ = "audit:read"

ALL_PERMISSIONS = frozenset(
    {
        SCHEDULE_LIST,
        SCHEDULE_CREATE,
        SCHEDULE_EDIT,
        SCHEDULE_DELETE,
        APPROVAL_LIST,
        APPROVAL_SUBMIT,
        APPROVAL_DECIDE,
        APPROVAL_CALLBACK,
        DIRECTORY_MANAGE,
        AUDIT_READ,
    }
)

ROLES: dict[str, frozenset[str]] = {
    "admin": ALL_PERMISSIONS,
    "operator": frozenset(
        {SCHEDULE_LIST, SCHEDULE_CREATE, SCHEDULE_EDIT, APPROVAL_LIST, APPROVAL_DECIDE}
    ),
    "requester": frozenset({APPROVAL_LIST, APPROVAL_SUBMIT}),
    "auditor": frozenset({SCHEDULE_LIST, APPROVAL_LIST, AUDIT_READ}),
    "integration": frozenset({APPROVAL_CALLBACK}),
}


def permissions_of(roles: Iterable[str]) -> frozenset[str]:
    """The union of the permissions the given roles grant; unknown roles grant nothing."""
    granted: set[str] = set()
    for role in roles:
        granted |= ROLES.get(role, frozenset())
    return frozenset(granted)
