"""Properties of the time engine (domain/triggers.py, domain/planning.py; docs/time.md).

Random cron expressions, built from small per-field choices whose meaning is written out here
independently of croniter, in zones with daylight saving (also half-hour and quarter-hour
shifts), are checked against a brute-force oracle that walks every UTC minute of a short horizon
around a real transition and applies the documented daylight-saving policy:

- fixed-time cron (minute and hour fields not starting with `*`): a local time fires at its
  first occurrence; a local time skipped by a gap fires once, at the transition instant;
- wildcard cron: every real instant showing a matching local time, both passes of a repeat.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from itertools import islice, pairwise, takewhile
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.planning import plan_due_cycles
from domain.triggers import CronTrigger, fire_times, load_zone, next_fire

PROFILE = settings(
    derandomize=True,
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
MINUTE = timedelta(minutes=1)
HORIZON = timedelta(days=3)
ZONES = (
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",  # a half-hour daylight-saving shift
    "America/St_Johns",  # a half-hour standard offset with daylight saving
    "Asia/Kathmandu",  # a quarter-hour offset, no daylight saving
    "UTC",
)

# Each field: (text, the values it stands for), the values written out by hand
MINUTES = (
    ("*", frozenset(range(60))),
    ("*/15", frozenset({0, 15, 30, 45})),
    ("0", frozenset({0})),
    ("30", frozenset({30})),
    ("0,30", frozenset({0, 30})),
    ("5-10", frozenset(range(5, 11))),
    ("45", frozenset({45})),
    ("59", frozenset({59})),
)
HOURS = (
    ("*", frozenset(range(24))),
    ("*/2", frozenset(range(0, 24, 2))),
    ("0", frozenset({0})),
    ("1", frozenset({1})),
    ("2", frozenset({2})),
    ("3", frozenset({3})),
    ("1-3", frozenset({1, 2, 3})),
    ("2,14", frozenset({2, 14})),
)
DAYS_OF_MONTH = (
    ("*", frozenset(range(1, 32))),
    ("1-15", frozenset(range(1, 16))),
    ("*/2", frozenset(range(1, 32, 2))),
    ("5,6,7,8", frozenset({5, 6, 7, 8})),
    ("1,2,3,4,25,26,27,28,29,30,31", frozenset({1, 2, 3, 4, 25, 26, 27, 28, 29, 30, 31})),
)
MONTHS = (
    ("*", frozenset(range(1, 13))),
    ("3,4,10,11", frozenset({3, 4, 10, 11})),
    ("MAR-APR", frozenset({3, 4})),
    ("10-11", frozenset({10, 11})),
)
DAYS_OF_WEEK = (  # 0 = Sunday
    ("*", frozenset(range(7))),
    ("SUN", frozenset({0})),
    ("7", frozenset({0})),
    ("1-5", frozenset(range(1, 6))),
    ("6,0", frozenset({6, 0})),
    ("*/3", frozenset({0, 3, 6})),
)


@dataclass(frozen=True)
class Expression:
    minute: tuple[str, frozenset[int]]
    hour: tuple[str, frozenset[int]]
    dom: tuple[str, frozenset[int]]
    month: tuple[str, frozenset[int]]
    dow: tuple[str, frozenset[int]]

    @property
    def text(self) -> str:
        return " ".join(f[0] for f in (self.minute, self.hour, self.dom, self.month, self.dow))

    @property
    def fixed(self) -> bool:
        return not (self.minute[0].startswith("*") or self.hour[0].startswith("*"))

    def matches(self, local: datetime) -> bool:
        """Does the naive local wall time match (Vixie: the day fields OR-ed unless one is *)?"""
        if local.second or local.minute not in self.minute[1] or local.hour not in self.hour[1]:
            return False
        if local.month not in self.month[1]:
            return False
        dom = local.day in self.dom[1]
        dow = local.isoweekday() % 7 in self.dow[1]
        day_or = not (self.dom[0].startswith("*") or self.dow[0].startswith("*"))
        return (dom or dow) if day_or else (dom and dow)


def _field(choices: tuple[tuple[str, frozenset[int]], ...]) -> st.SearchStrategy:
    """One of `choices`, `*` (the first) drawn about as often as all the others together."""
    return st.one_of(st.just(choices[0]), st.sampled_from(choices))


expressions = st.builds(
    Expression,
    st.sampled_from(MINUTES),
    st.sampled_from(HOURS),
    _field(DAYS_OF_MONTH),
    _field(MONTHS),
    _field(DAYS_OF_WEEK),
)


@cache
def transitions(zone_name: str) -> tuple[datetime, ...]:
    """The zone's offset changes in 2026 (UTC instants, to the minute); mid-year for none."""
    zone = ZoneInfo(zone_name)
    found: list[datetime] = []
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    offset = moment.astimezone(zone).utcoffset()
    while moment.year == 2026:
        later = moment + timedelta(hours=1)
        if later.astimezone(zone).utcoffset() != offset:
            step = moment
            while step.astimezone(zone).utcoffset() == offset:
                step += MINUTE
            found.append(step)
            offset = later.astimezone(zone).utcoffset()
        moment = later
    return tuple(found) or (datetime(2026, 7, 1, tzinfo=UTC),)


@st.composite
def windows(draw: st.DrawFn) -> tuple[str, datetime]:
    """A zone and a start instant within two days before one of its transitions."""
    zone = draw(st.sampled_from(ZONES))
    transition = draw(st.sampled_from(transitions(zone)))
    seconds_before = draw(st.integers(0, 2 * 86_400))
    return zone, transition - timedelta(seconds=seconds_before)


def oracle(
    expression: Expression, zone: ZoneInfo, after: datetime, end: datetime
) -> list[datetime]:
    """The fires in (after, end], by walking every UTC minute and reading the local clock."""
    fires: set[datetime] = set()
    moment = after.replace(second=0, microsecond=0) - MINUTE
    previous = moment.astimezone(zone)
    while moment <= end:
        moment += MINUTE
        local = moment.astimezone(zone)
        naive = local.replace(tzinfo=None, fold=0)
        if expression.matches(naive) and (not expression.fixed or local.fold == 0):
            fires.add(moment)
        skipped = previous.replace(tzinfo=None, fold=0) + MINUTE
        while skipped < naive:  # local minutes a forward gap left out
            if expression.fixed and expression.matches(skipped):
                fires.add(moment)  # the transition instant
            skipped += MINUTE
        previous = local
    return sorted(fire for fire in fires if after < fire <= end)


def fires_until(expression: str, zone: ZoneInfo, after: datetime, end: datetime) -> list[datetime]:
    trigger = CronTrigger(expression)
    return list(takewhile(lambda fire: fire <= end, fire_times(trigger, zone, after)))


@PROFILE
@given(expressions, windows())
def test_fires_agree_with_a_minute_by_minute_oracle(
    expression: Expression, window: tuple[str, datetime]
) -> None:
    zone_name, after = window
    zone = load_zone(zone_name)
    end = after + HORIZON
    fires = fires_until(expression.text, zone, after, end)
    assert fires == oracle(expression, zone, after, end), (expression.text, zone_name, after)


@PROFILE
@given(expressions, windows())
def test_fires_strictly_increase_and_resume_where_they_left_off(
    expression: Expression, window: tuple[str, datetime]
) -> None:
    zone_name, after = window
    zone, trigger = load_zone(zone_name), CronTrigger(expression.text)
    fires = list(islice(fire_times(trigger, zone, after), 40))
    assert all(fire.tzinfo is UTC for fire in fires)
    assert all(a < b for a, b in zip([after, *fires], fires, strict=False))
    for earlier, later in pairwise(fires):
        assert next_fire(trigger, zone, earlier) == later
    if fires:  # any instant between two fires resumes at the later one
        assert next_fire(trigger, zone, fires[0] - timedelta(seconds=1)) == fires[0]


@PROFILE
@given(expressions, windows(), st.sampled_from(["catch_up", "skip", "once"]))
def test_planning_registers_each_fire_once_and_none_early(
    expression: Expression, window: tuple[str, datetime], policy: str
) -> None:
    """Planning in steps over the horizon: every fire registered once (catch_up) or summarised."""
    zone_name, after = window
    zone, trigger = load_zone(zone_name), CronTrigger(expression.text)
    end = after + HORIZON
    expected = fires_until(expression.text, zone, after, end)
    following = next_fire(trigger, zone, after)
    registered: list[datetime] = []
    summarised = 0
    now = after
    while following is not None and following <= end:
        now = min(now + timedelta(hours=5), end)
        plan = plan_due_cycles(
            {"kind": "cron", "expression": expression.text},
            zone_name,
            policy,
            following,
            now,
            limit=10_000,
            grace=timedelta(seconds=5),
        )
        for cycle in plan.cycles:
            assert cycle.planned_at <= now, "registered before its planned instant"
            if cycle.status == "PENDING":
                registered.append(cycle.planned_at)
            else:
                summarised += cycle.skipped_count
        assert plan.next_fire_at is None or plan.next_fire_at > now
        following = plan.next_fire_at
    assert registered == sorted(set(registered))
    if policy == "catch_up":
        assert registered == expected
    else:
        assert set(registered) <= set(expected)
        assert len(registered) + summarised == len(expected)
