"""Stores seeded for benchmarks and multi-process tests: one tenant, N schedules due together."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from cronledger.application.directory import DefinitionFields
from cronledger.application.services import Services
from domain.directory import Principal
from domain.overlap import DEFAULT_OVERLAP_POLICY
from domain.schedules import Schedule, ScheduleSettings
from domain.values import FormData

SAVED_TOGETHER = 1000  # schedules per commit while seeding
EVERY_MINUTE = "* * * * *"


@dataclass(frozen=True)
class Seeded:
    """What a seeded store holds: the tenant, its root account's token, and the schedules."""

    tenant_id: UUID
    token: str
    definition_id: str
    schedule_ids: list[UUID]
    first_due_at: datetime


def daily_at(instant: datetime) -> str:
    """A cron expression (UTC) that fires once a day, at `instant`'s minute."""
    return f"{instant.minute} {instant.hour} * * *"


def seed_due_schedules(
    services: Services,
    count: int,
    first_due_at: datetime,
    expression: str | None = None,
    tenant: str = "bench",
    overlap_policy: str = DEFAULT_OVERLAP_POLICY,
) -> Seeded:
    """`count` enabled schedules in a new tenant, saved as if created a second before
    `first_due_at` (a whole UTC minute), all first due at it (an earlier creation would make
    an every-minute schedule due before it).

    The cron expression defaults to once a day at that minute; `EVERY_MINUTE` makes a sustained
    load, with `overlap_policy` `allow` (with `skip_while_open`, a cycle is skipped while the
    instance of the one before awaits review). Seeding writes events straight through the
    ledger (the API would take minutes).
    """
    if first_due_at.second or first_due_at.microsecond:
        raise ValueError("first_due_at must be a whole minute")
    directory = services.directory
    token = directory.bootstrap(tenant, "root").token
    root = directory.authenticate(token)
    assert isinstance(root, Principal)
    directory.create_account(root, "reviewer", "Reviewer", ["operator"])  # approves root's
    fields = DefinitionFields("Bench", False, 3600, [], reviewers={"roles": ["operator"]})
    definition = directory.create_definition(root, "bench", fields)
    directory.set_published(root, definition.id, True, None)
    trigger = {"kind": "cron", "expression": expression or daily_at(first_due_at)}
    settings = ScheduleSettings(
        "bench",
        definition.id,
        trigger,
        "UTC",
        "root",
        "Bench {{datetime}}",
        FormData.of({"n": 1}),
        overlap_policy=overlap_policy,
    )
    created_at = first_due_at - timedelta(seconds=1)
    ids: list[UUID] = []
    for start in range(0, count, SAVED_TOGETHER):
        batch = [
            Schedule.create(root.tenant_id, settings, True, created_at, "root")
            for _ in range(min(SAVED_TOGETHER, count - start))
        ]
        services.ledger.save(*batch)
        ids.extend(schedule.id for schedule in batch)
    return Seeded(root.tenant_id, token, definition.id, ids, first_due_at)
