"""Reminders and escalation over HTTP and in the console: a definition's `reminders` and
`escalation`, checked field by field; the instances' lists and timelines showing what the
sweeper recorded (on both stores, with the test clock)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from cronledger.application.services import Services
from tests.e2e.helpers import account, assert_problem
from tests.support import DECIDERS, T0, Api, FakeClock

DAY = 86400
WINDOW = 3 * DAY
REMINDERS = [{"before_seconds": DAY}, {"before_seconds": 3600}]
ESCALATION = {"after_seconds": DAY + 7200, "account_id": "boss"}
# The default mode saved with it, and no group named.
ESCALATION_KEPT = {**ESCALATION, "group_leader_of": None, "mode": "reassign"}
CONTRACT = {
    "key": "contract",
    "name": "Contract",
    "external": False,
    "review_window_seconds": WINDOW,
    "reviewers": DECIDERS,
    "reminders": REMINDERS,
    "escalation": ESCALATION,
}
ENGLISH = {"Accept-Language": "en"}
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture
def boss(admin: Api) -> Api:
    return account(admin, "boss", ["operator"])


@pytest.fixture
def definition(admin: Api, boss: Api) -> dict[str, Any]:
    created = admin.post("/api/definitions", CONTRACT)
    assert created.status_code == 201, created.json
    return admin.post(f"/api/definitions/{created.json['id']}/publish").json  # type: ignore[no-any-return]


@pytest.fixture
def instance(admin: Api, definition: dict[str, Any]) -> dict[str, Any]:
    submitted = admin.post(
        "/api/approvals",
        {
            "command_id": "s-1",
            "definition_id": definition["id"],
            "title": "Contract C-9",
            "form_data": {},
            "material_version": 1,
        },
    )
    assert submitted.status_code == 201, submitted.json
    return submitted.json  # type: ignore[no-any-return]


def test_a_definition_carries_them_and_lists_show_them(
    admin: Api, definition: dict[str, Any]
) -> None:
    assert (definition["reminders"], definition["escalation"]) == (REMINDERS, ESCALATION_KEPT)
    listed = admin.get("/api/definitions").json["items"]
    assert [(d["reminders"], d["escalation"]) for d in listed] == [(REMINDERS, ESCALATION_KEPT)]


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        ({"reminders": [{"before_seconds": s} for s in range(1, 7)]}, {"reminders"}),
        ({"reminders": [{"before_seconds": 0}]}, {"reminders.0.before_seconds"}),
        ({"reminders": [{"before_seconds": WINDOW}]}, {"reminders.0.before_seconds"}),
        (
            {"reminders": [{"before_seconds": 60}, {"before_seconds": 60}]},
            {"reminders.1.before_seconds"},
        ),
        ({"reminders": [{"before_seconds": "soon"}]}, {"reminders.0.before_seconds"}),
        ({"reminders": [{"after": 60}]}, {"reminders.0.before_seconds", "reminders.0.after"}),
        ({"escalation": {"after_seconds": 60, "account_id": "nobody"}}, {"escalation.account_id"}),
        ({"escalation": {"after_seconds": 0, "account_id": "boss"}}, {"escalation.after_seconds"}),
        ({"escalation": {"after_seconds": 60}}, {"escalation"}),  # no target
    ],
)
def test_wrong_reminders_and_escalations_are_422_naming_the_field(
    admin: Api, boss: Api, change: dict[str, Any], fields: set[str]
) -> None:
    refused = admin.post("/api/definitions", {**CONTRACT, **change})
    assert set(assert_problem(refused, 422, "VALIDATION_FAILED")["errors"]) == fields
    assert admin.get("/api/definitions").json["total"] == 0


def test_a_put_leaving_them_out_keeps_them_and_a_patch_changes_them(
    admin: Api, definition: dict[str, Any]
) -> None:
    path = f"/api/definitions/{definition['id']}"
    older_client = {k: definition[k] for k in ("name", "external", "review_window_seconds")}
    kept = admin.put(
        path,
        {**older_client, "schedule_presets": [], "allow_self_approval": False, "version": 2},
    )
    assert (kept.json["reminders"], kept.json["escalation"]) == (REMINDERS, ESCALATION_KEPT)
    patched = admin.patch(path, {"escalation": {"after_seconds": 60}, "reminders": None})
    assert (patched.json["reminders"], patched.json["escalation"]) == (
        [],
        {**ESCALATION_KEPT, "after_seconds": 60},
    )
    cleared = admin.patch(path, {"escalation": None})
    assert cleared.json["escalation"] is None
    wrong = admin.patch(path, {"reminders": [{"before_seconds": WINDOW + 1}]})
    assert set(assert_problem(wrong, 422, "VALIDATION_FAILED")["errors"]) == {
        "reminders.0.before_seconds"
    }


def test_lists_and_timelines_show_what_the_sweeper_recorded(
    admin: Api, services: Services, clock: FakeClock, instance: dict[str, Any]
) -> None:
    assert instance["next_notice_at"] == "2026-10-02T11:00:00Z"  # the escalation, first
    assert (instance["reminders"], instance["escalation"]) == (REMINDERS, ESCALATION_KEPT)
    back = T0 + timedelta(seconds=WINDOW - 1800)  # the sweeper was down until then
    clock.now = back
    services.approvals.sweep()
    item = admin.get("/api/approvals?state=WAITING_REVIEW").json["items"][0]
    assert item["reminders_sent"] == [
        {"before_seconds": DAY, "due_at": "2026-10-03T09:00:00Z", "at": "2026-10-04T08:30:00Z"},
        {"before_seconds": 3600, "due_at": "2026-10-04T08:00:00Z", "at": "2026-10-04T08:30:00Z"},
    ]
    assert (item["escalated_account_id"], item["escalated_at"], item["next_notice_at"]) == (
        "boss",
        "2026-10-04T08:30:00Z",
        None,
    )
    assert (item["review_deadline_at"], item["state"]) == (
        instance["review_deadline_at"],
        "WAITING_REVIEW",
    )
    assert item == admin.get(f"/api/approvals/{instance['id']}").json  # the list, as a read
    timeline = admin.get(f"/api/approvals/{instance['id']}/timeline").json["items"]
    notices = [e for e in timeline if e["type"] != "ApprovalInstance.Submitted"]
    assert [(e["type"], e["actor"], e["at"], e["data"]) for e in notices] == [
        (
            "ApprovalInstance.Escalated",
            "system:sweeper",
            "2026-10-04T08:30:00Z",
            {
                "account_id": "boss",
                "after_seconds": DAY + 7200,
                "due_at": "2026-10-02T11:00:00Z",
                "task_id": "1",
                "mode": "reassign",
                "from_assignee": None,
                "to_assignee": "boss",
            },
        ),
        (
            "ApprovalInstance.ReminderDue",
            "system:sweeper",
            "2026-10-04T08:30:00Z",
            {
                "before_seconds": DAY,
                "due_at": "2026-10-03T09:00:00Z",
                "review_deadline_at": "2026-10-04T09:00:00Z",
            },
        ),
        (
            "ApprovalInstance.ReminderDue",
            "system:sweeper",
            "2026-10-04T08:30:00Z",
            {
                "before_seconds": 3600,
                "due_at": "2026-10-04T08:00:00Z",
                "review_deadline_at": "2026-10-04T09:00:00Z",
            },
        ),
    ]
    assert admin.get(f"/api/audit/timeline/{instance['id']}").json["items"][1:] == notices


def signed_in(app: Flask, token: str) -> FlaskClient:
    browser = app.test_client()
    browser.set_cookie("cronledger_lang", "en")
    csrf = CSRF.search(browser.get("/console/sign-in").text)
    assert csrf is not None
    answer = browser.post("/console/sign-in", data={"csrf_token": csrf.group(1), "token": token})
    assert answer.status_code == 302, answer.text
    return browser


def test_the_console_shows_them(
    app: Flask, admin: Api, services: Services, clock: FakeClock, instance: dict[str, Any]
) -> None:
    clock.now = T0 + timedelta(seconds=DAY + 7200)
    services.approvals.sweep()
    browser = signed_in(app, admin.token)
    page = browser.get(f"/console/approvals/{instance['id']}").text
    notices = page.split('id="notices-heading"', 1)[1].split("</section>", 1)[0]
    assert "Reminder 86400 s before the deadline" in notices
    assert "Escalation to boss after 93600 s waiting" in notices
    assert "recorded" in notices.split('data-escalation="boss"', 1)[1]
    assert "not recorded" in notices.split('data-reminder="86400"', 1)[1].split("</li>", 1)[0]
    assert "Next one due" in notices
    timeline = browser.get(f"/console/timelines/approval/{instance['id']}").text
    escalated = timeline.split('data-type="ApprovalInstance.Escalated"', 1)[1].split("</li>", 1)[0]
    assert "system:sweeper" in escalated
    assert "&#34;account_id&#34;: &#34;boss&#34;" in escalated
    definitions = browser.get("/console/directory/definitions").text
    assert "before the deadline: 86400 s, 3600 s" in definitions
    assert "to boss after 93600 s waiting" in definitions


def shown_after(browser: FlaskClient, path: str, marker: str) -> str:
    """What the page at `path` shows after `marker` (failing with the page, if it lacks it)."""
    answer = browser.get(path)
    assert answer.status_code == 200, answer.text
    assert marker in answer.text, answer.text
    return answer.text.split(marker, 1)[1]


def escalation_item(browser: FlaskClient, path: str) -> str:
    return shown_after(browser, path, 'data-escalation="legal"').split("</li>", 1)[0]


def test_the_console_names_an_escalation_to_a_groups_leader(
    app: Flask, admin: Api, boss: Api, services: Services, clock: FakeClock
) -> None:
    group = {"key": "legal", "name": "Legal", "members": ["boss"], "leader_id": "boss"}
    assert admin.post("/api/groups", group).status_code == 201
    escalation = {"after_seconds": DAY + 7200, "group_leader_of": "legal"}
    created = admin.post(
        "/api/definitions", {**CONTRACT, "key": "legal", "escalation": escalation}
    ).json
    admin.post(f"/api/definitions/{created['id']}/publish")
    submitted = admin.post(
        "/api/approvals",
        {
            "command_id": "s-1",
            "definition_id": created["id"],
            "title": "C-10",
            "material_version": 1,
        },
    ).json
    browser = signed_in(app, admin.token)
    path = f"/console/approvals/{submitted['id']}"
    waiting = escalation_item(browser, path)
    assert "Escalation to the leader of the group legal after 93600 s waiting" in waiting
    assert "not recorded" in waiting
    clock.now = T0 + timedelta(seconds=DAY + 7200)
    services.approvals.sweep()
    browser = signed_in(app, admin.token)  # the first session's 12 hours are over
    recorded = escalation_item(browser, path)
    assert "not recorded" not in recorded
    assert "(boss)" in recorded
    card = shown_after(browser, "/console/directory/definitions", 'id="definition-legal"')
    assert (
        "to the leader of the group legal (or the next leader up who may approve) after 93600 s"
        " waiting; the task is handed to them" in card
    )


def test_the_console_definition_form_takes_them_and_names_wrong_ones(
    app: Flask, admin: Api, boss: Api
) -> None:
    browser = signed_in(app, admin.token)

    def create(**fields: str) -> Any:
        page = browser.get("/console/directory/definitions").text
        csrf = CSRF.search(page)
        assert csrf is not None
        form = {
            "csrf_token": csrf.group(1),
            "name": "Contract",
            "review_window_seconds": "7200",
            "reviewers.roles": "operator",
            "escalation.mode": "reassign",
        }
        return browser.post("/console/directory/definitions", data={**form, **fields})

    unread = create(key="a", reminders="3600, soon", **{"escalation.account_id": "boss"})
    assert unread.status_code == 422
    assert "Reminder 2: Not a valid integer." in unread.text
    assert 'id="escalation-after_seconds-error"' in unread.text
    assert 'value="3600, soon"' in unread.text  # what was typed stays
    wrong = create(
        key="a",
        reminders="3600, 9000",
        **{"escalation.after_seconds": "60", "escalation.account_id": "nobody"},
    )
    assert wrong.status_code == 422
    assert "Reminder 2: must be more than 0 and less than the review window" in wrong.text
    assert "the tenant has no account nobody" in wrong.text
    made = create(
        key="b",
        reminders="3600, 600",
        **{"escalation.after_seconds": "1800", "escalation.account_id": "boss"},
    )
    assert made.status_code == 302, made.text
    created = admin.get("/api/definitions/by-key/b").json
    assert (created["reminders"], created["escalation"]) == (
        [{"before_seconds": 3600}, {"before_seconds": 600}],
        {"after_seconds": 1800, "account_id": "boss", "group_leader_of": None, "mode": "reassign"},
    )
