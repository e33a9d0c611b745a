"""The approvals pages without a browser: what each account is offered, the time left, and
every command's answer as the service decided it (on both stores, with the test clock)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from cronledger.application.services import Services
from tests.e2e.helpers import account, with_reviewer
from tests.support import DECIDERS, Api, FakeClock

WINDOW_SECONDS = 2 * 3600 + 5 * 60  # the definition's review window: "in 2 hours"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
COMMAND_ID = re.compile(r'name="command_id" value="([^"]+)"')


def signed_in(app: Flask, token: str, language: str = "en") -> FlaskClient:
    """A browser of its own, signed in to the console with `token`, preferring `language`."""
    browser = app.test_client()
    browser.set_cookie("cronledger_lang", language)
    answer = browser.post(
        "/console/sign-in",
        data={"csrf_token": form_token(browser, "/console/sign-in"), "token": token},
    )
    assert answer.status_code == 302, answer.text
    return browser


def form_token(browser: FlaskClient, path: str) -> str:
    """The CSRF token a page's forms carry."""
    return found(CSRF, browser.get(path).text)


def found(pattern: re.Pattern[str], text: str) -> str:
    match = pattern.search(text)
    assert match, pattern.pattern
    return match.group(1)


def form_of(text: str, **fields: Any) -> dict[str, Any]:
    """What a page's command form sends: its CSRF token, its command id, and `fields`."""
    return {"csrf_token": found(CSRF, text), "command_id": found(COMMAND_ID, text), **fields}


def send(browser: FlaskClient, page: str, action: str, **fields: Any) -> Any:
    """Open `page` and post its command form to `action`."""
    return browser.post(action, data=form_of(browser.get(page).text, **fields))


@pytest.fixture
def instance(admin: Api, services: Services) -> dict[str, Any]:
    """An instance submitted by `root` (who may withdraw it, not approve it), waiting."""
    with_reviewer(admin)
    definition = admin.post(
        "/api/definitions",
        {
            "key": "review",
            "name": "Review",
            "external": False,
            "review_window_seconds": WINDOW_SECONDS,
            "reviewers": DECIDERS,
        },
    ).json
    admin.post(f"/api/definitions/{definition['id']}/publish")
    submitted = admin.post(
        "/api/approvals",
        {
            "command_id": "first",
            "definition_id": definition["id"],
            "title": "合同 A",
            "form_data": {"amount": 5},
            "material_version": 1,
        },
    )
    assert submitted.status_code == 201, submitted.json
    services.projector.catch_up()
    return submitted.json  # type: ignore[no-any-return]


@pytest.fixture
def olga(admin: Api) -> Api:
    return account(admin, "olga", ["operator"])


def test_the_inbox_shows_the_time_left_in_both_languages_then_overdue(
    app: Flask, admin: Api, olga: Api, instance: dict[str, Any], clock: FakeClock
) -> None:
    english = signed_in(app, olga.token, "en")
    chinese = signed_in(app, olga.token, "zh")
    page = english.get("/console/approvals/")
    assert page.status_code == 200
    assert "合同 A" in page.text
    assert "in 2 hours" in page.text
    assert f"/console/approvals/{instance['id']}/approve" in page.text
    assert "2小时后" in chinese.get("/console/approvals/").text
    clock.advance(WINDOW_SECONDS)  # the deadline is inclusive; no sweeper runs here
    assert "overdue" in english.get("/console/approvals/").text
    assert "已超时" in chinese.get("/console/approvals/").text


def test_the_inbox_filters_are_checked_as_the_api_checks_them(
    app: Flask, admin: Api, instance: dict[str, Any]
) -> None:
    browser = signed_in(app, admin.token)
    wrong = browser.get("/console/approvals/?deadline_from=tomorrow")
    assert wrong.status_code == 422
    assert 'id="deadline_from-error"' in wrong.text
    assert "合同 A" not in browser.get("/console/approvals/?state=APPROVED").text
    assert "合同 A" in browser.get("/console/approvals/?state=").text
    # The deadline is 11:05 UTC; the viewer's zone here is the business zone, UTC.
    assert "合同 A" in browser.get("/console/approvals/?deadline_from=2026-10-01T11:00").text
    later = browser.get("/console/approvals/?deadline_from=2026-10-01T11:10")
    assert "No instance matches these filters." in later.text
    rows = browser.get("/console/approvals/rows?state=WAITING_REVIEW")
    assert rows.status_code == 200
    assert "<html" not in rows.text
    assert "合同 A" in rows.text


def test_each_account_is_offered_what_the_rules_let_it_do(
    app: Flask, admin: Api, olga: Api, instance: dict[str, Any]
) -> None:
    page = f"/console/approvals/{instance['id']}"
    applicant = signed_in(app, admin.token).get(page).text
    assert f"{page}/approve" not in applicant
    assert "You may not approve this instance:" in applicant
    assert "root is the instance&#39;s applicant" in applicant
    assert f"{page}/withdraw" in applicant
    reviewer = signed_in(app, olga.token).get(page).text
    assert f"{page}/approve" in reviewer
    assert f"{page}/extend" in reviewer
    assert f"{page}/withdraw" not in reviewer


def test_a_second_approve_loses_naming_the_winning_command(
    app: Flask, admin: Api, olga: Api, instance: dict[str, Any], clock: FakeClock
) -> None:
    page = f"/console/approvals/{instance['id']}"
    action = f"{page}/approve"
    oscar = signed_in(app, account(admin, "oscar", ["operator"]).token)
    stale = oscar.get(page).text  # opened before olga approves: still offers approve
    first = signed_in(app, olga.token)
    clock.advance(60)
    won = send(first, page, action, material_version="1")
    assert won.status_code == 200
    assert "Done: Approved" in won.text
    winner = admin.get(f"/api/approvals/{instance['id']}").json["winning_command"]
    lost = oscar.post(action, data=form_of(stale, material_version="1"))
    assert lost.status_code == 409
    assert "Your approve lost" in lost.text
    assert "CONFLICT" in lost.text
    assert f"approve by olga, command id <code>{winner['command_id']}</code>, at" in lost.text
    assert "2026-10-01 09:01:00 UTC" in lost.text


def test_the_same_form_sent_twice_is_answered_twice_and_recorded_once(
    app: Flask, admin: Api, olga: Api, instance: dict[str, Any]
) -> None:
    page = f"/console/approvals/{instance['id']}"
    browser = signed_in(app, olga.token)
    form = form_of(browser.get(page).text, material_version="1")
    assert browser.post(f"{page}/approve", data=form).status_code == 200
    again = browser.post(f"{page}/approve", data=form)
    assert again.status_code == 200
    assert "repeated its first answer" in again.text
    timeline = admin.get(f"/api/approvals/{instance['id']}/timeline").json["items"]
    assert [e["type"] for e in timeline].count("ApprovalInstance.Approved") == 1


def test_stale_material_is_refused_and_said_so(
    app: Flask, olga: Api, instance: dict[str, Any]
) -> None:
    page = f"/console/approvals/{instance['id']}"
    refused = send(signed_in(app, olga.token), page, f"{page}/approve", material_version="7")
    assert refused.status_code == 409
    assert "Your approve was refused" in refused.text
    assert "STALE_MATERIAL" in refused.text
    assert "material version 7 is not the current 1" in refused.text


def test_an_extension_error_is_shown_next_to_its_field(
    app: Flask, admin: Api, olga: Api, instance: dict[str, Any]
) -> None:
    page = f"/console/approvals/{instance['id']}"
    action = f"{page}/extend"
    browser = signed_in(app, olga.token)
    earlier = send(browser, page, action, new_deadline_at="2026-10-01T10:00", reason="more time")
    assert earlier.status_code == 422
    assert 'id="new_deadline_at-error"' in earlier.text
    assert "must be later than the current deadline" in earlier.text
    unexplained = send(browser, page, action, new_deadline_at="2026-10-02T10:00", reason="")
    assert unexplained.status_code == 422
    assert 'id="reason-error"' in unexplained.text
    unreadable = send(browser, page, action, new_deadline_at="soon", reason="more time")
    assert 'id="new_deadline_at-error"' in unreadable.text
    no_key = browser.post(action, data={**form_of(browser.get(page).text), "command_id": ""})
    assert no_key.status_code == 422
    assert "Missing data for required field." in no_key.text  # command_id's, atop the page
    extended = send(browser, page, action, new_deadline_at="2026-10-02T10:00", reason="more time")
    assert extended.status_code == 200
    assert "Deadline extended" in extended.text
    assert "olga moved the deadline from" in extended.text
    deadline = admin.get(f"/api/approvals/{instance['id']}").json["review_deadline_at"]
    assert deadline == "2026-10-02T10:00:00Z"  # the viewer's zone here: the business zone, UTC


def test_the_applicant_withdraws_and_nobody_else_is_offered_to(
    app: Flask, admin: Api, instance: dict[str, Any]
) -> None:
    page = f"/console/approvals/{instance['id']}"
    withdrawn = send(signed_in(app, admin.token), page, f"{page}/withdraw")
    assert withdrawn.status_code == 200
    assert "Done: Withdrawn" in withdrawn.text
    assert f'action="{page}/withdraw"' not in withdrawn.text  # nothing is left to decide


def test_a_command_form_without_its_csrf_token_is_refused(
    app: Flask, olga: Api, instance: dict[str, Any]
) -> None:
    page = f"/console/approvals/{instance['id']}"
    browser = signed_in(app, olga.token)
    refused = browser.post(f"{page}/approve", data={"command_id": "x", "material_version": "1"})
    assert refused.status_code == 400
    assert browser.get(page).text.count("Waiting for review") >= 1


def test_an_unknown_instance_is_not_found(app: Flask, admin: Api) -> None:
    browser = signed_in(app, admin.token)
    assert browser.get("/console/approvals/not-an-id").status_code == 404
    assert browser.get("/console/approvals/00000000-0000-0000-0000-000000000000").status_code == 404
    assert browser.get("/console/approvals/not-an-id/approve").status_code == 302


def test_live_rows_not_yet_projected_are_fetched_again_for_the_same_event(
    app: Flask, olga: Api, instance: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    browser = signed_in(app, olga.token)
    rows = "/console/approvals/rows?state=WAITING_REVIEW"
    assert "HX-Trigger" not in browser.get(rows, headers={"X-Min-Log-Position": "1"}).headers
    assert "HX-Trigger" not in browser.get(rows, headers={"X-Min-Log-Position": "99999"}).headers
    monkeypatch.setattr("web.console.approvals.shown_position", lambda: 0)  # held behind
    behind = browser.get(rows, headers={"X-Min-Log-Position": "1"})
    assert behind.status_code == 200
    assert behind.headers["HX-Trigger"] == '{"inbox-behind": {"lastEventId": "1"}}'
