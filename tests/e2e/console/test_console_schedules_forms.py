"""The schedules pages through Flask's test client, on each store: what needs no browser (stale
edits, the delete confirmation, errors by field, the preview's daylight-saving mark, run now,
paging, what an auditor sees, the overlap policies by name and their bulk move, and why a run
was skipped, in Chinese and English), and the trigger in words."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask.testing import FlaskClient
from markupsafe import escape
from werkzeug.test import TestResponse

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services
from tests.e2e.helpers import account
from tests.support import Api, FakeClock
from web.console.schedule_words import in_words

SCHEDULES = "/api/workflows/schedules"
CSRF = re.compile(r'name="csrf-token" content="([^"]+)"')


class Console:
    """The console through a test client, signed in with `token`, in `language`."""

    def __init__(self, client: FlaskClient, token: str, language: str = "en") -> None:
        self.client = client
        client.set_cookie("cronledger_lang", language)
        signed = self.post("/console/sign-in", {"token": token})
        assert signed.status_code == 302, signed.text

    def get(self, path: str) -> TestResponse:
        return self.client.get(path)

    def post(self, path: str, data: dict[str, Any]) -> TestResponse:
        """A form posted with the CSRF token of the page the session has now."""
        token = CSRF.search(self.get("/console/sign-in").text)
        assert token is not None
        return self.client.post(path, data={**data, "csrf_token": token[1]})


@pytest.fixture
def console(client: FlaskClient, admin: Api) -> Console:
    return Console(client, admin.token)


def form_of(body: dict[str, Any], **changed: Any) -> dict[str, Any]:
    """The create or edit form's fields for an API body."""
    return {
        "name": body["name"],
        "definition_id": body["definition_id"],
        "kind": "cron",
        "expression": body["trigger"]["expression"],
        "timezone": body["timezone"],
        "initiator_id": body["initiator_id"],
        "title_template": body["title_template"],
        "form_data": '{"region": "east"}',
        "misfire_policy": "catch_up",
        "overlap_policy": "skip_while_open",
        **changed,
    }


def test_a_form_creates_the_schedule_the_api_would(
    console: Console, admin: Api, body: dict[str, Any]
) -> None:
    answer = console.post("/console/schedules/new", form_of(body, enabled="1"))
    assert answer.status_code == 303
    schedule_id = answer.headers["Location"].rsplit("/", 1)[1]
    saved = admin.get(f"{SCHEDULES}/{schedule_id}").json
    assert saved["enabled"] is True
    assert (saved["name"], saved["form_data"]) == (body["name"], {"region": "east"})


def test_errors_are_shown_beside_their_fields_and_nothing_is_saved(
    console: Console, admin: Api, body: dict[str, Any]
) -> None:
    typed = form_of(
        body, name="", expression="61 * * * *", timezone="Mars/Olympus", form_data="{oops"
    )
    answer = console.post("/console/schedules/new", typed)
    assert answer.status_code == 422
    for field in ("name", "expression", "timezone", "form_data"):
        assert f'id="{field}-error"' in answer.text, field
    assert 'value="61 * * * *"' in answer.text
    assert admin.get(SCHEDULES).json["total"] == 0


def test_a_stale_edit_is_refused_with_a_clear_message_and_the_input_kept(
    console: Console, admin: Api, body: dict[str, Any]
) -> None:
    created = admin.post(SCHEDULES, body).json
    opened = console.get(f"/console/schedules/{created['id']}/edit")
    assert f'name="version" value="{created["version"]}"' in opened.text
    admin.post(f"{SCHEDULES}/{created['id']}/enable", {})  # someone else, meanwhile
    edited = form_of(body, name="mine", version=created["version"])
    answer = console.post(f"/console/schedules/{created['id']}/edit", edited)
    assert answer.status_code == 409
    assert "Someone changed this schedule after you opened it" in answer.text
    assert 'value="mine"' in answer.text
    assert admin.get(f"{SCHEDULES}/{created['id']}").json["name"] == body["name"]


def test_delete_asks_first_and_only_a_post_deletes(
    console: Console, admin: Api, body: dict[str, Any]
) -> None:
    created = admin.post(SCHEDULES, body).json
    asked = console.get(f"/console/schedules/{created['id']}/delete")
    assert asked.status_code == 200
    assert "Its runs and its timeline stay readable" in asked.text
    assert admin.get(f"{SCHEDULES}/{created['id']}").status_code == 200
    deleted = console.post(
        f"/console/schedules/{created['id']}/delete", {"version": created["version"]}
    )
    assert deleted.status_code == 303
    assert admin.get(f"{SCHEDULES}/{created['id']}").status_code == 404
    assert "deleted; its history stays readable" in console.get("/console/schedules/").text


@pytest.mark.parametrize(
    ("language", "words"),
    [("en", "Daylight saving: the UTC offset changes"), ("zh", "夏令时切换")],
)
def test_the_preview_marks_the_fire_whose_utc_offset_changes(
    client: FlaskClient, admin: Api, language: str, words: str
) -> None:
    console = Console(client, admin.token, language)
    typed = {
        "kind": "cron",
        "expression": "30 2 * * *",
        "timezone": "Europe/Berlin",
        "preview_after": "2027-03-26T12:00",
    }
    shown = console.post("/console/schedules/preview", typed).text
    assert shown.count('class="dst-shift"') == 1
    assert words in shown
    assert "UTC+01:00" in shown
    assert "UTC+02:00" in shown
    assert "2027-03-28 03:00:00" in shown  # 02:30 does not exist that night


@pytest.mark.parametrize(
    ("typed", "field"),
    [
        ({"expression": "* * *", "timezone": "Europe/Berlin"}, "Cron expression"),
        ({"expression": "0 9 * * *", "timezone": "Mars/Olympus"}, "Time zone"),
        ({"preview_after": "0001-01-01T00:00", "timezone": "Asia/Tokyo"}, "Preview from"),
        ({"preview_after": "9999-12-31T23:59", "timezone": "America/New_York"}, ""),
        ({"kind": "window-interval", "windows": "9-5", "interval_minutes": "x"}, "Every"),
    ],
)
def test_the_preview_says_why_it_has_no_fires(
    console: Console, typed: dict[str, str], field: str
) -> None:
    answer = console.post("/console/schedules/preview", {"expression": "0 9 * * *", **typed})
    assert answer.status_code == 200
    assert "No preview yet" in answer.text
    assert field in answer.text


def test_run_now_opens_the_run_saying_it_is_queued(
    console: Console, admin: Api, body: dict[str, Any]
) -> None:
    created = admin.post(SCHEDULES, body).json
    answer = console.post(
        f"/console/schedules/{created['id']}/run",
        {"version": created["version"], "request_id": "console-1"},
    )
    assert answer.status_code == 303
    location = answer.headers["Location"]
    assert re.fullmatch(r"/console/runs/[0-9a-f-]{36}\?done=queued", location)
    runs = admin.get(f"{SCHEDULES}/{created['id']}/runs").json["items"]
    assert [run["id"] for run in runs] == [location.split("/")[-1].split("?")[0]]


def test_a_schedule_from_a_preset_is_created_disabled(
    console: Console, admin: Api, definition: dict[str, Any]
) -> None:
    path = f"/console/schedules/from-preset/{definition['id']}/weekday-morning"
    asked = console.get(path)
    assert asked.status_code == 200
    assert "0 8 * * MON-FRI" in asked.text
    answer = console.post(path, {"name": "", "initiator_id": "root"})
    assert answer.status_code == 303
    created = admin.get(answer.headers["Location"].replace("/console/schedules", SCHEDULES)).json
    assert (created["enabled"], created["preset_id"], created["name"]) == (
        False,
        "weekday-morning",
        "Morning check",
    )
    assert console.get(path.replace("weekday-morning", "no-such")).status_code == 404


def test_the_list_pages_and_refuses_a_bad_filter_beside_it(
    console: Console, admin: Api, body: dict[str, Any]
) -> None:
    for number in range(21):
        admin.post(SCHEDULES, {**body, "name": f"s{number:02d}"})
    second = console.get("/console/schedules/?page=2")
    assert second.text.count("<tr>") == 2  # the header's and one schedule's
    assert "21 in all · page 2 of 2" in second.text
    refused = console.get("/console/schedules/?page=0")
    assert refused.status_code == 422
    assert 'id="page-error"' in refused.text


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("en", "Skip a cycle only while an earlier one is still being launched"),
        ("zh", "仅当更早的周期仍在发起中时跳过本周期"),
    ],
)
def test_the_overlap_policies_are_offered_by_name_with_the_default_chosen(
    client: FlaskClient, admin: Api, language: str, words: str
) -> None:
    page = Console(client, admin.token, language).get("/console/schedules/new").text
    default = f'<option value="skip_while_launching" selected>{words}</option>'
    assert default in page
    assert 'value="allow"' in page
    assert 'value="skip_while_open"' in page


def test_schedules_on_skip_while_open_are_found_and_moved_from_the_list_in_chinese(
    client: FlaskClient, admin: Api, body: dict[str, Any]
) -> None:
    old = admin.post(SCHEDULES, {**body, "name": "old", "overlap_policy": "skip"}).json
    new = admin.post(SCHEDULES, {**body, "name": "new", "overlap_policy": "allow"}).json
    chinese = Console(client, admin.token, "zh")
    listed = chinese.get("/console/schedules/").text
    assert "有 1 个定时任务在更早的审批等待审核时跳过每个周期" in listed
    assert listed.count("<code title=") == 2  # each row names its policy
    only_old = chinese.get("/console/schedules/?overlap_policy=skip_while_open").text
    assert (f'value="{old["id"]}"' in only_old, f'value="{new["id"]}"' in only_old) == (True, False)
    refused = chinese.post("/console/schedules/overlap-policy", {"to_policy": "allow"})
    assert refused.status_code == 422
    assert "请至少选择一个定时任务。" in refused.text
    moved = chinese.post(
        "/console/schedules/overlap-policy",
        {
            "schedule_id": [old["id"], new["id"]],
            "to_policy": "skip_while_launching",
            "filter_overlap_policy": "skip_while_open",
        },
    )
    assert moved.status_code == 303
    assert moved.location.endswith("/console/schedules/?overlap_policy=skip_while_open")
    after = chinese.get(moved.location).text
    assert (
        "2 个定时任务已改为 <code>skip_while_launching</code>；0 个原本就是；0 个未找到。" in after
    )
    assert "在更早的审批等待审核时跳过每个周期" not in after
    for schedule in (old, new):
        saved = admin.get(f"{SCHEDULES}/{schedule['id']}").json
        assert (saved["overlap_policy"], saved["version"]) == ("skip_while_launching", 2)


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("en", "An earlier run's approval was still waiting for review."),
        ("zh", "更早的一次执行发起的审批仍在等待审核。"),
    ],
)
def test_a_skipped_run_says_which_waiting_approval_blocked_it(
    client: FlaskClient,
    admin: Api,
    body: dict[str, Any],
    services: Services,
    clock: FakeClock,
    language: str,
    words: str,
) -> None:
    every_second = {"kind": "cron", "expression": "* * * * * *"}
    fields = {"trigger": every_second, "overlap_policy": "skip_while_open", "enabled": True}
    schedule = admin.post(SCHEDULES, {**body, **fields}).json
    for _ in range(2):
        clock.advance(1)
        Ticker.of(services).scan()
        Worker.of(services).drain()
    services.projector.catch_up()
    skipped, launched = admin.get(f"{SCHEDULES}/{schedule['id']}/runs").json["items"]
    reader = Console(client, admin.token, language)
    page = reader.get(f"/console/runs/{skipped['id']}").text
    assert str(escape(words)) in page
    assert f"/console/runs/{launched['id']}" in page
    assert f"/console/approvals/{launched['instance_id']}" in page
    assert str(escape(words)) in reader.get(f"/console/schedules/{schedule['id']}").text


def test_an_auditor_sees_no_actions_and_the_server_refuses_them(
    client: FlaskClient, admin: Api, body: dict[str, Any]
) -> None:
    created = admin.post(SCHEDULES, body).json
    auditor = account(admin, "audrey", ["auditor"])
    console = Console(client.application.test_client(), auditor.token)
    shown = console.get(f"/console/schedules/{created['id']}").text
    assert "Run now" not in shown
    assert "/enable" not in shown
    assert "New schedule" not in console.get("/console/schedules/").text
    refused = console.post(
        f"/console/schedules/{created['id']}/enable", {"version": created["version"]}
    )
    assert refused.status_code == 403
    assert admin.get(f"{SCHEDULES}/{created['id']}").json["enabled"] is False


@pytest.mark.parametrize(
    ("trigger", "english", "chinese"),
    [
        ({"kind": "cron", "expression": "0 9 * * *"}, "Every day at 09:00", "每天 09:00"),
        (
            {"kind": "cron", "expression": "0 8 * * MON-FRI"},
            "Every Monday to Friday at 08:00",
            "每周一至周五 08:00",
        ),
        ({"kind": "cron", "expression": "*/15 * * * *"}, "Every 15 minutes", "每 15 分钟"),
        (
            {"kind": "cron", "expression": "0 0 9 1 JAN,JUL *"},
            "On day 1 of every month at 09:00, in January, July",
            "1月、7月：每月 1 日 09:00",
        ),
        ({"kind": "cron", "expression": "0 9 L * *"}, "A custom cron rule", "自定义 cron 规则"),
        (
            {
                "kind": "window-interval",
                "weekdays": [1, 2, 3, 4, 5],
                "windows": [{"start": "09:00", "end": "12:00"}],
                "interval_minutes": 30,
            },
            "Every Monday to Friday, every 30 minutes from 09:00 to 12:00",
            "每周一至周五 09:00–12:00 每 30 分钟",
        ),
    ],
)
def test_a_trigger_reads_in_words(
    document_client: FlaskClient, trigger: dict[str, Any], english: str, chinese: str
) -> None:
    app = document_client.application
    for language, expected in (("en", english), ("zh", chinese)):
        with app.test_request_context(headers={"Accept-Language": language}):
            assert in_words(trigger) == expected
