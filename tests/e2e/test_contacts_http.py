"""Contact details (issue 30, item 8): personal data outside the log, erasable on request."""

from __future__ import annotations

import base64
import json

import pytest

from cronledger.application.services import Services
from cronledger.persistence.signing_key import SigningKey
from tests.e2e.helpers import account, assert_problem
from tests.e2e.test_evidence_http import key, ok, signed
from tests.support import Api

__all__ = ["key"]  # the fixture, shared with the evidence tests
EMAIL = "rita@example.com"
CONTACT = "/api/accounts/rita/contact"


@pytest.fixture
def rita(admin: Api) -> Api:
    return account(admin, "rita", ["requester"])


def test_an_account_sets_reads_and_erases_its_own_contact_details(admin: Api, rita: Api) -> None:
    assert ok(rita.get(CONTACT)) == {
        "account_id": "rita",
        "email": None,
        "language": "zh-CN",
        "updated_at": None,
    }
    put = ok(rita.put(CONTACT, {"email": EMAIL, "language": "en"}))
    assert (put["email"], put["language"]) == (EMAIL, "en")
    assert ok(admin.get(CONTACT))["email"] == EMAIL  # directory:manage reads any
    assert rita.delete(CONTACT).status_code == 204
    assert ok(rita.get(CONTACT))["email"] is None


def test_another_account_may_not_and_a_bad_address_is_refused(admin: Api, rita: Api) -> None:
    olga = account(admin, "olga", ["operator"])
    assert_problem(olga.get(CONTACT), 403, "FORBIDDEN")
    assert_problem(olga.put(CONTACT, {"email": "o@example.com"}), 403, "FORBIDDEN")
    assert_problem(admin.get("/api/accounts/nobody/contact"), 404, "NOT_FOUND")
    refused = assert_problem(
        rita.put(CONTACT, {"email": "not an address"}), 422, "VALIDATION_FAILED"
    )
    assert list(refused["errors"]) == ["email"]


def test_no_address_reaches_the_log_or_a_bundle(
    services: Services, key: SigningKey, admin: Api, rita: Api
) -> None:
    ok(rita.put(CONTACT, {"email": EMAIL, "language": "en"}))
    services.projector.catch_up()
    table = services.ledger.events_table
    states = services.store.query(f"SELECT state FROM {table}")
    assert not [state for (state,) in states if EMAIL.encode() in bytes(state)]
    signed(services)
    tenant_id = ok(admin.get("/api/tenant"))["id"]
    bundle = ok(admin.get(f"/api/audit/bundles/{tenant_id}"))
    decoded = [base64.b64decode(event["state"]).decode() for event in bundle["events"]]
    assert EMAIL not in json.dumps(bundle) + "\n".join(decoded)
