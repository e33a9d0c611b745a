"""The console's groups (web/console/groups.py) through Flask's test client, on both stores:
listed and searched for whoever may list approvals, created, edited and deleted only by the
directory's managers, with the API's refusals (GROUP_IS_PARENT in both languages)."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask

from tests.e2e.console.conftest import Console
from tests.e2e.helpers import account
from tests.support import Api

GROUPS = "/console/directory/groups/"
ENGLISH = {"Accept-Language": "en"}
CHINESE = {"Accept-Language": "zh-CN"}
# The finance department as a form sends it.
FINANCE = {"name": "财务部", "members": ["ann", "bob"], "leader_id": "bob", "parent_key": "company"}


def group(admin: Api, key: str, **fields: Any) -> dict[str, Any]:
    created = admin.post("/api/groups", {"key": key, "name": key.title(), **fields})
    assert created.status_code == 201, created.json
    return created.json  # type: ignore[no-any-return]


def row(page: str, key: str) -> str:
    return page.split(f'id="group-{key}"', 1)[1].split("</tr>", 1)[0]


def field_error(page: str, field: str) -> str:
    found = re.search(rf'id="{re.escape(field)}-error" class="field-error">(.*?)</p>', page, re.S)
    assert found, f"no error next to {field}"
    return found.group(1)


def test_the_list_shows_leader_parent_and_members_and_searches(
    console: Console, admin: Api
) -> None:
    for person in ("ann", "bob"):
        account(admin, person, ["operator"])
    group(admin, "company", name="总公司")
    group(admin, "finance", **FINANCE)
    page = console.page(GROUPS, headers=ENGLISH)
    finance = row(page, "finance")
    assert "财务部" in finance
    assert "<code>bob</code>" in row(page, "finance").split('class="leader"', 1)[1]
    assert ">company<" in finance.split('class="parent"', 1)[1]
    assert '<td class="members">2</td>' in finance
    assert "2 groups" in page
    found = console.page(f"{GROUPS}?q=FIN", headers=ENGLISH)
    assert 'id="group-finance"' in found
    assert 'id="group-company"' not in found
    assert "1 group holds “FIN”" in found
    parent = console.get(f"{GROUPS}by-key/company")
    assert parent.status_code == 302
    assert (
        parent.headers["Location"]
        == f"{GROUPS}{admin.get('/api/groups/by-key/company').json['id']}"
    )
    assert console.get(f"{GROUPS}by-key/nowhere").status_code == 404


def test_the_pages_of_a_search_keep_it(console: Console, admin: Api) -> None:
    for number in range(51):
        group(admin, f"team-{number:02d}")
    group(admin, "board")
    first = console.page(f"{GROUPS}?q=team", headers=ENGLISH)
    assert "51 groups hold “team”" in first
    assert f'href="{GROUPS}?q=team&amp;page=2"' in first
    second = console.page(f"{GROUPS}?page=2&q=team", headers=ENGLISH)
    assert 'id="group-team-50"' in second
    assert 'id="group-board"' not in second


def test_a_group_is_created_with_members_a_leader_and_a_parent(
    console: Console, admin: Api
) -> None:
    for person in ("ann", "bob"):
        account(admin, person, ["operator"])
    group(admin, "company")
    form = console.page(f"{GROUPS}new", headers=ENGLISH)
    assert 'name="members" value="ann"' in form
    assert 'id="parent_key" name="parent_key" value=""' in form  # a type-ahead picker
    created = console.post(GROUPS, {"key": "finance", **FINANCE})
    assert created.status_code == 302, created.get_data(as_text=True)
    made = admin.get("/api/groups/by-key/finance").json
    assert created.headers["Location"] == f"{GROUPS}{made['id']}"
    assert {k: made[k] for k in FINANCE} == FINANCE
    page = console.page(created.headers["Location"], headers=ENGLISH)
    assert "已创建用户组 finance。" in page  # said in the language the form was sent in
    assert "2 members" in page


def test_a_refused_group_is_explained_next_to_its_fields(console: Console, admin: Api) -> None:
    account(admin, "ann", ["operator"])
    group(admin, "company")
    for form, field, said in (
        ({"key": "bad key!", "name": ""}, "key", "请使用 1-64 个字符"),
        ({"key": "company", "name": "Again"}, "key", "已存在"),
        ({"key": "x", "name": "X", "members": ["ann"], "leader_id": "bob"}, "leader_id", "bob"),
        ({"key": "x", "name": "X", "members": ["nobody"]}, "members", "租户中没有账号 nobody"),
        (
            {"key": "x", "name": "X", "parent_key": "nowhere"},
            "parent_key",
            "租户中没有用户组 nowhere",
        ),
    ):
        answer = console.post(GROUPS, form)
        assert answer.status_code == 422, form
        page = answer.get_data(as_text=True)
        assert said in field_error(page, field), form
        assert f'value="{form["key"]}"' in page  # what was typed stays
    assert admin.get("/api/groups").json["total"] == 1


def test_a_group_is_edited_with_the_version_it_was_shown_at(console: Console, admin: Api) -> None:
    for person in ("ann", "bob"):
        account(admin, person, ["operator"])
    group(admin, "company")
    made = group(admin, "finance", members=["ann"], leader_id="ann")
    path = f"{GROUPS}{made['id']}"
    page = console.page(path, headers=ENGLISH)
    assert 'name="version" value="1"' in page
    saved = console.post(path, {"version": "1", **FINANCE, "reason": "reorganised"})
    assert saved.status_code == 302, saved.get_data(as_text=True)
    now = admin.get(f"/api/groups/{made['id']}").json
    assert ({k: now[k] for k in FINANCE}, now["version"]) == (FINANCE, 2)
    timeline = admin.get(f"/api/groups/{made['id']}/timeline").json["items"]
    assert timeline[-1]["reason"] == "reorganised"
    stale = console.post(path, {"version": "1", "name": "Again", "members": []})
    assert stale.status_code == 409
    assert "请重新加载" in stale.get_data(as_text=True)
    company = admin.get("/api/groups/by-key/company").json["id"]
    cycle = console.post(
        f"{GROUPS}{company}", {"version": "1", "name": "Company", "parent_key": "finance"}
    )
    assert cycle.status_code == 422
    assert "形成环" in field_error(cycle.get_data(as_text=True), "parent_key")


def test_a_parent_is_not_deleted_and_says_why_in_both_languages(
    console: Console, admin: Api
) -> None:
    company = group(admin, "company")
    group(admin, "finance", parent_key="company")
    path = f"{GROUPS}{company['id']}/delete"
    assert "Delete the group company (Company)?" in console.page(path, headers=ENGLISH)
    refused = console.post(path, {"version": "1"}, headers=CHINESE)
    assert refused.status_code == 409
    assert "无法删除用户组 company：它是 finance 的上级组。" in refused.get_data(as_text=True)
    english = console.post(path, {"version": "1"}, headers=ENGLISH)
    assert "The group company cannot be deleted: it is the parent of finance." in english.get_data(
        as_text=True
    )
    assert admin.get(f"/api/groups/{company['id']}").status_code == 200
    finance = admin.get("/api/groups/by-key/finance").json
    deleted = console.post(f"{GROUPS}{finance['id']}/delete", {"version": "1", "reason": "closed"})
    assert deleted.status_code == 302
    assert admin.get(f"/api/groups/{finance['id']}").status_code == 404
    assert console.post(path, {"version": "1"}).status_code == 302
    assert admin.get("/api/groups").json["total"] == 0


def test_readers_see_the_groups_and_only_managers_change_them(
    app: Flask, console: Console, admin: Api
) -> None:
    made = group(admin, "finance")
    reader = Console(app.test_client())
    reader.sign_in(account(admin, "olga", ["operator"]).token)
    listed = reader.page(GROUPS, headers=ENGLISH)
    assert 'href="/console/directory/groups/"' in listed  # the menu leads here
    assert 'id="group-finance"' in listed
    assert "New group" not in listed
    assert 'href="/console/directory/"' not in listed  # no accounts for them
    shown = reader.page(f"{GROUPS}{made['id']}", headers=ENGLISH)
    assert 'id="group-form"' not in shown
    for path in (f"{GROUPS}new", f"{GROUPS}{made['id']}/delete"):
        assert reader.get(path).status_code == 403, path
    for path in (GROUPS, f"{GROUPS}{made['id']}", f"{GROUPS}{made['id']}/delete"):
        assert reader.post(path, {"key": "x", "name": "x", "version": "1"}).status_code == 403
    assert admin.get(f"/api/groups/{made['id']}").json["version"] == 1
    integration = Console(app.test_client())
    integration.sign_in(account(admin, "ivan", ["integration"]).token)
    assert integration.get(GROUPS).status_code == 403
    assert "新建用户组" in console.page(GROUPS, headers=CHINESE)
