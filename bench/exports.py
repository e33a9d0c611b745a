"""Exports of the execution log (issue 34, part 4): 10,000 and then 100,000 runs, as CSV and
as XLSX, through the API in-process (Flask's test client, the answer read chunk by chunk as a
client would, never kept whole): how long each takes, and the export's peak memory
(tracemalloc, a second export of each), which should stay flat from 10,000 to 100,000 rows.
The 10,000-row files are opened again with `csv` and `openpyxl` (the time that takes is
reported apart) and must hold every run.

1,000 every-minute schedules, ticked 9 minutes and then 90 more: the runs are registered by
the tick, as in production (BENCH_SCALE=small: 100 schedules, 1,000 and 10,000 runs). Goal:
10,000 rows in under 5 s in either format.
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from flask.testing import FlaskClient
from openpyxl import load_workbook

from bench._machine import describe_machine
from bench._results import Figure, Result
from bench._seed import EVERY_MINUTE, seed_due_schedules
from bench._stores import empty_store
from cronledger.application.cycles import Ticker
from cronledger.application.services import Services, open_services
from cronledger.clock import ManualClock
from cronledger.config import Settings
from web import create_app

SCALE = os.environ.get("BENCH_SCALE", "default")
SCHEDULES = 100 if SCALE == "small" else 1_000  # small: 1,000 runs, then 10,000
# Minutes ticked before each measurement: the first tick registers the cycles of T0 and of a
# minute later, so 9 minutes make 10 runs a schedule, and 90 more 100.
STEPS = (9, 90)
GOAL_SECONDS = 5.0  # for 10,000 rows
T0 = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
EXPORT = "/api/workflows/runs/export?format={}"


def run() -> Iterator[Result | str]:
    for kind in ("sqlite", "postgresql"):
        yield from _measure(kind)


def _measure(kind: str) -> Iterator[Result | str]:
    with empty_store(kind) as url:
        clock = ManualClock(T0)
        services = open_services(Settings(database_url=url), clock)
        try:
            seeded = seed_due_schedules(services, SCHEDULES, T0, EVERY_MINUTE, "bench", "allow")
            client = create_app({"SERVICES": services, "TESTING": True}).test_client()
            headers = {"Authorization": f"Bearer {seeded.token}"}
            machine = describe_machine()
            settings = {"measured": f"{machine['date']}, commit {machine['commit']}"}
            for minutes in STEPS:
                started = time.perf_counter()
                _tick(services, clock, minutes)
                runs = int(services.store.query("SELECT COUNT(*) FROM runs")[0][0])
                seeded_in = time.perf_counter() - started
                yield f"exports {kind}: {runs:,} runs registered by the tick in {seeded_in:.0f} s"
                for file_format in ("csv", "xlsx"):
                    yield _export_result(kind, client, headers, file_format, runs, settings)
                    settings = {}
        finally:
            services.close()


def _tick(services: Services, clock: ManualClock, minutes: int) -> None:
    ticker = Ticker.of(services)
    for _ in range(minutes):
        clock.advance(60)
        ticker.scan()
    services.projector.catch_up()


def _export_result(
    kind: str,
    client: FlaskClient,
    headers: dict[str, str],
    file_format: str,
    runs: int,
    settings: dict[str, object],
) -> Result:
    """One export timed; a second one's peak memory traced; the 10,000-row file opened."""
    path = Path(tempfile.mkdtemp()) / f"runs.{file_format}"
    try:
        started = time.perf_counter()
        size = _download(client, EXPORT.format(file_format), headers, path)
        seconds = time.perf_counter() - started
        peak = _peak_mib(lambda: _download(client, EXPORT.format(file_format), headers, None))
        figures = [
            Figure(
                "export",
                round(seconds, 2),
                "s",
                at_most=GOAL_SECONDS if runs <= 10_000 else None,
            ),
            Figure("file", round(size / 2**20, 1), "MiB"),
            Figure("peak traced memory", round(peak, 1), "MiB"),
        ]
        if runs <= 10_000:
            opened, rows = _opened(path, file_format)
            assert rows == runs, f"the {file_format} file holds {rows} runs, not {runs}"
            reader = "csv" if file_format == "csv" else "openpyxl"
            figures.append(Figure(f"opened by {reader}", round(opened, 2), "s"))
        case = f"{kind}, {runs:,} runs, {file_format.upper()}"
        return Result("exports", case, tuple(figures), settings)
    finally:
        path.unlink(missing_ok=True)
        os.rmdir(path.parent)


def _download(client: FlaskClient, url: str, headers: dict[str, str], path: Path | None) -> int:
    """The export's bytes, read chunk by chunk (to `path`, or dropped): how many."""
    answer = client.get(url, headers=headers, buffered=False)
    assert answer.status_code == 200, answer.status_code
    size = 0
    with open(path, "wb") if path else open(os.devnull, "wb") as file:
        for chunk in answer.response:
            size += len(chunk)
            file.write(chunk)
    answer.close()
    return size


def _peak_mib(export: Callable[[], int]) -> float:
    """The most memory Python held at once during `export`, beyond what it held before."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        export()
        return (tracemalloc.get_traced_memory()[1] - before) / 2**20
    finally:
        tracemalloc.stop()


def _opened(path: Path, file_format: str) -> tuple[float, int]:
    """How long `csv` or `openpyxl` take to read the file, and how many runs it holds."""
    started = time.perf_counter()
    if file_format == "csv":
        with path.open(encoding="utf-8-sig", newline="") as file:
            rows = sum(1 for _ in csv.reader(file)) - 1
    else:
        with path.open("rb") as file:
            sheet = load_workbook(io.BytesIO(file.read()), read_only=True).worksheets[0]
            rows = sum(1 for _ in sheet.iter_rows(values_only=True)) - 1
    return time.perf_counter() - started, rows


if __name__ == "__main__":
    for outcome in run():
        print(outcome if isinstance(outcome, str) else outcome.line)
