"""`make bench` (`python -m bench`): every benchmark module in this package, one after another.

`python -m bench e2e peer` runs only the modules named. A full run writes bench/results.md
and bench/results.json; a run of some modules prints only, unless given `--write`. A module
that fails is reported and the others still run (bench/_results.py describes what a module's
`run()` returns).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import bench
from bench._goals import goals_section
from bench._machine import describe_machine
from bench._results import Failure, Outcome, Result, as_json, line_of, markdown

HERE = Path(__file__).parent


def modules() -> list[str]:
    """Every benchmark module's name, in alphabetical order (`_`-prefixed ones are helpers)."""
    return sorted(m.name for m in pkgutil.iter_modules(bench.__path__) if m.name[0] != "_")


def outcomes_of(name: str) -> Iterator[Outcome]:
    """What one module reports; its failure, should it raise, after what it reported."""
    try:
        yield from importlib.import_module(f"bench.{name}").run()
    except Exception as error:  # a broken module must not stop the others
        traceback.print_exc(file=sys.stderr)
        yield Failure(name, f"{type(error).__name__}: {error}")


def main(argv: list[str] | None = None) -> int:
    known = modules()
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="module", help=f"one of {', '.join(known)}")
    parser.add_argument("--write", action="store_true", help="write results files anyway")
    arguments = parser.parse_args(argv)
    unknown = sorted(set(arguments.names) - set(known))
    if unknown:
        parser.error(f"no benchmark named {', '.join(unknown)}; known: {', '.join(known)}")
    machine = describe_machine()
    for key, value in machine.items():
        print(f"{key}: {value}", flush=True)
    outcomes: list[Outcome] = []
    for name in arguments.names or known:
        started = time.perf_counter()
        for outcome in outcomes_of(name):
            print(line_of(outcome), flush=True)
            outcomes.append(outcome)
        print(f"({name}: {time.perf_counter() - started:.0f} s)", flush=True)
    if arguments.write or not arguments.names:
        results = [outcome for outcome in outcomes if isinstance(outcome, Result)]
        (HERE / "results.md").write_text(markdown(outcomes, machine, goals_section(results)))
        (HERE / "results.json").write_text(as_json(outcomes, machine))
        print(f"written: {HERE / 'results.md'}, {HERE / 'results.json'}")
    return 1 if any(isinstance(outcome, Failure) for outcome in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
