"""A store release 0.10.0 wrote reads with schedules on calendars: its schedules (events and a
snapshot from before `calendar`) name none and register as before, its runs (registered before
`moved_to`) were moved by none, and a schedule saved now may name one; no stored byte moves."""

from __future__ import annotations

from uuid import UUID

from cronledger.application.cycles import Ticker
from cronledger.application.services import Services
from domain.runs import Run
from domain.schedules import Schedule
from tests.integration.test_release_0_10_0_store import (  # noqa: F401 (the fixture)
    FACTS,
    PATH,
    SCHEDULES,
    api_of,
    stored_bytes,
    upgraded,
)
from tests.support import FakeClock


def test_its_schedules_and_runs_read_without_a_calendar_and_may_be_given_one(
    upgraded: Services,  # noqa: F811
) -> None:
    before = stored_bytes(upgraded)
    acme = api_of(upgraded)
    for schedule_id in SCHEDULES.values():
        schedule = upgraded.ledger.repository.get(UUID(schedule_id))
        assert isinstance(schedule, Schedule)
        assert (schedule.settings.calendar, schedule.settings.calendar_rule) == (None, None)
        answer = acme.get(f"{PATH}/{schedule_id}").json
        assert (answer["calendar"], answer["calendar_rule"]) == (None, None)
        preview = acme.get(f"{PATH}/{schedule_id}/preview?count=2").json
        assert [fire["outcome"] for fire in preview["fires"]] == ["FIRES", "FIRES"]
    daily = SCHEDULES["daily"]
    for name in ("pending", "launched", "skipped"):
        run = upgraded.ledger.repository.get(UUID(FACTS["runs"][name]))
        assert isinstance(run, Run)
        assert (run.moved_to, run.calendar) == (None, None)
        answer = acme.get(f"{PATH}/{daily}/runs/{run.id}").json
        assert (answer["moved_to"], answer["calendar"]) == (None, None)
    clock = upgraded.ledger.clock
    assert isinstance(clock, FakeClock)
    clock.advance(120)
    assert Ticker.of(upgraded).scan().registered > 0  # as before, no calendar in the way
    created = acme.post(
        "/api/calendars", {"key": "cn", "name": "China", "timezone": "Asia/Shanghai"}
    )
    assert created.status_code == 201, created.json
    current = acme.get(f"{PATH}/{daily}").json
    saved = acme.patch(
        f"{PATH}/{daily}",
        {"calendar": "cn", "calendar_rule": "working_days_only", "version": current["version"]},
    )
    assert saved.status_code == 200, saved.json
    assert (saved.json["calendar"], saved.json["calendar_rule"]) == ("cn", "working_days_only")
    assert stored_bytes(upgraded)[: len(before)] == before
