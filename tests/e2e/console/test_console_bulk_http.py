"""Acting in the lists without a browser, on both stores: a schedule row's toggle and run once,
bulk enable, disable, run and delete of schedules (delete asks first), bulk retry and cancel
of runs (cancel asks first), and a reviewer's bulk claim and approve; each reports per row
what happened or why not (a row deleted meanwhile, one changed since the list was read), in
Chinese and English."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

import pytest
from flask import Flask
from flask.testing import FlaskClient
from markupsafe import escape
from werkzeug.test import TestResponse

from tests.e2e.helpers import account, with_reviewer
from tests.support import REVIEWER, Api

SCHEDULES = "/api/workflows/schedules"
LIST = "/console/schedules/"
CSRF = re.compile(r'name="csrf-token" content="([^"]+)"')
REQUEST_ID = re.compile(r'name="request_id" value="([^"]+)"')
REPORT_ROW = re.compile(r'<tr data-item="([^"]+)" data-outcome="([A-Z]+)">(.*?)</tr>', re.DOTALL)


class Browser:
    """The console through a test client of its own, signed in with `token`, in `language`."""

    def __init__(self, app: Flask, token: str, language: str = "en") -> None:
        self.client: FlaskClient = app.test_client()
        self.client.set_cookie("cronledger_lang", language)
        signed = self.post("/console/sign-in", {"token": token})
        assert signed.status_code == 302, signed.text

    def get(self, path: str) -> TestResponse:
        return self.client.get(path)

    def post(self, path: str, data: dict[str, Any]) -> TestResponse:
        """A form posted with the CSRF token of the session."""
        token = CSRF.search(self.get("/console/sign-in").text)
        assert token is not None
        return self.client.post(path, data={**data, "csrf_token": token[1]})


def reported(page: str) -> dict[str, tuple[str, str]]:
    """The bulk report's rows: each item's outcome and its row's text, by id."""
    return {
        key: (outcome, re.sub(r"<[^>]+>", "", text))
        for key, outcome, text in REPORT_ROW.findall(page)
    }


def made(admin: Api, body: dict[str, Any], name: str, **fields: Any) -> dict[str, Any]:
    created = admin.post(SCHEDULES, {**body, "name": name, **fields})
    assert created.status_code == 201, created.json
    return created.json  # type: ignore[no-any-return]


def picked(*schedules: dict[str, Any]) -> dict[str, Any]:
    """What the list's form sends for these rows: their boxes and the versions shown."""
    return {
        "schedule_id": [s["id"] for s in schedules],
        **{f"version:{s['id']}": s["version"] for s in schedules},
    }


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("en", ("1 done, 0 unchanged, 2 refused.", "Changed by someone else", "No longer exists")),
        ("zh", ("1 项已完成，0 项无变化，2 项被拒绝。", "页面读取后已被他人修改", "已不存在")),
    ],
)
def test_a_bulk_disable_reports_each_row_with_the_gone_and_the_stale_refused(
    app: Flask, admin: Api, body: dict[str, Any], language: str, words: tuple[str, ...]
) -> None:
    kept, stale, gone = (
        made(admin, body, n, enabled=True) for n in ("财务日报", "财务周报", "财务月报")
    )
    browser = Browser(app, admin.token, language)
    listed = browser.get(LIST).text
    for schedule in (kept, stale, gone):
        assert f'name="version:{schedule["id"]}" value="{schedule["version"]}"' in listed
    admin.post(f"{SCHEDULES}/{stale['id']}/disable", {"reason": "someone else"})
    admin.delete(f"{SCHEDULES}/{gone['id']}?version={gone['version']}")

    answer = browser.post(f"{LIST}bulk", {"action": "disable", **picked(kept, stale, gone)})
    assert answer.status_code == 200, answer.text
    summary, stale_words, gone_words = words
    assert summary in answer.text
    rows = reported(answer.text)
    assert [rows[s["id"]][0] for s in (kept, stale, gone)] == ["DONE", "REFUSED", "REFUSED"]
    assert "财务日报" in rows[kept["id"]][1]
    assert "VERSION_CONFLICT" in rows[stale["id"]][1]
    assert stale_words in rows[stale["id"]][1]
    assert "NOT_FOUND" in rows[gone["id"]][1]
    assert gone_words in rows[gone["id"]][1]
    assert admin.get(f"{SCHEDULES}/{kept['id']}").json["enabled"] is False


def test_a_bulk_enable_without_a_pick_is_refused_and_nothing_changes(
    app: Flask, admin: Api, body: dict[str, Any]
) -> None:
    schedule = made(admin, body, "one")
    browser = Browser(app, admin.token, "zh")
    refused = browser.post(f"{LIST}bulk", {"action": "enable"})
    assert refused.status_code == 422
    assert "请至少选择一个定时任务。" in refused.text
    nonsense = browser.post(f"{LIST}bulk", {"action": "pause", **picked(schedule)})
    assert nonsense.status_code == 400
    assert admin.get(f"{SCHEDULES}/{schedule['id']}").json["version"] == schedule["version"]


def test_bulk_run_queues_one_run_a_schedule_and_the_same_form_again_queues_none(
    app: Flask, admin: Api, body: dict[str, Any]
) -> None:
    first, second = made(admin, body, "one"), made(admin, body, "two")
    browser = Browser(app, admin.token)
    request_id = REQUEST_ID.search(browser.get(LIST).text)
    assert request_id is not None
    form = {"action": "run", "request_id": request_id[1], **picked(first, second)}
    answer = browser.post(f"{LIST}bulk", form)
    assert {outcome for outcome, _ in reported(answer.text).values()} == {"DONE"}
    assert answer.text.count("Queued to run once") == 2
    again = browser.post(f"{LIST}bulk", form)
    assert {outcome for outcome, _ in reported(again.text).values()} == {"UNCHANGED"}
    for schedule in (first, second):
        assert admin.get(f"{SCHEDULES}/{schedule['id']}/runs").json["total"] == 1


def test_bulk_delete_asks_first_then_deletes_each_at_the_version_the_list_showed(
    app: Flask, admin: Api, body: dict[str, Any]
) -> None:
    quiet, edited = made(admin, body, "quiet"), made(admin, body, "edited")
    browser = Browser(app, admin.token, "zh")
    form = {"action": "delete", "reason": "下线", **picked(quiet, edited)}
    asked = browser.post(f"{LIST}bulk", {**form, "filter_name": "quiet"})
    assert asked.status_code == 200
    assert "删除 2 个定时任务？" in asked.text
    assert all(name in asked.text for name in ("quiet", "edited"))
    assert 'name="confirmed" value="1"' in asked.text
    assert 'name="filter_name" value="quiet"' in asked.text
    assert 'value="下线"' in asked.text
    assert admin.get(f"{SCHEDULES}/{quiet['id']}").status_code == 200  # nothing yet

    admin.post(f"{SCHEDULES}/{edited['id']}/enable", {})  # meanwhile
    done = browser.post(f"{LIST}bulk", {**form, "confirmed": "1"})
    assert done.status_code == 200
    rows = reported(done.text)
    assert (rows[quiet["id"]][0], rows[edited["id"]][0]) == ("DONE", "REFUSED")
    assert "VERSION_CONFLICT" in rows[edited["id"]][1]
    assert admin.get(f"{SCHEDULES}/{quiet['id']}").status_code == 404
    assert admin.get(f"{SCHEDULES}/{edited['id']}").status_code == 200


def test_an_operator_is_offered_no_bulk_delete_and_is_refused_one(
    app: Flask, admin: Api, body: dict[str, Any]
) -> None:
    schedule = made(admin, body, "kept")
    operator = account(admin, "olga", ["operator"])
    browser = Browser(app, operator.token)
    listed = browser.get(LIST).text
    assert 'value="disable"' in listed
    assert 'value="delete"' not in listed
    refused = browser.post(
        f"{LIST}bulk", {"action": "delete", "confirmed": "1", **picked(schedule)}
    )
    assert refused.status_code == 403
    assert admin.get(f"{SCHEDULES}/{schedule['id']}").status_code == 200


def test_a_row_toggle_comes_back_to_the_list_as_filtered_and_run_once_opens_the_run(
    app: Flask, admin: Api, body: dict[str, Any]
) -> None:
    schedule = made(admin, body, "每日核对")
    browser = Browser(app, admin.token, "zh")
    listed = browser.get(f"{LIST}?name=每日核对").text
    assert f'aria-label="{escape("启用 每日核对")}"' in listed
    toggled = browser.post(
        f"{LIST}{schedule['id']}/enable",
        {"version": schedule["version"], "next": "/console/schedules/?name=每日核对"},
    )
    assert toggled.status_code == 303
    assert unquote(toggled.location) == "/console/schedules/?name=每日核对"
    back = browser.get(toggled.location).text
    assert "已启用“每日核对”。" in back
    assert f'aria-label="{escape("停用 每日核对")}"' in back
    elsewhere = browser.post(
        f"{LIST}{schedule['id']}/disable", {"version": 2, "next": "https://example.com/"}
    )
    assert elsewhere.location.endswith(f"{LIST}{schedule['id']}")  # not another site
    ran = browser.post(f"{LIST}{schedule['id']}/run", {"version": 3, "request_id": "row-1"})
    assert ran.status_code == 303
    assert re.search(r"/console/runs/[0-9a-f-]{36}\?done=queued$", ran.location)


def test_runs_are_cancelled_in_bulk_after_asking_and_retried_each_as_its_state_allows(
    app: Flask, admin: Api, body: dict[str, Any]
) -> None:
    schedule = made(admin, body, "runs")
    first, second = (
        admin.post(f"{SCHEDULES}/{schedule['id']}/run", {"request_id": key}).json
        for key in ("a", "b")
    )
    admin.post(
        f"{SCHEDULES}/{schedule['id']}/runs/{second['id']}/cancel", {}
    )  # someone else, meanwhile
    browser = Browser(app, admin.token, "zh")
    listed = browser.get("/console/runs/").text
    assert f'id="pick-{first["id"]}"' in listed
    form = {"action": "cancel", "run_id": [first["id"], second["id"]]}
    asked = browser.post("/console/runs/bulk", form)
    assert asked.status_code == 200
    assert "取消 2 条执行？" in asked.text
    assert admin.get(f"/api/workflows/runs/{first['id']}").json["status"] == "PENDING"

    done = browser.post("/console/runs/bulk", {**form, "confirmed": "1"})
    rows = reported(done.text)
    assert (rows[first["id"]][0], rows[second["id"]][0]) == ("DONE", "REFUSED")
    assert "INVALID_STATE" in rows[second["id"]][1]
    assert "当前状态不允许此操作" in rows[second["id"]][1]
    assert admin.get(f"/api/workflows/runs/{first['id']}").json["status"] == "CANCELLED"

    retried = browser.post("/console/runs/bulk", {**form, "action": "retry"})
    assert {outcome for outcome, _ in reported(retried.text).values()} == {"DONE"}
    nothing = browser.post("/console/runs/bulk", {"action": "retry"})
    assert nothing.status_code == 422
    assert "请至少选择一条执行日志。" in nothing.text


@pytest.fixture
def waiting(admin: Api) -> list[dict[str, Any]]:
    """Two instances `root` submitted, waiting for a reviewer (vera or olga) to claim them."""
    with_reviewer(admin)
    account(admin, "olga", ["operator"])
    definition = admin.post(
        "/api/definitions",
        {
            "key": "review",
            "name": "Review",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": {"accounts": [REVIEWER, "olga"]},
        },
    ).json
    admin.post(f"/api/definitions/{definition['id']}/publish")
    return [
        admin.post(
            "/api/approvals",
            {
                "command_id": f"submit-{title}",
                "definition_id": definition["id"],
                "title": title,
                "material_version": 1,
            },
        ).json
        for title in ("合同 A", "合同 B")
    ]


def test_a_reviewer_claims_and_approves_picked_tasks_each_through_the_one_rule(
    app: Flask, admin: Api, waiting: list[dict[str, Any]]
) -> None:
    first, second = waiting
    olga = Api(admin.client, admin.post("/api/accounts/olga/tokens").json["token"])
    olga.post(f"/api/approvals/{first['id']}/claim", {"command_id": "olga-1"})  # first
    vera = Api(admin.client, admin.post(f"/api/accounts/{REVIEWER}/tokens").json["token"])
    browser = Browser(app, vera.token, "zh")
    claimable = browser.get("/console/tasks/?scope=claimable").text
    assert f'value="{second["id"]}"' in claimable
    batch = re.search(r'name="batch" value="([^"]+)"', claimable)
    assert batch is not None
    claimed = browser.post(
        "/console/tasks/claim", {"instance_id": [first["id"], second["id"]], "batch": batch[1]}
    )
    rows = reported(claimed.text)
    assert (rows[first["id"]][0], rows[second["id"]][0]) == ("REFUSED", "DONE")
    assert "olga" in rows[first["id"]][1]
    assert admin.get(f"/api/approvals/{second['id']}").json["tasks"][0]["assignee_id"] == REVIEWER
    again = browser.post("/console/tasks/claim", {"instance_id": [second["id"]], "batch": batch[1]})
    assert reported(again.text)[second["id"]][0] == "UNCHANGED"

    approved = browser.post(
        "/console/tasks/decide",
        {"instance_id": [first["id"], second["id"]], "decision": "approve", "batch": "b-2"},
    )
    rows = reported(approved.text)
    assert (rows[first["id"]][0], rows[second["id"]][0]) == ("REFUSED", "DONE")
    assert "APPROVED" in rows[second["id"]][1]
    assert admin.get(f"/api/approvals/{first['id']}").json["state"] == "WAITING_REVIEW"
    timeline = admin.get(f"/api/approvals/{first['id']}/timeline").json["items"]
    refusals = [e for e in timeline if e["type"] == "ApprovalInstance.CommandRejected"]
    assert [(e["actor"], e["data"]["command"]) for e in refusals] == [
        (REVIEWER, "claim"),
        (REVIEWER, "approve"),
    ]  # each refusal recorded, as the single command's would be
    assert all(e["command_id"].startswith("console-") for e in refusals)

    unpicked = browser.post("/console/tasks/decide", {"decision": "approve"})
    assert unpicked.status_code == 422
    assert "请至少选择一个待办。" in unpicked.text


def test_the_schedules_list_offers_row_actions_and_the_picked_actions_in_both_languages(
    app: Flask, admin: Api, body: dict[str, Any]
) -> None:
    made(admin, body, "one")
    for language, shown in (
        ("en", ("Run once", "Enable the picked", "Delete the picked…", "More")),
        ("zh", ("执行一次", "批量启用", "批量删除…", "更多")),
    ):
        page = Browser(app, admin.token, language).get(LIST).text
        for words in shown:
            assert words in page, (language, words)
