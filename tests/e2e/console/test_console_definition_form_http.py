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
    assert "no limit" in shown and "The first level" in shown


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
