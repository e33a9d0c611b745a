"""The directory's rules, with no store: pure aggregates and policies."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest
from eventsourcing.domain import Snapshot

from domain.directory import (
    Account,
    Definition,
    Tenant,
    check_expected_version,
    check_roles,
)
from domain.errors import InvalidState, ValidationFailed, VersionConflict
from domain.exports import MAX_EXPORT_ROWS, TooManyRows
from domain.launch import initiator_problem
from domain.permissions import DIRECTORY_MANAGE, SCHEDULE_EDIT, permissions_of
from tests.support import stored_by_an_older_release

AT = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


def new_account(roles: list[str] | None = None) -> Account:
    return Account(
        tenant_id=uuid4(),
        account_id="ann",
        name="Ann",
        roles=roles or ["operator"],
        at=AT,
        actor="root",
    )


def event_names(account: Account) -> list[str]:
    return [type(e).__name__ for e in account.collect_events()]


def test_update_records_only_what_changed() -> None:
    account = new_account()
    account.collect_events()
    account.update(name="Ann", roles=["operator"], at=AT, actor="root")
    assert event_names(account) == []
    account.update(name="Ann B", roles=["operator", "auditor"], at=AT, actor="root")
    assert event_names(account) == ["Renamed", "RolesChanged"]
    assert account.roles == ["auditor", "operator"]


def test_deactivated_account_has_no_permissions_and_tokens_stop_working() -> None:
    account = new_account(["admin"])
    account.issue_token(token_id="t1", at=AT, actor="root")
    assert account.holds_live_token("t1")
    account.deactivate(at=AT, actor="root")
    assert account.permissions == frozenset()
    assert not account.holds_live_token("t1")
    account.activate(at=AT, actor="root")
    assert account.holds_live_token("t1")


def test_deactivate_twice_records_once() -> None:
    account = new_account()
    account.collect_events()
    account.deactivate(at=AT, actor="root")
    account.deactivate(at=AT, actor="root")
    assert event_names(account) == ["Deactivated"]


def test_no_token_for_a_deactivated_account() -> None:
    account = new_account()
    account.deactivate(at=AT, actor="root")
    with pytest.raises(InvalidState, match="deactivated"):
        account.issue_token(token_id="t1", at=AT, actor="root")


def test_revoked_token_stays_revoked_and_unknown_tokens_never_work() -> None:
    account = new_account()
    account.issue_token(token_id="t1", at=AT, actor="root")
    account.revoke_token(token_id="t1", at=AT, actor="root")
    assert not account.holds_live_token("t1")
    assert not account.holds_live_token("never-issued")


def test_unknown_roles_are_named() -> None:
    with pytest.raises(ValidationFailed) as caught:
        check_roles(["admin", "wizard", "ghost"])
    assert caught.value.errors == {
        "roles": [
            "unknown role(s) ghost, wizard; known: admin, auditor, integration, operator, requester"
        ]
    }


def test_stale_version_is_a_conflict() -> None:
    check_expected_version("account", 3, None)
    check_expected_version("account", 3, 3)
    with pytest.raises(VersionConflict, match="version 3, not 2"):
        check_expected_version("account", 3, 2)


@pytest.mark.parametrize(
    ("roles", "granted", "denied"),
    [
        (["admin"], DIRECTORY_MANAGE, None),
        (["operator"], SCHEDULE_EDIT, DIRECTORY_MANAGE),
        (["requester"], "workflow:approval:submit", SCHEDULE_EDIT),
        (["auditor"], "audit:read", "workflow:approval:decide"),
        (["integration"], "workflow:approval:callback", "workflow:approval:list"),
    ],
)
def test_roles_grant_the_contract_permissions(
    roles: list[str], granted: str, denied: str | None
) -> None:
    permissions = permissions_of(roles)
    assert granted in permissions
    assert denied is None or denied not in permissions


def test_definition_publish_is_idempotent() -> None:
    definition = Definition(
        tenant_id=uuid4(),
        key="daily",
        name="Daily",
        external=False,
        review_window_seconds=60,
        schedule_presets=[],
        allow_self_approval=False,
        at=AT,
        actor="root",
    )
    definition.collect_events()
    definition.publish(at=AT, actor="root")
    definition.publish(at=AT, actor="root")
    assert [type(e).__name__ for e in definition.collect_events()] == ["Published"]
    assert definition.published


def self_approving_definition() -> Definition:
    return Definition(
        tenant_id=uuid4(),
        key="daily",
        name="Daily",
        external=False,
        review_window_seconds=60,
        schedule_presets=[],
        allow_self_approval=True,
        at=AT,
        actor="root",
    )


def test_older_definition_events_and_snapshots_do_not_allow_self_approval() -> None:
    definition = self_approving_definition()
    definition.update("Daily", False, 60, [], allow_self_approval=True, at=AT, actor="root")
    registered, updated = definition.collect_events()
    older = stored_by_an_older_release(registered, "allow_self_approval").mutate(None)
    assert older.allow_self_approval is False
    rebuilt = registered.mutate(None)
    assert rebuilt.allow_self_approval is True
    stored_by_an_older_release(updated, "allow_self_approval").mutate(rebuilt)
    assert rebuilt.allow_self_approval is False
    snapshot = Snapshot.take(self_approving_definition())
    older = stored_by_an_older_release(snapshot, "allow_self_approval").mutate(None)
    assert older.allow_self_approval is False


@pytest.mark.parametrize(
    ("roles", "problem"),
    [
        (["requester"], None),
        (["admin"], None),
        (["operator", "auditor"], "account ann lacks workflow:approval:submit"),
    ],
)
def test_an_initiator_must_be_allowed_to_submit(roles: list[str], problem: str | None) -> None:
    launch_problem = initiator_problem(new_account(roles))
    found = launch_problem.reason if launch_problem else None
    assert (found or "").startswith(problem or "")
    assert (found is None) == (problem is None)


def test_an_export_is_recorded_on_the_tenant_up_to_the_cap_and_refused_beyond() -> None:
    tenant = Tenant(name="acme", at=AT, actor="system")
    tenant.collect_events()
    tenant.record_export("runs", {"status": "FAILED"}, "xlsx", MAX_EXPORT_ROWS, AT, "audrey")
    (exported,) = tenant.collect_events()
    assert isinstance(exported, Tenant.Exported)
    assert (exported.listing, exported.filters, exported.format) == (
        "runs",
        {"status": "FAILED"},
        "xlsx",
    )
    assert (exported.rows, exported.actor) == (MAX_EXPORT_ROWS, "audrey")
    with pytest.raises(TooManyRows) as refused:
        tenant.record_export("operations", {}, "csv", MAX_EXPORT_ROWS + 1, AT, "audrey")
    assert refused.value.code == "TOO_MANY_ROWS"
    with pytest.raises(ValueError, match="no export"):
        tenant.record_export("approvals", {}, "csv", 1, AT, "audrey")
    assert tenant.collect_events() == []  # refused: nothing recorded
