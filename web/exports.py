"""Exports as files (docs/api.md#exports), for the API's export endpoints and the console's
export buttons alike: the header row in the reader's language, then the rows.

CSV is streamed as it is read: UTF-8 with a byte order mark first (so that Excel reads Chinese
as Chinese), a header row, the rows in chunks. XLSX is a zip, whose directory comes last: it
cannot be sent before it is complete, so it is written first, to a temporary file, by
xlsxwriter in constant memory (each row goes to the file as it is written: the rows are never
all in memory), and then sent from that file in chunks and deleted.
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from collections.abc import Iterator, Mapping
from datetime import UTC
from pathlib import Path
from typing import Any

import xlsxwriter
from flask import Response, stream_with_context

from cronledger.application.exports import Asked, Cell, Export
from domain.errors import ValidationFailed
from domain.exports import CSV, OPERATIONS, RUNS, SCHEDULES, XLSX
from domain.messages import Message
from web.api import Download, unstorable
from web.language import name_language, said

XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
CONTENT_TYPES = {CSV: "text/csv; charset=utf-8", XLSX: XLSX_TYPE}
BOM = "\ufeff"
ROWS_A_CHUNK = 500  # CSV rows sent together
FILE_CHUNK = 64 * 1024  # bytes of an XLSX file sent at a time
# A text a spreadsheet would read as a formula (CSV injection): written after an apostrophe.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
FILE_NAMES = {RUNS: "execution-log", SCHEDULES: "schedules", OPERATIONS: "operations-audit"}
SHEET_NAMES = {
    RUNS: Message("Execution log"),
    SCHEDULES: Message("Schedules"),
    OPERATIONS: Message("Operations audit"),
}
DOWNLOAD = Download(
    media_types={
        "text/csv": "`format=csv`: UTF-8 with a byte order mark, comma-separated, CRLF line ends, "
        "a header row in the language `Accept-Language` asks for, then one row per item; "
        "streamed",
        XLSX_TYPE: "`format=xlsx`: one worksheet, a header row, then one row per item",
    },
    headers={
        "Content-Disposition": "`attachment`, with the file's name: the list's and the "
        "instant the export was recorded, e.g. `execution-log-20261001T090000Z.csv`",
        "Content-Language": "the language of the header row: `zh-CN` when `Accept-Language` "
        "asks for Chinese, else `en`",
        "Vary": "`Accept-Language`: the header row depends on it",
        "Cache-Control": "`no-store`: no cache keeps the file",
    },
)


def asked(query: Mapping[str, Any], given: Mapping[str, str]) -> Asked:
    """What an export's request asks for: its `format`, its `q`, and every filter `given`
    (the request's own text, blank ones left out), to be recorded: a text no store keeps (a
    NUL, a lone surrogate) is refused by field, as the API's query refuses it."""
    filters = {name: value for name, value in given.items() if name != "format" and value}
    refused = unstorable(filters)
    if refused:
        raise ValidationFailed(refused)
    return Asked(query["format"], (query.get("q") or "").strip() or None, filters)


def exported(export: Export) -> Response:
    """The export as a file, its header row in the request's language."""
    headers = [said(header) for header in export.headers]
    if export.format == CSV:
        answer = Response(stream_with_context(_csv(export, headers)))
    else:
        path = _xlsx(export, headers)
        answer = Response(_sent(path))
        answer.call_on_close(lambda: path.unlink(missing_ok=True))  # also if never sent
        answer.content_length = path.stat().st_size
    answer.content_type = CONTENT_TYPES[export.format]
    at = export.at.astimezone(UTC)
    name = f"{FILE_NAMES[export.listing]}-{at:%Y%m%dT%H%M%SZ}.{export.format}"
    answer.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    answer.headers["Cache-Control"] = "no-store"
    return name_language(answer)


def _csv(export: Export, headers: list[str]) -> Iterator[bytes]:
    """The CSV file, a chunk of rows at a time."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    buffer.write(BOM)
    writer.writerow(headers)
    for number, line in enumerate(export.lines(), 1):
        writer.writerow([_csv_cell(cell) for cell in line])
        if number % ROWS_A_CHUNK == 0:
            yield buffer.getvalue().encode()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode()


def _csv_cell(cell: Cell) -> Cell:
    """A cell as CSV writes it: a message in the reader's language, a text a spreadsheet
    would run as a formula after an apostrophe (numbers are written as numbers)."""
    if isinstance(cell, Message):
        cell = said(cell)
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS):
        return f"'{cell}"
    return cell


def _xlsx(export: Export, headers: list[str]) -> Path:
    """The XLSX file, written to a temporary file, row after row (constant memory)."""
    handle, name = tempfile.mkstemp(prefix="cronledger-export-", suffix=".xlsx")
    os.close(handle)
    path = Path(name)
    try:
        _write_workbook(path, export, headers)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def _write_workbook(path: Path, export: Export, headers: list[str]) -> None:
    workbook = xlsxwriter.Workbook(
        str(path),
        {
            "constant_memory": True,
            "strings_to_numbers": False,  # text is text: an id of digits stays text
            "strings_to_formulas": False,  # never a formula, whatever a title says
            "strings_to_urls": False,
        },
    )
    sheet = workbook.add_worksheet(said(SHEET_NAMES[export.listing]))
    sheet.write_row(0, 0, headers, workbook.add_format({"bold": True}))
    sheet.freeze_panes(1, 0)
    for row, line in enumerate(export.lines(), 1):
        for column, cell in enumerate(line):
            _write_cell(sheet, row, column, cell)
    workbook.close()


def _write_cell(sheet: Any, row: int, column: int, cell: Cell) -> None:
    if cell is None:
        return
    if isinstance(cell, int | float):
        sheet.write_number(row, column, cell)
    else:
        sheet.write_string(row, column, said(cell) if isinstance(cell, Message) else cell)


def _sent(path: Path) -> Iterator[bytes]:
    """A finished file's bytes, a chunk at a time; the file is deleted once sent."""
    try:
        with path.open("rb") as file:
            while chunk := file.read(FILE_CHUNK):
                yield chunk
    finally:
        path.unlink(missing_ok=True)
