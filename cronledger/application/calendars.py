"""Calendars (工作日历): creating and revising them, importing a region's holidays from a
maintained library, and counting deadlines on them (docs/calendars.md).

The import is the one place the holiday libraries are read: `holidays` for a region's public
holidays and, for mainland China, `chinesecalendar` for the days off around them and the
make-up working days (调休) that `holidays` does not list. What they give becomes a new
revision of the calendar naming the libraries and their versions, to be reviewed like any other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from importlib.metadata import version as installed
from typing import Any
from uuid import UUID

from prometheus_client import Counter

from cronledger.application.directory import Page
from cronledger.application.idempotency import check_key, key_record
from cronledger.application.pauses import TenantView
from cronledger.persistence.ledger import Ledger, TimelineEntry
from domain.approvals import PLAIN_CLOCK, Clock, Ruled
from domain.calendars import (
    KIND,
    Calendar,
    CalendarFields,
    calendar_uuid,
    check_calendar,
    imported,
    kept_rule,
    rule_problems,
    working_calendar,
)
from domain.directory import (
    Account,
    Definition,
    DefinitionTerms,
    Principal,
    Tenant,
    account_uuid,
    check_expected_version,
)
from domain.errors import NotFound, ValidationFailed, every_problem
from domain.idempotency import KeyedRequest
from domain.messages import Message
from domain.permissions import DIRECTORY_MANAGE
from domain.triggers import load_zone
from domain.working_time import (
    SECONDS,
    Day,
    WorkingDeadline,
    add_working_time,
    days_in,
    moved_in_working_time,
    rule_deadline,
    subtract_working_time,
    working_days_later,
    working_time_between,
)
from projections.calendars import CalendarRow, calendar_page, calendar_row
from projections.keyset import Window

MAX_DAYS_LISTED = 366  # one answer of /days covers at most this many dates
CHINA = "CN"


@dataclass(frozen=True)
class LibraryYears:
    """What the libraries say of some years of a region."""

    holidays: dict[date, str]
    workdays: dict[date, str]
    libraries: dict[str, str]  # library -> version


def library_years(region: str, years: Sequence[int]) -> LibraryYears:
    """A region's holidays (and, for mainland China, its days off and make-up working days)
    in `years`; ValidationFailed naming `region` or `years` when a library cannot say."""
    import holidays as holiday_library

    supported = holiday_library.list_supported_countries()
    if region not in supported:
        raise ValidationFailed.of(
            "region", Message("the holidays library has no region {region}", region=region)
        )
    first, last = _library_range(holiday_library, region)
    if region == CHINA:
        import chinese_calendar

        first, last = (
            max(first, min(chinese_calendar.holidays).year),
            min(last, max(chinese_calendar.holidays).year),
        )
    outside = sorted(year for year in years if not first <= year <= last)
    if outside:
        raise ValidationFailed.of(
            "years",
            Message(
                "the libraries know {region} from {first} to {last}, not {years}",
                region=region,
                first=first,
                last=last,
                years=", ".join(str(year) for year in outside),
            ),
        )
    # In the region's own language (国庆节 for CN), as its people name the days.
    language = getattr(holiday_library.country_holidays(region), "default_language", None)
    found = holiday_library.country_holidays(region, years=list(years), language=language)
    days = {day: str(name) for day, name in found.items()}
    libraries = {"holidays": installed("holidays")}
    workdays: dict[date, str] = {}
    if region == CHINA:
        days, workdays = _china(days, years)
        libraries["chinesecalendar"] = installed("chinesecalendar")
    return LibraryYears(days, workdays, libraries)


def _library_range(library: Any, region: str) -> tuple[int, int]:
    """The years the holidays library covers for `region` (its class's own range)."""
    entity = library.country_holidays(region)
    return int(getattr(entity, "start_year", 1950)), int(getattr(entity, "end_year", 2100))


def _china(days: dict[date, str], years: Sequence[int]) -> tuple[dict[date, str], dict[date, str]]:
    """Mainland China's days off (a holiday week's weekend days too) and make-up working days
    (调休上班), from chinesecalendar, named in Chinese as `holidays` names them where it does."""
    import chinese_calendar

    def chinese(name: str) -> str:
        found = {holiday.value: holiday.chinese for holiday in chinese_calendar.Holiday}
        return str(found.get(name, name))

    off = {
        day: days.get(day, chinese(name))
        for day, name in chinese_calendar.holidays.items()
        if day.year in years
    }
    worked = {
        day: f"{chinese(name)}（调休上班）"
        for day, name in chinese_calendar.workdays.items()
        if day.year in years and day.isoweekday() >= 6 and chinese_calendar.is_workday(day)
    }
    return {**days, **off}, worked


@dataclass(frozen=True)
class RuledDeadline:
    """A definition's deadline counted on a calendar, and the policy an instance keeps."""

    deadline_at: datetime
    policy: dict[str, Any]


class Calendars:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.assumed = Counter(
            "cronledger_assumed_deadlines",
            "Deadlines counted on weekdays only, their calendar not covering the year",
            registry=None,
        )

    # -- commands ----------------------------------------------------------------------------

    def create(
        self,
        actor: Principal,
        key: str,
        fields: CalendarFields,
        request: KeyedRequest | None = None,
    ) -> CalendarRow:
        """A new calendar at revision 1; a repeat of a keyed `request` stops with
        `AlreadyCreated`."""
        return self.ledger.retrying(lambda: self._create(actor, key, fields, request))

    def _create(
        self, actor: Principal, key: str, fields: CalendarFields, request: KeyedRequest | None
    ) -> CalendarRow:
        check_key(self.ledger, request)
        if self.ledger.exists(calendar_uuid(actor.tenant_id, key)):
            check_key(self.ledger, request)  # made by a request racing with the same key?
        self.check(actor.tenant_id, key, fields, new=True)
        at = self.ledger.clock()
        calendar = Calendar.create(actor.tenant_id, key, fields, at, actor.account_id)
        self.ledger.save(calendar, key_record(request, KIND, str(calendar.id), at))
        return CalendarRow.of_aggregate(calendar)

    def check(self, tenant_id: UUID, key: str, fields: CalendarFields, new: bool) -> None:
        """Every rule a calendar's fields break at once: its own, and for a `new` one, that
        the tenant has no calendar with its key."""
        errors = every_problem(lambda: check_calendar(key, fields))
        if new and self.ledger.exists(calendar_uuid(tenant_id, key)):
            errors["key"] = [Message("a calendar with key {key} exists", key=key)]
        if errors:
            raise ValidationFailed(errors)

    def replace(
        self,
        actor: Principal,
        calendar_id: str,
        fields: CalendarFields,
        version: int | None,
        reason: str | None = None,
    ) -> CalendarRow:
        """Make `fields` the calendar's next revision (by hand)."""

        def revise() -> CalendarRow:
            calendar = self.aggregate(actor.tenant_id, calendar_id)
            check_expected_version(KIND, calendar.version, version)
            calendar.revise(
                fields, {"kind": "manual"}, self.ledger.clock(), actor.account_id, reason
            )
            self.ledger.save(calendar)
            return CalendarRow.of_aggregate(calendar)

        return self.ledger.retrying(revise)

    def import_years(
        self,
        actor: Principal,
        calendar_id: str,
        region: str,
        years: Sequence[int],
        version: int | None,
        reason: str | None = None,
    ) -> CalendarRow:
        """A new revision with `years` filled from the libraries for `region`, naming them."""
        found = library_years(region, years)

        def revise() -> CalendarRow:
            calendar = self.aggregate(actor.tenant_id, calendar_id)
            check_expected_version(KIND, calendar.version, version)
            fields = imported(calendar.fields, years, region, found.holidays, found.workdays)
            source = {
                "kind": "import",
                "region": region,
                "years": sorted(set(years)),
                "libraries": found.libraries,
            }
            calendar.revise(fields, source, self.ledger.clock(), actor.account_id, reason)
            self.ledger.save(calendar)
            return CalendarRow.of_aggregate(calendar)

        return self.ledger.retrying(revise)

    def choose_default(self, actor: Principal, key: str | None) -> TenantView:
        """`Tenant.DefaultCalendarChosen`: the calendar analysts' working days come from (None:
        none); a key names one of the tenant's calendars."""
        if key is not None and not self.ledger.exists(calendar_uuid(actor.tenant_id, key)):
            raise ValidationFailed.of("calendar", Message("no calendar has key {key}", key=key))

        def choose() -> TenantView:
            tenant = self.ledger.find(Tenant, actor.tenant_id, "tenant", actor.tenant_id)
            tenant.choose_default_calendar(key, self.ledger.clock(), actor.account_id)
            self.ledger.save(tenant)
            return TenantView.of(tenant)

        return self.ledger.retrying(choose)

    # -- queries -----------------------------------------------------------------------------

    def calendar(self, tenant_id: UUID, calendar_id: str) -> CalendarRow:
        """The tenant's calendar, from its row."""
        try:
            wanted = UUID(calendar_id)
        except ValueError:
            raise NotFound(KIND, calendar_id) from None
        row = calendar_row(self.ledger.store, tenant_id, wanted)
        if row is None:
            raise NotFound(KIND, calendar_id)
        return row

    def current(self, tenant_id: UUID, calendar_id: str) -> CalendarRow:
        """The calendar as its log holds it now (what a write checks If-Match against)."""
        return CalendarRow.of_aggregate(self.aggregate(tenant_id, calendar_id))

    def calendars(self, tenant_id: UUID, window: Window) -> Page[CalendarRow]:
        found = calendar_page(self.ledger.store, tenant_id, window)
        return Page.of(found.rows, window, found)

    def revision(self, tenant_id: UUID, calendar_id: str, revision: int) -> CalendarRow:
        """One revision of the calendar as it was made (from the log)."""
        return CalendarRow.of_aggregate(self.aggregate(tenant_id, calendar_id), revision)

    def timeline(self, tenant_id: UUID, calendar_id: str) -> list[TimelineEntry]:
        return self.ledger.timeline(self.aggregate(tenant_id, calendar_id).id)

    def days(
        self, tenant_id: UUID, calendar_id: str, first: date | None, last: date | None
    ) -> list[Day]:
        """Each date from `first` to `last` (at most MAX_DAYS_LISTED), worked or not and why,
        at the calendar's current revision; without them, this month in the calendar's zone."""
        calendar = self.aggregate(tenant_id, calendar_id)
        if first is None or last is None:
            today = self.ledger.clock().astimezone(load_zone(calendar.current["timezone"])).date()
            month = today.replace(day=1)
            first = first or month
            last = last or (month + timedelta(days=32)).replace(day=1) - timedelta(days=1)
        if last < first:
            raise ValidationFailed.of("to", Message("must not be before from"))
        if (last - first).days + 1 > MAX_DAYS_LISTED:
            raise ValidationFailed.of(
                "to", Message("ask for at most {count} days at once", count=MAX_DAYS_LISTED)
            )
        return days_in(working_calendar(calendar.current), first, last)

    def preview(
        self, tenant_id: UUID, calendar_id: str, submitted_at: datetime, rule: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The deadline `rule` would set, on this calendar, for a submission at
        `submitted_at` (any instant, past or future), with each day counted and passed."""
        calendar = self.aggregate(tenant_id, calendar_id)
        checked = self._checked(rule, "rule", calendar.key)
        counted = self._count(calendar, checked, submitted_at)
        return {
            "deadline_at": counted.deadline_at,
            "calendar": calendar.key,
            "calendar_revision": calendar.revision,
            **counted.explained(),
        }

    def _checked(self, rule: Mapping[str, Any], field: str, key: str | None) -> dict[str, Any]:
        problems = rule_problems(rule, field)
        if problems:
            raise ValidationFailed(problems)
        if rule["kind"] == SECONDS:
            raise ValidationFailed.of(
                f"{field}.kind", Message("a calendar previews working_days or working_hours rules")
            )
        if key is not None and rule["calendar"] != key:
            raise ValidationFailed.of(
                f"{field}.calendar", Message("this is calendar {key}", key=key)
            )
        return kept_rule(rule)

    @staticmethod
    def _count(
        calendar: Calendar, rule: Mapping[str, Any], submitted_at: datetime
    ) -> WorkingDeadline:
        return rule_deadline(working_calendar(calendar.current), rule, submitted_at)

    # -- deadlines of definitions -----------------------------------------------------------

    def ruled_deadline(
        self,
        tenant_id: UUID,
        rule: Mapping[str, Any] | None,
        submitted_at: datetime,
        reminders: Sequence[Mapping[str, int]] = (),
        escalation: Mapping[str, Any] | None = None,
    ) -> RuledDeadline | None:
        """The deadline a working-time rule sets for a submission at `submitted_at`, on the
        calendar's current revision, with what the instance keeps of how (None for a rule in
        plain seconds). Its reminders and escalation are counted in working time too. A deadline
        counted where the calendar does not cover the year is `assumed`: counted in the metric,
        and the policy names whom the notice tells (who manages calendars)."""
        if rule is None or rule["kind"] == SECONDS:
            return None
        calendar = self.ledger.find(
            Calendar, calendar_uuid(tenant_id, rule["calendar"]), KIND, rule["calendar"]
        )
        counted = self._count(calendar, rule, submitted_at)
        kept = calendar.current
        working = working_calendar(kept)
        notices: dict[str, Any] = {
            "reminders": {
                str(r["before_seconds"]): subtract_working_time(
                    working, counted.deadline_at, r["before_seconds"]
                ).isoformat()
                for r in reminders
            }
        }
        if escalation is not None:
            due, _, _ = add_working_time(working, submitted_at, int(escalation["after_seconds"]))
            notices["escalation_due_at"] = due.isoformat()
        policy = {
            "rule": dict(rule),
            "calendar": calendar.key,
            "calendar_revision": calendar.revision,
            "region": kept["region"],
            "libraries": dict(kept["source"].get("libraries", {})),
            "inputs": {"submitted_at": submitted_at.isoformat(), "timezone": kept["timezone"]},
            **counted.explained(),
            "working_time_notices": notices,
        }
        if counted.assumed:
            self.assumed.inc()
            policy["assumed_told"] = self.managers(tenant_id)
        return RuledDeadline(counted.deadline_at, policy)

    def ruled(
        self, tenant_id: UUID, terms: Definition | DefinitionTerms, submitted_at: datetime
    ) -> Ruled | None:
        """What `ApprovalInstance.submit` takes of a definition's deadline in working time
        (None for one in plain seconds)."""
        found = self.ruled_deadline(
            tenant_id, terms.deadline_rule, submitted_at, terms.reminders, terms.escalation
        )
        return None if found is None else (found.deadline_at, found.policy)

    def extension(
        self, tenant_id: UUID, policy: Mapping[str, Any], deadline: datetime, days: int
    ) -> tuple[dict[str, Any], int]:
        """What an extension of `days` working days adds to its command: the new deadline,
        the same local time on the `days`-th working day after the current one, counted on the
        current revision of the calendar the deadline was counted on (a later revision may
        know more holidays; the deadline in force was counted on the one it names); and the
        offset it is shown at, the calendar's."""
        key = policy.get("calendar")
        if key is None:
            raise ValidationFailed.of(
                "working_days",
                Message("only a deadline counted in working time extends in working days"),
            )
        calendar = self.ledger.find(Calendar, calendar_uuid(tenant_id, key), KIND, key)
        working = working_calendar(calendar.current)
        later = working_days_later(working, deadline, days)
        local = later.deadline_at.astimezone(working.zone).utcoffset()
        counted = {
            "new_deadline_at": later.deadline_at,
            "calendar": key,
            "calendar_revision": calendar.revision,
        }
        return counted, int(local.total_seconds() // 60) if local is not None else 0

    def clock(self, tenant_id: UUID, policy: Mapping[str, Any]) -> Clock:
        """How an instance's review clock counts the time it stood: in working time on the
        current revision of the calendar its deadline was counted on, else in plain time
        (docs/approvals.md#pausing-the-clock)."""
        key = policy.get("calendar")
        if key is None:
            return PLAIN_CLOCK
        calendar = self.ledger.find(Calendar, calendar_uuid(tenant_id, key), KIND, key)
        working = working_calendar(calendar.current)
        return Clock(
            measure=lambda start, end: working_time_between(working, start, end),
            add=lambda instant, by: moved_in_working_time(working, instant, by),
        )

    def aggregate(self, tenant_id: UUID, calendar_id: str) -> Calendar:
        return self.ledger.find_in_tenant(Calendar, calendar_id, KIND, tenant_id)

    def managers(self, tenant_id: UUID) -> list[str]:
        """The tenant's active accounts that may change calendars: whom an assumed deadline
        is told (read from the log)."""
        tenant = self.ledger.find(Tenant, tenant_id, "tenant", tenant_id)
        ids = [account_uuid(tenant_id, account_id) for account_id in tenant.account_ids]
        return sorted(
            account.account_id
            for account in self.ledger.get_many(ids).values()
            if isinstance(account, Account) and DIRECTORY_MANAGE in account.permissions
        )
