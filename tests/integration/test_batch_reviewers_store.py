"""What a worker's commit of launches reads to find reviewers, against real stores: each
tenant's directory once for them all."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar
from uuid import UUID

import pytest
from eventsourcing.domain import Aggregate

from cronledger.application.reviews import Reviewing
from cronledger.application.services import Services
from domain.approvals import Parties
from domain.reviewers import Reviewers
from tests.support import T0, FakeClock, Opener, World

A = TypeVar("A", bound=Aggregate)


@pytest.fixture
def world(open_with: Opener) -> World:
    clock = FakeClock(T0)
    return World(open_with(clock), clock)


class CountedReads:
    """The ledger's reads, counted: how many aggregates were asked of the log."""

    def __init__(self, services: Services) -> None:
        self.ledger = services.ledger
        self.asked = 0

    def get_many(self, ids: Sequence[UUID]) -> dict[UUID, Aggregate]:
        self.asked += len(ids)
        return self.ledger.get_many(ids)

    def find(self, kind: type[A], aggregate_id: UUID, label: str, key: object) -> A:
        self.asked += 1
        return self.ledger.find(kind, aggregate_id, label, key)


def test_a_batch_reads_its_tenants_directory_once_and_finds_the_same_reviewers(
    world: World,
) -> None:
    services = world.services
    tenant_id = world.root.tenant_id
    rule = Reviewers.of({"roles": ["operator"]})
    counted = CountedReads(services)
    each = Reviewing(counted, services.groups)
    applicants = [Parties(applicant, True, "root", False) for applicant in ("root", "reviewer")]
    expected = [each.candidates(tenant_id, rule, parties) for parties in applicants * 50]
    asked_each = counted.asked
    counted.asked = 0
    batch = each.read_once()
    found = [batch.candidates(tenant_id, rule, parties) for parties in applicants * 50]
    assert found == expected
    assert counted.asked * 20 < asked_each  # the tenant and its accounts once, not 100 times
