"""The directory against real stores (each test runs on SQLite and PostgreSQL)."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ThreadPoolExecutor

import pytest

from cronledger.application.directory import TOKEN_CACHE_SECONDS
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from domain.directory import SYSTEM_ACTOR, Principal, account_uuid, tenant_uuid
from domain.errors import InvalidState, NotFound, ValidationFailed
from projections.keyset import Window
from tests.support import DECIDERS, FakeClock, Opener


def acting_admin(services: Services, tenant: str = "acme") -> Principal:
    token = services.directory.bootstrap(tenant, "root").token
    principal = services.directory.authenticate(token)
    assert principal is not None
    return principal


def test_bootstrap_creates_a_working_admin_token(services: Services) -> None:
    token = services.directory.bootstrap("acme", "root").token
    principal = services.directory.authenticate(token)
    assert principal is not None
    assert (principal.tenant_id, principal.account_id) == (tenant_uuid("acme"), "root")
    assert principal.can("directory:manage")


def test_a_tenant_is_bootstrapped_once(services: Services) -> None:
    services.directory.bootstrap("acme", "root")
    with pytest.raises(InvalidState, match="already exists"):
        services.directory.bootstrap("acme", "other")


def test_unknown_and_malformed_tokens_do_not_authenticate(services: Services) -> None:
    services.directory.bootstrap("acme", "root")
    assert services.directory.authenticate("clt_not-a-real-token") is None
    assert services.directory.authenticate("Basic abc") is None


def test_revoked_token_and_deactivated_account_stop_authenticating(services: Services) -> None:
    root = acting_admin(services)
    directory = services.directory
    directory.create_account(root, "ops", "Ops", ["operator"])
    first, second = directory.issue_token(root, "ops"), directory.issue_token(root, "ops")
    directory.revoke_token(root, "ops", first.token_id)
    assert directory.authenticate(first.token) is None
    assert directory.authenticate(second.token) is not None
    directory.set_active(root, "ops", False, None)
    assert directory.authenticate(second.token) is None
    directory.set_active(root, "ops", True, None)
    assert directory.authenticate(second.token) is not None


def test_duplicate_account_id_is_refused_and_nothing_is_written(services: Services) -> None:
    root = acting_admin(services)
    services.directory.create_account(root, "ops", "Ops", ["operator"])
    before = services.ledger.recorder.max_notification_id()
    with pytest.raises(ValidationFailed) as caught:
        services.directory.create_account(root, "ops", "Other", ["auditor"])
    assert "id" in caught.value.errors
    assert services.ledger.recorder.max_notification_id() == before


def test_same_account_id_in_two_tenants_are_two_accounts(services: Services) -> None:
    acme, globex = acting_admin(services, "acme"), acting_admin(services, "globex")
    services.directory.create_account(acme, "ann", "Ann of Acme", ["operator"])
    services.directory.create_account(globex, "ann", "Ann of Globex", ["auditor"])
    assert services.directory.account(acme.tenant_id, "ann").name == "Ann of Acme"
    assert services.directory.account(globex.tenant_id, "ann").roles == ["auditor"]


def test_another_tenants_definition_is_not_found(services: Services) -> None:
    from cronledger.application.directory import DefinitionFields

    acme, globex = acting_admin(services, "acme"), acting_admin(services, "globex")
    fields = DefinitionFields("Daily", False, 3600, [], reviewers=DECIDERS)
    definition = services.directory.create_definition(acme, "daily", fields)
    with pytest.raises(NotFound):
        services.directory.definition(globex.tenant_id, definition.id)
    assert services.directory.definitions(globex.tenant_id, Window()).total == 0


def test_concurrent_account_creation_loses_nothing(services: Services) -> None:
    root = acting_admin(services)

    def create(n: int) -> str:
        return services.directory.create_account(root, f"user{n}", f"User {n}", ["requester"]).id

    with ThreadPoolExecutor(max_workers=8) as pool:
        created = set(pool.map(create, range(24)))
    listed = services.directory.accounts(root.tenant_id, Window(size=200))
    assert {a.id for a in listed.items} >= created
    assert listed.total == 25


def test_paging_counts_and_slices(services: Services) -> None:
    root = acting_admin(services)
    for n in range(5):
        services.directory.create_account(root, f"u{n}", f"U{n}", ["requester"])
    page = services.directory.accounts(root.tenant_id, Window(size=2, page=2))
    assert [a.id for a in page.items] == ["u1", "u2"]
    assert (page.page, page.page_size, page.total) == (2, 2, 6)


def test_timeline_records_actor_time_and_position(services: Services, clock: FakeClock) -> None:
    root = acting_admin(services)
    services.directory.create_account(root, "ann", "Ann", ["operator"])
    clock.advance(60)
    services.directory.update_account(root, "ann", "Ann", ["auditor"], 1)
    clock.advance(60)
    services.directory.set_active(root, "ann", False, None)
    entries = services.audit.timeline("ann", "acme")
    assert [e.type for e in entries] == [
        "Account.Registered",
        "Account.RolesChanged",
        "Account.Deactivated",
    ]
    assert {e.actor for e in entries} == {"root"}
    assert [e.at.isoformat() for e in entries] == [
        "2026-10-01T09:00:00+00:00",
        "2026-10-01T09:01:00+00:00",
        "2026-10-01T09:02:00+00:00",
    ]
    positions = [e.position for e in entries]
    assert positions == sorted(positions)
    assert positions[0] > 0
    assert entries[1].data == {"old": ["operator"], "new": ["auditor"]}


def test_audit_finds_an_account_in_any_tenant_and_asks_when_ambiguous(
    services: Services,
) -> None:
    acme, globex = acting_admin(services, "acme"), acting_admin(services, "globex")
    services.directory.create_account(acme, "only-acme", "A", ["operator"])
    assert services.audit.resolve("only-acme") == account_uuid(acme.tenant_id, "only-acme")
    services.directory.create_account(globex, "shared", "G", ["operator"])
    services.directory.create_account(acme, "shared", "A", ["operator"])
    with pytest.raises(InvalidState, match="--tenant"):
        services.audit.resolve("shared")
    assert services.audit.resolve("shared", "globex") == account_uuid(globex.tenant_id, "shared")
    with pytest.raises(NotFound):
        services.audit.resolve("nobody")
    assert services.audit.timeline("root", "acme")[0].actor == SYSTEM_ACTOR


def _open_and_close(url: str) -> None:
    open_services(Settings(database_url=url)).close()


def test_processes_starting_together_on_an_empty_store_all_succeed(store_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_open_and_close, args=(store_url,)) for _ in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
    assert [p.exitcode for p in processes] == [0, 0, 0, 0]


def test_awkward_text_round_trips_through_the_store(services: Services) -> None:
    root = acting_admin(services)
    awkward = 'Zoë "quoted" \\back\\slash, {braces} (parens) 每日检查 \u2028 end'
    services.directory.create_account(root, "odd", awkward, ["requester"])
    assert services.directory.account(root.tenant_id, "odd").name == awkward
    if services.store.kind == "postgresql":
        from cronledger.persistence.recorders import BinaryAppendRecorder

        assert isinstance(services.ledger.recorder, BinaryAppendRecorder)


def test_a_revoked_token_stops_at_once_here_and_within_the_cache_time_elsewhere(
    open_with: Opener, clock: FakeClock
) -> None:
    here, elsewhere = open_with(clock), open_with(clock)
    issued = here.directory.bootstrap("acme", "root")
    token = issued.token
    root = here.directory.authenticate(token)
    assert root is not None
    now = [0.0]
    elsewhere.directory.recent.clock = lambda: now[0]
    for directory in (here.directory, elsewhere.directory):
        assert directory.authenticate_recent(token) == root
    here.directory.revoke_token(root, "root", issued.token_id)
    assert here.directory.authenticate_recent(token) is None
    assert elsewhere.directory.authenticate_recent(token) == root  # answered a moment ago
    now[0] += TOKEN_CACHE_SECONDS
    assert elsewhere.directory.authenticate_recent(token) is None
