"""What `make bench` reports: figures against their goals, percentiles, results files, clock."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from bench._goals import goals_section
from bench._processes import ShiftedClock
from bench._results import (
    Failure,
    Figure,
    Outcome,
    Result,
    as_json,
    line_of,
    markdown,
    percentile,
    spread,
)

MACHINE = {"cpu": "2 x Test CPU", "commit": "abc1234"}


def test_a_figure_meets_or_misses_its_goal() -> None:
    assert Figure("launched", 4.2, "s", at_most=5).met is True
    assert Figure("launched", 5.5, "s", at_most=5).met is False
    assert Figure("reads", 650, "req/s", at_least=700).met is False
    assert Figure("events", 12_000, "events/s").met is None


def test_a_figure_says_its_goal_and_whether_it_is_met() -> None:
    assert Figure("all launched", 7.25, "s", at_most=5).text() == (
        "all launched 7.25 s (goal <= 5 s: MISSED)"
    )
    assert Figure("reads", 1234.5, "req/s", at_least=700).text() == (
        "reads 1,234 req/s (goal >= 700 req/s: met)"
    )


def test_percentiles_are_nearest_rank() -> None:
    values = [float(n) for n in range(100, 0, -1)]
    assert percentile(values, 0.5) == 50
    assert percentile(values, 0.99) == 99
    assert percentile([3.0], 0.99) == 3
    assert [f.value for f in spread("lag", [1.0, 2.0, 10.0])] == [2, 10, 10]
    with pytest.raises(ValueError, match="no values"):
        percentile([], 0.5)


def test_plain_lines_and_failures_are_printed_beside_results() -> None:
    result = Result("e2e", "sqlite, 10 due", (Figure("all launched", 1.5, "s"),))
    outcomes: list[Outcome] = [
        result,
        "tick sqlite: 10 cycles",
        Failure("peer", "OperationalError: down"),
    ]
    assert [line_of(o) for o in outcomes] == [
        "e2e sqlite, 10 due: all launched 1.5 s",
        "tick sqlite: 10 cycles",
        "peer: FAILED: OperationalError: down",
    ]


def test_results_markdown_has_the_machine_the_goals_every_figure_and_the_rest() -> None:
    result = Result(
        "peer",
        "APScheduler | memory",
        (Figure("all launched", 0.2, "s"), Figure("p99", 80, "ms", at_most=100)),
        settings={"executor": "ThreadPoolExecutor(20)"},
    )
    failure = Failure("http", "OperationalError: refused\n\tIs the server running?")
    text = markdown([result, "a plain line", failure], MACHINE)
    assert "- cpu: 2 x Test CPU" in text
    goals = text[text.index("## Every goal") : text.index("## Every figure")]
    assert "| peer | APScheduler \\| memory | p99 | 80 ms | <= 100 ms | yes |" in goals
    assert "all launched" not in goals
    assert "| peer | APScheduler \\| memory | all launched 0.2 s; p99 80 ms |" in text
    assert "executor=ThreadPoolExecutor(20)" in text
    assert "- a plain line" in text
    assert "- http: FAILED: OperationalError: refused Is the server running?" in text


def test_results_json_holds_the_same_figures() -> None:
    result = Result("e2e", "postgresql", (Figure("all registered", 1.4, "s", at_most=1),))
    document = json.loads(as_json([result, "line", Failure("http", "boom")], MACHINE))
    assert document["machine"] == MACHINE
    [figure] = document["results"][0]["figures"]
    assert figure == {
        "name": "all registered",
        "value": 1.4,
        "unit": "s",
        "at_most": 1,
        "at_least": None,
        "met": False,
    }
    assert document["lines"] == ["line"]
    assert document["failures"] == [{"benchmark": "http", "error": "boom"}]


def test_the_shifted_clock_stands_until_started_then_runs_and_only_jumps_forward() -> None:
    seeded = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
    clock = ShiftedClock(seeded - timedelta(minutes=1))
    assert clock() == clock() == seeded - timedelta(minutes=1)
    clock.start(seeded)
    first = clock()
    time.sleep(0.01)
    assert seeded <= first < clock() < seeded + timedelta(seconds=5)
    clock.jump(seeded + timedelta(minutes=1))
    assert clock() >= seeded + timedelta(minutes=1)
    clock.jump(seeded)  # behind it: ignored
    assert clock() >= seeded + timedelta(minutes=1)


def test_the_release_goals_read_their_figures_and_say_what_was_not_measured() -> None:
    case = "one serve process, {store}, 10,000 cycles due at once"
    results = [
        Result("e2e", case.format(store=store), (Figure("all registered", value, "s", at_most=1),))
        for store, value in (("postgresql", 0.8), ("sqlite", 1.4))
    ]
    section = "\n".join(goals_section(results))
    registered = next(line for line in section.splitlines() if "all registered" in line)
    assert registered == (
        "| 10,000 due at once, all registered, one `serve`, both stores "
        "| PostgreSQL 0.8 s; SQLite 1.4 s | <= 1 s | **no** |"
    )
    launched = next(line for line in section.splitlines() if "all launched, one" in line)
    assert launched.endswith(
        "| PostgreSQL not measured; SQLite not measured | <= 5 s | not measured |"
    )
    missed = section.partition("### Where the time goes, for each goal missed")[2]
    assert missed.count("\n- **") == 1
    assert "- **10,000 due at once, all registered, one `serve`, both stores**: " in missed
    text = markdown(results, MACHINE, goals_section(results))
    assert text.index("## Goals of this release") < text.index("## Every goal")
