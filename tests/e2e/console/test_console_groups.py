"""Groups in a real browser, in Chinese and English: listed and searched, created with members
and a leader chosen among them, edited, and deleted, a parent refused (GROUP_IS_PARENT) with
the reason in the page's language; a reader sees them and is offered no change."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.console.conftest import (
    Site,
    check_accessible,
    fits_narrow,
    new_page,
    pick,
    screenshot,
    sign_in,
)

GROUPS = "/console/directory/groups/"
WORDS = {
    "en": {
        "h1": "Groups",
        "new": "New group",
        "create": "Create the group",
        "created": "Group {key} created.",
        "save": "Save the group",
        "saved": "Group {key} saved.",
        "delete": "Delete…",
        "confirm": "Delete the group",
        "is_parent": "The group {parent} cannot be deleted: it is the parent of {child}.",
        "deleted": "Group {key} deleted.",
        "members": "2 members",
        "search": "Search",
    },
    "zh": {
        "h1": "用户组",
        "new": "新建用户组",
        "create": "创建用户组",
        "created": "已创建用户组 {key}。",
        "save": "保存用户组",
        "saved": "已保存用户组 {key}。",
        "delete": "删除…",
        "confirm": "删除用户组",
        "is_parent": "无法删除用户组 {parent}：它是 {child} 的上级组。",
        "deleted": "已删除用户组 {key}。",
        "members": "2 名成员",
        "search": "搜索",
    },
}


def people(site: Site, language: str) -> dict[str, str]:
    """Two operators and a company group for one language's run: their ids and keys."""
    names = {name: f"{name}-{language}" for name in ("ann", "bob", "company", "finance")}
    for person in ("ann", "bob"):
        body = {"id": names[person], "name": person.title(), "roles": ["operator"]}
        site.api("POST", "/api/accounts", body)
    site.api("POST", "/api/groups", {"key": names["company"], "name": "总公司"})
    return names


@pytest.mark.parametrize("language", ["zh", "en"])
def test_groups_are_created_edited_searched_and_deleted(
    site: Site, browser: Any, language: str
) -> None:
    from playwright.sync_api import expect

    words, names = WORDS[language], people(site, language)
    finance, company = names["finance"], names["company"]
    page = new_page(browser, language)
    sign_in(page, site, then=GROUPS)
    expect(page.locator("h1")).to_have_text(words["h1"])
    page.get_by_role("link", name=words["new"]).click()
    page.fill("#group-key", finance)
    page.fill("#group-name", "财务部")
    expect(page.locator(f"#group-leader option[value='{names['bob']}']")).to_be_disabled()
    for person in ("ann", "bob"):
        page.check(f"input[name=members][value='{names[person]}']")
    page.select_option("#group-leader", names["bob"])  # a member may now be chosen
    pick(page, "#parent_key", company, "总公司")
    check_accessible(page)
    page.get_by_role("button", name=words["create"]).click()
    expect(page.locator(".notice.good")).to_have_text(words["created"].format(key=finance))
    expect(page.locator("h2").first).to_have_text(words["members"])
    expect(page.locator("#group-leader-shown")).to_contain_text(names["bob"])
    check_accessible(page)
    fits_narrow(page)

    page.uncheck(f"input[name=members][value='{names['bob']}']")  # the leader leaves
    expect(page.locator("#group-leader")).to_have_value("")
    page.select_option("#group-leader", names["ann"])
    page.fill("#group-reason", "bob moved")
    if language == "zh":
        page.evaluate("window.scrollTo(0, 0)")
        screenshot(page, "group-edit")
    page.get_by_role("button", name=words["save"]).click()
    expect(page.locator(".notice.good")).to_have_text(words["saved"].format(key=finance))
    expect(page.locator("#group-leader-shown")).to_contain_text(names["ann"])
    group = site.api("GET", f"/api/groups/by-key/{finance}")
    assert (group["members"], group["leader_id"], group["version"]) == (
        [names["ann"]],
        names["ann"],
        2,
    )

    page.goto(f"{site.url}{GROUPS}")
    expect(page.locator(f"#group-{finance} .parent")).to_have_text(company)
    expect(page.locator(f"#group-{finance} .members")).to_have_text("1")
    check_accessible(page)
    fits_narrow(page)
    if language == "zh":
        page.evaluate("window.scrollTo(0, 0)")
        screenshot(page, "groups")
    page.fill("#q", f"FINANCE-{language.upper()}")
    page.get_by_role("button", name=words["search"]).click()
    expect(page.locator("#groups tbody tr")).to_have_count(1)
    expect(page.locator(f"#group-{finance}")).to_be_visible()

    page.locator(f"#group-{finance} .parent a").click()
    page.get_by_role("link", name=words["delete"]).click()
    page.get_by_role("button", name=words["confirm"]).click()
    refusal = page.locator("form.confirm .notice.bad")
    expect(refusal).to_contain_text(words["is_parent"].format(parent=company, child=finance))
    check_accessible(page)
    assert site.api("GET", f"/api/groups/by-key/{company}")["key"] == company

    page.goto(f"{site.url}{GROUPS}by-key/{finance}")
    page.get_by_role("link", name=words["delete"]).click()
    page.fill("#reason", "merged")
    page.get_by_role("button", name=words["confirm"]).click()
    expect(page.locator(".notice.good")).to_have_text(words["deleted"].format(key=finance))
    expect(page.locator(f"#group-{finance}")).to_have_count(0)


def test_a_reader_sees_the_groups_and_no_change(site: Site, browser: Any) -> None:
    from playwright.sync_api import expect

    site.api("POST", "/api/accounts", {"id": "rhea", "name": "Rhea", "roles": ["requester"]})
    token = site.api("POST", "/api/accounts/rhea/tokens")["token"]
    site.api("POST", "/api/groups", {"key": "sales", "name": "销售部", "members": ["rhea"]})
    page = new_page(browser, "en")
    sign_in(page, site, token, then="/console/tasks/")
    page.get_by_role("link", name="Groups").first.click()
    expect(page.locator("#group-sales")).to_contain_text("销售部")
    expect(page.get_by_role("link", name="New group")).to_have_count(0)
    expect(page.locator(".subnav")).not_to_contain_text("Accounts")
    page.locator("#group-sales a").first.click()
    expect(page.locator("#group-members")).to_contain_text("rhea")
    expect(page.locator("#group-form")).to_have_count(0)
    check_accessible(page)
