"""The definition form's fields of issue 35 through Flask's test client, on both stores: the
cancellation definition, the longest pause and where a return's revise goes back to, given when
a definition is created and when it is edited, shown on its card, refused next to the field."""

from __future__ import annotations

import re
from typing import Any

from werkzeug.test import TestResponse

from tests.e2e.console.conftest import Console
from tests.e2e.console.test_console_directory_http import ENGLISH, field_error
from tests.support import Api

DEFINITIONS = "/console/directory/definitions"
CHINESE = {"Accept-Language": "zh-CN"}


def new_definition(console: Console, key: str, **fields: Any) -> TestResponse:
    form = {"key": key, "name": key.title(), "review_window_seconds": "7200", **fields}
    return console.post(DEFINITIONS, {"reviewers.roles": ["operator"], **form})


def card(page: str, key: str) -> str:
    return page.split(f'id="definition-{key}"', 1)[1].split("</article>", 1)[0]


def test_a_definition_names_its_cancellation_pause_and_return_and_shows_them(
    console: Console, admin: Api
) -> None:
    refund = admin.post(
        "/api/definitions",
        {
            "key": "refund",
            "name": "退款",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": {"roles": ["operator"]},
        },
    ).json
    form = console.page(DEFINITIONS, headers=CHINESE)
    assert f'<option value="{refund["id"]}">退款 (refund)</option>' in form
    made = new_definition(
        console,
        "loan",
        cancellation_definition=refund["id"],
        max_pause_seconds="600",
        return_to="returning",
    )
    assert made.status_code == 302
    loan = admin.get("/api/definitions/by-key/loan").json
    assert (loan["cancellation_definition"], loan["max_pause_seconds"], loan["return_to"]) == (
        refund["id"],
        600,
        "returning",
    )
    shown = card(console.page(DEFINITIONS, headers=CHINESE), "loan")
    for words in ("退回的那一级", "600 秒", "退款", "<code>refund</code>"):
        assert words in shown, words
    shown = card(console.page(DEFINITIONS, headers=ENGLISH), "refund")
    assert "no limit" in shown
    assert "The first level" in shown


def test_an_edit_shows_the_saved_values_changes_them_and_keeps_the_key(
    console: Console, admin: Api
) -> None:
    for key in ("refund", "loan"):
        assert new_definition(console, key).status_code == 302
    loan = admin.get("/api/definitions/by-key/loan").json
    edit = f"{DEFINITIONS}/{loan['id']}/edit"
    page = console.page(edit, headers=ENGLISH)
    assert f'<option value="{loan["id"]}"' not in page  # not itself
    assert 'name="key"' not in page
    assert re.search(r'name="return_to" value="first" checked', page)
    refund_id = admin.get("/api/definitions/by-key/refund").json["id"]
    saved = console.post(
        edit,
        {
            "version": str(loan["version"]),
            "name": "贷款",
            "review_window_seconds": "7200",
            "reviewers.roles": ["operator"],
            "cancellation_definition": refund_id,
            "max_pause_seconds": "300",
            "return_to": "returning",
        },
    )
    assert saved.status_code == 302
    after = admin.get("/api/definitions/by-key/loan").json
    assert (after["name"], after["cancellation_definition"], after["max_pause_seconds"]) == (
        "贷款",
        refund_id,
        300,
    )
    page = console.page(edit, headers=ENGLISH)
    assert f'<option value="{refund_id}" selected>' in page
    assert 'value="300"' in page
    cleared = console.post(
        edit,
        {
            "version": str(after["version"]),
            "name": "贷款",
            "review_window_seconds": "7200",
            "reviewers.roles": ["operator"],
            "return_to": "first",
        },
    )
    assert cleared.status_code == 302
    after = admin.get("/api/definitions/by-key/loan").json
    assert (after["cancellation_definition"], after["max_pause_seconds"]) == (None, None)
    stale = console.post(
        edit,
        {
            "version": str(loan["version"]),
            "name": "旧的",
            "review_window_seconds": "7200",
            "reviewers.roles": ["operator"],
            "return_to": "first",
        },
    )
    assert stale.status_code == 409
    assert admin.get("/api/definitions/by-key/loan").json["name"] == "贷款"


def test_wrong_values_are_refused_next_to_their_fields_in_both_languages(
    console: Console, admin: Api
) -> None:
    answer = new_definition(console, "loan", max_pause_seconds="0", return_to="later")
    assert answer.status_code == 422
    page = answer.get_data(as_text=True)
    assert field_error(page, "max_pause_seconds")
    assert field_error(page, "return_to")
    assert 'aria-describedby="definition-max-pause-hint max_pause_seconds-error"' in page
    answer = new_definition(console, "loan", cancellation_definition="nothing", headers=CHINESE)
    assert answer.status_code == 422
    assert "nothing" in field_error(answer.get_data(as_text=True), "cancellation_definition")
    assert admin.get("/api/definitions").json["total"] == 0


def levels_form(**fields: Any) -> dict[str, Any]:
    """A new definition of two levels: any operator, then two of ann, bob and cai."""
    return {
        "key": "expense",
        "name": "报销",
        "review_window_seconds": "7200",
        "levels.0.name": "主管",
        "levels.0.reviewers.roles": ["operator"],
        "levels.0.approvals_required": "1",
        "levels.0.any_reject_rejects": "on",
        "levels.1.name": "财务",
        "levels.1.reviewers.accounts": ["ann", "bob", "cai"],
        "levels.1.approvals_required": "2",
        "levels.2.name": "",  # the form's empty level
        "levels.2.approvals_required": "1",
        "levels.2.any_reject_rejects": "on",
        **fields,
    }


def level_names(page: str) -> list[str]:
    return re.findall(r'id="levels-\d+-name" name="levels\.\d+\.name" value="([^"]*)"', page)


def test_levels_are_moved_removed_and_added_without_javascript(
    console: Console, admin: Api
) -> None:
    moved = console.post(DEFINITIONS, levels_form(level_action="up.1"))
    assert moved.status_code == 200
    assert level_names(moved.get_data(as_text=True)) == ["财务", "主管", ""]
    removed = console.post(DEFINITIONS, levels_form(level_action="remove.0"))
    assert level_names(removed.get_data(as_text=True)) == ["财务", ""]
    added = console.post(DEFINITIONS, levels_form(level_action="add", **{"levels.2.name": "总监"}))
    page = added.get_data(as_text=True)
    assert level_names(page) == ["主管", "财务", "总监", ""]
    assert 'name="levels.0.reviewers.roles" value="operator" checked' in page
    assert admin.get("/api/definitions").json["total"] == 0  # nothing saved


def test_a_definition_of_levels_is_saved_and_each_levels_error_shown_at_its_level(
    console: Console, admin: Api
) -> None:
    for person in ("ann", "bob", "cai"):
        admin.post("/api/accounts", {"id": person, "name": person, "roles": ["operator"]})
    zero = console.post(DEFINITIONS, levels_form(**{"levels.1.approvals_required": "0"}))
    assert zero.status_code == 422
    assert field_error(zero.get_data(as_text=True), "levels-1-approvals_required")
    too_many = console.post(
        DEFINITIONS, levels_form(**{"levels.1.approvals_required": "4"}), headers=CHINESE
    )
    page = too_many.get_data(as_text=True)
    assert "3" in field_error(page, "levels-1-approvals_required")
    assert 'aria-describedby="levels-1-approvals-hint levels-1-approvals_required-error"' in page
    nobody = console.post(DEFINITIONS, levels_form(**{"levels.0.reviewers.roles": []}))
    assert field_error(nobody.get_data(as_text=True), "levels-0-reviewers")
    unknown = console.post(
        DEFINITIONS, levels_form(**{"levels.1.reviewers.accounts": ["ann", "zed"]})
    )
    assert "zed" in field_error(unknown.get_data(as_text=True), "levels-1-reviewers-accounts")
    both = console.post(DEFINITIONS, levels_form(**{"reviewers.roles": ["operator"]}))
    assert field_error(both.get_data(as_text=True), "reviewers")
    assert admin.get("/api/definitions").json["total"] == 0
    made = console.post(DEFINITIONS, levels_form(restart_deadline_on_revise="on"))
    assert made.status_code == 302
    expense = admin.get("/api/definitions/by-key/expense").json
    assert expense["levels"] == [
        {
            "name": "主管",
            "reviewers": {
                "accounts": [],
                "groups": [],
                "roles": ["operator"],
                "applicant_leader": False,
            },
            "approvals_required": 1,
            "any_reject_rejects": True,
        },
        {
            "name": "财务",
            "reviewers": {
                "accounts": ["ann", "bob", "cai"],
                "groups": [],
                "roles": [],
                "applicant_leader": False,
            },
            "approvals_required": 2,
            "any_reject_rejects": False,
        },
    ]
    assert expense["restart_deadline_on_revise"] is True
    edit = f"{DEFINITIONS}/{expense['id']}/edit"
    assert level_names(console.page(edit)) == ["主管", "财务", ""]
    one_level = console.post(
        edit,
        {
            "version": str(expense["version"]),
            "name": "报销",
            "review_window_seconds": "7200",
            "reviewers.accounts": ["ann"],
            "return_to": "first",
        },
    )
    assert one_level.status_code == 302
    after = admin.get("/api/definitions/by-key/expense").json
    assert (after["levels"], after["reviewers"]["accounts"]) == (None, ["ann"])
    assert after["restart_deadline_on_revise"] is False
