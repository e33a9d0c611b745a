"""The console's directory pages through Flask's test client, on both stores."""

from __future__ import annotations

import json
import re
from typing import Any

from flask import Flask, get_template_attribute
from werkzeug.test import TestResponse

from tests.e2e.console.conftest import Console
from tests.e2e.helpers import account
from tests.support import Api

ACCOUNTS = "/console/directory/"
DEFINITIONS = "/console/directory/definitions"
ENGLISH = {"Accept-Language": "en"}
SECRET = re.compile(r"clt_[A-Za-z0-9_-]{20,}")
PRESET = {
    "id": "weekday-morning",
    "title": "Morning check {{date}}",
    "timezone": "Europe/London",
    "trigger": {"kind": "cron", "expression": "0 8 * * MON-FRI"},
    "form_data": {"shift": "early"},
}


def field_error(page: str, field: str) -> str:
    found = re.search(
        rf'id="{re.escape(field)}-error" class="field-error">(.*?)</(p|ul)>', page, re.S
    )
    assert found, f"no error next to {field}"
    return re.sub(r"<[^>]+>", "", found.group(1))


def test_only_directory_managers_see_and_use_the_directory(
    app: Flask, admin: Api, console: Console
) -> None:
    assert 'href="/console/directory/"' in console.page(ACCOUNTS)
    operator = Console(app.test_client())
    operator.sign_in(account(admin, "olga", ["operator"]).token)
    for path in (ACCOUNTS, DEFINITIONS, "/console/directory/accounts/root"):
        refused = operator.get(path)
        assert refused.status_code == 403, path
        assert 'href="/console/directory/"' not in refused.get_data(as_text=True)
    for path in (
        "/console/directory/accounts",
        "/console/directory/accounts/root/tokens",
        "/console/directory/accounts/root/deactivate",
        DEFINITIONS,
    ):
        assert operator.post(path, {"id": "x", "name": "x", "key": "x"}).status_code == 403, path
    assert admin.get("/api/accounts/root").json["active"] is True
    assert [a["id"] for a in admin.get("/api/accounts").json["items"]] == ["root", "olga"]


def test_an_account_is_created_with_roles_and_listed(console: Console, admin: Api) -> None:
    created = console.post(
        "/console/directory/accounts",
        {"id": "ann", "name": "Ann", "roles": ["operator", "auditor"]},
    )
    assert created.status_code == 302
    assert created.headers["Location"] == "/console/directory/accounts/ann"
    assert admin.get("/api/accounts/ann").json["roles"] == ["auditor", "operator"]
    page = console.page(ACCOUNTS, headers=ENGLISH)
    row = page.split('id="account-ann"', 1)[1].split("</tr>", 1)[0]
    assert 'Auditor (<code class="code">auditor</code>), Operator (<code' in row
    assert "Active" in row


def test_a_refused_account_is_explained_next_to_its_fields(console: Console) -> None:
    answer = console.post(
        "/console/directory/accounts", {"id": "root", "name": "Again", "roles": ["admin"]}
    )
    assert answer.status_code == 422
    page = answer.get_data(as_text=True)
    assert "编号为 root 的账号已存在" in field_error(page, "id")
    assert 'value="Again"' in page  # what was typed stays
    answer = console.post(
        "/console/directory/accounts", {"id": "bad id!", "name": "", "roles": ["boss"]}
    )
    page = answer.get_data(as_text=True)
    for field in ("id", "name", "roles"):
        assert field_error(page, field)


def test_a_new_token_is_shown_once_and_works(console: Console, admin: Api) -> None:
    account(admin, "ann", ["auditor"])
    issued = console.post("/console/directory/accounts/ann/tokens")
    assert issued.status_code == 200
    assert issued.headers["Cache-Control"] == "no-store"
    page = issued.get_data(as_text=True)
    (secret,) = set(SECRET.findall(page))
    assert 'id="new-token" type="text"' in page
    assert Api(admin.client, secret).get("/api/workflows/schedules").status_code == 200
    for later in (console.page("/console/directory/accounts/ann"), console.page(ACCOUNTS)):
        assert secret not in later
        assert not SECRET.search(later)
    token_id = re.search(r'id="new-token-id">([^<]+)<', page).group(1)  # type: ignore[union-attr]
    assert f'id="token-{token_id}"' in console.page("/console/directory/accounts/ann")


def test_revoking_a_token_asks_first_then_stops_it(console: Console, admin: Api) -> None:
    account(admin, "ann", ["auditor"])
    page = console.post("/console/directory/accounts/ann/tokens").get_data(as_text=True)
    (secret,) = set(SECRET.findall(page))
    token_id = re.search(r'id="new-token-id">([^<]+)<', page).group(1)  # type: ignore[union-attr]
    path = f"/console/directory/accounts/ann/tokens/{token_id}/revoke"
    assert "Revoke" in console.page(path, headers=ENGLISH)
    assert Api(admin.client, secret).get("/api/workflows/schedules").status_code == 200
    revoked = console.post(path, {"reason": "left the team"})
    assert revoked.status_code == 302
    assert Api(admin.client, secret).get("/api/workflows/schedules").status_code == 401
    timeline = admin.get("/api/accounts/ann/timeline").json["items"]
    assert timeline[-1]["type"] == "Account.TokenRevoked"
    assert timeline[-1]["reason"] == "left the team"
    shown = console.page("/console/directory/accounts/ann", headers=ENGLISH)
    assert "Revoked" in shown.split(f'id="token-{token_id}"', 1)[1].split("</tr>", 1)[0]
    assert (
        console.get(f"/console/directory/accounts/ann/tokens/{'0' * 8}/revoke").status_code == 200
    )
    assert (
        console.post(f"/console/directory/accounts/ann/tokens/{'0' * 8}/revoke").status_code == 404
    )


def test_deactivating_asks_first_and_a_refusal_is_shown(console: Console, admin: Api) -> None:
    account(admin, "ann", ["auditor"])
    question = console.page("/console/directory/accounts/ann/deactivate", headers=ENGLISH)
    assert "Deactivate ann?" in question
    assert admin.get("/api/accounts/ann").json["active"] is True
    done = console.post("/console/directory/accounts/ann/deactivate", {"reason": "on leave"})
    assert done.status_code == 302
    assert admin.get("/api/accounts/ann").json["active"] is False
    assert "Deactivated" in console.page("/console/directory/accounts/ann", headers=ENGLISH)
    console.post("/console/directory/accounts/ann/activate", {})
    assert admin.get("/api/accounts/ann").json["active"] is True

    last_admin = console.post("/console/directory/accounts/root/deactivate", {}, headers=ENGLISH)
    assert last_admin.status_code == 422
    assert "last active admin" in last_admin.get_data(as_text=True)
    stale = console.post("/console/directory/accounts/ann/deactivate", {"version": "1"})
    assert stale.status_code == 422
    assert "请重新加载" in stale.get_data(as_text=True)
    assert admin.get("/api/accounts/ann").json["active"] is True


def test_a_definition_is_created_with_presets_published_and_shown(
    console: Console, admin: Api
) -> None:
    created = console.post(
        DEFINITIONS,
        {
            "key": "daily",
            "name": "Daily check",
            "review_window_seconds": "3600",
            "reviewers.roles": ["admin", "operator"],
            "allow_self_approval": "on",
            "schedule_presets": json.dumps([PRESET]),
        },
    )
    assert created.status_code == 302
    definition = admin.get("/api/definitions/by-key/daily").json
    assert (definition["published"], definition["external"], definition["allow_self_approval"]) == (
        False,
        False,
        True,
    )
    assert definition["schedule_presets"][0]["trigger"] == PRESET["trigger"]
    page = console.page(DEFINITIONS, headers=ENGLISH)
    preset = page.split('id="preset-daily-weekday-morning"', 1)[1].split("</tr>", 1)[0]
    for shown in (
        "Morning check {{date}}",
        "0 8 * * MON-FRI",
        "Europe/London",
        "&#34;shift&#34;: &#34;early&#34;",
    ):
        assert shown in preset, shown
    assert "Unpublished" in page
    version = re.search(r'name="version" value="(\d+)"', page).group(1)  # type: ignore[union-attr]
    published = console.post(
        f"/console/directory/definitions/{definition['id']}/publish", {"version": version}
    )
    assert published.status_code == 302
    assert admin.get("/api/definitions/by-key/daily").json["revision"] == 1
    assert "Published, revision 1" in console.page(DEFINITIONS, headers=ENGLISH)


def test_a_refused_definition_names_each_wrong_field(console: Console, admin: Api) -> None:
    bad_trigger = {**PRESET, "trigger": {"kind": "cron", "expression": "0 99 * * *"}}
    answer = console.post(
        DEFINITIONS,
        {
            "key": "x",
            "name": "X",
            "review_window_seconds": "60",
            "reviewers.roles": ["operator"],
            "schedule_presets": json.dumps([bad_trigger]),
        },
    )
    assert answer.status_code == 422
    assert "schedule_presets.0." in field_error(answer.get_data(as_text=True), "schedule_presets")
    answer = console.post(
        DEFINITIONS,
        {"key": "", "name": "X", "review_window_seconds": "soon", "schedule_presets": "[{"},
    )
    page = answer.get_data(as_text=True)
    for field in ("key", "review_window_seconds", "schedule_presets"):
        assert field_error(page, field), field
    assert "[{" in page  # what was typed stays
    assert admin.get("/api/definitions").json["total"] == 0


def test_a_form_without_its_csrf_token_changes_nothing(
    app: Flask, console: Console, admin: Api
) -> None:
    answer = console.client.post("/console/directory/accounts", data={"id": "eve", "name": "Eve"})
    assert answer.status_code in (400, 403)
    assert admin.get("/api/accounts/eve").status_code == 404


def test_the_directory_in_chinese(console: Console) -> None:
    chinese = {"Accept-Language": "zh-CN"}
    assert "新建账号" in console.page(ACCOUNTS, headers=chinese)
    assert "新建流程定义" in console.page(DEFINITIONS, headers=chinese)


def new_definition(console: Console, key: str, **fields: Any) -> TestResponse:
    """The new-definition form sent with `fields` (named as the form names them)."""
    form = {"key": key, "name": key.title(), "review_window_seconds": "7200", **fields}
    return console.post(DEFINITIONS, {"escalation.mode": "reassign", **form})


def test_a_new_definition_must_name_its_reviewers(console: Console, admin: Api) -> None:
    answer = new_definition(console, "nobody")
    assert answer.status_code == 422
    page = answer.get_data(as_text=True)
    assert "请至少指定一个审批人" in field_error(page, "reviewers")
    assert 'aria-describedby="reviewers-hint reviewers-error"' in page
    assert admin.get("/api/definitions").json["total"] == 0
    chinese = new_definition(console, "nobody", headers={"Accept-Language": "zh-CN"})
    assert "至少指定一项" in chinese.get_data(as_text=True)
    made = new_definition(console, "leader", **{"reviewers.applicant_leader": "on"})
    assert made.status_code == 302
    assert admin.get("/api/definitions/by-key/leader").json["reviewers"] == {
        "accounts": [],
        "groups": [],
        "roles": [],
        "applicant_leader": True,
    }


def test_reviewers_and_the_escalation_are_sent_and_shown(console: Console, admin: Api) -> None:
    for person in ("ann", "boss"):
        account(admin, person, ["operator"])
    admin.post("/api/groups", {"key": "finance", "name": "财务部", "members": ["ann"]})
    form = console.page(DEFINITIONS, headers=ENGLISH)
    for offered in (
        'name="reviewers.accounts" value="ann"',
        'name="reviewers.groups" value="finance"',
        'name="reviewers.roles" value="operator"',
        '<option value="finance">财务部 (finance)</option>',
        'name="escalation.mode" value="reassign" checked',
    ):
        assert offered in form, offered
    assert 'name="reviewers.roles" value="requester"' not in form  # a role that may not decide
    made = new_definition(
        console,
        "loan",
        **{
            "reviewers.accounts": ["ann"],
            "reviewers.groups": ["finance"],
            "reviewers.roles": ["operator"],
            "reviewers.applicant_leader": "on",
            "escalation.after_seconds": "3600",
            "escalation.account_id": "boss",
            "escalation.mode": "notify",
        },
    )
    assert made.status_code == 302, made.get_data(as_text=True)
    definition = admin.get("/api/definitions/by-key/loan").json
    assert definition["reviewers"] == {
        "accounts": ["ann"],
        "groups": ["finance"],
        "roles": ["operator"],
        "applicant_leader": True,
    }
    assert (definition["escalation"]["account_id"], definition["escalation"]["mode"]) == (
        "boss",
        "notify",
    )
    card = console.page(DEFINITIONS, headers=ENGLISH).split('id="definition-loan"', 1)[1]
    shown = card.split('class="reviewers-shown">', 1)[1].split("</dd>", 1)[0]
    for part in (
        "<code>ann</code>",
        ">finance<",
        '<code class="code">operator</code>',
        "group leader",
    ):
        assert part in shown, part
    escalation = card.split('class="escalation-shown">', 1)[1].split("</dd>", 1)[0]
    assert "to boss after 3600 s waiting; they are told" in escalation


def test_the_form_sends_the_body_the_api_takes(console: Console, admin: Api) -> None:
    """The escalation to a group's leader, sent by the form and as the API's body, has the same
    outcome: the form's fields are the body's."""
    account(admin, "ann", ["operator"])
    admin.post("/api/groups", {"key": "finance", "name": "Finance", "members": ["ann"]})
    escalation = {"after_seconds": 3600, "group_leader_of": "finance", "mode": "notify"}
    body = {
        "key": "by-api",
        "name": "By API",
        "external": False,
        "review_window_seconds": 7200,
        "reviewers": {"groups": ["finance"], "applicant_leader": True},
        "escalation": escalation,
    }
    by_api = admin.post("/api/definitions", body)
    by_form = new_definition(
        console,
        "by-form",
        **{
            "reviewers.groups": ["finance"],
            "reviewers.applicant_leader": "on",
            **{f"escalation.{name}": str(value) for name, value in escalation.items()},
        },
    )
    if by_api.status_code == 201:
        assert by_form.status_code == 302, by_form.get_data(as_text=True)
        made = admin.get("/api/definitions/by-key/by-form").json
        assert (made["reviewers"], made["escalation"]) == (
            by_api.json["reviewers"],
            by_api.json["escalation"],
        )
    else:
        assert (by_api.status_code, by_form.status_code) == (422, 422)
        page = by_form.get_data(as_text=True)
        for field in by_api.json["errors"]:
            assert field_error(page, field.replace(".", "-")), field


def test_reviewers_from_before_are_anyone_who_may_decide(app: Flask) -> None:
    for language, words in (("en", "anyone who may decide"), ("zh-CN", "任何有审批权限的人")):
        with app.test_request_context(headers={"Accept-Language": language}):
            shown = get_template_attribute("console/directory/_words.html", "reviewers_shown")
            assert str(shown(None)) == words
