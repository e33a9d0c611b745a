"""When checkpoints are signed: after so many events, after so long if the log grew, on demand;
never twice for one tree, never without a key (issue 21)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from cronledger.application.evidence import NoSigningKey
from cronledger.application.services import Services
from cronledger.persistence.signing_key import create_signing_key
from domain.directory import tenant_uuid
from domain.evidence import public_key_from_pem
from tests.support import T0, FakeClock, Opener

EVERY_EVENTS = 20
EVERY_SECONDS = 600


def opened(open_with: Opener, clock: FakeClock, key_file: Path) -> Services:
    return open_with(
        clock,
        signing_key_file=str(key_file),
        checkpoint_every_events=EVERY_EVENTS,
        checkpoint_every_seconds=EVERY_SECONDS,
    )


def grow(services: Services, *tenants: str) -> None:
    """Some events on the log (a tenant and its admin each), projected as a command's own
    catch-up does."""
    for tenant in tenants:
        services.directory.bootstrap(tenant, "root")
    services.projector.catch_up()


def test_a_checkpoint_is_signed_when_the_log_grew_enough_or_long_enough(
    open_with: Opener, tmp_path: Path
) -> None:
    clock = FakeClock(T0)
    create_signing_key(tmp_path / "key.pem")
    services = opened(open_with, clock, tmp_path / "key.pem")
    grow(services, "acme")
    first = services.evidence.checkpoint()
    assert first is not None  # the first one is always due
    assert services.evidence.checkpoint() is None  # the tree has not grown

    grow(services, "beta")
    assert services.evidence.checkpoint() is None  # grown, but less than EVERY_EVENTS, too soon
    clock.advance(EVERY_SECONDS)
    by_time = services.evidence.checkpoint()
    assert by_time is not None
    assert by_time.tree_size > first.tree_size

    grow(services, *(f"t{n}" for n in range(EVERY_EVENTS)))
    by_count = services.evidence.checkpoint()  # no time has passed
    assert by_count is not None
    assert by_count.tree_size - by_time.tree_size >= EVERY_EVENTS
    assert [c.tree_size for c in services.evidence.checkpoints()] == [
        first.tree_size,
        by_time.tree_size,
        by_count.tree_size,
    ]
    assert services.evidence.key is not None
    public = public_key_from_pem(services.evidence.key.public_pem().encode())
    for checkpoint in services.evidence.checkpoints():
        checkpoint.check_signature(public)


def test_two_processes_signing_one_tree_keep_one_checkpoint(
    open_with: Opener, tmp_path: Path
) -> None:
    create_signing_key(tmp_path / "key.pem")
    one = opened(open_with, FakeClock(T0), tmp_path / "key.pem")
    other = opened(open_with, FakeClock(T0 + timedelta(hours=1)), tmp_path / "key.pem")
    grow(one, "acme")
    signed = one.evidence.checkpoint(force=True)
    assert signed is not None
    assert other.evidence.checkpoint(force=True) is None  # that tree is signed already
    assert other.evidence.checkpoints() == [signed]


def test_without_a_key_nothing_is_signed_and_a_bundle_names_the_fix(
    open_with: Opener, tmp_path: Path
) -> None:
    services = opened(open_with, FakeClock(T0), tmp_path / "missing.pem")
    grow(services, "acme")
    assert services.evidence.key is None
    assert services.evidence.checkpoint(force=True) is None
    assert services.evidence.checkpoints() == []
    with pytest.raises(NoSigningKey, match="cronledger migrate"):
        services.evidence.bundle(tenant_uuid("acme"))
