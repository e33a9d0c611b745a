"""Calendars (工作日历): a tenant's working calendars, each change a new revision.

A calendar names its time zone, the ISO weekdays of its weekend, its holidays (dates with
names), its make-up working days (调休: weekend dates that are worked), maybe its working hours,
and the years its holidays are complete for (a listed holiday or make-up day covers its year
too). Every change, by hand or by an import from a holiday library, makes a new `revision`,
and every revision stays readable: an approval instance names the revision its deadline was
counted on. Working time itself is domain.working_time's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.directory import NAMESPACE
from domain.errors import NotFound, ValidationFailed
from domain.messages import Message
from domain.triggers import TriggerError, load_zone
from domain.working_time import (
    RULE_KINDS,
    SECONDS,
    WORKING_DAYS,
    WORKING_HOURS,
    WorkingCalendar,
)

CALENDAR_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")  # as a group's key
CALENDAR_KEY_RULE = Message("use 1-64 of A-Za-z0-9 _ . : - starting with a letter or digit")
MAX_CALENDAR_NAME = 100
MAX_DATES = 2000  # holidays, or make-up days, one calendar lists
MAX_PERIODS = 4  # working periods of a day
FIRST_YEAR, LAST_YEAR = 1900, 2200
KIND = "calendar"
MANUAL = {"kind": "manual"}  # a revision written by hand; an import names its library


def calendar_uuid(tenant_id: UUID, key: str) -> UUID:
    """One calendar per key in a tenant."""
    return uuid5(NAMESPACE, f"tenant/{tenant_id}/calendar/{key}")


@dataclass(frozen=True)
class CalendarFields:
    """What a create or a replace sets (a calendar's key never changes); dates as ISO text."""

    name: str
    region: str | None
    timezone: str
    weekend: list[int] = field(default_factory=lambda: [6, 7])
    holidays: list[dict[str, str]] = field(default_factory=list)  # {"date", "name"}
    workdays: list[dict[str, str]] = field(default_factory=list)  # {"date", "name"}
    working_hours: list[dict[str, str]] = field(default_factory=list)  # {"start", "end"}
    years: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "region": self.region,
            "timezone": self.timezone,
            "weekend": sorted(self.weekend),
            "holidays": sorted(self.holidays, key=lambda day: day["date"]),
            "workdays": sorted(self.workdays, key=lambda day: day["date"]),
            "working_hours": list(self.working_hours),
            "years": sorted(set(self.years)),
        }

    @classmethod
    def of(cls, kept: Mapping[str, Any]) -> CalendarFields:
        return cls(**{name: kept[name] for name in cls.__dataclass_fields__})


def _hhmm(text: str) -> time | None:
    match = re.fullmatch(r"([01][0-9]|2[0-3]):([0-5][0-9])", text)
    return time(int(match[1]), int(match[2])) if match else None


def _date(text: str) -> date | None:
    try:
        return date.fromisoformat(text) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) else None
    except ValueError:
        return None


def _dates_problems(name: str, days: Sequence[Mapping[str, str]]) -> dict[str, list[str]]:
    problems: dict[str, list[str]] = {}
    if len(days) > MAX_DATES:
        problems[name] = [Message("at most {count} dates", count=MAX_DATES)]
    seen: set[str] = set()
    for index, day in enumerate(days):
        parsed = _date(day["date"])
        if parsed is None or not FIRST_YEAR <= parsed.year <= LAST_YEAR:
            problems[f"{name}.{index}.date"] = [
                Message(
                    "use a date YYYY-MM-DD from {first} to {last}", first=FIRST_YEAR, last=LAST_YEAR
                )
            ]
        elif day["date"] in seen:
            problems[f"{name}.{index}.date"] = [
                Message("{date} is listed more than once", date=day["date"])
            ]
        seen.add(day["date"])
    return problems


def _hours_problems(periods: Sequence[Mapping[str, str]]) -> dict[str, list[str]]:
    problems: dict[str, list[str]] = {}
    if len(periods) > MAX_PERIODS:
        problems["working_hours"] = [Message("at most {count} periods", count=MAX_PERIODS)]
    previous_end: time | None = None
    for index, period in enumerate(periods):
        start, end = _hhmm(period["start"]), _hhmm(period["end"])
        for part, value in (("start", start), ("end", end)):
            if value is None:
                problems[f"working_hours.{index}.{part}"] = [Message("use HH:MM")]
        if start is None or end is None:
            continue
        if end <= start:
            problems[f"working_hours.{index}.end"] = [Message("must be after the start")]
        elif previous_end is not None and start < previous_end:
            problems[f"working_hours.{index}.start"] = [
                Message("must not be before the end of the period before it")
            ]
        previous_end = end
    return problems


def check_calendar(key: str, fields: CalendarFields) -> None:
    """The rules one calendar keeps by itself, every broken one named at once."""
    errors: dict[str, list[str]] = {}
    if not CALENDAR_KEY.fullmatch(key):
        errors["key"] = [CALENDAR_KEY_RULE]
    if not 1 <= len(fields.name) <= MAX_CALENDAR_NAME:
        errors["name"] = [Message("use 1-{count} characters", count=MAX_CALENDAR_NAME)]
    try:
        load_zone(fields.timezone)
    except TriggerError as error:
        errors["timezone"] = [error.message]
    if any(not 1 <= day <= 7 for day in fields.weekend) or len(set(fields.weekend)) != len(
        fields.weekend
    ):
        errors["weekend"] = [Message("list ISO weekdays 1 (Monday) to 7 (Sunday), each once")]
    elif len(fields.weekend) == 7:
        errors["weekend"] = [Message("at least one weekday must be worked")]
    errors.update(_dates_problems("holidays", fields.holidays))
    errors.update(_dates_problems("workdays", fields.workdays))
    both = sorted({d["date"] for d in fields.holidays} & {d["date"] for d in fields.workdays})
    if both:
        errors.setdefault("workdays", []).append(
            Message("also listed as holidays: {dates}", dates=", ".join(both))
        )
    errors.update(_hours_problems(fields.working_hours))
    if any(not FIRST_YEAR <= year <= LAST_YEAR for year in fields.years):
        errors["years"] = [
            Message("use years from {first} to {last}", first=FIRST_YEAR, last=LAST_YEAR)
        ]
    if errors:
        raise ValidationFailed(errors)


def working_calendar(kept: Mapping[str, Any]) -> WorkingCalendar:
    """The working time one revision's fields (as kept) define."""
    holidays = {date.fromisoformat(d["date"]): d["name"] for d in kept["holidays"]}
    workdays = {date.fromisoformat(d["date"]): d["name"] for d in kept["workdays"]}
    hours = tuple(
        (time.fromisoformat(period["start"]), time.fromisoformat(period["end"]))
        for period in kept["working_hours"]
    )
    covered = {*kept["years"], *(day.year for day in (*holidays, *workdays))}
    return WorkingCalendar(
        timezone=kept["timezone"],
        weekend=frozenset(kept["weekend"]),
        holidays=holidays,
        workdays=workdays,
        working_hours=hours,
        covered_years=frozenset(covered),
    )


def imported(
    fields: CalendarFields,
    years: Sequence[int],
    region: str,
    holidays: Mapping[date, str],
    workdays: Mapping[date, str],
) -> CalendarFields:
    """`fields` with the holidays and make-up days of `years` replaced by a library's, those
    years covered, and the region the library's."""
    replaced = set(years)

    def kept(days: Sequence[dict[str, str]]) -> list[dict[str, str]]:
        return [day for day in days if int(day["date"][:4]) not in replaced]

    def listed(days: Mapping[date, str]) -> list[dict[str, str]]:
        return [{"date": day.isoformat(), "name": name} for day, name in sorted(days.items())]

    return CalendarFields(
        name=fields.name,
        region=region,
        timezone=fields.timezone,
        weekend=list(fields.weekend),
        holidays=kept(fields.holidays) + listed(holidays),
        workdays=kept(fields.workdays) + listed(workdays),
        working_hours=list(fields.working_hours),
        years=sorted({*fields.years, *years}),
    )


class Calendar(Aggregate):
    """A working calendar of a tenant, and every revision it had."""

    @staticmethod
    def create_id(tenant_id: UUID, key: str) -> UUID:
        return calendar_uuid(tenant_id, key)

    class Created(Aggregate.Created):
        """Revision 1: its fields (`fields`, as CalendarFields.as_dict keeps them) and where
        they came from (`source`: by hand, or the library and version an import used)."""

        tenant_id: UUID
        key: str
        fields: dict[str, Any]
        source: dict[str, Any]
        at: datetime
        actor: str

    @event(Created)
    def __init__(
        self,
        tenant_id: UUID,
        key: str,
        fields: dict[str, Any],
        source: dict[str, Any],
        at: datetime,
        actor: str,
    ) -> None:
        self.tenant_id = tenant_id
        self.key = key
        self.created_at = at
        self.revision = 0
        self.revisions: dict[str, dict[str, Any]] = {}
        self._keep(1, fields, source, at, actor)

    @classmethod
    def create(
        cls, tenant_id: UUID, key: str, fields: CalendarFields, at: datetime, actor: str
    ) -> Calendar:
        check_calendar(key, fields)
        return cls(
            tenant_id=tenant_id,
            key=key,
            fields=fields.as_dict(),
            source=dict(MANUAL),
            at=at,
            actor=actor,
        )

    def _keep(
        self,
        revision: int,
        fields: dict[str, Any],
        source: dict[str, Any],
        at: datetime,
        actor: str,
    ) -> None:
        self.revision = revision
        self.revisions = {
            **self.revisions,
            str(revision): {
                **fields,
                "revision": revision,
                "source": source,
                "at": at,
                "by": actor,
            },
        }
        self.updated_at = at

    @property
    def current(self) -> dict[str, Any]:
        """The fields, source and time of the current revision."""
        return self.revisions[str(self.revision)]

    @property
    def fields(self) -> CalendarFields:
        return CalendarFields.of(self.current)

    def revision_of(self, revision: int) -> dict[str, Any]:
        """One revision as it was made; NotFound when the calendar never had it."""
        if str(revision) not in self.revisions:
            raise NotFound("calendar revision", f"{self.key}/{revision}")
        return self.revisions[str(revision)]

    def revise(
        self,
        fields: CalendarFields,
        source: Mapping[str, Any],
        at: datetime,
        actor: str,
        reason: str | None = None,
    ) -> None:
        """Make `fields` the next revision, `source` saying where they came from."""
        check_calendar(self.key, fields)
        self._revised(
            revision=self.revision + 1,
            fields=fields.as_dict(),
            source=dict(source),
            at=at,
            actor=actor,
            reason=reason,
        )

    class Revised(Aggregate.Event):
        """A new revision: all its fields, where they came from, and maybe why."""

        revision: int
        fields: dict[str, Any]
        source: dict[str, Any]
        at: datetime
        actor: str
        reason: str | None

    @event(Revised)
    def _revised(
        self,
        revision: int,
        fields: dict[str, Any],
        source: dict[str, Any],
        at: datetime,
        actor: str,
        reason: str | None,
    ) -> None:
        self._keep(revision, fields, source, at, actor)


MAX_RULE_SECONDS = 366 * 24 * 3600  # as a review window
MAX_RULE_DAYS = 120
MAX_RULE_HOURS = 2000


def rule_problems(rule: Mapping[str, Any], field: str) -> dict[str, list[str]]:
    """What is wrong with a deadline rule (domain.working_time's kinds), by field under
    `field`; the calendar's existence is the application's to check."""
    kind = rule.get("kind")
    bounds = {
        SECONDS: ("seconds", MAX_RULE_SECONDS),
        WORKING_DAYS: ("days", MAX_RULE_DAYS),
        WORKING_HOURS: ("hours", MAX_RULE_HOURS),
    }
    if kind not in bounds:
        return {f"{field}.kind": [Message("use one of {kinds}", kinds=", ".join(RULE_KINDS))]}
    problems: dict[str, list[str]] = {}
    name, most = bounds[kind]
    count = rule.get(name)
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= most:
        problems[f"{field}.{name}"] = [Message("use a whole number from 1 to {most}", most=most)]
    if kind != SECONDS and not CALENDAR_KEY.fullmatch(str(rule.get("calendar") or "")):
        problems[f"{field}.calendar"] = [Message("name a calendar by its key")]
    if kind == WORKING_DAYS and _hhmm(str(rule.get("cutoff") or "")) is None:
        problems[f"{field}.cutoff"] = [Message("use HH:MM, from 00:00 to 23:59")]
    extra = set(rule) - {"kind", name, *(() if kind == SECONDS else ("calendar",))}
    extra -= {"cutoff"} if kind == WORKING_DAYS else set()
    for unknown in sorted(extra):
        problems[f"{field}.{unknown}"] = [Message("not a field of a {kind} rule", kind=kind)]
    return problems


def kept_rule(rule: Mapping[str, Any]) -> dict[str, Any]:
    """A checked rule as events keep it: only its own fields."""
    kind = rule["kind"]
    if kind == SECONDS:
        return {"kind": SECONDS, "seconds": int(rule["seconds"])}
    if kind == WORKING_DAYS:
        return {
            "kind": WORKING_DAYS,
            "days": int(rule["days"]),
            "calendar": str(rule["calendar"]),
            "cutoff": str(rule["cutoff"]),
        }
    return {"kind": WORKING_HOURS, "hours": int(rule["hours"]), "calendar": str(rule["calendar"])}


def nominal_seconds(rule: Mapping[str, Any]) -> int:
    """A rule's length in plain seconds (days of 24 hours), which a definition keeps as its
    `review_window_seconds` and checks its reminders against."""
    if rule["kind"] == SECONDS:
        return int(rule["seconds"])
    if rule["kind"] == WORKING_DAYS:
        return int(rule["days"]) * 86400
    return int(rule["hours"]) * 3600
