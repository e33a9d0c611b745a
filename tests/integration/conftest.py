"""Fixtures of the integration tests: a store after a busy day of work, an upgraded store."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from cronledger.application.cycles import Ticker
from cronledger.application.directory import DefinitionFields
from cronledger.application.groups import GroupFields
from cronledger.application.launches import Worker
from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from domain.approvals import Command, Submission
from domain.calendars import CalendarFields
from domain.directory import Principal
from domain.permissions import ROLES
from domain.webhooks import SubscriptionFields
from tests.release_stores import WORKING, facts, store_written_by
from tests.support import T0, FakeClock, Opener, World


@pytest.fixture
def upgraded(store_url: str, tmp_path: Path) -> Iterator[Services]:
    """Today's release on the store release 0.1.0 wrote in use, at that store's last instant."""
    clock = FakeClock(datetime.fromisoformat(facts(WORKING)["clock"]))
    url = store_written_by(WORKING, store_url, tmp_path, clock)
    services = open_services(Settings(database_url=url), clock)
    services.projector.catch_up()  # as its projections loop does (a log copied in is not yet)
    yield services
    services.close()


@pytest.fixture
def busy(open_with: Opener) -> World:
    """A tenant after a day of work: cycles, launches, a failure, decisions, an expiry."""
    clock = FakeClock(T0)
    key = "busy-day-secret-key-of-32-characters"  # derives the signing secrets
    local_hooks = {"webhook_allow_private": True, "webhook_allow_http": True}
    world = World(
        open_with(clock, retry_base_seconds=1, max_attempts=2, secret_key=key, **local_hooks),
        clock,
    )
    services = world.services
    schedule = services.schedules.schedule(world.root.tenant_id, world.schedule)
    body = {"trigger": {"kind": "cron", "expression": "*/10 * * * *"}, "enabled": True}
    settings = services.schedules.settings_from({**_settings_of(schedule), **body})
    clock.advance(60)
    services.schedules.update(world.root, world.schedule, settings, True, schedule.revision)
    for _ in range(6):
        clock.advance(600)
        Ticker.of(services).scan()
        Worker.of(services).drain()
    services.pauses.pause_tick("system:cli:ops", "store failover")  # and its resume, at once
    services.pauses.resume_tick("system:cli:ops", "failover done")
    services.pauses.pause_tenant(world.root, "backend down")
    services.pauses.resume_tenant(world.root, "backend back")
    services.callback_sources.create(world.root, "esign", "the e-signature system")
    holiday = [{"date": "2026-10-01", "name": "National Day"}]
    office = CalendarFields(
        "Shanghai office", "CN", "Asia/Shanghai", holidays=holiday, years=[2026]
    )
    services.calendars.create(world.root, "cn", office)
    services.calendars.choose_default(world.root, "cn")
    root = world.root.account_id
    services.groups.create(world.root, "finance", GroupFields("财务部", [root], root, None))
    world.run_now("manual-1")
    world.set_ann_active(False)
    for _ in range(3):
        Worker.of(services).drain()
        clock.advance(2)
    world.set_ann_active(True)
    instances = world.instances()
    services.approvals.command(
        world.root, str(instances[0].id), Command("approve", "a1", {"material_version": 1})
    )
    clock.advance(3600)
    services.approvals.sweep()
    globex = services.directory.authenticate(services.directory.bootstrap("globex", "g").token)
    assert globex is not None
    _reviewed(services, world)
    _countersigned(services, world)
    services.pauses.pause_tenant(globex, "a tenant paused for the night")
    hook = SubscriptionFields("http://127.0.0.1:9/hook", ["ping"], "on call", True)
    services.webhooks.ping(world.root, services.webhooks.create(world.root, hook).webhook.id)
    _checked_once(services, world)
    services.projector.catch_up()
    return world


def _checked_once(services: Services, world: World) -> None:
    """A schedule that runs a built-in job, run once: a job's run with its result."""
    fields = {"name": "自检", "trigger": {"kind": "cron", "expression": "0 3 * * *"}}
    job = services.schedules.settings_from({**fields, "target": {"kind": "system.health_check"}})
    made = services.schedules.create(world.root, job, False)
    services.schedules.run_now(world.root, made.id, "check-1")
    Worker.of(services).drain()


def _settings_of(schedule: Any) -> dict[str, Any]:
    settings = schedule.settings
    return {
        "name": settings.name,
        "definition_id": settings.definition_id,
        "trigger": settings.trigger,
        "timezone": settings.timezone,
        "initiator_id": settings.initiator_id,
        "title_template": settings.title_template,
        "form_data": settings.form_data,
        "overlap_policy": settings.overlap_policy,
    }


def _countersigned(services: Services, world: World) -> None:
    """An instance of a countersign level (rev and root, both needed): rev's approval counts,
    then the applicant revises the material and it lapses."""
    root = world.root
    level = {"name": "财务", "reviewers": {"accounts": ["rev", root.account_id]}}
    fields = DefinitionFields(
        "Countersigned", False, 3600, [], levels=[{**level, "approvals_required": 2}]
    )
    definition = services.directory.create_definition(root, "countersigned", fields).id
    services.directory.set_published(root, definition, True, None)
    ann = Principal(root.tenant_id, "ann", ROLES["requester"])
    submission = Submission("countersigned-1", definition, "Countersigned", {}, 1, None)
    instance, _ = services.approvals.submit(ann, submission)
    rev = Principal(root.tenant_id, "rev", ROLES["operator"])
    services.approvals.command(rev, instance.id, Command("approve", "a1", {"material_version": 1}))
    revised = {"material_version": 2, "reason": "补充合同", "form_data": None}
    services.approvals.command(ann, instance.id, Command("revise", "v1", revised))


def _reviewed(services: Services, world: World) -> None:
    """An instance for a named reviewer, who claims it: a task with its candidate."""
    root = world.root
    services.directory.create_account(root, "rev", "Rev", ["operator"])
    fields = DefinitionFields("Reviewed", False, 3600, [], reviewers={"accounts": ["rev"]})
    definition = services.directory.create_definition(root, "reviewed", fields).id
    services.directory.set_published(root, definition, True, None)
    submission = Submission("reviewed-1", definition, "Reviewed", {}, 1, None)
    instance, _ = services.approvals.submit(root, submission)
    rev = Principal(root.tenant_id, "rev", ROLES["operator"])
    services.approvals.command(rev, instance.id, Command("claim", "c1", {}))
