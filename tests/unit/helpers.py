"""What the unit tests of runs and launches share: a run, an account and a definition."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

from domain.directory import Account, Definition
from domain.policy import RunPolicy
from domain.runs import Run
from domain.schedules import Schedule, ScheduleSettings

T0 = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
POLICY = RunPolicy(grace=timedelta(seconds=6), max_attempts=5)
LEASE = timedelta(seconds=60)
SETTINGS = ScheduleSettings(
    name="Daily",
    definition_id="d1",
    trigger={"kind": "cron", "expression": "0 9 * * *"},
    timezone="UTC",
    initiator_id="ann",
    title_template="Daily {{date}}",
    form_data={"n": 1},
)


def new_run() -> Run:
    """A manual run of a daily schedule, registered at `T0`."""
    schedule = Schedule.create(uuid4(), SETTINGS, True, T0 - timedelta(hours=1), "ops")
    return schedule.manual_run("r1", T0, "ops", POLICY)


def account(active: bool = True, roles: tuple[str, ...] = ("operator", "requester")) -> Account:
    made = Account(
        tenant_id=uuid4(), account_id="ann", name="Ann", roles=list(roles), at=T0, actor="root"
    )
    if not active:
        made.deactivate(T0, "root")
    return made


def definition(published: bool = True, external: bool = False) -> Definition:
    made = Definition(
        tenant_id=uuid4(),
        key="daily",
        name="Daily",
        external=external,
        review_window_seconds=60,
        schedule_presets=[],
        allow_self_approval=False,
        at=T0,
        actor="root",
    )
    if published:
        made.publish(at=T0, actor="root")
    return made
