"""Private store files, redacted passwords, reserved ids, a last admin kept (issue 11, item 7)."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from domain.directory import Account, Principal
from domain.errors import ValidationFailed
from tests.e2e.helpers import account, assert_problem
from tests.processes import free_port, run_cli
from tests.support import Api, FakeClock, Opener


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_sqlite_store_and_its_folder_are_for_the_owner_only(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    path = shared / "private" / "cronledger.sqlite"
    services = open_services(Settings(database_url=f"sqlite:///{path}"), FakeClock())
    try:
        services.directory.bootstrap("acme", "root")
        written = [Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm")]
        assert [mode(p) for p in written if p.exists()] == [0o600, 0o600, 0o600]
    finally:
        services.close()
    assert mode(path.parent) == 0o700
    assert mode(shared) == 0o755  # a folder that was there already keeps its mode


def test_a_database_password_never_shows_in_errors() -> None:
    unreachable = run_cli(f"postgresql://bob:s3cret-pw@127.0.0.1:{free_port()}/db", "migrate")
    malformed = run_cli("mysql://bob:s3cret-pw@nowhere/db", "migrate")

    for result in (unreachable, malformed):
        assert result.returncode == 1
        assert "s3cret-pw" not in result.stdout + result.stderr
        assert "bob:***@" in result.stderr
    assert "cannot open the store" in unreachable.stderr
    assert "Traceback" not in unreachable.stderr


def test_account_ids_starting_with_system_are_reserved(admin: Api) -> None:
    for reserved in ("system", "System:tick", "SYSTEMD", "system-ops"):
        refused = admin.post("/api/accounts", {"id": reserved, "name": "x", "roles": []})
        assert "id" in assert_problem(refused, 422, "VALIDATION_FAILED")["errors"]
    created = admin.post("/api/accounts", {"id": "ops-system", "name": "x", "roles": []})
    assert created.status_code == 201


def test_bootstrap_refuses_a_reserved_admin_id(services: Services) -> None:
    with pytest.raises(ValidationFailed) as refused:
        services.directory.bootstrap("globex", "system")
    assert list(refused.value.errors) == ["admin"]


def test_an_account_made_before_the_reservation_keeps_working(
    services: Services, admin: Api
) -> None:
    root = services.directory.authenticate(admin.token)
    assert root is not None
    tenant = services.directory.tenant(root.tenant_id)
    older = Account(tenant.id, "system-ops", "Ops", ["admin"], services.ledger.clock(), "root")
    tenant.add_account("system-ops")
    services.ledger.save(older, tenant)

    token = admin.post("/api/accounts/system-ops/tokens")

    assert token.status_code == 201
    assert Api(admin.client, token.json["token"]).get("/api/accounts").status_code == 200


def test_the_last_active_admin_can_neither_go_nor_lose_the_role(admin: Api) -> None:
    assert_problem(admin.post("/api/accounts/root/deactivate"), 409, "INVALID_STATE")
    demoted = admin.put("/api/accounts/root", {"name": "root", "roles": ["auditor"], "version": 2})
    assert_problem(demoted, 409, "INVALID_STATE")
    account(admin, "bob", ["admin"])
    assert admin.post("/api/accounts/bob/deactivate").status_code == 200
    assert_problem(admin.post("/api/accounts/root/deactivate"), 409, "INVALID_STATE")
    root = admin.get("/api/accounts/root").json
    assert (root["active"], root["roles"]) == (True, ["admin"])


def test_an_admin_hands_over_then_the_new_one_is_the_last(admin: Api) -> None:
    ann = account(admin, "ann", ["admin"])
    handed = admin.put("/api/accounts/root", {"name": "root", "roles": ["auditor"], "version": 2})
    assert handed.status_code == 200
    assert_problem(ann.post("/api/accounts/ann/deactivate"), 409, "INVALID_STATE")
    assert ann.post("/api/accounts/root/deactivate").status_code == 200


def test_two_admins_removing_each_other_at_once_leave_one(
    services: Services, admin: Api, open_with: Opener, clock: FakeClock, monkeypatch: Any
) -> None:
    account(admin, "ann", ["admin"])
    root = services.directory.authenticate(admin.token)
    assert root is not None
    other_process = open_with(clock).directory
    ann = Principal(root.tenant_id, "ann", root.permissions)
    save = services.ledger.save

    def save_after_ann_removed_root(*objs: Any, **kwargs: Any) -> Any:
        """Root's check saw two admins; Ann's removal of root lands before root's save."""
        monkeypatch.setattr(services.ledger, "save", save)
        other_process.set_active(ann, "root", False, None)
        return save(*objs, **kwargs)

    monkeypatch.setattr(services.ledger, "save", save_after_ann_removed_root)

    racing = admin.post("/api/accounts/ann/deactivate")

    assert_problem(racing, 409, "INVALID_STATE")
    directory = services.directory
    active = {key: directory.account(root.tenant_id, key).active for key in ("root", "ann")}
    assert active == {"root": False, "ann": True}
