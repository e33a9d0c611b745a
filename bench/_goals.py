"""The performance goals of release 0.13 (round three), one row each, at the top of results.md.

Each row names the figures that measure it (benchmark, case, figure name, as the modules report
them); its value lists each one found, and it is met when every one of them meets its goal. A
row whose figures were not measured in the run (a module not run, or failed) says so. Under the
table, each goal missed says where the time goes, from py-spy profiles of the same code
(`BENCH_PROFILE`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bench._results import Figure, Result, with_unit

GOAL_CYCLES = "10,000"
WEB = "web --workers 2, postgresql"
STREAMS_VS_NONE = "500 streams open vs none, 32 clients"
MISSED = "**no**"

# Where the time goes, from py-spy profiles of this code on this 2-core machine (2026-12-05):
# the end-to-end bursts with BENCH_PROFILE, the HTTP load with py-spy on the web processes.
LAUNCHING = (
    "one `serve` runs the tick, the worker and the projections loop in one interpreter, so a "
    "burst is bound by one core. Of its busy samples in a 10,000 burst (SQLite), 49% project "
    "the new events into the 18 read models (reading them back and decoding 10%, the hash "
    "chain 10%, the SQL writes 16%), 24% are the worker's launch commits (each run's schedule "
    "read to count its cycles, the instance created, the overlap query, the append) and 18% "
    "the tick. APScheduler keeps no read model and no hash chain. As separate processes (the "
    "e2e case of separate tick, worker and projections processes) the burst is only a little "
    "faster: the worker and the tick still catch up the read models themselves before they "
    "read them. What would close it: the projections in a child process with the worker "
    "handed the registered runs, and fewer events per launch."
)
REGISTERING = (
    "the tick scans 10 ms after each whole second, and the worker and the projections loop of "
    "its process wait while it saves, so what is left is its own work on a shared interpreter: "
    "planning 10,000 runs (about 0.6 s: each `Run` made through eventsourcing's generic "
    "aggregate constructor, the cron plan, the title) and saving their 20,000 events (0.5-0.8 "
    "s: JSON encoding, the inserts, the event MACs). What would close it: the tick as a "
    "supervised child process of `serve`, on a core of its own."
)
COMMANDS = (
    "at 32 clients on 2 cores (2 processes of 8 API threads each) a command queues: for one of "
    "its pool's 2 + 4 PostgreSQL connections (12% of the web processes' samples in py-spy), and "
    "for the log's append, which writers take in turn (PostgreSQL appends under a table lock, "
    "so that positions have no gaps); then it catches up the read models, for read-your-writes. "
    "What would close it: a pool as large as the threads, and the catch-up off the request."
)
LISTS = (
    "the 2 cores are shared by the two web processes, PostgreSQL's backends and the load "
    "generator. The benchmark measures the web processes' CPU per request (`the servers' CPU` "
    "in Every figure): 2.7-2.9 ms a list at 4 clients in the runs of 2026-12-05, so 700 lists "
    "a second would take about 2 cores for the web processes alone. A list's time is the framework "
    "(routing, the token's session, the rate limits), the keyset query, the marshmallow dump "
    "and the ETag (sorted JSON and SHA-256, 5-7%); no one part is large enough to close the "
    "gap alone."
)
STREAMS = (
    "each open stream holds a waitress thread, and every new log position wakes all 500 of them "
    "to look at it: in py-spy their socket writes were 22% of the busy samples, on the same 2 "
    "cores as the lists (and the web processes' CPU per request grows with the streams: `the "
    "servers' CPU: per request ratio` in Every figure). What would close it: the streams "
    "written from one thread (an event loop beside the WSGI server)."
)


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
    why: str  # where the time goes, from the profiles: shown when the goal is missed


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
        LAUNCHING,
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
        LAUNCHING,
    ),
    GoalRow(
        f"{GOAL_CYCLES} due at once, all registered, one `serve`, both stores",
        "<= 1 s",
        _both_stores(
            "e2e",
            f"one serve process, {{what}}, {GOAL_CYCLES} cycles due at once",
            "all registered",
        ),
        REGISTERING,
    ),
    GoalRow(
        f"{GOAL_CYCLES} due at once, all launched, one `serve`, both stores",
        "<= 5 s",
        _both_stores(
            "e2e",
            f"one serve process, {{what}}, {GOAL_CYCLES} cycles due at once",
            "all launched",
        ),
        LAUNCHING,
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
        REGISTERING,
    ),
    GoalRow(
        "commands (approve, create schedule) p99 at 32 clients, `web --workers 2`",
        "< 200 ms",
        _web("no stream, 32 clients, POST {what}", "p99", "approve", "schedule"),
        COMMANDS,
    ),
    GoalRow(
        "list reads at 32 clients, `web --workers 2`, PostgreSQL",
        ">= 700/s, p99 < 100 ms",
        (
            Measure("http", f"{WEB}, no stream, 32 clients, both lists together", "throughput", ""),
            *_web("no stream, 32 clients, GET {what}", "p99", "approval list", "runs list"),
        ),
        LISTS,
    ),
    GoalRow(
        "500 open streams vs none, list p99 ratio",
        "<= 1.2 x",
        _web(f"{STREAMS_VS_NONE}, GET {{what}}", "p99 ratio", "approval list", "runs list"),
        STREAMS,
    ),
)


def goals_section(results: Sequence[Result]) -> list[str]:
    """The rows of ROWS as a markdown table: what, the figures measured, the goal, met; then
    where the time goes for each goal missed."""
    found = {(r.benchmark, r.case, f.name): f for r in results for f in r.figures}
    lines = ["## Goals of this release", "", "| What | Measured | Goal | Met |"]
    lines.append("|---|---|---|---|")
    missed: list[str] = []
    for row in ROWS:
        figures = [(m, found.get((m.benchmark, m.case, m.figure))) for m in row.measures]
        met = _met(figures)
        lines.append(f"| {row.what} | {_measured(figures)} | {row.goal} | {met} |")
        if met == MISSED:
            missed.append(f"- **{row.what}**: {row.why}")
    if missed:
        lines += ["", "### Where the time goes, for each goal missed", "", *missed]
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
    return "yes" if all(f is not None and f.met for _, f in figures) else MISSED
