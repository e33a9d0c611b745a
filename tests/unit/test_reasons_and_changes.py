"""Reasons and schedule changes on the log: new events carry them, older ones read as none."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any
from uuid import uuid4

from cronledger.application.schedules import with_changes
from cronledger.persistence.ledger import timeline_entry
from domain.directory import Account
from domain.schedules import Schedule
from tests.support import stored_by_an_older_release
from tests.unit.helpers import POLICY, SETTINGS, T0, new_run


def events_of(aggregate: Any) -> dict[str, Any]:
    return {type(e).__name__: e for e in aggregate.collect_events()}


def test_older_events_read_back_with_no_reason() -> None:
    account = Account(tenant_id=uuid4(), account_id="olga", name="Olga", roles=[], at=T0, actor="a")
    account.update("Olga", ["auditor"], T0, "admin", reason="moved")
    account.deactivate(T0, "admin", reason="left")
    account.activate(T0, "admin", reason="back")
    account.issue_token("t1", T0, "admin")
    account.revoke_token("t1", T0, "admin", reason="leaked")
    run = new_run()
    run.cancel(T0, "ops", reason="wrong day")
    run.retry(T0, "ops", reason="right day")
    schedule = Schedule.create(uuid4(), SETTINGS, False, T0, "ops")
    schedule.delete(T0, "ops", reason="retired")
    events = {**events_of(account), **events_of(run), **events_of(schedule)}
    kinds = ("RolesChanged", "Deactivated", "Activated", "TokenRevoked", "Cancelled", "Retried")
    for kind in (*kinds, "Deleted"):
        assert events[kind].reason is not None, kind
        assert stored_by_an_older_release(events[kind], "reason").reason is None, kind


def test_an_edit_records_what_changed_and_a_switch_is_named() -> None:
    schedule = Schedule.create(uuid4(), SETTINGS, False, T0, "ops")
    schedule.edit(replace(SETTINGS, name="Weekly"), False, T0, "ops", POLICY, 2)
    schedule.switch(True, T0, "ops", POLICY, reason="go live")
    schedule.switch(True, T0, "ops", POLICY)  # already enabled: nothing recorded
    schedule.switch(False, T0 + timedelta(minutes=1), "ops", POLICY)
    events = schedule.collect_events()
    assert [type(e).__name__ for e in events] == ["Created", "Updated", "Enabled", "Disabled"]
    assert events[1].changes == [
        {"field": "name", "old": "Daily", "new": "Weekly"},
        {"field": "definition_revision", "old": 1, "new": 2},
    ]
    assert (schedule.revision, schedule.enabled, schedule.next_fire_at) == (4, False, None)


def test_an_older_edit_shows_its_changes_derived_in_the_timeline() -> None:
    schedule = Schedule.create(uuid4(), SETTINGS, False, T0, "ops")
    schedule.edit(replace(SETTINGS, timezone="Europe/London"), True, T0, "ops", POLICY)
    schedule.switch(False, T0, "ops", POLICY)
    schedule.edit(SETTINGS, True, T0, "ops", POLICY)
    created, *later = schedule.collect_events()
    older = [
        stored_by_an_older_release(e, "changes") if hasattr(e, "changes") else e for e in later
    ]
    entries = [timeline_entry(n, e) for n, e in enumerate([created, *older])]
    assert all(e.data["changes"] is None for e in entries if e.type == "Schedule.Updated")
    shown = [e.data["changes"] for e in with_changes(entries) if e.type == "Schedule.Updated"]
    assert shown == [
        [
            {"field": "timezone", "old": "UTC", "new": "Europe/London"},
            {"field": "enabled", "old": False, "new": True},
        ],
        [
            {"field": "timezone", "old": "Europe/London", "new": "UTC"},
            {"field": "enabled", "old": False, "new": True},
        ],
    ]
