"""Schedule rules with no store: validation, titles and how edits move the plan."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest

from domain.errors import ValidationFailed
from domain.policy import RunPolicy
from domain.schedules import (
    Schedule,
    ScheduleSettings,
    checked_presets,
    checked_settings,
    render_title,
)

NOW = datetime(2026, 10, 1, 9, 0, 30, tzinfo=UTC)
POLICY = RunPolicy(grace=timedelta(seconds=6), max_attempts=5)
SETTINGS = ScheduleSettings(
    name="Daily check",
    definition_id="d1",
    trigger={"kind": "cron", "expression": "0 9 * * *"},
    timezone="Asia/Shanghai",
    initiator_id="ann",
    title_template="Daily check {{date}}",
    form_data={"region": "east"},
)


def schedule(enabled: bool = True, settings: ScheduleSettings = SETTINGS) -> Schedule:
    return Schedule.create(uuid4(), settings, enabled, NOW, "ops")


def errors_of(settings: ScheduleSettings) -> dict[str, list[str]]:
    with pytest.raises(ValidationFailed) as caught:
        checked_settings(settings, NOW)
    return caught.value.errors


def test_enabled_schedule_plans_its_first_fire_after_creation() -> None:
    assert schedule().next_fire_at == datetime(2026, 10, 2, 1, 0, tzinfo=UTC)
    assert schedule(enabled=False).next_fire_at is None


@pytest.mark.parametrize(
    "change",
    [
        {"name": "Renamed"},
        {"form_data": {"region": "west"}},
        {"title_template": "{{datetime}}"},
        {"initiator_id": "bob"},
        {},
    ],
)
def test_edits_that_do_not_touch_timing_keep_the_plan(change: dict[str, Any]) -> None:
    planned = schedule()
    before = planned.next_fire_at
    planned.edit(replace(SETTINGS, **change), True, NOW + timedelta(days=3), "ops", POLICY)
    assert planned.next_fire_at == before


def test_changing_the_trigger_or_timezone_replans_from_the_edit() -> None:
    planned = schedule()
    edit_at = NOW + timedelta(hours=1)
    planned.edit(
        replace(SETTINGS, trigger={"kind": "cron", "expression": "0 12 * * *"}),
        True,
        edit_at,
        "ops",
        POLICY,
    )
    assert planned.next_fire_at == datetime(2026, 10, 2, 4, 0, tzinfo=UTC)
    planned.edit(
        replace(SETTINGS, timezone="UTC", trigger={"kind": "cron", "expression": "0 12 * * *"}),
        True,
        edit_at,
        "ops",
        POLICY,
    )
    assert planned.next_fire_at == datetime(2026, 10, 1, 12, 0, tzinfo=UTC)


def test_enabling_plans_strictly_after_the_enable_time_and_disabling_clears() -> None:
    planned = schedule(enabled=False)
    enable_at = datetime(2026, 10, 9, 1, 0, tzinfo=UTC)  # exactly 09:00 in Shanghai
    planned.edit(SETTINGS, True, enable_at, "ops", POLICY)
    assert planned.next_fire_at == datetime(2026, 10, 10, 1, 0, tzinfo=UTC)
    planned.edit(SETTINGS, False, enable_at, "ops", POLICY)
    assert planned.next_fire_at is None


def test_valid_settings_are_normalised() -> None:
    spaced = replace(SETTINGS, trigger={"kind": "cron", "expression": "0  9 * * *"})
    assert checked_settings(spaced, NOW).trigger["kind"] == "cron"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"trigger": {"kind": "cron", "expression": "0 0 30 2 *"}}, "trigger.expression"),
        ({"trigger": {"kind": "cron", "expression": "0 9 * *"}}, "trigger.expression"),
        ({"trigger": {"kind": "cron", "expression": "0 9 L * *"}}, "trigger.expression"),
        ({"trigger": {"kind": "hourly"}}, "trigger.kind"),
        (
            {
                "trigger": {
                    "kind": "window-interval",
                    "weekdays": [0],
                    "windows": [{"start": "09:00", "end": "10:00"}],
                    "interval_minutes": 5,
                }
            },
            "trigger.weekdays",
        ),
        (
            {
                "trigger": {
                    "kind": "window-interval",
                    "weekdays": [1],
                    "windows": [{"start": "11:00", "end": "10:00"}],
                    "interval_minutes": 5,
                }
            },
            "trigger.windows",
        ),
        (
            {
                "trigger": {
                    "kind": "window-interval",
                    "weekdays": [1],
                    "windows": [{"start": "09:00", "end": "10:00"}],
                    "interval_minutes": 1441,
                }
            },
            "trigger.interval_minutes",
        ),
        ({"title_template": "{{ date }}"}, "title_template"),
        ({"title_template": "{{time}}"}, "title_template"),
        ({"title_template": "report {{date}"}, "title_template"),
        ({"form_data": {"blob": "x" * 70_000}}, "form_data"),
        ({"misfire_policy": "later"}, "misfire_policy"),
        ({"overlap_policy": "queue"}, "overlap_policy"),
    ],
)
def test_each_broken_rule_names_its_field(change: dict[str, Any], field: str) -> None:
    assert field in errors_of(replace(SETTINGS, **change))


def test_a_never_firing_expression_says_so() -> None:
    errors = errors_of(replace(SETTINGS, trigger={"kind": "cron", "expression": "0 0 30 2 *"}))
    assert "never fires" in errors["trigger.expression"][0]


def test_all_broken_rules_are_reported_together() -> None:
    errors = errors_of(replace(SETTINGS, timezone="Nowhere/City", title_template="{{x}}"))
    assert set(errors) == {"timezone", "title_template"}


def test_title_renders_the_planned_instant_in_the_zone_given() -> None:
    """The business zone (test_launch_revisions.py), whatever the schedule's zone."""
    planned = datetime(2026, 10, 1, 17, 30, tzinfo=UTC)  # 01:30 next day in Shanghai
    assert render_title("检查 {{date}}", "n", planned, "Asia/Shanghai") == "检查 2026-10-02"
    assert render_title("{{datetime}}", "n", planned, "Asia/Shanghai") == "2026-10-02 01:30"
    assert render_title("", "Schedule name", planned, "UTC") == "Schedule name"


def test_presets_are_checked_like_schedules() -> None:
    good = {"id": "a", "title": "A", "trigger": {"kind": "cron", "expression": "0 9 * * 1"}}
    assert checked_presets([good], "UTC", NOW) == [{**good, "form_data": {}}]
    bad = {**good, "timezone": "Atlantis/Capital"}
    never = {**good, "trigger": {"kind": "cron", "expression": "0 0 31 4 *"}}
    with pytest.raises(ValidationFailed) as caught:
        checked_presets([good, bad, never], "UTC", NOW)
    assert set(caught.value.errors) == {
        "schedule_presets.1.timezone",
        "schedule_presets.2.trigger.expression",
    }
