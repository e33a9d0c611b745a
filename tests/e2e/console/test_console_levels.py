"""Levels and countersign in a real browser (both languages): a countersign level's progress,
and the applicant's revise, after which the earlier approval shows lapsed (issue 35)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest

from tests.e2e.console.conftest import Site, check_accessible, new_page, sign_in

PROGRESS = {
    "en": ("Level 1 财务 · countersign 1/2 approved", "Level 1 财务 · countersign 0/2 approved"),
    "zh": ("第 1 级 财务 · 会签 1/2 已通过", "第 1 级 财务 · 会签 0/2 已通过"),
}
REVISE = {"en": "Revise", "zh": "修改资料"}
LAPSED = {"en": "lapsed", "zh": "已失效"}
LEVEL = {"en": "Level 1", "zh": "第 1 级"}


@pytest.fixture(scope="module")
def team(site: Site) -> dict[str, Any]:
    suffix = uuid.uuid4().hex[:8]
    tokens = {}
    for name, roles in (("ivy", ["requester"]), ("fa", ["operator"]), ("fb", ["operator"])):
        site.api("POST", "/api/accounts", {"id": f"{name}-{suffix}", "name": name, "roles": roles})
        tokens[name] = site.api("POST", f"/api/accounts/{name}-{suffix}/tokens")["token"]
    finance = {
        "name": "财务",
        "reviewers": {"accounts": [f"fa-{suffix}", f"fb-{suffix}"]},
        "approvals_required": 2,
    }
    definition = site.api(
        "POST",
        "/api/definitions",
        {
            "key": f"pay-{suffix}",
            "name": "付款审批",
            "external": False,
            "review_window_seconds": 7200,
            "levels": [finance],
        },
    )
    site.api("POST", f"/api/definitions/{definition['id']}/publish")
    return {"definition_id": definition["id"], "tokens": tokens}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_countersign_progress_and_a_revise_that_lapses_the_approval(
    site: Site, browser: Any, team: dict[str, Any], language: str
) -> None:
    from playwright.sync_api import expect

    tokens = team["tokens"]
    ivy_api = dataclasses.replace(site, token=tokens["ivy"])
    instance = ivy_api.api(
        "POST",
        "/api/approvals",
        {
            "command_id": uuid.uuid4().hex,
            "definition_id": team["definition_id"],
            "title": f"付款 {language}",
            "material_version": 1,
        },
    )
    fa_api = dataclasses.replace(site, token=tokens["fa"])
    path = f"/api/approvals/{instance['id']}/approve"
    fa_api.api("POST", path, {"command_id": uuid.uuid4().hex, "material_version": 1})

    fb = new_page(browser, language)
    sign_in(fb, site, tokens["fb"], then="/console/tasks/?scope=claimable")
    row = fb.locator(f'tr[data-instance="{instance["id"]}"]')
    expect(row.locator("td.level")).to_have_text(LEVEL[language])

    ivy = new_page(browser, language)
    sign_in(ivy, site, tokens["ivy"], then=f"/console/approvals/{instance['id']}")
    level = ivy.locator('li.level[data-level="1"]')
    expect(level.locator("h3 .progress")).to_have_text(PROGRESS[language][0])
    ivy.fill("#revise-form-data", '{"amount": 90}')
    ivy.fill("#revise-reason", "金额更正")
    ivy.get_by_role("button", name=REVISE[language], exact=True).click()
    expect(level.locator("h3 .progress")).to_have_text(PROGRESS[language][1])
    lapsed = level.locator("li.vote.lapsed")
    expect(lapsed.locator(".lapsed-mark")).to_have_text(LAPSED[language])
    expect(lapsed.locator("s")).to_have_count(1)
    if language == "en":
        check_accessible(ivy)
    read = site.api("GET", f"/api/approvals/{instance['id']}")
    assert (read["material_version"], read["form_data"]) == (2, {"amount": 90})
    assert [v["lapsed"] for v in read["votes"]] == [True]
