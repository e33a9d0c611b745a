"""The record of an Idempotency-Key: whose it is, what it was asked, what it created."""

from __future__ import annotations

from uuid import UUID

import pytest

from domain.idempotency import (
    CREATE_ACCOUNT,
    CREATE_SCHEDULE,
    KEY,
    IdempotencyKey,
    IdempotencyKeyReused,
    KeyedRequest,
    idempotency_key_uuid,
    request_fingerprint,
)
from tests.support import T0

TENANT = UUID("8d6b1a0e-3f1c-4e2a-9b7d-5c4e3f2a1b0c")
OTHER_TENANT = UUID("1f2e3d4c-5b6a-4978-8695-a4b3c2d1e0f9")


def request(fingerprint: str = "f", key: str = "k-1", actor: str = "ann") -> KeyedRequest:
    return KeyedRequest(TENANT, actor, CREATE_SCHEDULE, key, fingerprint)


def test_a_record_is_one_per_tenant_account_operation_and_key() -> None:
    ids = {
        idempotency_key_uuid(TENANT, "ann", CREATE_SCHEDULE, "k"),
        idempotency_key_uuid(OTHER_TENANT, "ann", CREATE_SCHEDULE, "k"),
        idempotency_key_uuid(TENANT, "bob", CREATE_SCHEDULE, "k"),
        idempotency_key_uuid(TENANT, "ann", CREATE_ACCOUNT, "k"),
        idempotency_key_uuid(TENANT, "ann", CREATE_SCHEDULE, "k2"),
    }
    assert len(ids) == 5
    assert idempotency_key_uuid(TENANT, "ann", CREATE_SCHEDULE, "k") == request(key="k").record_id
    assert IdempotencyKey.create_id(TENANT, "ann", CREATE_SCHEDULE, "k-1") == request().record_id


def test_the_fingerprint_ignores_key_order_but_not_values_or_the_path() -> None:
    body = {"name": "Daily", "trigger": {"kind": "cron", "expression": "0 9 * * *"}}
    reordered = {"trigger": {"expression": "0 9 * * *", "kind": "cron"}, "name": "Daily"}
    assert request_fingerprint({}, body) == request_fingerprint({}, reordered)
    assert request_fingerprint({}, body) != request_fingerprint({}, {**body, "name": "Nightly"})
    assert request_fingerprint({"account_id": "ann"}, {}) != request_fingerprint(
        {"account_id": "bob"}, {}
    )
    assert request_fingerprint({}, {"enabled": False}) != request_fingerprint({}, {})


def test_a_recorded_key_remembers_the_request_and_the_resource() -> None:
    record = request("abc").recorded("schedule", "6f1c", T0)
    assert record.id == request().record_id
    assert (record.tenant_id, record.actor, record.operation, record.key) == (
        TENANT,
        "ann",
        CREATE_SCHEDULE,
        "k-1",
    )
    assert (record.fingerprint, record.resource_kind, record.resource_id, record.at) == (
        "abc",
        "schedule",
        "6f1c",
        T0,
    )
    [event] = record.collect_events()
    assert type(event).__qualname__ == "IdempotencyKey.Recorded"


def test_a_repeat_must_ask_what_the_first_request_asked() -> None:
    record = request("abc").recorded("schedule", "6f1c", T0)
    record.check_repeat(request("abc"))
    with pytest.raises(IdempotencyKeyReused) as reused:
        record.check_repeat(request("xyz"))
    assert reused.value.code == "IDEMPOTENCY_KEY_REUSED"
    assert "k-1" in reused.value.message


@pytest.mark.parametrize("key", ["a", "~" * 128, "2026-10-01/ops:1", "550e8400-e29b-41d4"])
def test_keys_are_visible_ascii(key: str) -> None:
    assert KEY.fullmatch(key)


@pytest.mark.parametrize("key", ["", "k" * 129, "two words", "tab\t", "caf\u00e9", "line\n"])
def test_other_keys_are_refused(key: str) -> None:
    assert not KEY.fullmatch(key)
