"""Passwords through the HTTP API on both stores: set by an admin (one-time or not), changed by
the account with its current one, refused when wrong, backed off after failures; and never on
the log, a timeline, an evidence bundle or any table but `account_credentials`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from cronledger.application import credentials
from cronledger.application.services import Services
from cronledger.persistence.signing_key import create_signing_key
from domain.credentials import SignInFailed
from domain.directory import account_uuid
from tests.e2e.helpers import account, assert_problem, other_tenant
from tests.log_scan import note_secret
from tests.support import Api, FakeClock

FIRST = "olga-first-day-2026"
OWN = "a long walk by the river"


def password_of(api: Api, account_id: str, body: dict[str, Any]) -> Any:
    return api.post(f"/api/accounts/{account_id}/password", body)


@pytest.fixture
def olga(admin: Api) -> Api:
    """An operator with a token of her own, and the one-time password an admin gave her."""
    note_secret("password", FIRST)
    note_secret("password", OWN)
    api = account(admin, "olga", ["operator"])
    given = password_of(admin, "olga", {"password": FIRST, "must_change": True})
    assert given.status_code == 200, given.json
    return api


def signs_in(services: Services, password: str, account_ref: str = "olga") -> bool:
    try:
        services.credentials.sign_in("acme", account_ref, password, "192.0.2.1")
    except SignInFailed:
        return False
    return True


def test_an_admin_gives_a_one_time_password_recorded_as_set_by_whom(
    admin: Api, olga: Api, services: Services, clock: FakeClock
) -> None:
    timeline = admin.get("/api/accounts/olga/timeline").json["items"]
    (event,) = [e for e in timeline if e["type"] == "Account.PasswordSet"]
    assert (event["actor"], event["data"]) == ("root", {"kind": "set", "must_change": True})
    signed_in = services.credentials.sign_in("acme", "olga", FIRST, "192.0.2.1")
    assert (signed_in.principal.account_id, signed_in.must_change) == ("olga", True)
    assert admin.get("/api/accounts/olga").json["version"] == 3  # its row saw the event

    clock.advance(60)
    again = password_of(admin, "olga", {"password": "another-one-time-pw", "must_change": True})
    assert again.json == {
        "account_id": "olga",
        "kind": "reset",
        "must_change": True,
        "set_at": "2026-10-01T09:01:00Z",
        "set_by": "root",
    }
    assert not signs_in(services, FIRST)


def test_the_account_changes_its_own_with_its_current_password(
    olga: Api, services: Services
) -> None:
    missing = password_of(olga, "olga", {"password": OWN})
    assert assert_problem(missing, 422, "VALIDATION_FAILED")["errors"] == {
        "current_password": ["give the account's current password"]
    }
    wrong = password_of(olga, "olga", {"password": OWN, "current_password": "not-the-one-1"})
    assert assert_problem(wrong, 422, "VALIDATION_FAILED")["errors"] == {
        "current_password": ["this is not the account's current password"]
    }
    same = password_of(olga, "olga", {"password": FIRST, "current_password": FIRST})
    assert same.json["errors"] == {"password": ["must differ from the current password"]}
    changed = password_of(olga, "olga", {"password": OWN, "current_password": FIRST})
    assert (changed.status_code, changed.json["kind"], changed.json["set_by"]) == (
        200,
        "changed",
        "olga",
    )
    assert changed.json["must_change"] is False
    assert signs_in(services, OWN)
    assert not signs_in(services, FIRST)
    assert not services.credentials.sign_in("acme", "olga", OWN, None).must_change


def test_an_account_without_a_password_sets_its_first_without_one(admin: Api) -> None:
    ann = account(admin, "ann", ["requester"])
    first = password_of(ann, "ann", {"password": "ann-chose-this-one"})
    assert (first.status_code, first.json["kind"]) == (200, "set")
    own_one_time = password_of(ann, "ann", {"password": "x" * 12, "must_change": True})
    assert "must_change" in assert_problem(own_one_time, 422, "VALIDATION_FAILED")["errors"]


def test_wrong_current_passwords_back_off_with_retry_after(
    olga: Api, clock: FakeClock, services: Services
) -> None:
    wrong = {"password": OWN, "current_password": "not-the-one-1"}
    assert [password_of(olga, "olga", wrong).status_code for _ in range(5)] == [422] * 5
    waiting = password_of(olga, "olga", {"password": OWN, "current_password": FIRST})
    assert_problem(waiting, 429, "TOO_MANY_REQUESTS")
    assert waiting.headers["Retry-After"] == "30"
    with pytest.raises(credentials.BackingOff):  # the lock is the account's, sign-ins' too
        services.credentials.sign_in("acme", "olga", FIRST, "192.0.2.1")
    clock.advance(30)
    assert (
        password_of(olga, "olga", {"password": OWN, "current_password": FIRST}).status_code == 200
    )
    assert (counted(services, "wrong_password"), counted(services, "locked_out")) == (5, 2)


def counted(services: Services, reason: str) -> float:
    """The figure of `cronledger_sign_in_failures_total` for `reason`."""
    (family,) = services.credentials.failures.collect()
    (value,) = [
        sample.value
        for sample in family.samples
        if sample.name.endswith("_total") and sample.labels == {"reason": reason}
    ]
    return value


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({"password": "short"}, {"password": ["use at least 10 characters"]}),
        ({"password": "x" * 257}, {"password": ["Longer than maximum length 256."]}),
        ({"password": "olga.petrova"}, {"password": ["must not be the account's id or name"]}),
        ({}, {"password": ["Missing data for required field."]}),
        ({"password": "x" * 12, "must_change": "yes"}, {"must_change": ["Not a valid boolean."]}),
    ],
)
def test_a_password_out_of_its_rules_is_refused_by_field(
    admin: Api, body: dict[str, Any], errors: dict[str, list[str]]
) -> None:
    admin.post("/api/accounts", {"id": "olga.petrova", "name": "Olga", "roles": ["operator"]})
    refused = password_of(admin, "olga.petrova", body)
    assert assert_problem(refused, 422, "VALIDATION_FAILED")["errors"] == errors


def test_only_the_account_itself_or_a_directory_manager_may(admin: Api, olga: Api) -> None:
    ann = account(admin, "ann", ["requester"])
    refused = password_of(ann, "olga", {"password": "ann-takes-over-olga"})
    assert_problem(refused, 403, "FORBIDDEN")
    integration = account(admin, "hook", ["integration"])
    assert_problem(password_of(integration, "hook", {"password": "x" * 12}), 403, "FORBIDDEN")


def test_another_tenants_account_is_not_found_and_nothing_is_set(
    services: Services, client: FlaskClient, olga: Api
) -> None:
    boss = other_tenant(services, client)
    refused = password_of(boss, "olga", {"password": "boss-takes-over-olga"})
    assert_problem(refused, 404, "NOT_FOUND")
    assert signs_in(services, FIRST)


def test_a_deactivated_account_gets_no_password(admin: Api, olga: Api) -> None:
    admin.post("/api/accounts/olga/deactivate", {"reason": "left"})
    refused = password_of(admin, "olga", {"password": "back-again-password"})
    assert_problem(refused, 409, "INVALID_STATE")


def test_the_password_and_its_hash_are_nowhere_but_in_the_credentials_table(
    admin: Api, olga: Api, services: Services, tmp_path: Path
) -> None:
    assert (
        password_of(olga, "olga", {"password": OWN, "current_password": FIRST}).status_code == 200
    )
    services.ledger.take_snapshot(account_uuid(olga_tenant(services), "olga"))
    services.evidence.key = create_signing_key(tmp_path / "k.pem")
    services.projector.catch_up()
    services.evidence.checkpoint(force=True)
    shown = [
        admin.get("/api/accounts/olga/timeline").get_data(as_text=True),
        admin.get(f"/api/audit/bundles/{account_uuid(olga_tenant(services), 'olga')}").get_data(
            as_text=True
        ),
        admin.get("/api/audit/operations").get_data(as_text=True),
        *every_table_but_the_credentials(services),
    ]
    assert "password of account olga changed" in shown[2]
    (hashed,) = services.store.query("SELECT password_hash FROM account_credentials")[0]
    assert hashed.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    for text in shown:
        for secret in (FIRST, OWN, "$argon2", hashed.rsplit("$", 1)[-1]):
            assert secret not in text


def olga_tenant(services: Services) -> Any:
    return services.directory.tenants()["acme"]


def every_table_but_the_credentials(services: Services) -> list[str]:
    """Every row of every table of the store (the log's, its snapshots', the read models'),
    as text; `account_credentials` left out."""
    store = services.store
    if store.kind == "sqlite":
        names = store.query("SELECT name FROM sqlite_master WHERE type = 'table'")
    else:
        names = store.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ?",
            (store.schema,),
        )
    tables = [str(name) for (name,) in names if name != "account_credentials"]
    assert services.ledger.snapshots_table.split(".")[-1].strip('"') in tables
    return [repr(store.query(f"SELECT * FROM {table}")) for table in tables]


def test_sign_ins_back_off_by_account_and_by_address_and_a_success_forgets_the_accounts(
    olga: Api, services: Services, clock: FakeClock
) -> None:
    service = services.credentials
    for _ in range(4):
        assert not signs_in(services, "wrong-password-1")
    assert signs_in(services, FIRST)  # the account's four failures are forgotten
    for _ in range(5):
        assert not signs_in(services, "wrong-password-1")
    with pytest.raises(credentials.BackingOff) as waiting:
        service.sign_in("acme", "olga", FIRST, "198.51.100.7")  # from anywhere: the account's
    assert waiting.value.retry_after == 30
    clock.advance(30)
    assert signs_in(services, FIRST, account_ref="olga")
    for _ in range(20 - 9):  # the address counted every one of its failures
        assert not signs_in(services, "wrong-password-1", account_ref="nobody")
    with pytest.raises(credentials.BackingOff):
        service.sign_in("acme", "olga", FIRST, "192.0.2.1")
    assert service.sign_in("acme", "olga", FIRST, "198.51.100.7").principal.account_id == "olga"


def test_the_failures_table_keeps_a_bounded_number_of_addresses(
    services: Services, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(credentials, "ADDRESS_ROWS", 3)
    for n in range(6):
        clock.advance(1)
        with pytest.raises(SignInFailed):
            services.credentials.sign_in("acme", "nobody", "wrong-password-1", f"203.0.113.{n}")
    kept = services.store.query("SELECT subject FROM sign_in_failures ORDER BY subject")
    assert [subject for (subject,) in kept] == [f"address:203.0.113.{n}" for n in (3, 4, 5)]


def test_an_account_is_found_by_its_name_when_that_names_one(
    admin: Api, olga: Api, services: Services
) -> None:
    admin.post("/api/accounts", {"id": "o2", "name": "Olga P", "roles": ["operator"]})
    password_of(admin, "o2", {"password": "o2-first-day-2026"})
    assert signs_in(services, "o2-first-day-2026", account_ref="Olga P")
    admin.post("/api/accounts", {"id": "o3", "name": "Olga P", "roles": ["operator"]})
    assert not signs_in(services, "o2-first-day-2026", account_ref="Olga P")  # two named so
