"""Working time (domain/working_time.py; docs/calendars.md): days, the working-days rule, the
working-hours rule, and working time counted back from a deadline."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.errors import ValidationFailed
from domain.working_time import (
    HOLIDAY,
    MAKEUP_WORKDAY,
    WEEKDAY,
    WEEKEND,
    WorkingCalendar,
    add_working_time,
    business_day,
    day_of,
    days_in,
    parse_cutoff,
    subtract_working_time,
    working_days_deadline,
    working_hours_deadline,
)

SHANGHAI = "Asia/Shanghai"
CUTOFF = time(18, 0)
PROFILE = settings(
    derandomize=True, max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _span(first: str, last: str, name: str) -> dict[date, str]:
    start, end = date.fromisoformat(first), date.fromisoformat(last)
    return {start + timedelta(days=n): name for n in range((end - start).days + 1)}


# Mainland China's 2026 arrangement around Mid-Autumn and National Day, as chinesecalendar
# 1.11.0 and holidays 0.108 both have it.
CN_2026 = WorkingCalendar(
    timezone=SHANGHAI,
    holidays={
        **_span("2026-09-25", "2026-09-27", "Mid-Autumn Festival"),
        **_span("2026-10-01", "2026-10-07", "National Day"),
    },
    workdays={date(2026, 9, 20): "National Day", date(2026, 10, 10): "National Day"},
    covered_years=frozenset({2026}),
)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_a_cn_calendar_says_why_each_day_is_worked_or_not() -> None:
    assert day_of(CN_2026, date(2026, 9, 26)).reason == HOLIDAY
    assert day_of(CN_2026, date(2026, 9, 26)).name == "Mid-Autumn Festival"
    assert day_of(CN_2026, date(2026, 9, 20)).working  # a Sunday, a make-up working day
    assert day_of(CN_2026, date(2026, 9, 20)).reason == MAKEUP_WORKDAY
    assert day_of(CN_2026, date(2026, 10, 10)).working  # a Saturday, too
    assert day_of(CN_2026, date(2026, 10, 11)).reason == WEEKEND
    assert day_of(CN_2026, date(2026, 10, 9)).reason == WEEKDAY
    days = days_in(CN_2026, date(2026, 10, 1), date(2026, 10, 7))
    assert [day.working for day in days] == [False] * 7
    assert {day.name for day in days} == {"National Day"}


def test_three_working_days_with_an_1800_cutoff_from_a_wednesday_morning() -> None:
    found = working_days_deadline(CN_2026, at("2026-09-23T10:00:00+08:00"), 3, CUTOFF)
    assert found.deadline_at == at("2026-09-29T18:00:00+08:00")
    assert found.business_day == date(2026, 9, 23)
    assert [day.date for day in found.counted] == [
        date(2026, 9, 24),
        date(2026, 9, 28),
        date(2026, 9, 29),
    ]
    assert [day.date for day in found.skipped] == [
        date(2026, 9, 25),
        date(2026, 9, 26),
        date(2026, 9, 27),
    ]
    assert not found.assumed


def test_a_submission_after_the_cutoff_before_national_day_belongs_to_october_8() -> None:
    found = working_days_deadline(CN_2026, at("2026-09-30T19:00:00+08:00"), 3, CUTOFF)
    assert found.business_day == date(2026, 10, 8)
    assert [day.date for day in found.counted] == [
        date(2026, 10, 9),
        date(2026, 10, 10),  # the make-up Saturday
        date(2026, 10, 12),
    ]
    assert found.deadline_at == at("2026-10-12T18:00:00+08:00")
    assert date(2026, 10, 11) in [day.date for day in found.skipped]


def test_a_submission_exactly_at_the_cutoff_belongs_to_the_next_working_day() -> None:
    assert business_day(CN_2026, at("2026-09-24T18:00:00+08:00"), CUTOFF).date == date(2026, 9, 28)
    assert business_day(CN_2026, at("2026-09-24T17:59:59+08:00"), CUTOFF).date == date(2026, 9, 24)


def test_a_year_the_calendar_does_not_cover_counts_weekdays_only_and_says_so() -> None:
    found = working_days_deadline(CN_2026, at("2026-12-30T10:00:00+08:00"), 3, CUTOFF)
    assert found.assumed  # 2027-01-01 (New Year's Day) is counted as a plain Friday
    assert found.deadline_at == at("2027-01-04T18:00:00+08:00")
    assert day_of(CN_2026, date(2027, 1, 1)).assumed


def test_working_hours_count_only_the_calendars_hours() -> None:
    nine_to_six = WorkingCalendar(
        SHANGHAI,
        holidays=CN_2026.holidays,
        workdays=CN_2026.workdays,
        working_hours=((time(9), time(18)),),
        covered_years=CN_2026.covered_years,
    )
    found = working_hours_deadline(nine_to_six, at("2026-09-24T16:00:00+08:00"), 4)
    # 2 hours on Thursday, then Friday to Sunday off, 2 hours on Monday
    assert found.deadline_at == at("2026-09-28T11:00:00+08:00")
    # a period ending exactly at the deadline ends it, not the next day's start
    assert working_hours_deadline(nine_to_six, at("2026-09-24T09:00:00+08:00"), 9).deadline_at == (
        at("2026-09-24T18:00:00+08:00")
    )
    # a reminder two working hours before Monday 11:00 falls on Thursday, never on Sunday
    assert subtract_working_time(nine_to_six, at("2026-09-28T11:00:00+08:00"), 3 * 3600) == at(
        "2026-09-24T17:00:00+08:00"
    )


def test_without_working_hours_a_working_day_is_worked_whole() -> None:
    end, _, skipped = add_working_time(CN_2026, at("2026-09-24T12:00:00+08:00"), 86400)
    assert end == at("2026-09-28T12:00:00+08:00")
    assert [day.date for day in skipped] == [
        date(2026, 9, 25),
        date(2026, 9, 26),
        date(2026, 9, 27),
    ]
    assert subtract_working_time(CN_2026, at("2026-09-28T12:00:00+08:00"), 86400) == at(
        "2026-09-24T12:00:00+08:00"
    )


@pytest.mark.parametrize("text", ["18", "1800", "24:00", "9:00", "18:60", "ab:cd"])
def test_a_cutoff_is_hh_mm(text: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        parse_cutoff(text)
    assert list(refused.value.errors) == ["cutoff"]


def test_a_calendar_with_no_working_day_is_refused_not_looped() -> None:
    never = WorkingCalendar(SHANGHAI, weekend=frozenset(range(1, 8)))
    with pytest.raises(ValidationFailed):
        working_days_deadline(never, at("2026-09-23T10:00:00+08:00"), 1, CUTOFF)


INSTANTS = st.datetimes(
    min_value=datetime(2026, 8, 1), max_value=datetime(2026, 12, 20), timezones=st.just(UTC)
)


@PROFILE
@given(INSTANTS, st.integers(1, 10))
def test_a_working_days_deadline_is_the_cutoff_on_a_working_day_after_the_submission(
    submitted: datetime, days: int
) -> None:
    found = working_days_deadline(CN_2026, submitted, days, CUTOFF)
    local = found.deadline_at.astimezone(CN_2026.zone)
    assert local.time() == CUTOFF
    assert day_of(CN_2026, local.date()).working
    assert found.deadline_at > submitted
    assert len(found.counted) == days
    assert all(day.working for day in found.counted)
    assert all(not day.working for day in found.skipped)


@PROFILE
@given(INSTANTS, INSTANTS, st.integers(1, 10))
def test_a_later_submission_never_has_an_earlier_deadline(
    first: datetime, second: datetime, days: int
) -> None:
    early, late = sorted([first, second])
    assert (
        working_days_deadline(CN_2026, early, days, CUTOFF).deadline_at
        <= working_days_deadline(CN_2026, late, days, CUTOFF).deadline_at
    )


@PROFILE
@given(INSTANTS, st.integers(1, 200_000))
def test_working_time_forward_then_back_returns_to_where_working_time_began(
    start: datetime, seconds: int
) -> None:
    end, _, _ = add_working_time(CN_2026, start, seconds)
    back = subtract_working_time(CN_2026, end, seconds)
    assert start <= back < end  # later than `start` when that was off work
    assert day_of(CN_2026, back.astimezone(CN_2026.zone).date()).working or back == start
    assert add_working_time(CN_2026, back, seconds)[0] == end
