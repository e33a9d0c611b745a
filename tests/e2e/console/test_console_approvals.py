"""Approvals in a real browser: a schedule's instance approved from the inbox, a second approve
from a page opened before it losing to it, and the inbox updating live (both languages)."""

from __future__ import annotations

import dataclasses
import re
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.console.conftest import (
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    screenshot,
    sign_in,
)
from tests.support import DECIDERS, wait_until

WINDOW_SECONDS = 2 * 3600 + 5 * 60
TIME_LEFT = {"en": r"^in 2 hours$", "zh": r"^2小时后$"}
DONE = {"en": "Done: Approved", "zh": "已完成：已通过"}
LOST = {"en": "Your approve lost", "zh": "你的「通过」未生效"}
APPROVE = {"en": "approve", "zh": "通过"}


@dataclass(frozen=True)
class Review:
    """A schedule that launches instances of a published definition on behalf of `ivy`,
    and two reviewers (operators) with their tokens."""

    schedule_id: str
    olga: str
    oscar: str


@pytest.fixture(scope="module")
def review(site: Site) -> Review:
    suffix = uuid.uuid4().hex[:8]
    definition = site.api(
        "POST",
        "/api/definitions",
        {
            "key": f"contract-{suffix}",
            "name": "合同审核",
            "external": False,
            "review_window_seconds": WINDOW_SECONDS,
            "reviewers": DECIDERS,
        },
    )
    site.api("POST", f"/api/definitions/{definition['id']}/publish")
    tokens = {}
    for name, roles in (("ivy", ["requester"]), ("olga", ["operator"]), ("oscar", ["operator"])):
        site.api("POST", "/api/accounts", {"id": f"{name}-{suffix}", "name": name, "roles": roles})
        tokens[name] = site.api("POST", f"/api/accounts/{name}-{suffix}/tokens")["token"]
    schedule = site.api(
        "POST",
        "/api/workflows/schedules",
        {
            "name": "合同审核",
            "definition_id": definition["id"],
            "trigger": {"kind": "cron", "expression": "0 9 * * *"},
            "timezone": "Asia/Shanghai",
            "initiator_id": f"ivy-{suffix}",
            "title_template": "合同审核 {{date}}",
            "form_data": {"region": "east"},
            "overlap_policy": "allow",
        },
    )
    return Review(schedule["id"], tokens["olga"], tokens["oscar"])


def launch(site: Site, review: Review) -> dict[str, Any]:
    """Run the schedule now; the instance it launches, once the inbox's list holds it."""
    path = f"/api/workflows/schedules/{review.schedule_id}/run"
    run = site.api("POST", path, {"request_id": uuid.uuid4().hex})

    def listed() -> dict[str, Any] | None:
        instance_id = site.api("GET", f"/api/workflows/runs/{run['id']}")["instance_id"]
        if instance_id is None:
            return None
        waiting = site.api("GET", "/api/approvals?state=WAITING_REVIEW&page_size=200")["items"]
        return next((item for item in waiting if item["id"] == instance_id), None)

    return wait_until(listed, "the run's instance waiting in the list", interval=0.2)


def as_account(site: Site, token: str) -> Site:
    """The same site, its API called with another account's token."""
    return dataclasses.replace(site, token=token)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_approve_from_the_inbox_then_a_second_approve_loses_naming_the_winner(
    site: Site, browser: Any, review: Review, language: str
) -> None:
    from playwright.sync_api import expect

    instance = launch(site, review)
    detail = f"/console/approvals/{instance['id']}"
    second = new_page(browser, language)  # oscar opens the instance before olga decides it
    sign_in(second, site, review.oscar, then=detail)
    expect(second.locator("form.approve button")).to_be_visible()

    first = new_page(browser, language)
    sign_in(first, site, review.olga, then="/console/approvals/")
    row = first.locator(f'tr[data-instance="{instance["id"]}"]')
    expect(row.locator(".time-left")).to_have_text(re.compile(TIME_LEFT[language]))
    expect(row).to_contain_text("UTC")
    expect(first.locator("#inbox-rows")).to_contain_text("Europe/Berlin")  # the browser's zone
    if language == "en":
        check_accessible(first)
        fits_narrow(first)
        screenshot(first, "approvals-inbox")
    row.locator("button[type=submit]").click()
    expect(first.locator(".outcome.won")).to_contain_text(DONE[language])
    winner = site.api("GET", f"/api/approvals/{instance['id']}")["winning_command"]
    assert winner["actor"].startswith("olga-")

    second.locator("form.approve button").click()
    lost = second.locator(".outcome.lost")
    expect(lost).to_contain_text(LOST[language])
    expect(lost).to_contain_text("CONFLICT")
    for named in (winner["command_id"], winner["actor"], APPROVE[language]):
        expect(lost.locator(".winner")).to_contain_text(named)
    expect(second.locator("form.approve")).to_have_count(0)
    timeline = site.api("GET", f"/api/approvals/{instance['id']}/timeline")["items"]
    assert [e["outcome"] for e in timeline if e["type"] != "ApprovalInstance.Submitted"] == [
        "APPROVED",
        "CONFLICT",
    ]
    if language == "en":
        check_accessible(second)
        fits_narrow(second)
        screenshot(second, "approval-detail")


def test_the_inbox_updates_live_as_instances_come_and_are_decided(
    site: Site, browser: Any, review: Review
) -> None:
    from playwright.sync_api import expect

    page = new_page(browser, "zh")
    sign_in(page, site, review.olga, then="/console/approvals/")
    expect(page.locator("h1")).to_have_text("审批")
    instance = launch(site, review)
    row = page.locator(f'tr[data-instance="{instance["id"]}"]')
    expect(row).to_be_visible()  # without reloading
    as_account(site, review.oscar).api(
        "POST",
        f"/api/approvals/{instance['id']}/approve",
        {"command_id": uuid.uuid4().hex, "material_version": instance["material_version"]},
    )
    expect(row).to_have_count(0)
