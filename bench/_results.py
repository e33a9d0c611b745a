"""What a benchmark module hands back to `python -m bench`, and the files it is written to.

The interface, for every module `bench/<name>.py`:

    def run() -> Iterable[Result | str]: ...

- A `str` is a plain line: printed as is, kept in results.json under "lines", no table row.
- A `Result` is one measured case: `benchmark` (the module's name, e.g. "http"), `case` (what was
  measured, e.g. "serve, SQLite, 32 clients, GET /api/runs"), its `figures`, and optional
  `settings` (the configuration that produced them, shown beside the figures). Its `line` is
  what is printed; it defaults to the case followed by every figure.
- A `Figure` is one number with its unit ("s", "ms", "req/s", "events/s", "MiB", "x" for a
  ratio, "" for a count) and an optional goal: `at_most` / `at_least` (in the same unit) make
  `met` true or false, shown in the table.

Example:

    from bench._results import Figure, Result

    def run() -> Iterator[Result]:
        yield Result(
            "http",
            "serve, SQLite, 32 clients, GET /api/runs",
            (Figure("throughput", 612.0, "req/s", at_least=700),
             Figure("p99", 84.0, "ms", at_most=100)),
            settings={"workers": 4},
        )

Results are printed as they come (a generator shows progress); a module that raises is reported
as failed and the others still run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Figure:
    """One measured number; `at_most` / `at_least` state its goal, if it has one."""

    name: str
    value: float
    unit: str = ""
    at_most: float | None = None
    at_least: float | None = None

    @property
    def met(self) -> bool | None:
        """Whether the goal is met; None when there is no goal."""
        if self.at_most is None and self.at_least is None:
            return None
        return (self.at_most is None or self.value <= self.at_most) and (
            self.at_least is None or self.value >= self.at_least
        )

    @property
    def goal(self) -> str:
        """The goal in words, e.g. `<= 5 s`; empty when there is none."""
        unit = _spaced(self.unit)
        bounds = [f"<= {_number(self.at_most)}{unit}" if self.at_most is not None else ""]
        bounds.append(f">= {_number(self.at_least)}{unit}" if self.at_least is not None else "")
        return " and ".join(bound for bound in bounds if bound)

    def text(self) -> str:
        shown = f"{self.name} {_number(self.value)}{_spaced(self.unit)}"
        met = self.met
        return shown if met is None else f"{shown} (goal {self.goal}: {'met' if met else 'MISSED'})"

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "at_most": self.at_most,
            "at_least": self.at_least,
            "met": self.met,
        }


@dataclass(frozen=True)
class Result:
    """One measured case of one benchmark."""

    benchmark: str
    case: str
    figures: tuple[Figure, ...]
    settings: Mapping[str, object] = field(default_factory=dict)
    note: str = ""

    @property
    def line(self) -> str:
        figures = ", ".join(figure.text() for figure in self.figures)
        note = f" [{self.note}]" if self.note else ""
        return f"{self.benchmark} {self.case}: {figures}{note}"

    def as_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "case": self.case,
            "figures": [figure.as_json() for figure in self.figures],
            "settings": {key: _plain(value) for key, value in self.settings.items()},
            "note": self.note,
        }


@dataclass(frozen=True)
class Failure:
    """A module that raised: its name and the error, reported instead of its figures."""

    benchmark: str
    error: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "error", " ".join(self.error.split()))  # one line

    @property
    def line(self) -> str:
        return f"{self.benchmark}: FAILED: {self.error}"


Outcome = Result | str | Failure


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile: the smallest value at least `share` (0-1] of all reach."""
    if not values:
        raise ValueError("no values")
    ranked = sorted(values)
    return ranked[max(0, math.ceil(share * len(ranked)) - 1)]


def spread(name: str, values: Sequence[float], unit: str = "s") -> tuple[Figure, ...]:
    """`name p50`, `name p99` and `name max` of `values`."""
    return (
        Figure(f"{name} p50", percentile(values, 0.5), unit),
        Figure(f"{name} p99", percentile(values, 0.99), unit),
        Figure(f"{name} max", max(values), unit),
    )


def line_of(outcome: Outcome) -> str:
    return outcome if isinstance(outcome, str) else outcome.line


def markdown(
    outcomes: Iterable[Outcome], machine: Mapping[str, str], first: Sequence[str] = ()
) -> str:
    """results.md: the machine; the lines `first` (the release's goals); the figures that have
    a goal, one row each; every case with all its figures; the settings; then plain lines and
    failures."""
    outcomes = list(outcomes)
    results = [outcome for outcome in outcomes if isinstance(outcome, Result)]
    parts = ["# Benchmark results", ""]
    parts += [f"- {key}: {value}" for key, value in machine.items()]
    parts += ["", *first]
    parts += ["## Every goal", "", "| Benchmark | Case | Figure | Value | Goal | Met |"]
    parts.append("|---|---|---|---:|---|---|")
    for result in results:
        for figure in (figure for figure in result.figures if figure.met is not None):
            parts.append(
                f"| {result.benchmark} | {_cell(result.case)} | {_cell(figure.name)} "
                f"| {with_unit(figure)} | {figure.goal} | {'yes' if figure.met else '**no**'} |"
            )
    parts += ["", "## Every figure", "", "| Benchmark | Case | Figures |", "|---|---|---|"]
    for result in results:
        figures = "; ".join(f"{figure.name} {with_unit(figure)}" for figure in result.figures)
        note = f" ({result.note})" if result.note else ""
        parts.append(f"| {result.benchmark} | {_cell(result.case + note)} | {_cell(figures)} |")
    parts += _settings_section(outcomes)
    others = [line_of(outcome) for outcome in outcomes if not isinstance(outcome, Result)]
    if others:
        parts += ["", "## Other lines", ""] + [f"- {line}" for line in others]
    return "\n".join(parts) + "\n"


def with_unit(figure: Figure) -> str:
    return f"{_number(figure.value)}{_spaced(figure.unit)}"


def as_json(outcomes: Iterable[Outcome], machine: Mapping[str, str]) -> str:
    """results.json: the same figures, machine-readable."""
    outcomes = list(outcomes)
    document = {
        "machine": dict(machine),
        "results": [outcome.as_json() for outcome in outcomes if isinstance(outcome, Result)],
        "lines": [outcome for outcome in outcomes if isinstance(outcome, str)],
        "failures": [
            {"benchmark": outcome.benchmark, "error": outcome.error}
            for outcome in outcomes
            if isinstance(outcome, Failure)
        ],
    }
    return json.dumps(document, indent=2) + "\n"


def _settings_section(outcomes: list[Outcome]) -> list[str]:
    configured = [
        outcome for outcome in outcomes if isinstance(outcome, Result) and outcome.settings
    ]
    lines: list[str] = []
    for result in configured:
        shown = ", ".join(f"{key}={_plain(value)}" for key, value in result.settings.items())
        lines.append(f"- {result.benchmark} {result.case}: {shown}")
    return ["", "## Settings", "", *lines] if lines else []


def _number(value: float) -> str:
    """Readable at a glance: thousands separated, three significant digits below 100."""
    if math.isnan(value) or math.isinf(value):
        return str(value)
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if value == int(value):
        return f"{int(value)}"
    return f"{value:.3g}"


def _spaced(unit: str) -> str:
    return f" {unit}" if unit else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _plain(value: object) -> object:
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)
