"""The schedule form's cron builder: a cron expression read back into the builder's choices
(every few minutes, hourly, daily, weekly, monthly), or `advanced` when it is none of them.

The page's script (static/schedules.js) writes the expression from the choices; without it the
builder stays hidden and the expression field is all there is. Only for the form: the domain
(domain/triggers.py) decides what an expression means.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from web.console.schedule_words import CRON_DAYS, listed_values

MODES = ("minutes", "hourly", "daily", "weekly", "monthly", "advanced")
WORKDAYS = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Builder:
    """The builder's choices; `days` are ISO weekdays (1 is Monday)."""

    mode: str = "advanced"
    every: int = 15
    minute: int = 0
    time: str = "09:00"
    days: tuple[int, ...] = field(default=WORKDAYS)
    day: int = 1


def builder_of(expression: str) -> Builder:
    """The choices that write `expression`; `advanced` (the defaults beside it) otherwise."""
    fields = expression.split()
    if len(fields) != 5 or not all(part.isascii() for part in fields):
        return Builder()
    minute, hour, day, month, weekday = fields
    if month != "*":
        return Builder()
    if (hour, day, weekday) == ("*", "*", "*"):
        return _within_the_hour(minute)
    if not (_number(minute, 59) is not None and _number(hour, 23) is not None):
        return Builder()
    at = replace(Builder(), time=f"{int(hour):02d}:{int(minute):02d}")
    if (day, weekday) == ("*", "*"):
        return replace(at, mode="daily")
    if weekday == "*" and _number(day, 31, lowest=1) is not None:
        return replace(at, mode="monthly", day=int(day))
    days = listed_values(weekday, CRON_DAYS, 7) if day == "*" else None
    if days:
        return replace(at, mode="weekly", days=tuple(sorted({n or 7 for n in days})))
    return Builder()


def _within_the_hour(minute: str) -> Builder:
    """`*/N * * * *` (every N minutes) or `M * * * *` (every hour at minute M)."""
    if minute == "*":
        return Builder("minutes", every=1)
    step = minute.removeprefix("*/")
    if step != minute and _number(step, 59, lowest=1) is not None:
        return Builder("minutes", every=int(step))
    if _number(minute, 59) is not None:
        return Builder("hourly", minute=int(minute))
    return Builder()


def _number(text: str, highest: int, lowest: int = 0) -> int | None:
    """A plain number in range, or None."""
    if not text.isdigit() or not lowest <= int(text) <= highest:
        return None
    return int(text)
