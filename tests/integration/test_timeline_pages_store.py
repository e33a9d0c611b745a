"""A page of an aggregate's timeline, on both stores: only its range of events is read, the
instant's page is found by halving the log, and an edit an older release saved without its
`changes` still shows them on a page that starts after the save before it."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from uuid import uuid4

from cronledger.application.services import Services
from domain.schedules import Schedule
from tests.support import stored_by_an_older_release
from tests.unit.helpers import POLICY, SETTINGS, T0

SWITCHES = 24  # with its creation: 25 events, a minute apart


def switched_schedule(services: Services) -> Schedule:
    """A schedule created at T0 and switched on and off every minute after: event N was
    accepted N - 1 minutes after T0."""
    schedule = Schedule.create(uuid4(), SETTINGS, False, T0, "ops")
    for n in range(1, SWITCHES + 1):
        schedule.switch(n % 2 == 1, T0 + timedelta(minutes=n), "ops", POLICY)
    services.ledger.save(schedule)
    return schedule


def test_a_page_holds_only_its_events_kept_within_the_pages_there_are(
    services: Services,
) -> None:
    schedule = switched_schedule(services)
    assert services.ledger.log_length(schedule.id) == 25
    third = services.audit.timeline_page(schedule.id, 3, 10)
    assert [entry.log_version for entry in third.entries] == [21, 22, 23, 24, 25]
    assert (third.number, third.pages, third.total) == (3, 3, 25)
    assert services.audit.timeline_page(schedule.id, 9, 10).number == 3
    assert services.audit.timeline_page(schedule.id, 0, 10).number == 1
    whole = services.ledger.timeline(schedule.id)
    assert services.audit.timeline_page(schedule.id, 2, 10).entries == whole[10:20]
    assert services.audit.timeline_page(uuid4(), 1, 10).total == 0


def test_the_last_event_by_an_instant_is_found_by_halving_the_log(services: Services) -> None:
    schedule = switched_schedule(services)
    for minutes, version in ((-1, 0), (0, 1), (10.5, 11), (11, 12), (24, 25), (60, 25)):
        at = T0 + timedelta(minutes=minutes)
        assert services.audit.version_at(schedule.id, at) == version, minutes


def test_an_older_edit_on_a_later_page_shows_the_changes_it_did_not_record(
    services: Services,
) -> None:
    schedule = Schedule.create(uuid4(), SETTINGS, False, T0, "ops")
    schedule.switch(True, T0, "ops", POLICY)
    schedule.edit(replace(SETTINGS, timezone="Europe/London"), True, T0, "ops", POLICY)
    created, enabled, updated = schedule.collect_events()
    services.ledger.save(created, enabled, stored_by_an_older_release(updated, "changes"))
    assert services.ledger.timeline_range(schedule.id, 2, 3)[0].data["changes"] is None
    (edit,) = services.schedules.timeline_range(schedule.id, 2, 3)
    assert edit.data["changes"] == [{"field": "timezone", "old": "UTC", "new": "Europe/London"}]
