"""The misfire grace: more than 5 s late is missed, measured from the planned instant alone."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from uuid import uuid4

from cronledger.config import Settings
from domain.policy import RunPolicy
from domain.runs import PENDING, SKIPPED_MISSED
from domain.schedules import Schedule
from tests.unit.helpers import SETTINGS, T0


def test_the_grace_is_five_seconds_whatever_the_tick_interval() -> None:
    for tick_seconds in (0.5, 1.0, 60.0):
        policy = RunPolicy.from_settings(Settings(tick_seconds=tick_seconds))
        assert policy.grace == timedelta(seconds=5)


def test_the_grace_is_a_setting() -> None:
    settings = Settings.from_env({"CRONLEDGER_MISFIRE_GRACE_SECONDS": "2.5"})
    assert RunPolicy.from_settings(settings).grace == timedelta(seconds=2.5)


def statuses_registered_late_by(seconds: float, settings: Settings) -> list[str]:
    """A daily 09:00 cycle with misfire policy `skip`, registered `seconds` after it."""
    daily = replace(SETTINGS, misfire_policy="skip")
    schedule = Schedule.create(uuid4(), daily, True, T0 - timedelta(hours=1), "ops")
    runs = schedule.register_due(
        T0 + timedelta(seconds=seconds), 10, RunPolicy.from_settings(settings)
    )
    return [run.status for run in runs]


def test_more_than_five_seconds_late_is_missed_even_with_a_one_second_tick() -> None:
    settings = Settings(tick_seconds=1.0)
    assert statuses_registered_late_by(5, settings) == [PENDING]
    assert statuses_registered_late_by(5.5, settings) == [SKIPPED_MISSED]


def test_a_longer_grace_registers_a_later_cycle_normally() -> None:
    settings = Settings(misfire_grace_seconds=30.0)
    assert statuses_registered_late_by(29, settings) == [PENDING]
    assert statuses_registered_late_by(31, settings) == [SKIPPED_MISSED]
