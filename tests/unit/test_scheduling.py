"""The order `make test` hands out modules in (tests/scheduling.py) names only modules there are."""

from __future__ import annotations

from pathlib import Path

from tests.scheduling import MEASURED

TESTS = Path(__file__).parents[1]


def test_every_measured_module_is_a_test_module() -> None:
    assert [name for name in MEASURED if not (TESTS / name).is_file()] == []
