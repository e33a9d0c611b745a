"""`checkpoint.signed` webhooks on both stores: every signed checkpoint reaches a real receiver
once per subscription, signed and verifiable with the key it names, whichever tenant the auditor
is in; a notifier that reads the checkpoints again schedules nothing twice; only an account
with audit:read may choose the type."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import pytest

from cronledger.application.notifier import Notifier
from cronledger.application.services import Services
from cronledger.persistence.signing_key import create_signing_key
from domain.directory import Principal
from domain.errors import ValidationFailed
from domain.evidence import Checkpoint, key_id_of, public_key_from_pem
from domain.permissions import DIRECTORY_MANAGE
from domain.webhooks import SubscriptionFields
from projections.keyset import Window
from tests.support import FakeClock, Opener
from tests.webhook_receiver import Receiver, receiving

SECRET_KEY = "a test key that is at least thirty-two characters long"
SETTINGS = {"secret_key": SECRET_KEY, "webhook_allow_private": True, "webhook_allow_http": True}


def signing(open_with: Opener, tmp_path: Path, clock: FakeClock) -> Services:
    key = tmp_path / "signing-key.pem"
    create_signing_key(key)
    return open_with(clock, signing_key_file=str(key), **SETTINGS)


def sign(services: Services) -> Checkpoint:
    services.projector.catch_up()
    signed = services.evidence.checkpoint(force=True)
    assert signed is not None
    return signed


def told(receiver: Receiver, secret: str) -> list[dict[str, object]]:
    return [r.verified(secret) for r in receiver.received]


def test_each_signed_checkpoint_reaches_every_auditor_s_receiver_once(
    open_with: Opener, tmp_path: Path
) -> None:
    clock = FakeClock(datetime.now(UTC).replace(microsecond=0))  # receivers check timestamps
    services = signing(open_with, tmp_path, clock)
    acme = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    globex = services.directory.authenticate(services.directory.bootstrap("globex", "boss").token)
    assert acme is not None
    assert globex is not None
    with receiving() as ours, receiving() as theirs, receiving() as deaf:
        fields = SubscriptionFields(ours.url, ["checkpoint.signed"], "auditor", True)
        mine = services.webhooks.create(acme, fields)
        other = services.webhooks.create(
            globex, SubscriptionFields(theirs.url, ["checkpoint.signed", "ping"], "", True)
        )
        services.webhooks.create(acme, SubscriptionFields(deaf.url, ["run.failed"], "", True))
        first = sign(services)
        notifier = Notifier.of(services)
        notifier.work()
        clock.advance(1)
        services.pauses.pause_tenant(acme, "more events")
        second = sign(services)
        # A notifier that stopped before its cursor moved reads both again: nothing twice.
        assert notifier.schedule_checkpoints() == 2
        assert notifier.schedule_checkpoints() == 2
        notifier.work()
        clock.advance(360)  # both settled: the cursor passes them
        notifier.work()
        assert notifier.schedule_checkpoints() == 0
        received = {
            "acme": told(ours, mine.secret or ""),
            "globex": told(theirs, other.secret or ""),
        }
        assert deaf.received == []
    key = services.evidence.key
    assert key is not None
    for tenant, messages in received.items():
        assert Counter(m["type"] for m in messages) == {"checkpoint.signed": 2}, tenant
        checkpoints = [Checkpoint.from_json(m["data"]["checkpoint"]) for m in messages]  # type: ignore[index]
        assert checkpoints == [first, second]
        for message, checkpoint in zip(messages, checkpoints, strict=True):
            data = message["data"]
            assert isinstance(data, dict)
            public = public_key_from_pem(str(data["public_key"]).encode())
            assert key_id_of(public) == key.key_id == checkpoint.key_id
            checkpoint.check_signature(public)
            assert message["timestamp"] == checkpoint.signed_at
        assert {m["data"]["tenant_id"] for m in messages} == {  # type: ignore[index]
            str((acme if tenant == "acme" else globex).tenant_id)
        }
    services.projector.catch_up()
    listed = services.webhooks.deliveries(acme.tenant_id, mine.webhook.id, Window(10)).items
    assert [(d.event_type, d.status) for d in listed] == [("checkpoint.signed", "DELIVERED")] * 2


def test_a_subscription_hears_only_the_checkpoints_signed_after_it(
    open_with: Opener, tmp_path: Path
) -> None:
    clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
    services = signing(open_with, tmp_path, clock)
    root = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    assert root is not None
    before = sign(services)
    with receiving() as receiver:
        fields = SubscriptionFields(receiver.url, ["checkpoint.signed"], "", True)
        made = services.webhooks.create(root, fields)
        after = sign(services)
        Notifier.of(services).work()
        messages = told(receiver, made.secret or "")
    sizes = [m["data"]["checkpoint"]["tree_size"] for m in messages]  # type: ignore[index]
    assert sizes == [after.tree_size] != [before.tree_size]


def test_only_an_auditor_may_choose_checkpoint_messages(open_with: Opener) -> None:
    services = open_with(FakeClock(), **SETTINGS)
    root = services.directory.authenticate(services.directory.bootstrap("acme", "root").token)
    assert root is not None
    manager = Principal(root.tenant_id, "root", frozenset({DIRECTORY_MANAGE}))
    fields = SubscriptionFields("http://127.0.0.1:9/hook", ["checkpoint.signed"], "", True)
    with pytest.raises(ValidationFailed) as refused:
        services.webhooks.create(manager, fields)
    assert "audit:read" in str(refused.value.errors["event_types"])
    made = services.webhooks.create(root, fields)
    assert made.webhook.event_types == ["checkpoint.signed"]
    assert UUID(made.webhook.id)
