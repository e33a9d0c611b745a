"""The console's exports without a browser: the page's filters carried to the file, the header
row in the page's language, and what the page says when the filters are wrong or match more
rows than a file may hold (nothing is exported or recorded then)."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest

import cronledger.application.exports
import domain.exports
from tests.e2e.console.conftest import Console
from tests.support import Api

CHINESE = {"Accept-Language": "zh-CN"}
ENGLISH = {"Accept-Language": "en"}


def made(admin: Api, body: dict[str, Any], *names: str) -> list[str]:
    ids = []
    for name in names:
        created = admin.post("/api/workflows/schedules", {**body, "name": name})
        assert created.status_code == 201, created.json
        ids.append(created.json["id"])
    return ids


def exported_rows(console: Console, path: str, **headers: str) -> list[list[str]]:
    answer = console.get(path, headers=headers)
    assert answer.status_code == 200, answer.get_data(as_text=True)[:300]
    assert answer.headers["Content-Disposition"].startswith("attachment")
    return list(csv.reader(io.StringIO(answer.data.decode("utf-8-sig"))))


def test_the_buttons_carry_the_pages_filters_but_its_page_and_sort(
    console: Console, admin: Api, body: dict[str, Any]
) -> None:
    made(admin, body, "财务月结", "财务日结", "人事月结")
    page = console.page(
        "/console/schedules/?name_contains=财务&sort=name&page_size=50", headers=CHINESE
    )
    assert "导出 CSV" in page
    assert "导出 Excel" in page
    link = "/console/schedules/export?name_contains=%E8%B4%A2%E5%8A%A1&amp;format=csv"
    assert link in page
    header, *rows = exported_rows(console, link.replace("&amp;", "&"), **CHINESE)
    assert header[:2] == ["定时任务 ID", "名称"]
    listed = admin.get("/api/workflows/schedules?name_contains=财务").json["items"]
    assert [row[1] for row in rows] == [item["name"] for item in listed]  # not sorted by name
    (operation,) = admin.get("/api/audit/operations?kind=tenant.exported").json["items"]
    assert "`name_contains=财务`" in operation["summary"]
    assert operation["actor"] == "root"


def test_wrong_filters_show_the_list_with_their_errors(console: Console, admin: Api) -> None:
    answer = console.get("/console/runs/export?format=csv&planned_from=soon", headers=ENGLISH)
    assert answer.status_code == 422
    assert "Enter a date and time" in answer.get_data(as_text=True)
    assert console.get("/console/runs/export?format=pdf").status_code == 404
    answer = console.get("/console/operations/audit/export?format=xlsx&kind=nothing")
    assert answer.status_code == 422
    answer = console.get("/console/schedules/export?format=csv&enabled=maybe")
    assert answer.status_code == 422
    answer = console.get("/console/runs/export?format=csv&q=a%00b", headers=ENGLISH)
    assert answer.status_code == 422  # no store keeps a NUL: nothing exported or recorded
    assert "NUL" in answer.get_data(as_text=True)
    assert admin.get("/api/audit/operations?kind=tenant.exported").json["items"] == []


def test_too_many_rows_are_refused_on_the_page_in_its_language(
    console: Console, admin: Api, body: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in (domain.exports, cronledger.application.exports):
        monkeypatch.setattr(module, "MAX_EXPORT_ROWS", 2)
    made(admin, body, "一", "二", "三")
    for path in (
        "/console/schedules/export?format=xlsx",
        "/console/operations/audit/export?format=csv",
    ):
        answer = console.get(path, headers=CHINESE)
        page = answer.get_data(as_text=True)
        assert answer.status_code == 422, path
        assert "请缩小筛选范围" in page
        assert 'role="alert"' in page
        assert "导出 Excel" in page  # the list again, its buttons with it
    kinds = [o["kind"] for o in admin.get("/api/audit/operations").json["items"]]
    assert "tenant.exported" not in kinds
