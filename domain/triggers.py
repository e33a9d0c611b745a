"""Schedule triggers and their fire times (docs/time.md).

Pure: no I/O apart from reading the zone database in `load_zone`, and no clock reads.

croniter expands the cron fields into value lists; this module is the thin layer on top. A
pre-pass caps the expression's and each field's length before anything else reads them, and
keeps croniter to the contract's syntax (no L, W, #, H, R, @ macros or year field) and to
the Vixie meaning of ranges, which croniter bends (`5-5` is every minute to it, `5-1` wraps round).
Two rules are ours because croniter's differ from the contract's:

- the Vixie day rule, taken from the raw field text: the day of month and the day of week are
  OR-ed only when neither field starts with `*` nor is `?`. croniter decides from the expanded
  lists, so it OR-s `0 0 */2 * MON` (the contract: Mondays on odd days);
- the daylight-saving policy (docs/time.md): croniter fires a fixed-time job twice in a
  repeated hour.

Fire times are computed on the naive local wall clock, one matching local date at a time, and
every local time is resolved to real instants with an explicit daylight-saving policy:

- fixed-time cron (seconds, minute and hour fields all not starting with `*`): the first
  occurrence of a repeated local time, the first instant after the gap for a skipped one;
- wildcard cron: every real instant showing the local time (both passes, none in a gap);
- window-interval: the first occurrence of a repeated local time, nothing for a skipped one.

Local times that resolve to the same instant fire once; results are strictly increasing.
"""

import re
import reprlib
from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import MAXYEAR, UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import Any, cast
from zoneinfo import ZoneInfo, available_timezones

from croniter import CroniterError, croniter
from croniter.croniter import DOW_ALPHAS, M_ALPHAS

from domain.messages import Message

_SECOND = timedelta(seconds=1)
_DAY = timedelta(days=1)
_CYCLE = timedelta(days=146_097)  # 400 years: a day pattern unmatched that long never matches
_FIRST_DAY = date(1, 1, 5)
_LAST_DAY = date(MAXYEAR - 1, 12, 31)

_HH_MM = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])")
_ZONE_NAME = re.compile(r"[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*")
_WINDOW_KEYS = frozenset({"kind", "weekdays", "windows", "interval_minutes"})

# Input bounds, checked before anything parses the input (docs/security.md)
MAX_EXPRESSION_LENGTH = 256
MAX_FIELD_LENGTH = 128  # one field of a cron expression
MAX_WEEKDAYS = 7
MAX_WINDOWS = 48
MAX_ZONE_NAME_LENGTH = 64
MAX_ECHOED_NAME_LENGTH = 40  # an unknown key, as an error names it


WHOLE_MINUTES = Message("must be a whole number from 1 to 1440")


class TriggerError(ValueError):
    """Invalid trigger or timezone: `field` names the offending input, `message` says why."""

    def __init__(self, field: str, message: Message) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class CronTrigger:
    """A 5- or 6-field cron expression (seconds first); checked when built."""

    expression: str

    def __post_init__(self) -> None:
        _compile_cron(self.expression)


@dataclass(frozen=True)
class Window:
    """Local wall times, both ends included."""

    start: time
    end: time


@dataclass(frozen=True)
class WindowIntervalTrigger:
    """Every `interval_minutes` from each window start to its end, on ISO weekdays (1 = Monday)."""

    weekdays: tuple[int, ...]
    windows: tuple[Window, ...]
    interval_minutes: int

    def __post_init__(self) -> None:
        _check_weekdays(self.weekdays)
        _check_windows(self.windows)
        if not 1 <= self.interval_minutes <= 1440:
            raise TriggerError("interval_minutes", WHOLE_MINUTES)


def _check_weekdays(weekdays: tuple[int, ...]) -> None:
    if not weekdays or list(weekdays) != sorted(set(weekdays)):
        raise TriggerError("weekdays", Message("must be a non-empty, sorted list without repeats"))
    if not all(1 <= day <= 7 for day in weekdays):
        raise TriggerError("weekdays", Message("must be numbers from 1 (Monday) to 7 (Sunday)"))


def _check_windows(windows: tuple[Window, ...]) -> None:
    if not windows:
        raise TriggerError("windows", Message("must list at least one window"))
    for number, window in enumerate(windows, 1):
        if any(
            bound.second or bound.microsecond or bound.tzinfo
            for bound in (window.start, window.end)
        ):
            raise TriggerError(
                "windows",
                Message("window {number}: times must be whole local minutes", number=number),
            )
        if window.start > window.end:
            raise TriggerError(
                "windows",
                Message(
                    "window {number}: start {start} is after end {end}",
                    number=number,
                    start=f"{window.start:%H:%M}",
                    end=f"{window.end:%H:%M}",
                ),
            )


Trigger = CronTrigger | WindowIntervalTrigger


# ---------------------------------------------------------------------------------------------
# JSON shapes


def parse_trigger(data: Mapping[str, Any]) -> Trigger:
    """Build a trigger from its JSON shape (docs/time.md); TriggerError names the bad field."""
    if not isinstance(data, Mapping):
        raise TriggerError("trigger", Message("must be an object"))
    kind = data.get("kind")
    if kind == "cron":
        _reject_unknown(data, frozenset({"kind", "expression"}))
        expression = _required(data, "expression")
        if not isinstance(expression, str):
            raise TriggerError("expression", Message("must be a string"))
        _check_length(expression)  # as sent: spaces count, so a padded 10 KB text is refused
        return CronTrigger(" ".join(expression.split()))
    if kind == "window-interval":
        _reject_unknown(data, _WINDOW_KEYS)
        return WindowIntervalTrigger(
            weekdays=_parse_weekdays(_required(data, "weekdays")),
            windows=_parse_windows(_required(data, "windows")),
            interval_minutes=_parse_interval(_required(data, "interval_minutes")),
        )
    raise TriggerError("kind", Message('must be "cron" or "window-interval"'))


def trigger_to_dict(trigger: Trigger) -> dict[str, Any]:
    """The JSON shape of a trigger: the inverse of `parse_trigger`."""
    if isinstance(trigger, CronTrigger):
        return {"kind": "cron", "expression": trigger.expression}
    return {
        "kind": "window-interval",
        "weekdays": list(trigger.weekdays),
        "windows": [
            {"start": f"{window.start:%H:%M}", "end": f"{window.end:%H:%M}"}
            for window in trigger.windows
        ],
        "interval_minutes": trigger.interval_minutes,
    }


def _reject_unknown(data: Mapping[str, Any], allowed: frozenset[str]) -> None:
    for key in data:
        if key not in allowed:
            raise TriggerError(
                _cut(str(key)),
                Message("is not a field of a {kind} trigger", kind=data["kind"]),
            )


def _cut(text: str) -> str:
    """`text`, shortened so that an error never echoes a huge input."""
    if len(text) <= MAX_ECHOED_NAME_LENGTH:
        return text
    return f"{text[:MAX_ECHOED_NAME_LENGTH]}…"


def _required(data: Mapping[str, Any], key: str) -> Any:
    if key not in data:
        raise TriggerError(key, Message("is required"))
    return data[key]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_weekdays(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list | tuple) or not value or not all(map(_is_int, value)):
        raise TriggerError("weekdays", Message("must be a non-empty list of whole numbers"))
    if len(value) > MAX_WEEKDAYS:
        raise TriggerError(
            "weekdays", Message("must list at most {count} days", count=MAX_WEEKDAYS)
        )
    return tuple(sorted(set(value)))


def _parse_windows(value: Any) -> tuple[Window, ...]:
    if not isinstance(value, list | tuple) or not value:
        raise TriggerError("windows", Message("must be a non-empty list of {{start, end}} objects"))
    if len(value) > MAX_WINDOWS:
        raise TriggerError(
            "windows", Message("must list at most {count} windows", count=MAX_WINDOWS)
        )
    return tuple(_parse_window(number, item) for number, item in enumerate(value, 1))


def _parse_window(number: int, item: Any) -> Window:
    if not isinstance(item, Mapping) or set(item) != {"start", "end"}:
        raise TriggerError(
            "windows",
            Message("window {number}: must be an object with start and end", number=number),
        )
    return Window(_parse_hh_mm(number, item["start"]), _parse_hh_mm(number, item["end"]))


def _parse_hh_mm(number: int, value: Any) -> time:
    match = _HH_MM.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise TriggerError(
            "windows",
            Message(
                "window {number}: {value} is not a time as HH:MM",
                number=number,
                value=reprlib.repr(value),
            ),
        )
    return time(int(match[1]), int(match[2]))


def _parse_interval(value: Any) -> int:
    if not _is_int(value):
        raise TriggerError("interval_minutes", WHOLE_MINUTES)
    return cast(int, value)


# ---------------------------------------------------------------------------------------------
# Time zones


def load_zone(name: str) -> ZoneInfo:
    """The IANA zone called `name`; TriggerError(field="timezone") for anything else."""
    if isinstance(name, str) and len(name) > MAX_ZONE_NAME_LENGTH:
        raise TriggerError(
            "timezone",
            Message("must be at most {count} characters long", count=MAX_ZONE_NAME_LENGTH),
        )
    if not isinstance(name, str) or not _ZONE_NAME.fullmatch(name) or name == "localtime":
        raise TriggerError(
            "timezone",
            Message("{name} is not an IANA time zone name", name=reprlib.repr(name)),
        )
    if name not in _zone_names():
        raise TriggerError("timezone", Message("unknown time zone {name!r}", name=name))
    return ZoneInfo(name)


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def local_time(instant: datetime, zone: ZoneInfo) -> datetime:
    """The wall-clock reading of `instant` in `zone`, for previews."""
    return _naive_utc(instant).replace(tzinfo=UTC).astimezone(zone)


def local_or_none(instant: datetime | None, timezone: str | None) -> datetime | None:
    """`instant` in the named zone (a schedule's), with its offset; None if either is None."""
    if instant is None or timezone is None:
        return None
    return local_time(instant, load_zone(timezone))


# ---------------------------------------------------------------------------------------------
# Cron expressions: croniter expands the fields; the checks and rewrites here keep it to the
# contract's syntax and to the Vixie meaning of ranges


@dataclass(frozen=True)
class _Field:
    name: Message
    low: int
    high: int
    size: int  # how many values `*` stands for, from `low`; also the largest step
    names: Mapping[str, int]

    def every(self) -> range:
        return range(self.low, self.low + self.size)


_FIELDS = (
    _Field(Message("second"), 0, 59, 60, {}),
    _Field(Message("minute"), 0, 59, 60, {}),
    _Field(Message("hour"), 0, 23, 24, {}),
    _Field(Message("day-of-month"), 1, 31, 31, {}),
    _Field(Message("month"), 1, 12, 12, M_ALPHAS),
    _Field(Message("day-of-week"), 0, 7, 7, DOW_ALPHAS),  # 7 is Sunday again; `*` means 0-6
)
_DOM, _DOW = 3, 5
_ITEM = re.compile(r"([^-/]+)(?:-([^-/]+))?(?:/([0-9]+))?")
_WORD = re.compile(r"[a-z]+", re.I)  # one greedy run of one class: never backtracks
_L_AND_W = Message("L and W are not supported")
_H_AND_R = Message("H and R (hashed and random) are not supported")
_UNSUPPORTED_WORDS = {"l": _L_AND_W, "w": _L_AND_W, "lw": _L_AND_W, "h": _H_AND_R, "r": _H_AND_R}


Resolver = Callable[[datetime, ZoneInfo], tuple[datetime, ...]]


@dataclass(frozen=True)
class _Plan:
    """What a trigger fires on: matching local dates, times of day, and how to resolve them."""

    months: frozenset[int]
    doms: frozenset[int]
    dows: frozenset[int]  # 0 = Sunday .. 6 = Saturday
    day_or: bool
    times: Sequence[int]  # seconds after local midnight, ascending
    resolve: Resolver

    def matches(self, day: date) -> bool:
        dom = day.day in self.doms
        dow = day.isoweekday() % 7 in self.dows
        return (dom or dow) if self.day_or else (dom and dow)


@lru_cache(maxsize=256)
def _compile_cron(expression: str) -> _Plan:
    parts = _check_shape(expression)
    fields = _FIELDS[-len(parts) :]
    seconds, minutes, hours, doms, months, dows = _expand(
        [_prepare(field, text) for field, text in zip(fields, parts, strict=True)]
    )
    texts = parts if len(parts) == 6 else ["0", *parts]
    day_text = (texts[_DOM], texts[_DOW])
    return _Plan(
        months=frozenset(months),
        doms=frozenset(doms),
        dows=frozenset(day % 7 for day in dows),
        day_or=not any(text.startswith("*") or text == "?" for text in day_text),
        times=array("l", (h * 3600 + m * 60 + s for h in hours for m in minutes for s in seconds)),
        resolve=_wildcard if any(text.startswith("*") for text in texts[:3]) else _fixed,
    )


def _check_length(expression: str) -> None:
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise TriggerError(
            "expression",
            Message(
                "is {length} characters long; at most {count} are allowed",
                length=len(expression),
                count=MAX_EXPRESSION_LENGTH,
            ),
        )


def _check_shape(expression: str) -> list[str]:
    """The fields, once free of what the contract leaves out but croniter would accept.

    Lengths are checked first, so every later check, and croniter, reads a bounded text.
    """
    _check_length(expression)
    parts = expression.split()
    if any(part.startswith("@") for part in parts):
        raise TriggerError("expression", Message("@ macros such as @daily are not supported"))
    if len(parts) not in (5, 6):
        fields = Message(
            "needs 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds "
            "first, not {count}",
            count=len(parts),
        )
        if len(parts) == 7:
            fields = Message("{fields} (a year field is not supported)", fields=fields)
        raise TriggerError("expression", fields)
    for field, part in zip(_FIELDS[-len(parts) :], parts, strict=True):
        _check_field(field, part)
    return parts


def _check_field(field: _Field, text: str) -> None:
    """One field's length, then syntax croniter knows but the contract leaves out."""
    if len(text) > MAX_FIELD_LENGTH:
        raise TriggerError(
            "expression",
            Message(
                "the {field} field is {length} characters long; at most {count} are allowed",
                field=field.name,
                length=len(text),
                count=MAX_FIELD_LENGTH,
            ),
        )
    if "#" in text:
        raise TriggerError("expression", Message("# (nth weekday of the month) is not supported"))
    for word in _WORD.findall(text):
        message = _UNSUPPORTED_WORDS.get(word.lower())
        if message is not None:
            raise TriggerError("expression", message)


def _prepare(field: _Field, text: str) -> str:
    """The field as croniter should read it, its steps and values checked against the contract."""
    return ",".join(_prepare_item(field, item) for item in text.split(","))


def _prepare_item(field: _Field, item: str) -> str:
    """One list item, rewritten where croniter's reading differs from Vixie cron's.

    croniter reads `A-A` (also `A-A/S`) as the whole field and a backwards range as wrapping
    round: Vixie cron means just A by the one and rejects the other. croniter's `A/S` stops
    day-of-week at 6, so `1/2` would miss Sunday (7).
    """
    match = _ITEM.fullmatch(item)
    if match is None:
        return item  # croniter names the syntax error
    first, last, step = match.groups()
    if step is not None and not 1 <= int(step) <= field.size:
        raise TriggerError(
            "expression",
            Message(
                "{field} step {step} must be from 1 to {size}",
                field=field.name,
                step=int(step),
                size=field.size,
            ),
        )
    if field is _FIELDS[_DOW] and last is None and step is not None and first != "*":
        last, item = "7", f"{first}-7/{step}"  # A/S runs to the field's end: 7 for day-of-week
    low, high = _value(field, first), _value(field, last)
    if low is None or high is None or low < high:
        return item
    if low > high:
        raise TriggerError(
            "expression",
            Message(
                "{field} range {first}-{last} runs backwards",
                field=field.name,
                first=first,
                last=last,
            ),
        )
    return first


def _value(field: _Field, text: str | None) -> int | None:
    """A range end as a number, checked against the field; None for what croniter must judge."""
    if text is None or not (text.isascii() and text.isdigit()):
        return None if text is None else field.names.get(text.lower())
    number = int(text)
    if not field.low <= number <= field.high:
        raise TriggerError(
            "expression",
            Message(
                "{field} {number} is out of range {low}-{high}",
                field=field.name,
                number=number,
                low=field.low,
                high=field.high,
            ),
        )
    return number


def _expand(texts: list[str]) -> list[Sequence[int]]:
    """Each field's values, seconds first.

    croniter puts seconds last, and writes `*` for every value, alone or in a list (`*,5`). Its
    nth-weekday map stays empty: `#` and `L` are refused before.
    """
    try:
        found, _ = croniter.expand(" ".join(texts), second_at_beginning=True)
    except CroniterError as error:
        raise TriggerError(
            "expression", Message("is not valid cron: {error}", error=str(error))
        ) from None
    if len(found) == 5:
        found.append([0])
    ordered = [found[-1], *found[:-1]]
    return [
        field.every() if "*" in values else sorted(values)
        for field, values in zip(_FIELDS, ordered, strict=True)
    ]


# ---------------------------------------------------------------------------------------------
# Window-interval plans


@lru_cache(maxsize=256)
def _window_plan(trigger: WindowIntervalTrigger) -> _Plan:
    step = trigger.interval_minutes * 60
    times: set[int] = set()
    for window in trigger.windows:
        times.update(range(_seconds(window.start), _seconds(window.end) + 1, step))
    return _Plan(
        months=frozenset(range(1, 13)),
        doms=frozenset(range(1, 32)),
        dows=frozenset(day % 7 for day in trigger.weekdays),
        day_or=False,
        times=array("l", sorted(times)),
        resolve=_first_or_none,
    )


def _seconds(moment: time) -> int:
    return moment.hour * 3600 + moment.minute * 60


def _plan(trigger: Trigger) -> _Plan:
    if isinstance(trigger, CronTrigger):
        return _compile_cron(trigger.expression)
    return _window_plan(trigger)


# ---------------------------------------------------------------------------------------------
# Resolving naive local times to naive UTC instants


def _offsets(local: datetime, zone: ZoneInfo) -> tuple[timedelta, timedelta]:
    """The UTC offsets of a naive local time before and after any transition around it."""
    return cast(timedelta, zone.utcoffset(local)), cast(
        timedelta, zone.utcoffset(local.replace(fold=1))
    )


def _fixed(local: datetime, zone: ZoneInfo) -> tuple[datetime, ...]:
    """First occurrence of a repeated local time; the first instant after a gap."""
    before, after = _offsets(local, zone)
    return (local - before,) if before >= after else (_gap_end(local, before, after, zone),)


def _wildcard(local: datetime, zone: ZoneInfo) -> tuple[datetime, ...]:
    """Every real instant showing the local time: both passes of a repeat, none in a gap."""
    before, after = _offsets(local, zone)
    if before == after:
        return (local - before,)
    return (local - before, local - after) if before > after else ()


def _first_or_none(local: datetime, zone: ZoneInfo) -> tuple[datetime, ...]:
    """First occurrence of a repeated local time; nothing for one in a gap."""
    before, after = _offsets(local, zone)
    return (local - before,) if before >= after else ()


def _latest(local: datetime, zone: ZoneInfo) -> datetime:
    """The last instant any resolver can give for a local time: ascends with the local time."""
    before, after = _offsets(local, zone)
    return local - after if before >= after else _gap_end(local, before, after, zone)


def _gap_end(local: datetime, before: timedelta, after: timedelta, zone: ZoneInfo) -> datetime:
    """The transition instant that skips the local time (zone transitions fall on whole seconds)."""
    low, high = local - after, local - before  # still the old offset at low, the new at high
    while high - low > _SECOND:
        middle = low + (high - low) // _SECOND // 2 * _SECOND
        if middle.replace(tzinfo=UTC).astimezone(zone).utcoffset() == before:
            low = middle
        else:
            high = middle
    return high


# ---------------------------------------------------------------------------------------------
# Fire times


def fire_times(trigger: Trigger, zone: ZoneInfo, after: datetime) -> Iterator[datetime]:
    """Fire instants strictly after `after`, ascending, as aware UTC datetimes.

    Ends when a whole Gregorian cycle (400 years) passes without a fire.
    """
    start = _naive_utc(after)
    return _strictly_after(_fires(_plan(trigger), zone, start), start)


def next_fire(trigger: Trigger, zone: ZoneInfo, after: datetime) -> datetime | None:
    return next(fire_times(trigger, zone, after), None)


@lru_cache(maxsize=4096)
def following_fire(trigger: Trigger, zone: ZoneInfo, fire: datetime) -> datetime | None:
    """`next_fire`, remembered: schedules due together mostly share their trigger and zone."""
    return next_fire(trigger, zone, fire)


def check_fires_within(trigger: Trigger, zone: ZoneInfo, now: datetime, years: int = 5) -> None:
    """Reject a trigger that does not fire within `years` years after `now`."""
    first = next_fire(trigger, zone, now)
    if first is None or first > _add_years(now.astimezone(UTC), years):
        if isinstance(trigger, CronTrigger):
            raise TriggerError(
                "expression",
                Message(
                    '"{expression}" never fires: no matching date in the next {years} years',
                    expression=trigger.expression,
                    years=years,
                ),
            )
        raise TriggerError(
            "windows",
            Message(
                "this window-interval trigger never fires: no matching date in the next "
                "{years} years",
                years=years,
            ),
        )


def _naive_utc(instant: datetime) -> datetime:
    if instant.utcoffset() is None:
        raise ValueError(f"{instant.isoformat()} has no UTC offset")
    return instant.astimezone(UTC).replace(tzinfo=None)


def _add_years(moment: datetime, years: int) -> datetime:
    year = min(moment.year + years, MAXYEAR)
    try:
        return moment.replace(year=year)
    except ValueError:  # 29 February
        return moment.replace(year=year, day=28)


def _strictly_after(instants: Iterator[datetime], last: datetime) -> Iterator[datetime]:
    """Aware UTC instants later than `last` and than each other."""
    for instant in instants:
        if instant > last:
            last = instant
            yield instant.replace(tzinfo=UTC)


def _fires(plan: _Plan, zone: ZoneInfo, after: datetime) -> Iterator[datetime]:
    """Naive-UTC instants, ascending but for repeats, from two local days before `after` on."""
    pending: deque[datetime] = deque()  # second passes of repeated local times, ascending
    searching = True
    last_hit = start = max(after.date(), _FIRST_DAY) - 2 * _DAY
    for day in _days(plan, start):
        if day - last_hit > _CYCLE:
            break
        midnight = datetime.combine(day, time())
        first = _first_relevant(plan, midnight, zone, after) if searching else 0
        searching = first == len(plan.times)
        for second in plan.times[first:]:
            found = plan.resolve(midnight + second * _SECOND, zone)
            if found:
                while pending and pending[0] < found[0]:
                    yield pending.popleft()
                yield found[0]
                pending.extend(found[1:])
                last_hit = day
    yield from pending


def _first_relevant(plan: _Plan, midnight: datetime, zone: ZoneInfo, after: datetime) -> int:
    """Index of the first time of the day that may resolve to an instant after `after`."""
    return bisect_right(
        plan.times, after, key=lambda second: _latest(midnight + second * _SECOND, zone)
    )


def _days(plan: _Plan, day: date) -> Iterator[date]:
    """Matching local dates from `day` on, until a Gregorian cycle passes without one."""
    last_match = day
    while day <= _LAST_DAY and day - last_match <= _CYCLE:
        if day.month not in plan.months:
            day = date(day.year + day.month // 12, day.month % 12 + 1, 1)
        else:
            if plan.matches(day):
                last_match = day
                yield day
            day += _DAY
