"""Problems in the reader's language: with `Accept-Language: zh-CN` every problem's title,
detail and field messages are Chinese (codes, field names and the test's own ids aside, as
tests/e2e/english.py reads them); with `en`, or none, they are the English they always were;
the codes never change, and the answer names its language.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from tests.e2e.english import english_words
from tests.e2e.helpers import account
from tests.support import REVIEWER, Api, FakeClock
from web import MAX_BODY_BYTES, create_app

SCHEDULES = "/api/workflows/schedules"
NO_SUCH = "00000000-0000-4000-8000-000000000000"
KNOWN = ("root", REVIEWER, "olga", "nobody", "submitted", NO_SUCH)  # ids the test gives
Call = Callable[[dict[str, str]], TestResponse]


@pytest.fixture
def services(store_url: str, clock: FakeClock) -> Iterator[Services]:
    """Services that refuse many requests a minute without a 429 (but one test's own)."""
    settings = Settings(database_url=store_url, refusals_per_minute=10_000)
    opened = open_services(settings, clock)
    yield opened
    opened.close()


def words_of(problem: dict[str, Any]) -> list[str]:
    """What a person reads in a problem: its title, its detail, its field messages."""
    messages = [m for listed in problem.get("errors", {}).values() for m in listed]
    return [problem["title"], problem["detail"], *messages]


def english_of(problem: dict[str, Any]) -> list[str]:
    return [text for text in words_of(problem) if english_words(text, KNOWN, codes=True)]


@pytest.fixture
def calls(admin: Api, body: dict[str, Any], definition_id: str) -> dict[str, Call]:
    """A bad request of each kind, by name: each answers a problem, in any language."""
    auditor = account(admin, "olga", ["auditor"])
    created = admin.post(SCHEDULES, {**body, "initiator_id": "root"}).json
    schedule = f"{SCHEDULES}/{created['id']}"
    ran = admin.post(f"{schedule}/run", {"request_id": "once"}).json
    run = f"{schedule}/runs/{ran['id']}"
    assert admin.post(f"{run}/cancel", {}).status_code == 202
    submission = {
        "command_id": "submitted",
        "definition_id": definition_id,
        "title": "合同 A",
        "form_data": {},
        "material_version": 1,
    }
    instance = admin.post("/api/approvals", submission).json["id"]
    mine = admin.post("/api/approvals", {**submission, "command_id": "mine"}).json["id"]
    vera = Api(admin.client, admin.post(f"/api/accounts/{REVIEWER}/tokens").json["token"])
    approved = {"command_id": "first", "material_version": 1}
    assert vera.post(f"/api/approvals/{instance}/approve", approved).status_code == 200
    bad_fields = {
        **body,
        "name": "",
        "definition_id": "x" * 65,
        "initiator_id": 7,
        "overlap_policy": "sometimes",
        "enabled": "yes",
        "colour": "blue",
        "form_data": [],
    }
    del bad_fields["trigger"]
    bad_rules = {
        **body,
        "trigger": {"kind": "cron", "expression": "61 9 * * *"},
        "timezone": "Mars/Olympus",
        "title_template": "{{when}}",
        "initiator_id": "nobody",
    }
    windows = {
        **body,
        "trigger": {
            "kind": "window-interval",
            "weekdays": [3, 1],
            "windows": [{"start": "18:00", "end": "09:00"}],
            "interval_minutes": 0,
        },
    }
    raw = {"Content-Type": "application/json"}

    def with_headers(call: Callable[..., TestResponse], *args: Any, **kwargs: Any) -> Call:
        given = kwargs.pop("headers", {})
        return lambda headers: call(*args, headers={**given, **headers}, **kwargs)

    client = admin.client
    return {
        "every field error": with_headers(admin.post, SCHEDULES, bad_fields),
        "every broken rule": with_headers(admin.post, SCHEDULES, bad_rules),
        "trigger errors": with_headers(admin.post, SCHEDULES, windows),
        "a cron field out of range": with_headers(
            admin.post,
            "/api/workflows/schedules/preview",
            {"trigger": {"kind": "cron", "expression": "0 25 * * *"}, "timezone": "UTC"},
        ),
        "a body too large": with_headers(
            admin.post, SCHEDULES, data="x" * (MAX_BODY_BYTES + 1), headers=raw
        ),
        "bad JSON": with_headers(admin.post, SCHEDULES, data="{", headers=raw),
        "not an object": with_headers(admin.post, SCHEDULES, data="[1]", headers=raw),
        "no token": lambda headers: client.get(SCHEDULES, headers=headers),
        "an unknown token": lambda headers: client.get(
            SCHEDULES, headers={"Authorization": "Bearer clt_nothing", **headers}
        ),
        "a missing permission": with_headers(auditor.post, SCHEDULES, body),
        "an unknown schedule": with_headers(admin.get, f"{SCHEDULES}/{NO_SUCH}"),
        "an unknown run": with_headers(admin.get, f"/api/workflows/runs/{NO_SUCH}"),
        "an unknown instance": with_headers(admin.get, f"/api/approvals/{NO_SUCH}"),
        "an unknown account": with_headers(admin.get, "/api/accounts/nobody"),
        "an unknown group": with_headers(admin.get, f"/api/groups/{NO_SUCH}"),
        "no such path": with_headers(admin.get, "/api/nothing-here"),
        "a doubled slash": with_headers(admin.get, "/api/workflows//schedules"),
        "a method not allowed": with_headers(admin.delete, SCHEDULES),
        "a stale version": with_headers(admin.put, schedule, {**body, "version": 7}),
        "an If-Match of another version": with_headers(
            admin.put, schedule, body, headers={"If-Match": '"7"'}
        ),
        "a merge patch sent as text": with_headers(
            admin.call, "PATCH", schedule, data="name", headers={"Content-Type": "text/plain"}
        ),
        "a run cancelled twice": with_headers(admin.post, f"{run}/cancel", {}),
        "a command id used again": with_headers(
            admin.post, "/api/approvals", {**submission, "title": "另一个"}
        ),
        "a command that lost": with_headers(
            vera.post,
            f"/api/approvals/{instance}/approve",
            {"command_id": "again", "material_version": 1},
        ),
        "a self-approval": with_headers(
            admin.post,
            f"/api/approvals/{mine}/approve",
            {"command_id": "self", "material_version": 1},
        ),
        "a bad cursor": with_headers(admin.get, f"{SCHEDULES}?cursor=abc&page=2"),
        "an unknown query parameter": with_headers(admin.get, "/api/audit/operations?colour=1"),
        "a bad Idempotency-Key": with_headers(
            admin.post, SCHEDULES, body, headers={"Idempotency-Key": "有空格 的键"}
        ),
    }


@pytest.mark.parametrize("language", ["zh-CN", "zh-CN,zh;q=0.9,en;q=0.8", "zh"])
def test_every_problem_reads_in_chinese_and_keeps_its_code(
    calls: dict[str, Call], language: str
) -> None:
    found: dict[str, list[str]] = {}
    for name, call in calls.items():
        english = call({"Accept-Language": "en"})
        chinese = call({"Accept-Language": language})
        assert chinese.status_code == english.status_code >= 400, name
        assert chinese.json["code"] == english.json["code"], name
        assert chinese.json.get("errors", {}).keys() == english.json.get("errors", {}).keys()
        assert chinese.headers["Content-Language"] == "zh-CN", name
        assert "Accept-Language" in chinese.headers["Vary"], name
        if english_of(chinese.json):
            found[name] = english_of(chinese.json)
    assert not found, found


def test_in_english_or_without_a_language_problems_read_as_they_always_did(
    calls: dict[str, Call],
) -> None:
    for name, call in calls.items():
        for headers in ({"Accept-Language": "en"}, {}, {"Accept-Language": "fr, de"}):
            answer = call(headers)
            assert answer.headers["Content-Language"] == "en", name
            assert "Accept-Language" in answer.headers["Vary"], name
            assert not any("\u4e00" <= c <= "\u9fff" for c in str(words_of(answer.json))), name
    fields = calls["every field error"]({}).json["errors"]
    assert fields["trigger"] == ["Missing data for required field."]
    assert fields["name"] == ["Length must be between 1 and 200."]
    rules = calls["every broken rule"]({}).json["errors"]
    assert rules["trigger.expression"] == ["minute 61 is out of range 0-59"]
    assert rules["timezone"] == ["unknown time zone 'Mars/Olympus'"]


def test_the_words_follow_the_catalogue(calls: dict[str, Call]) -> None:
    fields = calls["every field error"]({"Accept-Language": "zh-CN"}).json["errors"]
    assert fields["trigger"] == ["缺少必填字段。"]
    assert fields["name"] == ["长度必须在 1 到 200 之间。"]
    rules = calls["every broken rule"]({"Accept-Language": "zh-CN"}).json["errors"]
    assert rules["trigger.expression"] == ["分钟 61 超出范围 0-59"]
    assert rules["timezone"] == ["未知的时区 'Mars/Olympus'"]
    unknown = calls["an unknown schedule"]({"Accept-Language": "zh-CN"}).json
    assert (unknown["title"], unknown["detail"]) == ("不存在", f"找不到定时任务 {NO_SUCH}")


def test_too_many_refusals_read_in_chinese(open_with: Any, clock: FakeClock) -> None:
    services = open_with(clock, refusals_per_minute=2)
    client: FlaskClient = create_app({"SERVICES": services, "TESTING": True}).test_client()
    zh = {"Accept-Language": "zh-CN"}
    answers = [client.get(SCHEDULES, headers=zh) for _ in range(3)]
    refused = answers[-1].json
    assert (answers[-1].status_code, refused["code"]) == (429, "TOO_MANY_REQUESTS")
    assert not english_of(refused), refused
