"""A schedule's trigger in words ("every Monday to Friday at 08:00"), in the viewer's language.

Only for reading: the domain (domain/triggers.py) decides when a trigger fires. A cron rule
whose fields go beyond plain numbers, names, ranges and the common steps is called a custom
rule, and the console shows it as written beside the words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from flask_babel import gettext, lazy_gettext


def _(text: str, **values: Any) -> str:
    """Flask-Babel's gettext, typed."""
    return str(gettext(text, **values))


WEEKDAYS = (  # ISO numbering: 1 is Monday
    lazy_gettext("Monday"),
    lazy_gettext("Tuesday"),
    lazy_gettext("Wednesday"),
    lazy_gettext("Thursday"),
    lazy_gettext("Friday"),
    lazy_gettext("Saturday"),
    lazy_gettext("Sunday"),
)
MONTHS = (
    lazy_gettext("January"),
    lazy_gettext("February"),
    lazy_gettext("March"),
    lazy_gettext("April"),
    lazy_gettext("May"),
    lazy_gettext("June"),
    lazy_gettext("July"),
    lazy_gettext("August"),
    lazy_gettext("September"),
    lazy_gettext("October"),
    lazy_gettext("November"),
    lazy_gettext("December"),
)
CRON_DAYS = {"sun": 7, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
CRON_MONTHS = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
NUMBERS = re.compile(r"[0-9]+(,[0-9]+)*")
STEP = re.compile(r"(?:\*|0)/([0-9]+)")
RANGE = re.compile(r"([0-9]+)-([0-9]+)")
MAX_TIMES = 8  # more fixed times than this read better as written


def as_written(trigger: Mapping[str, Any]) -> str:
    """The trigger as the user wrote it: the cron expression, or the window-interval's JSON."""
    if trigger.get("kind") == "cron":
        return str(trigger.get("expression", ""))
    return json.dumps(trigger, ensure_ascii=False, separators=(", ", ": "))


def in_words(trigger: Mapping[str, Any]) -> str:
    if trigger.get("kind") == "window-interval":
        sentence = _window_words(trigger)
    else:
        sentence = _cron_words(str(trigger.get("expression", ""))) or _("a custom cron rule")
    return sentence[:1].upper() + sentence[1:]


def _window_words(trigger: Mapping[str, Any]) -> str:
    windows = _joined(
        _("%(start)s to %(end)s", start=window["start"], end=window["end"])
        for window in trigger.get("windows", [])
    )
    return _(
        "%(days)s, every %(minutes)s minutes from %(windows)s",
        days=_every_weekday(list(trigger.get("weekdays", []))),
        minutes=trigger.get("interval_minutes"),
        windows=windows,
    )


def _every_weekday(days: Sequence[int]) -> str:
    """ISO weekdays as "every day", "every Monday to Friday", "every Monday, Wednesday"."""
    if sorted(set(days)) == list(range(1, 8)):
        return _("every day")
    return _("every %(days)s", days=_joined(_runs_of(sorted(set(days)), WEEKDAYS)))


def _runs_of(numbers: Sequence[int], names: Sequence[Any]) -> list[str]:
    """Consecutive numbers (1-based) as "A to B" ranges of their names."""
    parts: list[str] = []
    start = previous = None
    for number in [*numbers, None]:
        if previous is not None and number == previous + 1:
            previous = number
            continue
        if start is not None and previous is not None:
            first, last = str(names[start - 1]), str(names[previous - 1])
            parts.append(first if start == previous else _range(first, last, previous - start))
        start = previous = number
    return parts


def _range(first: str, last: str, span: int) -> str:
    if span == 1:
        return _joined([first, last])
    return _("%(first)s to %(last)s", first=first, last=last)


def _joined(parts: Any) -> str:
    return _(", ").join(parts)


def _cron_words(expression: str) -> str | None:
    fields = expression.split()
    if len(fields) == 5:
        fields = ["0", *fields]
    if len(fields) != 6:
        return None
    second, minute, hour, day, month, weekday = fields
    times = _times(second, minute, hour)
    days = _days(day, weekday)
    months = _months(month)
    if times is None or days is None or months is None:
        return None
    text, repeats = times
    sentence = (
        text
        if repeats and days == _("every day")
        else _("%(days)s %(times)s", days=days, times=text)
    )
    return _("%(rule)s, in %(months)s", rule=sentence, months=months) if months else sentence


def _times(second: str, minute: str, hour: str) -> tuple[str, bool] | None:
    """When in a day it fires, and whether that repeats through the day."""
    if not second.isdigit():
        return _every_few_seconds(second) if minute == hour == "*" else None
    if NUMBERS.fullmatch(minute) and NUMBERS.fullmatch(hour):
        return _fixed_times(int(second), _numbers(hour), _numbers(minute))
    if int(second) != 0:
        return None
    return _repeating(minute, hour)


def _every_few_seconds(second: str) -> tuple[str, bool] | None:
    """A six-field rule firing through every minute: every second, or every few."""
    step = STEP.fullmatch(second)
    if second == "*" or (step and int(step[1]) == 1):
        return _("every second"), True
    return (_("every %(n)s seconds", n=step[1]), True) if step else None


def _fixed_times(second: int, hours: list[int], minutes: list[int]) -> tuple[str, bool] | None:
    clock = "{:02d}:{:02d}:{:02d}" if second else "{:02d}:{:02d}"
    times = [clock.format(h, m, second) for h in hours for m in minutes]
    if len(times) > MAX_TIMES:
        return None
    return _("at %(times)s", times=_joined(times)), False


def _repeating(minute: str, hour: str) -> tuple[str, bool] | None:
    step, hours, hour_step = STEP.fullmatch(minute), RANGE.fullmatch(hour), STEP.fullmatch(hour)
    if hour == "*" and minute == "*":
        return _("every minute"), True
    if hour == "*" and step:
        return _("every %(n)s minutes", n=step[1]), True
    if hour == "*" and minute.isdigit():
        return _("every hour at minute %(minute)s", minute=minute), True
    if hour_step and minute.isdigit():
        return _("every %(n)s hours at minute %(minute)s", n=hour_step[1], minute=minute), True
    if hours and step:
        first, last = f"{int(hours[1]):02d}:00", f"{int(hours[2]):02d}:59"
        return _(
            "every %(n)s minutes from %(start)s to %(end)s", n=step[1], start=first, end=last
        ), True
    if hours and minute.isdigit():
        first = f"{int(hours[1]):02d}:{int(minute):02d}"
        last = f"{int(hours[2]):02d}:{int(minute):02d}"
        return _("every hour from %(start)s to %(end)s", start=first, end=last), True
    return None


def _days(day: str, weekday: str) -> str | None:
    """The days it fires on; None when the console cannot say."""
    any_day, any_weekday = day in ("*", "?"), weekday in ("*", "?")
    days = [] if any_day else listed_values(day, {}, 31)
    weekdays = [] if any_weekday else listed_values(weekday, CRON_DAYS, 7)
    if days is None or weekdays is None:
        return None
    in_month = _("on day %(days)s of every month", days=_joined(map(str, days))) if days else ""
    in_week = _every_weekday([7 if n == 0 else n for n in weekdays]) if weekdays else ""
    if in_month and in_week:
        return _("%(days)s or %(weekdays)s", days=in_month, weekdays=in_week)
    return in_month or in_week or _("every day")


def _months(month: str) -> str | None:
    if month in ("*", "?"):
        return ""
    numbers = listed_values(month, CRON_MONTHS, 12)
    return None if numbers is None else _joined(_runs_of(sorted(set(numbers)), MONTHS))


def listed_values(field: str, names: Mapping[str, int], highest: int) -> list[int] | None:
    """The values of a field of numbers, names and ranges; None for anything else."""
    values: list[int] = []
    for part in field.lower().split(","):
        ends = [names.get(end, int(end) if end.isdigit() else -1) for end in part.split("-")]
        if len(ends) > 2 or not all(0 <= end <= highest for end in ends):
            return None
        values.extend(range(ends[0], ends[-1] + 1))
    return values if values else None


def _numbers(field: str) -> list[int]:
    return sorted({int(part) for part in field.split(",")})
