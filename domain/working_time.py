"""Working time (工作日): which days of a calendar are worked, and deadlines counted in them.

A calendar's data is a value (`WorkingCalendar`): its zone, weekend, holidays and make-up
working days (调休), its working hours, and the years its holidays are complete for. In a year
it does not cover, only the weekend is known, so the days there are weekdays only and every
answer that used one is `assumed`. Where the data comes from (the log, a holiday library) is
the application's business; this module reads no clock and no library.

The working-days rule (docs/calendars.md#the-working-days-rule): a submission belongs to its
business day, the day it was made if that is a working day and it came before the cut-off,
else the next working day; the deadline is the cut-off time on the Nth working day after the
business day. Working time (the working-hours rule, and reminders and escalations of a
definition whose deadline is in working time) runs only in the calendar's working hours on
working days; a calendar without working hours works whole working days.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from domain.errors import ValidationFailed
from domain.messages import Message

WEEKDAY, WEEKEND, HOLIDAY, MAKEUP_WORKDAY = "WEEKDAY", "WEEKEND", "HOLIDAY", "MAKEUP_WORKDAY"
SECONDS, WORKING_DAYS, WORKING_HOURS = "seconds", "working_days", "working_hours"
RULE_KINDS = (SECONDS, WORKING_DAYS, WORKING_HOURS)
MAX_DAYS_SEARCHED = 3 * 366  # a calendar with no working day that far ahead is refused
DAY = timedelta(days=1)


@dataclass(frozen=True)
class WorkingCalendar:
    """What working time is computed from: one revision of a calendar."""

    timezone: str
    weekend: frozenset[int] = frozenset({6, 7})  # ISO weekdays off
    holidays: Mapping[date, str] = field(default_factory=dict)  # date -> its name
    workdays: Mapping[date, str] = field(default_factory=dict)  # make-up working days -> why
    working_hours: tuple[tuple[time, time], ...] = ()  # empty: the whole of each working day
    covered_years: frozenset[int] = frozenset()

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


@dataclass(frozen=True)
class Day:
    """One date of a calendar: worked or not, and why (`name`: the holiday's or make-up day's)."""

    date: date
    working: bool
    reason: str
    name: str | None = None
    assumed: bool = False  # its year is not covered: weekdays only

    def as_dict(self) -> dict[str, object]:
        return {
            "date": self.date.isoformat(),
            "working": self.working,
            "reason": self.reason,
            "name": self.name,
            "assumed": self.assumed,
        }


def day_of(calendar: WorkingCalendar, day: date) -> Day:
    """Whether `day` is worked in the calendar, and why."""
    weekend = day.isoweekday() in calendar.weekend
    if day.year not in calendar.covered_years:
        return Day(day, not weekend, WEEKEND if weekend else WEEKDAY, assumed=True)
    if day in calendar.holidays:
        return Day(day, False, HOLIDAY, calendar.holidays[day])
    if day in calendar.workdays:
        return Day(day, True, MAKEUP_WORKDAY, calendar.workdays[day])
    return Day(day, not weekend, WEEKEND if weekend else WEEKDAY)


def days_in(calendar: WorkingCalendar, first: date, last: date) -> list[Day]:
    """Every date from `first` to `last`, both included, with why each is worked or not."""
    return [day_of(calendar, first + DAY * n) for n in range((last - first).days + 1)]


def next_working_day(calendar: WorkingCalendar, after: date, skipped: list[Day]) -> Day:
    """The first working day after `after`; the days passed over are added to `skipped`."""
    for n in range(1, MAX_DAYS_SEARCHED + 1):
        found = day_of(calendar, after + DAY * n)
        if found.working:
            return found
        skipped.append(found)
    raise ValidationFailed.of(
        "calendar",
        Message("the calendar has no working day within {days} days", days=MAX_DAYS_SEARCHED),
    )


@dataclass(frozen=True)
class WorkingDeadline:
    """A deadline counted in working time, with what it was counted from."""

    deadline_at: datetime
    business_day: date | None  # the working-days rule's; None for working hours
    counted: list[Day]  # the working days counted, in order
    skipped: list[Day]  # the days passed over, and why
    assumed: bool  # some day counted or passed lay in a year the calendar does not cover

    def explained(self) -> dict[str, object]:
        """What a preview answers and an instance's deadline policy keeps of the counting."""
        return {
            "business_day": None if self.business_day is None else self.business_day.isoformat(),
            "counted_days": [day.date.isoformat() for day in self.counted],
            "skipped_days": [day.as_dict() for day in self.skipped],
            "assumed": self.assumed,
        }


def parse_cutoff(text: str) -> time:
    """An `HH:MM` cut-off as a time of day; ValidationFailed on `cutoff` otherwise."""
    try:
        hours, minutes = text.split(":")
        if len(hours) != 2 or len(minutes) != 2:
            raise ValueError(text)
        return time(int(hours), int(minutes))
    except ValueError:
        raise ValidationFailed.of("cutoff", Message("use HH:MM, from 00:00 to 23:59")) from None


def business_day(calendar: WorkingCalendar, submitted_at: datetime, cutoff: time) -> Day:
    """The working day a submission belongs to: its own day if that is worked and the
    submission came before the cut-off, else the next working day."""
    local = submitted_at.astimezone(calendar.zone)
    own = day_of(calendar, local.date())
    if own.working and local.time() < cutoff:
        return own
    return next_working_day(calendar, local.date(), [])


def working_days_deadline(
    calendar: WorkingCalendar, submitted_at: datetime, days: int, cutoff: time
) -> WorkingDeadline:
    """The cut-off time on the `days`-th working day after the submission's business day."""
    local_day = submitted_at.astimezone(calendar.zone).date()
    first = business_day(calendar, submitted_at, cutoff)
    skipped = [day_of(calendar, local_day + DAY * n) for n in range((first.date - local_day).days)]
    skipped = [day for day in skipped if not day.working]
    counted: list[Day] = []
    current = first
    for _ in range(days):
        current = next_working_day(calendar, current.date, skipped)
        counted.append(current)
    deadline = datetime.combine(current.date, cutoff, calendar.zone).astimezone(UTC)
    seen = [first, *counted, *skipped]
    return WorkingDeadline(deadline, first.date, counted, skipped, any(d.assumed for d in seen))


def working_periods(calendar: WorkingCalendar, day: Day) -> list[tuple[datetime, datetime]]:
    """The working time of one day, as UTC instants (none on a day off)."""
    if not day.working:
        return []
    zone = calendar.zone
    hours = calendar.working_hours or ((time(0), time(0)),)
    periods = []
    for start, end in hours:
        end_day = day.date + DAY if end <= start else day.date  # 00:00 ends at midnight after
        periods.append(
            (
                datetime.combine(day.date, start, zone).astimezone(UTC),
                datetime.combine(end_day, end, zone).astimezone(UTC),
            )
        )
    return periods


def _days_from(calendar: WorkingCalendar, first: date, step: int) -> Iterator[Day]:
    for n in range(MAX_DAYS_SEARCHED + 1):
        yield day_of(calendar, first + DAY * (n * step))
    raise ValidationFailed.of(
        "calendar",
        Message("the calendar has no working day within {days} days", days=MAX_DAYS_SEARCHED),
    )


def add_working_time(
    calendar: WorkingCalendar, start: datetime, seconds: int
) -> tuple[datetime, list[Day], list[Day]]:
    """The instant `seconds` of working time after `start`, with the days worked and the days
    passed over (a period ending exactly there ends it, never the next one's start)."""
    left = timedelta(seconds=seconds)
    local_day = start.astimezone(calendar.zone).date() - DAY  # a period may run past midnight
    counted: list[Day] = []
    skipped: list[Day] = []
    for day in _days_from(calendar, local_day, 1):
        periods = working_periods(calendar, day)
        if not periods and day.date > local_day:
            skipped.append(day)
        for begin, end in periods:
            if end <= start:
                continue
            begin = max(begin, start)
            if day not in counted:
                counted.append(day)
            if begin + left <= end:
                return begin + left, counted, skipped
            left -= end - begin
    raise AssertionError("unreachable: _days_from raises first")


def working_time_between(calendar: WorkingCalendar, start: datetime, end: datetime) -> timedelta:
    """How much of the calendar's working time lies between two instants (a paused clock's
    time, counted in working time)."""
    counted = timedelta(0)
    local_day = start.astimezone(calendar.zone).date() - DAY  # a period may run past midnight
    for day in _days_from(calendar, local_day, 1):
        periods = working_periods(calendar, day)
        if day.date > end.astimezone(calendar.zone).date():
            return counted
        for begin, finish in periods:
            overlap = min(finish, end) - max(begin, start)
            counted += max(overlap, timedelta(0))
    raise AssertionError("unreachable: _days_from raises first")


def moved_in_working_time(calendar: WorkingCalendar, instant: datetime, by: timedelta) -> datetime:
    """`instant` moved later by `by` of working time (none: where it is)."""
    if by <= timedelta(0):
        return instant
    return add_working_time(calendar, instant, int(by.total_seconds()))[0]


def subtract_working_time(calendar: WorkingCalendar, end: datetime, seconds: int) -> datetime:
    """The instant `seconds` of working time before `end` (a reminder before a deadline)."""
    left = timedelta(seconds=seconds)
    local_day = end.astimezone(calendar.zone).date() + DAY
    for day in _days_from(calendar, local_day, -1):
        for begin, finish in reversed(working_periods(calendar, day)):
            if begin >= end:
                continue
            finish = min(finish, end)
            if finish - left >= begin:
                return finish - left
            left -= finish - begin
    raise AssertionError("unreachable: _days_from raises first")


def working_hours_deadline(
    calendar: WorkingCalendar, submitted_at: datetime, hours: int
) -> WorkingDeadline:
    """The instant `hours` of the calendar's working hours after the submission."""
    deadline, counted, skipped = add_working_time(calendar, submitted_at, hours * 3600)
    assumed = any(day.assumed for day in [*counted, *skipped])
    return WorkingDeadline(deadline, None, counted, skipped, assumed)


def rule_deadline(
    calendar: WorkingCalendar, rule: Mapping[str, object], submitted_at: datetime
) -> WorkingDeadline:
    """The deadline a working-time rule (already checked) sets for a submission."""
    if rule["kind"] == WORKING_DAYS:
        cutoff = parse_cutoff(str(rule["cutoff"]))
        return working_days_deadline(calendar, submitted_at, int(str(rule["days"])), cutoff)
    return working_hours_deadline(calendar, submitted_at, int(str(rule["hours"])))


def working_days_later(calendar: WorkingCalendar, instant: datetime, days: int) -> WorkingDeadline:
    """The same local time as `instant` on the `days`-th working day after its date (an
    extension in working days: a deadline at the cut-off stays at the cut-off)."""
    local = instant.astimezone(calendar.zone)
    skipped: list[Day] = []
    counted: list[Day] = []
    current = local.date()
    for _ in range(days):
        found = next_working_day(calendar, current, skipped)
        counted.append(found)
        current = found.date
    later = datetime.combine(current, local.time(), calendar.zone).astimezone(UTC)
    assumed = any(day.assumed for day in [*counted, *skipped])
    return WorkingDeadline(later, None, counted, skipped, assumed)
