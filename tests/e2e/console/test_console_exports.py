"""The console's export buttons in a real browser, in Chinese and English, on both stores: the
execution log filtered by a part of its schedules' names, the schedules by a part of their
name, and the operations audit, each downloaded as CSV and as Excel (XLSX) with the page's
filters, read back with `csv` and `openpyxl`, their header rows in the page's language; each
export then listed in the operations audit."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from uuid import uuid4

import pytest
from openpyxl import load_workbook
from playwright.sync_api import expect

from tests.e2e.console.conftest import Site, check_accessible, new_page, sign_in
from tests.support import DECIDERS

NEVER_SOON = {"kind": "cron", "expression": "0 0 1 1 *"}  # the tick registers nothing here
RUNS_EACH = 3
WORDS = {
    "en": {
        "csv": "Export CSV",
        "excel": "Export Excel",
        "run_id": "Run id",
        "schedule_name": "Schedule name",
        "name": "Name",
        "summary": "Summary",
        "sheet": "Execution log",
        "exported": "List exported",
        "filter": "Filter",
    },
    "zh": {
        "csv": "导出 CSV",
        "excel": "导出 Excel",
        "run_id": "执行日志 ID",
        "schedule_name": "定时任务名称",
        "name": "名称",
        "summary": "摘要",
        "sheet": "执行日志",
        "exported": "导出列表",
        "filter": "筛选",
    },
}


@pytest.fixture(scope="module")
def definition_id(site: Site) -> str:
    definition = site.api(
        "POST",
        "/api/definitions",
        {
            "key": "exports-page",
            "name": "Exports page",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
    )
    site.api("POST", f"/api/definitions/{definition['id']}/publish", {})
    site.api("POST", "/api/accounts", {"id": "erin", "name": "erin", "roles": ["requester"]})
    return str(definition["id"])


def schedules_with_runs(site: Site, definition_id: str, mark: str) -> dict[str, str]:
    """Two schedules named with `mark` (and one not), each run by hand RUNS_EACH times: their
    names by id."""
    names: dict[str, str] = {}
    for name in (f"月结 {mark} A", f"月结 {mark} B", f"other {uuid4().hex[:6]}"):
        body = {
            "name": name,
            "definition_id": definition_id,
            "trigger": NEVER_SOON,
            "timezone": "Asia/Shanghai",
            "initiator_id": "erin",
            "title_template": f"{name} {{{{date}}}}",
            "enabled": True,
            "overlap_policy": "allow",
        }
        created = site.api("POST", "/api/workflows/schedules", body)
        for _ in range(RUNS_EACH):
            path = f"/api/workflows/schedules/{created['id']}/run"
            site.api("POST", path, {"request_id": str(uuid4())})
        names[created["id"]] = name
    return names


def downloaded(page: Any, link: str) -> tuple[str, Path]:
    """Click the link that downloads a file: the file's suggested name and its path."""
    with page.expect_download() as started:
        page.get_by_role("link", name=link, exact=True).click()
    download = started.value
    assert download.failure() is None
    return download.suggested_filename, Path(download.path())


def csv_rows(path: Path) -> list[list[str]]:
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf"), "no byte order mark: Excel would misread Chinese"
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))


def xlsx_rows(path: Path) -> tuple[str, list[list[Any]]]:
    sheet = load_workbook(io.BytesIO(path.read_bytes()), read_only=True).worksheets[0]
    return sheet.title, [list(row) for row in sheet.iter_rows(values_only=True)]


@pytest.mark.parametrize("language", ["zh", "en"])
def test_each_list_exports_what_its_filters_show_in_the_pages_language(
    site: Site, browser: Any, definition_id: str, language: str
) -> None:
    words, mark = WORDS[language], f"{language}{uuid4().hex[:6]}"
    names = schedules_with_runs(site, definition_id, mark)
    marked = [schedule_id for schedule_id, name in names.items() if mark in name]
    page = new_page(browser, language)
    sign_in(page, site, then="/console/runs/")

    page.fill("#schedule_name", mark.upper())  # any case
    page.get_by_role("button", name=words["filter"], exact=True).click()
    expect(page.locator("#run-rows tbody tr")).to_have_count(2 * RUNS_EACH)
    check_accessible(page)
    listed = site.api("GET", f"/api/workflows/runs?{urlencode({'schedule_name': mark})}")
    expected = [run["id"] for run in listed["items"]]
    assert len(expected) == 2 * RUNS_EACH
    name, path = downloaded(page, words["csv"])
    assert name.startswith("execution-log-")
    assert name.endswith(".csv")
    header, *rows = csv_rows(path)
    assert (header[0], header[2]) == (words["run_id"], words["schedule_name"])
    assert [row[0] for row in rows] == expected
    assert {row[1] for row in rows} == set(marked)
    name, path = downloaded(page, words["excel"])
    assert name.endswith(".xlsx")
    title, (header, *rows) = xlsx_rows(path)
    assert (title, header[0]) == (words["sheet"], words["run_id"])
    assert [row[0] for row in rows] == expected

    page.goto(f"{site.url}/console/schedules/")
    page.fill("#name_contains", mark)
    page.get_by_role("button", name=words["filter"], exact=True).click()
    expect(page.locator("table.schedules tbody tr")).to_have_count(2)
    _, path = downloaded(page, words["excel"])
    _, (header, *rows) = xlsx_rows(path)
    assert header[1] == words["name"]
    assert sorted(row[1] for row in rows) == [f"月结 {mark} A", f"月结 {mark} B"]

    page.goto(f"{site.url}/console/operations/audit?kind=tenant.exported")
    rows_shown = page.locator("#audit-table tbody tr")
    expect(rows_shown.first).to_contain_text(words["exported"])
    expect(rows_shown.first).to_contain_text(mark)  # the filter it was exported with
    check_accessible(page)
    _, path = downloaded(page, words["csv"])
    header, *rows = csv_rows(path)
    assert header[-1] == words["summary"]
    assert all(row[3] == "tenant.exported" for row in rows)
    assert any(f"name_contains={mark}" in row[-1] for row in rows)
