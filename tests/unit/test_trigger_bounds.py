"""Trigger input is bounded before anything parses it: long input is a quick, named error.

No timings here: a refusal that quotes the length cap shows that no parsing ran, and the inputs
that used to hang (long digit runs, which the old L/W regular expression read in quadratic time and
`int()` refused past 4,300 digits) now stop at the cap.
"""

from __future__ import annotations

from typing import Any

import pytest

from domain.triggers import (
    MAX_EXPRESSION_LENGTH,
    MAX_FIELD_LENGTH,
    MAX_WINDOWS,
    CronTrigger,
    TriggerError,
    load_zone,
    parse_trigger,
)

MIB = 1024 * 1024


def zeros(length: int) -> str:
    """A valid cron list of zeros exactly `length` characters long: `0,0,...,0`."""
    return ("0," * length)[: length - 1] + "0"


def cron_error(expression: str) -> TriggerError:
    with pytest.raises(TriggerError) as caught:
        parse_trigger({"kind": "cron", "expression": expression})
    assert caught.value.field == "expression"
    return caught.value


@pytest.mark.parametrize("length", [24_000, MIB])
@pytest.mark.parametrize("filler", ["1", "1L", "5,"])
def test_a_huge_expression_is_refused_by_its_length(length: int, filler: str) -> None:
    expression = "0 0 * * " + filler * (length // len(filler))
    message = cron_error(expression).message
    assert message == (
        f"is {len(expression)} characters long; at most {MAX_EXPRESSION_LENGTH} are allowed"
    )


def test_a_huge_expression_is_refused_when_built_directly() -> None:
    with pytest.raises(TriggerError, match=f"at most {MAX_EXPRESSION_LENGTH} are allowed"):
        CronTrigger("1" * MIB)


def test_the_longest_expression_with_the_longest_field_is_accepted() -> None:
    seconds = zeros(MAX_FIELD_LENGTH)
    minutes = zeros(MAX_EXPRESSION_LENGTH - len(seconds) - len("  * * * *"))
    expression = f"{seconds} {minutes} * * * *"
    assert len(expression) == MAX_EXPRESSION_LENGTH
    assert parse_trigger({"kind": "cron", "expression": expression}) == CronTrigger(expression)
    assert "characters long" in cron_error(f"{expression},0").message


def test_a_long_field_is_named() -> None:
    message = cron_error(f"0 0 * * {zeros(MAX_FIELD_LENGTH + 1)}").message
    assert message == (
        f"the day-of-week field is {MAX_FIELD_LENGTH + 1} characters long; "
        f"at most {MAX_FIELD_LENGTH} are allowed"
    )


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("1" * (MAX_FIELD_LENGTH - 1) + "L", "L and W are not supported"),
        ("L" + "1" * (MAX_FIELD_LENGTH - 1), "L and W are not supported"),
        ("1" * (MAX_FIELD_LENGTH - 2) + "LW", "L and W are not supported"),
        ("1" * (MAX_FIELD_LENGTH - 1) + "H", "H and R (hashed and random) are not supported"),
        ("1" * MAX_FIELD_LENGTH, "day-of-week " + "1" * MAX_FIELD_LENGTH + " is out of range 0-7"),
        ("*/" + "9" * (MAX_FIELD_LENGTH - 2), "day-of-week step " + "9" * (MAX_FIELD_LENGTH - 2)),
    ],
)
def test_the_longest_fields_get_the_syntax_error_they_deserve(field: str, message: str) -> None:
    assert cron_error(f"0 0 * * {field}").message.startswith(message)


def test_letters_next_to_letters_are_not_l_or_w() -> None:
    trigger = parse_trigger({"kind": "cron", "expression": "0 0 * JUL-DEC SAT,SUN"})
    assert trigger == CronTrigger("0 0 * JUL-DEC SAT,SUN")


WINDOW = {"start": "09:00", "end": "10:00"}
WINDOW_TRIGGER: dict[str, Any] = {
    "kind": "window-interval",
    "weekdays": [1],
    "windows": [WINDOW],
    "interval_minutes": 30,
}


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"weekdays": [1] * 8}, "weekdays", "must list at most 7 days"),
        ({"windows": [WINDOW] * (MAX_WINDOWS + 1)}, "windows", "must list at most 48 windows"),
        ({"x" * MIB: 1}, "x" * 40 + "…", "is not a field of a window-interval trigger"),
    ],
)
def test_window_triggers_are_bounded(change: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(TriggerError) as caught:
        parse_trigger({**WINDOW_TRIGGER, **change})
    assert (caught.value.field, caught.value.message) == (field, message)


def test_the_most_windows_are_accepted() -> None:
    parse_trigger({**WINDOW_TRIGGER, "windows": [WINDOW] * MAX_WINDOWS})


def test_a_huge_window_time_is_not_echoed() -> None:
    with pytest.raises(TriggerError) as caught:
        parse_trigger({**WINDOW_TRIGGER, "windows": [{"start": "0" * MIB, "end": "10:00"}]})
    assert caught.value.field == "windows"
    assert len(caught.value.message) < 100


@pytest.mark.parametrize("name", ["Europe/" + "A" * 60, "x" * MIB])
def test_a_long_zone_name_is_refused_by_its_length(name: str) -> None:
    with pytest.raises(TriggerError) as caught:
        load_zone(name)
    assert (caught.value.field, caught.value.message) == (
        "timezone",
        "must be at most 64 characters long",
    )
