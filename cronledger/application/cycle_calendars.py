"""The calendars schedules' cycles are placed on, read from the log at their current revision
(docs/calendars.md#schedules-on-a-calendar): a revision applies to cycles not yet registered."""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID

from cronledger.persistence.ledger import Ledger
from domain.calendar_cycles import CycleCalendar
from domain.calendars import Calendar, calendar_uuid, working_calendar
from domain.schedules import Schedule


def cycle_calendars(ledger: Ledger, schedules: Iterable[Schedule]) -> dict[UUID, CycleCalendar]:
    """By schedule id, the calendar of each of these schedules that names one (one read)."""
    named = {
        schedule.id: (calendar_uuid(schedule.tenant_id, key), schedule.settings.calendar_rule)
        for schedule in schedules
        if (key := schedule.settings.calendar)
    }
    if not named:
        return {}
    found = ledger.get_many([calendar_id for calendar_id, _ in named.values()])
    placed: dict[UUID, CycleCalendar] = {}
    for schedule_id, (calendar_id, rule) in named.items():
        calendar = found.get(calendar_id)
        if isinstance(calendar, Calendar) and rule:
            working = working_calendar(calendar.current)
            placed[schedule_id] = CycleCalendar(calendar.key, calendar.revision, rule, working)
    return placed


def cycle_calendar(ledger: Ledger, schedule: Schedule) -> CycleCalendar | None:
    """The calendar the schedule's cycles are placed on now, if it names one."""
    return cycle_calendars(ledger, [schedule]).get(schedule.id)
