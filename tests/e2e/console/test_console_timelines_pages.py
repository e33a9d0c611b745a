"""The timelines pages without a browser: every kind's events, the state as it was at an
instant, the printable view, and what an account without `audit:read` gets."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from tests.e2e.console.test_console_approvals_pages import instance, olga, signed_in
from tests.e2e.helpers import CRON_9AM
from tests.support import Api, FakeClock

__all__ = ["instance", "olga"]  # fixtures shared with the approvals pages' tests


@pytest.fixture
def approved(admin: Api, olga: Api, instance: dict[str, Any], clock: FakeClock) -> str:
    """The instance, submitted at 09:00:00 UTC and approved by olga at 09:01:00."""
    clock.advance(60)
    answer = olga.post(
        f"/api/approvals/{instance['id']}/approve", {"command_id": "olga-1", "material_version": 1}
    )
    assert answer.status_code == 200, answer.json
    return str(instance["id"])


def test_every_event_shows_its_time_actor_command_outcome_reason_and_data(
    app: Flask, admin: Api, approved: str
) -> None:
    page = signed_in(app, admin.token).get(f"/console/timelines/approval/{approved}")
    assert page.status_code == 200
    text = page.text
    assert 'data-type="ApprovalInstance.Submitted"' in text
    approved_event = text.split('data-type="ApprovalInstance.Approved"')[1]
    for shown in ("2026-10-01 09:01:00 UTC", "olga", "olga-1", "APPROVED", "approved before"):
        assert shown in approved_event
    assert f"/console/operations/audit?aggregate={approved}" in text
    assert f"/console/approvals/{approved}" in text


def test_the_state_as_it_was_at_an_instant_beside_the_events_that_led_to_it(
    app: Flask, admin: Api, approved: str
) -> None:
    browser = signed_in(app, admin.token)
    page = f"/console/timelines/approval/{approved}"
    before = browser.get(f"{page}?at=2026-10-01T09:00:30").text  # the business zone, UTC
    state_then = before.split('data-field="state"')[1].split("</tr>")[0]
    assert "WAITING_REVIEW" in state_then
    led, later = before.split("The events that led to it (1)")[1].split("Later events (1)")
    assert "ApprovalInstance.Submitted" in led
    assert "ApprovalInstance.Approved" in later
    after = browser.get(f"{page}?at=2026-10-01T09:01:00Z").text  # the approval's instant
    assert "APPROVED" in after.split('data-field="state"')[1].split("</tr>")[0]
    assert "The events that led to it (2)" in after
    assert 'value="2026-10-01T09:01:00.000"' in after


def test_an_instant_before_the_first_event_or_unreadable_is_said_so_beside_the_field(
    app: Flask, admin: Api, approved: str
) -> None:
    browser = signed_in(app, admin.token)
    page = f"/console/timelines/approval/{approved}"
    early = browser.get(f"{page}?at=2026-10-01T08:00:00%2B00:00")
    assert early.status_code == 200
    assert 'id="at-error"' in early.text
    assert "did not exist yet" in early.text
    for unreadable in ("yesterday", "0001-01-01T00:00:00%2B05:00", "9999-12-31T23:00:00-05:00"):
        answer = browser.get(f"{page}?at={unreadable}")
        assert answer.status_code == 422, unreadable
        assert 'id="at-error"' in answer.text


def test_the_printable_view_holds_the_same_events_and_state(
    app: Flask, admin: Api, approved: str
) -> None:
    browser = signed_in(app, admin.token)
    printed = browser.get(f"/console/timelines/approval/{approved}/print?at=2026-10-01T09:00:30")
    assert printed.status_code == 200
    assert "Use your browser's print command" in printed.text
    assert "ApprovalInstance.Approved" in printed.text
    assert "WAITING_REVIEW" in printed.text
    assert "As it was right after this event" not in printed.text


def test_each_kind_has_its_timeline(app: Flask, admin: Api, approved: str) -> None:
    definition_id = admin.get("/api/approvals/" + approved).json["definition_id"]
    schedule = admin.post(
        "/api/workflows/schedules",
        {
            "name": "每日检查",
            "definition_id": definition_id,
            "trigger": CRON_9AM,
            "timezone": "Asia/Shanghai",
            "initiator_id": "root",
        },
    ).json
    run = admin.post(f"/api/workflows/schedules/{schedule['id']}/run", {"request_id": "r1"}).json
    browser = signed_in(app, admin.token, "zh")
    for kind, key, first_event in (
        ("schedule", schedule["id"], "Schedule.Created"),
        ("run", run["id"], "Run."),
        ("approval", approved, "ApprovalInstance.Submitted"),
        ("account", "olga", "Account.Registered"),
        ("definition", definition_id, "Definition.Registered"),
    ):
        page = browser.get(f"/console/timelines/{kind}/{key}")
        assert page.status_code == 200, (kind, page.text)
        assert f'data-type="{first_event}' in page.text
        assert "时间线" in page.text
    assert browser.get("/console/timelines/account/nobody").status_code == 404
    assert browser.get("/console/timelines/token/olga").status_code == 404
    assert browser.get(f"/console/timelines/schedule/{approved}").status_code == 404


def test_picking_by_kind_and_id(app: Flask, admin: Api, approved: str) -> None:
    browser = signed_in(app, admin.token)
    assert browser.get("/console/timelines/").status_code == 200
    picked = browser.get(f"/console/timelines/?kind=approval&key={approved}")
    assert picked.status_code == 302
    assert picked.headers["Location"].endswith(f"/console/timelines/approval/{approved}")
    wrong = browser.get("/console/timelines/?kind=bogus&key=")
    assert wrong.status_code == 422
    assert 'id="kind-error"' in wrong.text
    assert 'id="key-error"' in wrong.text


def test_an_account_without_audit_read_is_refused(app: Flask, olga: Api, approved: str) -> None:
    browser = signed_in(app, olga.token)
    assert browser.get(f"/console/timelines/approval/{approved}").status_code == 403
    assert (
        f"/console/timelines/approval/{approved}"
        not in browser.get(f"/console/approvals/{approved}").text
    )
