"""A reviewer's tasks in a real browser (both languages): claim an instance's task, hand it to
another reviewer, who rejects it with a comment from their list of tasks."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.console.conftest import Site, check_accessible, new_page, screenshot, sign_in

MY_TASKS = {"en": "My tasks", "zh": "我的待办"}
CLAIM = {"en": "Claim", "zh": "领取"}
REASSIGN = {"en": "Reassign", "zh": "转交"}
REJECT_PICKED = {"en": "Reject the picked tasks", "zh": "批量拒绝"}


@dataclass(frozen=True)
class Team:
    """A definition reviewed by olga and oscar, ivy who applies, and their tokens."""

    definition_id: str
    suffix: str
    tokens: dict[str, str]

    def account(self, name: str) -> str:
        return f"{name}-{self.suffix}"


@pytest.fixture(scope="module")
def team(site: Site) -> Team:
    suffix = uuid.uuid4().hex[:8]
    tokens = {}
    for name, roles in (("ivy", ["requester"]), ("olga", ["operator"]), ("oscar", ["operator"])):
        site.api("POST", "/api/accounts", {"id": f"{name}-{suffix}", "name": name, "roles": roles})
        tokens[name] = site.api("POST", f"/api/accounts/{name}-{suffix}/tokens")["token"]
    definition = site.api(
        "POST",
        "/api/definitions",
        {
            "key": f"loan-{suffix}",
            "name": "贷款审批",
            "external": False,
            "review_window_seconds": 7200,
            "reviewers": {"accounts": [f"olga-{suffix}", f"oscar-{suffix}"]},
        },
    )
    site.api("POST", f"/api/definitions/{definition['id']}/publish")
    return Team(definition["id"], suffix, tokens)


def submitted(site: Site, team: Team, title: str) -> dict[str, Any]:
    ivy = dataclasses.replace(site, token=team.tokens["ivy"])
    body = {
        "command_id": uuid.uuid4().hex,
        "definition_id": team.definition_id,
        "title": title,
        "material_version": 1,
    }
    return ivy.api("POST", "/api/approvals", body)  # type: ignore[no-any-return]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_claim_reassign_and_reject_from_the_task_list(
    site: Site, browser: Any, team: Team, language: str
) -> None:
    from playwright.sync_api import expect

    instance = submitted(site, team, f"贷款 {language}")
    olga = new_page(browser, language)
    sign_in(olga, site, team.tokens["olga"], then="/console/tasks/?scope=claimable")
    expect(olga.locator("h1")).to_have_text(MY_TASKS[language])
    row = olga.locator(f'tr[data-instance="{instance["id"]}"]')
    row.locator("a").click()
    olga.get_by_role("button", name=CLAIM[language]).click()
    expect(olga.locator(".task .assignee")).to_have_text("olga")  # by name: its id on hover
    expect(olga.locator(".task .assignee span")).to_have_attribute("title", team.account("olga"))
    if language == "en":
        check_accessible(olga)
        screenshot(olga, "approval-task")
    olga.select_option("#assignee_id", team.account("oscar"))
    olga.fill("#reassign-reason", "休假")
    olga.locator("form.reassign button").click()
    expect(olga.locator(".task .assignee")).to_have_text("oscar")

    oscar = new_page(browser, language)
    sign_in(oscar, site, team.tokens["oscar"], then="/console/tasks/")
    mine = oscar.locator(f'tr[data-instance="{instance["id"]}"]')
    mine.locator("input[type=checkbox]").check()
    oscar.fill("#bulk-comment", "收入证明不足")
    if language == "en":
        check_accessible(oscar)
        screenshot(oscar, "tasks-inbox")
    oscar.get_by_role("button", name=REJECT_PICKED[language]).click()
    done = oscar.locator(f'#bulk-report tr[data-item="{instance["id"]}"]')
    expect(done).to_have_attribute("data-outcome", "DONE")
    expect(done).to_contain_text("REJECTED")
    read = site.api("GET", f"/api/approvals/{instance['id']}")
    assert read["state"] == "REJECTED"
    assert [(c["author"], c["text"]) for c in read["comments"]] == [
        (team.account("oscar"), "收入证明不足")
    ]
