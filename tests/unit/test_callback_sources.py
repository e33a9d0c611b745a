"""Callback sources on their own: names, generations of the secret, deletion, the time rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from cronledger.application.secrets import derived_secret
from domain.callback_sources import (
    CallbackSource,
    callback_source_uuid,
    check_source_name,
    source_actor,
    timestamp_problem,
)
from domain.errors import NotFound, ValidationFailed

AT = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
KEY = "a-test-secret-key-of-at-least-32-chars"


def registered(name: str = "esign") -> CallbackSource:
    return CallbackSource(
        tenant_id=uuid4(), name=name, description="", generation=1, at=AT, actor="root"
    )


def test_a_source_s_id_is_its_tenant_and_name() -> None:
    source = registered()
    assert source.id == callback_source_uuid(source.tenant_id, "esign")
    assert source_actor(source.id) == f"source:{source.id}"


@pytest.mark.parametrize("name", ["esign", "e-sign.v2", "E_1", "x" * 64])
def test_plain_names_are_taken(name: str) -> None:
    check_source_name(name)


@pytest.mark.parametrize("name", ["", "-esign", "e sign", "签名", "x" * 65, "a/b"])
def test_other_names_are_refused_on_the_name(name: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        check_source_name(name)
    assert list(refused.value.errors) == ["name"]


def test_each_rotation_moves_to_the_next_generation_and_its_own_secret() -> None:
    source = registered()
    first = derived_secret(KEY, "callback-source", str(source.id), source.generation)
    source.rotate_secret(AT + timedelta(hours=1), "root", "leaked")
    assert (source.generation, source.secret_created_at) == (2, AT + timedelta(hours=1))
    second = derived_secret(KEY, "callback-source", str(source.id), source.generation)
    assert first != second
    assert first.startswith("whsec_")
    events = source.collect_events()
    assert [type(e).__name__ for e in events] == ["Registered", "SecretRotated"]
    assert all(first not in repr(e) and second not in repr(e) for e in events)


def test_a_deleted_source_is_not_found_and_its_name_can_be_registered_again() -> None:
    source = registered()
    source.delete(AT, "root")
    with pytest.raises(NotFound):
        source.rotate_secret(AT, "root")
    with pytest.raises(NotFound):
        source.delete(AT, "root")
    source.register_again("again", AT, "root")
    assert (source.deleted, source.generation, source.description) == (False, 2, "again")


def test_a_live_source_s_name_cannot_be_registered_again() -> None:
    with pytest.raises(ValidationFailed) as refused:
        registered().register_again("", AT, "root")
    assert list(refused.value.errors) == ["name"]


@pytest.mark.parametrize(
    ("offset", "refused"),
    [
        (timedelta(minutes=-5, seconds=-1), "before"),
        (timedelta(minutes=-5), None),
        (timedelta(0), None),
        (timedelta(minutes=5), None),
        (timedelta(minutes=5, seconds=1), "after"),
    ],
)
def test_a_delivery_is_timely_within_five_minutes_either_way(
    offset: timedelta, refused: str | None
) -> None:
    problem = timestamp_problem(AT + offset, AT)
    assert (problem is None) == (refused is None)
    if refused is not None:
        assert problem is not None
        assert refused in problem
