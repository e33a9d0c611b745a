"""Through Flask's test client, on both stores: times written with an unambiguous zone (北京时间,
UTC+02:00) and UTC on hover, how far the next fire is, the date pickers naming their zone, the
cron builder's choices read back from an expression, a six-field expression in words, the
dashboard's skipped cycles and its cards as links, and a run page's "queued" saying so only
while the run waits."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask.testing import FlaskClient

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.services import Services
from tests.e2e.console.conftest import Console
from tests.support import Api, FakeClock
from web.console.schedule_words import in_words

SCHEDULES = "/api/workflows/schedules"
ZH = {"Accept-Language": "zh-CN"}
EN = {"Accept-Language": "en"}
EVERY_SECOND = {"kind": "cron", "expression": "* * * * * *"}


def created(admin: Api, body: dict[str, Any], **fields: Any) -> dict[str, Any]:
    answer = admin.post(SCHEDULES, {**body, **fields})
    assert answer.status_code == 201, answer.json
    return answer.json  # type: ignore[no-any-return]


def test_a_time_in_shanghai_reads_beijing_time_with_utc_on_hover_and_how_far_off_it_is(
    console: Console, admin: Api, body: dict[str, Any]
) -> None:
    schedule = created(admin, body, enabled=True)  # 09:00 every day in Asia/Shanghai
    console.client.set_cookie("cronledger_zone", "Asia/Shanghai")
    page = console.page(f"/console/schedules/{schedule['id']}", headers=ZH)
    # T0 is 2026-10-01 09:00 UTC, 17:00 in Shanghai: the next fire is tomorrow 09:00 there.
    shown = '<time datetime="2026-10-02T01:00:00+00:00" title="2026-10-02 01:00:00 UTC">'
    assert f'{shown}2026-10-02 09:00:00 <span class="zone">北京时间</span></time>' in page
    assert '<small class="relative">16小时后</small>' in page
    assert "你的时间" not in page  # the viewer's zone shows the same wall time: said once
    assert "CST" not in page
    assert "+0800" not in page
    english = console.page(f"/console/schedules/{schedule['id']}", headers=EN)
    assert '2026-10-02 09:00:00 <span class="zone">Beijing time</span>' in english
    assert "in 16 hours" in english
    listed = console.page("/console/schedules/", headers=ZH)
    assert '北京时间</span></time> <small class="relative">16小时后</small>' in listed


def test_a_viewer_elsewhere_sees_the_schedule_time_and_their_own_with_its_offset(
    console: Console, admin: Api, body: dict[str, Any]
) -> None:
    schedule = created(admin, body, enabled=True)
    console.client.set_cookie("cronledger_zone", "Europe/Berlin")
    page = console.page(f"/console/schedules/{schedule['id']}", headers=EN)
    assert '2026-10-02 09:00:00 <span class="zone">Beijing time</span>' in page
    assert "Your time:" in page
    assert '2026-10-02 03:00:00 <span class="zone">UTC+02:00</span>' in page
    assert "CEST" not in page


def test_the_date_pickers_name_the_zone_they_are_read_in(console: Console, admin: Api) -> None:
    console.client.set_cookie("cronledger_zone", "Asia/Shanghai")
    runs = console.page("/console/runs/", headers=ZH)
    picker = runs.split('<label for="planned_from">')[1].split("</label>")[0]
    assert '<small class="zone-hint">（北京时间）</small>' in picker
    console.client.set_cookie("cronledger_zone", "America/Chicago")
    audit = console.page("/console/operations/audit", headers=EN)
    assert "in America/Chicago" in audit.split('<label for="from">')[1].split("</label>")[0]


@pytest.mark.parametrize(
    ("expression", "english", "chinese"),
    [
        ("* * * * * *", "Every second", "每秒"),
        ("*/10 * * * * *", "Every 10 seconds", "每 10 秒"),
        (
            "*/30 * * * * MON-FRI",
            "Every Monday to Friday every 30 seconds",
            "每周一至周五 每 30 秒",
        ),
    ],
)
def test_a_six_field_expression_reads_in_seconds(
    document_client: FlaskClient, expression: str, english: str, chinese: str
) -> None:
    app = document_client.application
    trigger = {"kind": "cron", "expression": expression}
    for language, expected in (("en", english), ("zh", chinese)):
        with app.test_request_context(headers={"Accept-Language": language}):
            assert in_words(trigger) == expected


def test_the_edit_form_opens_the_builder_on_the_saved_expression(
    console: Console, admin: Api, body: dict[str, Any]
) -> None:
    weekly = created(admin, body, trigger={"kind": "cron", "expression": "30 8 * * 1-5"})
    form = console.page(f"/console/schedules/{weekly['id']}/edit", headers=ZH)
    assert '<fieldset class="builder" id="cron-builder" hidden>' in form  # shown by its script
    assert '<option value="weekly" selected>' in form
    checked = re.findall(r'class="builder-day" value="(\d)" checked', form)
    assert checked == ["1", "2", "3", "4", "5"]
    assert 'id="builder-time" type="time" step="60" value="08:30"' in form
    seconds = created(admin, body, trigger={"kind": "cron", "expression": "*/10 * * * * *"})
    advanced = console.page(f"/console/schedules/{seconds['id']}/edit", headers=ZH)
    assert '<option value="advanced" selected>' in advanced
    assert "每 10 秒" in advanced  # the preview's words


def test_the_dashboard_charts_skipped_cycles_and_links_each_card_to_its_list(
    console: Console,
    admin: Api,
    body: dict[str, Any],
    services: Services,
    clock: FakeClock,
) -> None:
    created(admin, body, trigger=EVERY_SECOND, enabled=True)  # skip_while_open
    for _ in range(3):  # the first second's instance waits for review: the next two skip
        clock.advance(1)
        Ticker.of(services).scan()
        Worker.of(services).drain()
    services.projector.catch_up()
    page = console.page("/console/operations/", headers=EN)
    assert "Succeeded 1; Failed 0; Dead-lettered 0; Skipped 2</title>" in page
    assert re.search(
        r'<desc id="launch-outcomes-desc">[^<]*1 succeeded, 0 failed, '
        r"0 dead-lettered, 2 skipped",
        page,
    )
    assert 'href="/console/runs/?status=PENDING">Runs waiting for their first attempt</a>' in page
    assert 'href="/console/runs/?status=RETRY_WAIT">' in page
    assert 'href="/console/schedules/?enabled=true">Due schedules</a>' in page
    overdue = re.search(r'href="(/console/approvals/\?[^"]+)">Overdue approvals</a>', page)
    assert overdue, "the overdue approvals card links to no list"
    assert "state=WAITING_REVIEW" in overdue[1]
    assert "deadline_to=2026-10-01T09:00:03" in overdue[1]  # now, in the viewer's zone (UTC)
    chinese = console.page("/console/operations/", headers=ZH)
    assert "最近 24 小时：成功 1 次、失败 0 次、进入死信 0 次、跳过 2 个周期。" in chinese


def test_queued_is_said_on_a_run_page_only_while_the_run_waits(
    console: Console, admin: Api, body: dict[str, Any], services: Services
) -> None:
    schedule = created(admin, body)
    asked = console.post(
        f"/console/schedules/{schedule['id']}/run",
        {"version": schedule["version"], "request_id": "queued-1"},
    )
    assert asked.status_code == 303
    run_page = asked.headers["Location"]
    run_id = run_page.split("/")[-1].split("?")[0]
    waiting = console.page(run_page, headers=EN)
    assert "Queued: the run is in the execution queue." in waiting
    assert f"/console/runs/{run_id}/panel?done=queued" in waiting  # the live panel keeps it
    assert Worker.of(services).drain().succeeded == 1
    services.projector.catch_up()
    assert "Queued: the run" not in console.page(run_page, headers=EN)
    panel = console.page(f"/console/runs/{run_id}/panel?done=queued", headers=EN)
    assert 'data-status="SUCCEEDED"' in panel
    assert "Queued: the run" not in panel
