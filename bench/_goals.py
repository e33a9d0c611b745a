"""The performance goals of release 0.13 (round three), one row each, at the top of results.md.

Each row names the figures that measure it (benchmark, case, figure name, as the modules report
them); its value lists each one found, and it is met when every one of them meets its goal. A
row whose figures were not measured in the run (a module not run, or failed) says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bench._results import Figure, Result, with_unit

GOAL_CYCLES = "10,000"
WEB = "web --workers 2, postgresql"
STREAMS_VS_NONE = "500 streams open vs none, 32 clients"


@dataclass(frozen=True)
class Measure:
    """One figure a goal row reads: where it is reported, and how the row labels it."""

    benchmark: str
    case: str
    figure: str
    label: str


@dataclass(frozen=True)
class GoalRow:
    what: str
    goal: str
    measures: tuple[Measure, ...]


def _each(case: str, figure: str, labels: dict[str, str], benchmark: str) -> tuple[Measure, ...]:
    """The figure of each case `case.format(what=...)`, labelled as `labels` says."""
    return tuple(
        Measure(benchmark, case.format(what=what), figure, label) for what, label in labels.items()
    )


def _both_stores(benchmark: str, case: str, figure: str) -> tuple[Measure, ...]:
    return _each(case, figure, {"postgresql": "PostgreSQL", "sqlite": "SQLite"}, benchmark)


def _web(case: str, figure: str, *what: str) -> tuple[Measure, ...]:
    return _each(f"{WEB}, {case}", figure, {w: w for w in what}, "http")


ROWS = (
    GoalRow(
        f"{GOAL_CYCLES} due at once, time to all launched / APScheduler-SQLAlchemy, PostgreSQL",
        "<= 0.8 x",
        (
            Measure(
                "peer",
                f"cronledger / APScheduler, postgresql, {GOAL_CYCLES} due at once",
                "time to all launched",
                "PostgreSQL",
            ),
        ),
    ),
    GoalRow(
        "same, SQLite (against the same APScheduler run)",
        "<= 0.8 x",
        (
            Measure(
                "peer",
                f"cronledger / APScheduler, sqlite, {GOAL_CYCLES} due at once",
                "time to all launched",
                "SQLite",
            ),
        ),
    ),
    GoalRow(
        f"{GOAL_CYCLES} due at once, all registered, one `serve`, both stores",
        "<= 1 s",
        _both_stores(
            "e2e",
            f"one serve process, {{what}}, {GOAL_CYCLES} cycles due at once",
            "all registered",
        ),
    ),
    GoalRow(
        f"{GOAL_CYCLES} due at once, all launched, one `serve`, both stores",
        "<= 5 s",
        _both_stores(
            "e2e",
            f"one serve process, {{what}}, {GOAL_CYCLES} cycles due at once",
            "all launched",
        ),
    ),
    GoalRow(
        f"every-minute cycles due right after a {GOAL_CYCLES} spike, registration lag",
        "< grace (5 s)",
        _both_stores(
            "e2e",
            f"every-minute cycles due right after a {GOAL_CYCLES} spike, one serve process, "
            "{what}",
            "registration lag max",
        ),
    ),
    GoalRow(
        "commands (approve, create schedule) p99 at 32 clients, `web --workers 2`",
        "< 200 ms",
        _web("no stream, 32 clients, POST {what}", "p99", "approve", "schedule"),
    ),
    GoalRow(
        "list reads at 32 clients, `web --workers 2`, PostgreSQL",
        ">= 700/s, p99 < 100 ms",
        (
            Measure("http", f"{WEB}, no stream, 32 clients, both lists together", "throughput", ""),
            *_web("no stream, 32 clients, GET {what}", "p99", "approval list", "runs list"),
        ),
    ),
    GoalRow(
        "500 open streams vs none, list p99 ratio",
        "<= 1.2 x",
        _web(f"{STREAMS_VS_NONE}, GET {{what}}", "p99 ratio", "approval list", "runs list"),
    ),
)


def goals_section(results: Sequence[Result]) -> list[str]:
    """The rows of ROWS as a markdown table: what, the figures measured, the goal, met."""
    found = {(r.benchmark, r.case, f.name): f for r in results for f in r.figures}
    lines = ["## Goals of this release", "", "| What | Measured | Goal | Met |"]
    lines.append("|---|---|---|---|")
    for row in ROWS:
        figures = [(m, found.get((m.benchmark, m.case, m.figure))) for m in row.measures]
        lines.append(f"| {row.what} | {_measured(figures)} | {row.goal} | {_met(figures)} |")
    return [*lines, ""]


def _measured(figures: Iterable[tuple[Measure, Figure | None]]) -> str:
    shown = [
        f"{m.label} {with_unit(f)}".strip() if f else f"{m.label} not measured".strip()
        for m, f in figures
    ]
    return "; ".join(shown)


def _met(figures: Sequence[tuple[Measure, Figure | None]]) -> str:
    if any(f is None for _, f in figures):
        return "not measured"
    return "yes" if all(f is not None and f.met for _, f in figures) else "**no**"
