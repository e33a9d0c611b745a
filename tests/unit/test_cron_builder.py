"""The schedule form's cron builder reads an expression back into its choices: the ones it
writes, and `advanced` (the expression as typed) for anything else."""

from __future__ import annotations

import pytest

from web.console.cron_builder import Builder, builder_of


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("* * * * *", Builder("minutes", every=1)),
        ("*/15 * * * *", Builder("minutes", every=15)),
        ("5 * * * *", Builder("hourly", minute=5)),
        ("30 8 * * *", Builder("daily", time="08:30")),
        ("30 8 * * 1-5", Builder("weekly", time="08:30", days=(1, 2, 3, 4, 5))),
        ("0 9 * * MON-FRI", Builder("weekly", time="09:00", days=(1, 2, 3, 4, 5))),
        ("0 9 * * 0,6", Builder("weekly", time="09:00", days=(6, 7))),
        ("0 18 15 * *", Builder("monthly", time="18:00", day=15)),
    ],
)
def test_what_the_builder_writes_it_reads_back(expression: str, expected: Builder) -> None:
    assert builder_of(expression) == expected


@pytest.mark.parametrize(
    "expression",
    [
        "0 0 9 * * *",  # six fields: seconds are written by hand
        "0 9 L * *",
        "0 9 1 1 *",  # one month only
        "0 9 1 * 1",  # a day of the month or a weekday
        "*/7 9-17 * * *",
        "61 * * * *",
        "0 24 * * *",
        "0 9 32 * *",
        "",
        "０ 9 * * *",  # a full-width digit
    ],
)
def test_anything_else_is_advanced(expression: str) -> None:
    assert builder_of(expression).mode == "advanced"
