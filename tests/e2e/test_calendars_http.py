"""`/api/calendars` on both stores: calendars in revisions, China's 2026 imported from the
holiday libraries, the days with their reasons, and deadlines in working days on a definition
(docs/calendars.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cronledger.application.services import Services
from tests.e2e.helpers import account, assert_problem, submit, with_reviewer
from tests.support import DECIDERS, Api, FakeClock

CALENDARS = "/api/calendars"
THREE_WORKING_DAYS = {"kind": "working_days", "days": 3, "calendar": "cn", "cutoff": "18:00"}


def cn_calendar(admin: Api) -> dict[str, Any]:
    """A CN calendar with 2026 imported."""
    created = admin.post(CALENDARS, {"key": "cn", "name": "中国大陆", "timezone": "Asia/Shanghai"})
    assert created.status_code == 201, created.json
    imported = admin.post(
        f"{CALENDARS}/{created.json['id']}/import", {"region": "CN", "years": [2026]}
    )
    assert imported.status_code == 200, imported.json
    return imported.json  # type: ignore[no-any-return]


def errors_of(response: Any) -> dict[str, list[str]]:
    return assert_problem(response, 422, "VALIDATION_FAILED")["errors"]  # type: ignore[no-any-return]


def test_a_cn_calendar_imported_for_2026_knows_its_holidays_and_make_up_days(admin: Api) -> None:
    calendar = cn_calendar(admin)
    assert calendar["revision"] == 2
    assert calendar["region"] == "CN"
    assert calendar["source"]["kind"] == "import"
    assert set(calendar["source"]["libraries"]) == {"holidays", "chinesecalendar"}
    days = admin.get(f"{CALENDARS}/{calendar['id']}/days?from=2026-09-19&to=2026-10-12")
    assert days.status_code == 200, days.json
    by_date = {day["date"]: day for day in days.json["items"]}
    for date in ["2026-09-25", "2026-09-26", "2026-09-27", *[f"2026-10-0{d}" for d in range(1, 8)]]:
        assert by_date[date]["working"] is False, date
        assert by_date[date]["reason"] == "HOLIDAY", date
    assert by_date["2026-09-25"]["name"] == "中秋节"  # in the region's own language
    assert by_date["2026-10-10"]["name"] == "国庆节（调休上班）"
    for date in ("2026-09-20", "2026-10-10"):
        assert by_date[date]["working"] is True
        assert by_date[date]["reason"] == "MAKEUP_WORKDAY"
    assert by_date["2026-10-11"]["reason"] == "WEEKEND"
    # the first revision (by hand, nothing imported) stays readable
    first = admin.get(f"{CALENDARS}/{calendar['id']}/revisions/1")
    assert first.status_code == 200
    assert (first.json["revision"], first.json["holidays"], first.json["source"]) == (
        1,
        [],
        {"kind": "manual"},
    )
    assert admin.get(f"{CALENDARS}/{calendar['id']}/revisions/9").status_code == 404
    listed = admin.get(CALENDARS).json
    assert [item["key"] for item in listed["items"]] == ["cn"]


def test_the_deadline_preview_counts_working_days_after_the_business_day(admin: Api) -> None:
    calendar = cn_calendar(admin)
    preview = f"{CALENDARS}/{calendar['id']}/deadline-preview"
    morning = admin.post(
        preview, {"submitted_at": "2026-09-23T10:00:00+08:00", "rule": THREE_WORKING_DAYS}
    )
    assert morning.status_code == 200, morning.json
    assert morning.json["deadline_at"] == "2026-09-29T10:00:00Z"  # 18:00 +08:00
    assert [day["date"] for day in morning.json["skipped_days"]] == [
        "2026-09-25",
        "2026-09-26",
        "2026-09-27",
    ]
    evening = admin.post(
        preview, {"submitted_at": "2026-09-30T19:00:00+08:00", "rule": THREE_WORKING_DAYS}
    )
    assert evening.json["business_day"] == "2026-10-08"
    assert evening.json["counted_days"] == ["2026-10-09", "2026-10-10", "2026-10-12"]
    assert evening.json["deadline_at"] == "2026-10-12T10:00:00Z"  # 18:00 +08:00
    assert evening.json["assumed"] is False


def test_a_definition_in_working_days_fixes_each_instance_deadline_and_its_policy(
    services: Services, admin: Api, clock: FakeClock
) -> None:
    calendar = cn_calendar(admin)
    with_reviewer(admin)
    created = admin.post(
        "/api/definitions",
        {
            "key": "loan",
            "name": "Loan",
            "external": False,
            "deadline_rule": THREE_WORKING_DAYS,
            "reviewers": DECIDERS,
        },
    )
    assert created.status_code == 201, created.json
    assert created.json["deadline_rule"] == THREE_WORKING_DAYS
    assert created.json["review_window_seconds"] == 3 * 86400
    admin.post(f"/api/definitions/{created.json['id']}/publish")
    clock.now = datetime.fromisoformat("2026-09-30T19:00:00+08:00")
    instance = submit(admin, created.json["id"])
    assert instance.status_code == 201, instance.json
    assert instance.json["review_deadline_at"] == "2026-10-12T10:00:00Z"
    policy = instance.json["deadline_policy"]
    assert policy["rule"] == THREE_WORKING_DAYS
    assert (policy["calendar"], policy["calendar_revision"], policy["region"]) == ("cn", 2, "CN")
    assert set(policy["libraries"]) == {"holidays", "chinesecalendar"}
    assert policy["business_day"] == "2026-10-08"
    assert policy["assumed"] is False
    # a later change of the calendar (10-09 made a holiday) moves no existing deadline
    current = admin.get(f"{CALENDARS}/{calendar['id']}").json
    changed = admin.patch(
        f"{CALENDARS}/{calendar['id']}",
        {
            "holidays": [*current["holidays"], {"date": "2026-10-09", "name": "Company day"}],
            "version": current["version"],
        },
    )
    assert changed.status_code == 200, changed.json
    assert changed.json["revision"] == 3
    again = admin.get(f"/api/approvals/{instance.json['id']}").json
    assert again["review_deadline_at"] == "2026-10-12T10:00:00Z"
    assert again["deadline_policy"]["calendar_revision"] == 2


def test_a_deadline_in_a_year_the_calendar_does_not_cover_is_assumed_counted_and_told(
    services: Services, admin: Api, clock: FakeClock
) -> None:
    cn_calendar(admin)
    with_reviewer(admin)
    created = admin.post(
        "/api/definitions",
        {
            "key": "late",
            "name": "Late",
            "external": False,
            "deadline_rule": THREE_WORKING_DAYS,
            "reviewers": DECIDERS,
        },
    ).json
    admin.post(f"/api/definitions/{created['id']}/publish")
    before = services.calendars.assumed._value.get()
    clock.now = datetime.fromisoformat("2026-12-30T10:00:00+08:00")
    instance = submit(admin, created["id"]).json
    assert instance["deadline_policy"]["assumed"] is True
    assert instance["deadline_policy"]["assumed_told"] == ["root"]  # the admin
    assert services.calendars.assumed._value.get() == before + 1
    inbox = admin.get("/api/notifications").json["items"]
    assert "DEADLINE_ASSUMED" in [notice["kind"] for notice in inbox]


def test_bad_calendar_input_is_refused_by_field(admin: Api) -> None:
    refused = admin.post(
        CALENDARS,
        {
            "key": "x",
            "name": "X",
            "timezone": "Mars/Olympus",
            "weekend": [1, 2, 3, 4, 5, 6, 7],
            "holidays": [{"date": "2026-02-30"}],
            "working_hours": [{"start": "18:00", "end": "09:00"}],
        },
    )
    assert set(errors_of(refused)) >= {
        "timezone",
        "weekend",
        "holidays.0.date",
        "working_hours.0.end",
    }
    calendar = cn_calendar(admin)
    base = f"{CALENDARS}/{calendar['id']}"
    assert "region" in errors_of(admin.post(f"{base}/import", {"region": "XX", "years": [2026]}))
    assert "years" in errors_of(admin.post(f"{base}/import", {"region": "CN", "years": [2090]}))
    assert "to" in errors_of(admin.get(f"{base}/days?from=2026-01-01&to=2027-06-01"))
    assert "from" in errors_of(admin.get(f"{base}/days?from=2026-13-01&to=2026-12-01"))
    preview = f"{base}/deadline-preview"
    at = "2026-09-23T10:00:00+08:00"
    bad_cutoff = {**THREE_WORKING_DAYS, "cutoff": "6pm"}
    assert "rule.cutoff" in errors_of(admin.post(preview, {"submitted_at": at, "rule": bad_cutoff}))
    no_days = {**THREE_WORKING_DAYS, "days": 0}
    assert "rule.days" in errors_of(admin.post(preview, {"submitted_at": at, "rule": no_days}))
    unknown = admin.post(
        "/api/definitions",
        {
            "key": "x",
            "name": "X",
            "external": False,
            "deadline_rule": {**THREE_WORKING_DAYS, "calendar": "nowhere"},
            "reviewers": DECIDERS,
        },
    )
    assert "deadline_rule.calendar" in errors_of(unknown)


def working_days_definition(admin: Api, key: str, **extra: Any) -> dict[str, Any]:
    """A published definition whose deadline is three working days on `cn`."""
    with_reviewer(admin)
    body = {
        "key": key,
        "name": key.title(),
        "external": False,
        "deadline_rule": THREE_WORKING_DAYS,
        "reviewers": DECIDERS,
        **extra,
    }
    created = admin.post("/api/definitions", body)
    assert created.status_code == 201, created.json
    admin.post(f"/api/definitions/{created.json['id']}/publish")
    return created.json  # type: ignore[no-any-return]


def test_a_deadline_in_working_days_is_extended_in_working_days(
    admin: Api, clock: FakeClock
) -> None:
    calendar = cn_calendar(admin)
    definition = working_days_definition(admin, "loan")
    clock.now = datetime.fromisoformat("2026-09-23T10:00:00+08:00")
    instance = submit(admin, definition["id"]).json
    assert instance["review_deadline_at"] == "2026-09-29T10:00:00Z"  # Tuesday 18:00 +08:00
    # Friday 10-09 becomes a company holiday: revision 3, which the extension counts on
    current = admin.get(f"{CALENDARS}/{calendar['id']}").json
    holidays = [*current["holidays"], {"date": "2026-10-09", "name": "Company day"}]
    admin.patch(
        f"{CALENDARS}/{calendar['id']}", {"holidays": holidays, "version": current["version"]}
    )
    path = f"/api/approvals/{instance['id']}/extend-deadline"
    asked = {"command_id": "more", "working_days": 2, "reason": "waiting for the bank"}
    extended = admin.post(path, asked)
    assert extended.status_code == 200, extended.json
    # after Tuesday 09-29: Wednesday 09-30, then past the National Day week, 10-08, at 18:00
    again = admin.get(f"/api/approvals/{instance['id']}").json
    assert again["review_deadline_at"] == "2026-10-08T10:00:00Z"
    assert again["review_deadline_at_local"] == "2026-10-08T18:00:00+08:00"
    policy = again["deadline_policy"]
    assert (policy["source"], policy["working_days"], policy["calendar_revision"]) == (
        "extended",
        2,
        3,
    )
    assert policy["rule"] == THREE_WORKING_DAYS
    repeated = admin.post(path, asked)  # the same command again: answered as first recorded
    assert repeated.status_code == 200, repeated.json
    assert admin.get(f"/api/approvals/{instance['id']}").json["version"] == again["version"]
    once_more = admin.post(path, {**asked, "command_id": "more-2", "working_days": 1})
    assert once_more.status_code == 200, once_more.json  # on from the extended deadline
    later = admin.get(f"/api/approvals/{instance['id']}").json
    assert later["review_deadline_at"] == "2026-10-10T10:00:00Z"  # 10-09 off; make-up 10-10
    both = {**asked, "command_id": "both", "new_deadline_at": "2026-10-20T18:00:00+08:00"}
    assert "new_deadline_at" in errors_of(admin.post(path, both))


def test_only_a_deadline_in_working_time_extends_in_working_days(admin: Api) -> None:
    created = admin.post(
        "/api/definitions",
        {
            "key": "plain",
            "name": "Plain",
            "external": False,
            "review_window_seconds": 86400,
            "reviewers": DECIDERS,
        },
    ).json
    with_reviewer(admin)
    admin.post(f"/api/definitions/{created['id']}/publish")
    instance = submit(admin, created["id"]).json
    asked = {"command_id": "more", "working_days": 2, "reason": "waiting"}
    refused = admin.post(f"/api/approvals/{instance['id']}/extend-deadline", asked)
    assert "working_days" in errors_of(refused)


def test_reminders_of_a_deadline_in_working_days_fall_on_working_time(
    services: Services, admin: Api, clock: FakeClock
) -> None:
    cn_calendar(admin)
    a_day = {"before_seconds": 86400}
    definition = working_days_definition(admin, "loan", reminders=[a_day])
    # Wednesday 2026-10-14 at 10:00: three working days on, the deadline is Monday 10-19 18:00
    clock.now = datetime.fromisoformat("2026-10-14T10:00:00+08:00")
    instance = submit(admin, definition["id"]).json
    assert instance["review_deadline_at"] == "2026-10-19T10:00:00Z"
    # a day of working time before it is Friday 10-16 18:00, not Sunday 10-18 18:00
    assert instance["next_notice_at"] == "2026-10-16T10:00:00Z"
    clock.now = datetime.fromisoformat("2026-10-16T18:00:00+08:00")
    services.approvals.sweep()
    sent = admin.get(f"/api/approvals/{instance['id']}").json["reminders_sent"]
    assert [(r["before_seconds"], r["due_at"]) for r in sent] == [(86400, "2026-10-16T10:00:00Z")]


def test_an_older_client_s_put_of_the_review_window_keeps_the_rule_or_sets_seconds(
    admin: Api,
) -> None:
    cn_calendar(admin)
    definition = working_days_definition(admin, "loan")
    path = f"/api/definitions/{definition['id']}"
    fields = ("name", "external", "review_window_seconds", "schedule_presets")
    read = admin.get(path).json
    older_client = {k: read[k] for k in fields}
    body = {**older_client, "allow_self_approval": False, "version": read["version"]}
    kept = admin.put(path, body)
    assert kept.status_code == 200, kept.json
    assert kept.json["deadline_rule"] == THREE_WORKING_DAYS  # sent back as read: kept
    changed = admin.put(
        path, {**body, "review_window_seconds": 7200, "version": kept.json["version"]}
    )
    assert changed.status_code == 200, changed.json
    assert changed.json["deadline_rule"] == {"kind": "seconds", "seconds": 7200}
    assert changed.json["review_window_seconds"] == 7200


def test_days_without_a_range_are_this_month_in_the_calendar_s_zone(
    admin: Api, clock: FakeClock
) -> None:
    calendar = cn_calendar(admin)
    clock.now = datetime.fromisoformat("2026-09-30T17:00:00+00:00")  # 10-01 01:00 in Shanghai
    days = admin.get(f"{CALENDARS}/{calendar['id']}/days")
    assert days.status_code == 200, days.json
    dates = [day["date"] for day in days.json["items"]]
    assert (dates[0], dates[-1], len(dates)) == ("2026-10-01", "2026-10-31", 31)


def working_days(services: Services, *dates: str) -> dict[str, tuple[Any, ...]]:
    """The `working_days` rows of these dates: (worked, reason, name, calendar, revision)."""
    marks = ", ".join("?" for _ in dates)
    rows = services.ledger.store.query(
        "SELECT day, CASE WHEN working_day THEN 1 ELSE 0 END, reason, name, calendar_key, "
        f"calendar_revision FROM working_days WHERE day IN ({marks})",
        dates,
    )
    return {str(row[0]): tuple(row[1:]) for row in rows}


def test_the_tenant_s_default_calendar_lists_its_working_days_for_analysts(
    admin: Api, services: Services
) -> None:
    """Choosing a default calendar fills `working_days` for the years it covers; a revision
    of it rewrites them; clearing it empties them; only a calendar manager may choose."""
    calendar = cn_calendar(admin)
    assert admin.get("/api/tenant").json["default_calendar"] is None
    chosen = admin.put("/api/tenant/default-calendar", {"calendar": "cn"})
    assert chosen.status_code == 200, chosen.json
    assert chosen.json["default_calendar"] == "cn"
    assert admin.get("/api/tenant").json["default_calendar"] == "cn"
    days = working_days(services, "2026-10-01", "2026-10-10", "2026-10-12", "2027-01-04")
    assert days == {
        "2026-10-01": (0, "HOLIDAY", "国庆节", "cn", 2),
        "2026-10-10": (1, "MAKEUP_WORKDAY", "国庆节（调休上班）", "cn", 2),
        "2026-10-12": (1, "WEEKDAY", None, "cn", 2),
    }  # 2027 is not covered: no row, never a guess
    assert services.ledger.store.query("SELECT COUNT(*) FROM working_days")[0][0] == 365

    current = admin.get(f"{CALENDARS}/{calendar['id']}").json
    revised = admin.patch(
        f"{CALENDARS}/{calendar['id']}",
        {
            "holidays": [*current["holidays"], {"date": "2026-10-12", "name": "公司周年"}],
            "version": current["version"],
        },
    )
    assert revised.status_code == 200, revised.json["errors"]
    assert working_days(services, "2026-10-12")["2026-10-12"] == (0, "HOLIDAY", "公司周年", "cn", 3)

    reviewer = account(admin, "vic", ["operator"])
    refused = reviewer.put("/api/tenant/default-calendar", {"calendar": None})
    assert refused.status_code == 403
    unknown = admin.put("/api/tenant/default-calendar", {"calendar": "nowhere"})
    assert errors_of(unknown) == {"calendar": ["no calendar has key nowhere"]}
    cleared = admin.put("/api/tenant/default-calendar", {"calendar": None})
    assert cleared.json["default_calendar"] is None
    assert services.ledger.store.query("SELECT COUNT(*) FROM working_days")[0][0] == 0
