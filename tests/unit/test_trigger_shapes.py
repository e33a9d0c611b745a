"""The trigger as the document spells it out agrees with the trigger the domain takes: the same
keys, types and bounds (domain/triggers.py validates; web/openapi_shapes.py documents)."""

from __future__ import annotations

from typing import Any

import pytest
from openapi_schema_validator import OAS30Validator, oas30_format_checker

from domain.triggers import (
    _HH_MM,
    _WINDOW_KEYS,
    MAX_EXPRESSION_LENGTH,
    MAX_WEEKDAYS,
    MAX_WINDOWS,
    TriggerError,
    parse_trigger,
    trigger_to_dict,
)
from web.openapi_shapes import ANSWER, REQUEST, trigger_shapes

CRON = {"kind": "cron", "expression": "0 9 * * MON-FRI"}
WINDOW = {"start": "09:30", "end": "11:30"}
WINDOWS = {
    "kind": "window-interval",
    "weekdays": [1, 5],
    "windows": [WINDOW],
    "interval_minutes": 5,
}


# A cron expression of the most characters allowed: minutes `1,1,…`, hours `10,1,1,…`.
LONGEST = f"{'1,' * 62}1 10{',1' * 61} * * *"


def documented(side: str) -> OAS30Validator:
    """A validator of the trigger of a request (`In`) or an answer (`Out`)."""
    root = {"$ref": f"#/components/schemas/Trigger{side}"}
    document = {**root, "components": {"schemas": trigger_shapes(side)}}
    return OAS30Validator(document, format_checker=oas30_format_checker)


def taken_by_domain(trigger: Any) -> bool:
    try:
        parse_trigger(trigger)
    except TriggerError:
        return False
    return True


def windows(count: int) -> list[dict[str, str]]:
    return [{"start": f"{n % 24:02d}:00", "end": f"{n % 24:02d}:30"} for n in range(count)]


# Triggers at and beyond each documented bound, of every key and type.
CASES = [
    CRON,
    {**CRON, "expression": LONGEST},
    {**CRON, "expression": "0," * (MAX_EXPRESSION_LENGTH // 2) + "0 9 * * *"},
    {**CRON, "expression": 9},
    {**CRON, "seconds": "0"},
    {"kind": "cron"},
    {"kind": "hourly", "expression": "0 * * * *"},
    {"expression": "0 9 * * *"},
    WINDOWS,
    {**WINDOWS, "weekdays": [1, 2, 3, 4, 5, 6, 7], "windows": windows(MAX_WINDOWS)},
    {**WINDOWS, "weekdays": [1, 1]},
    {**WINDOWS, "weekdays": []},
    {**WINDOWS, "weekdays": [0]},
    {**WINDOWS, "weekdays": [8]},
    {**WINDOWS, "weekdays": [1] * (MAX_WEEKDAYS + 1)},
    {**WINDOWS, "weekdays": ["1"]},
    {**WINDOWS, "weekdays": [True]},
    {**WINDOWS, "weekdays": 1},
    {**WINDOWS, "windows": []},
    {**WINDOWS, "windows": windows(MAX_WINDOWS + 1)},
    {**WINDOWS, "windows": [{**WINDOW, "every": 5}]},
    {**WINDOWS, "windows": [{"start": "09:30"}]},
    {**WINDOWS, "windows": [{"start": "9:30", "end": "11:30"}]},
    {**WINDOWS, "windows": [{"start": "24:00", "end": "24:00"}]},
    {**WINDOWS, "windows": [{"start": "09:60", "end": "10:00"}]},
    {**WINDOWS, "windows": [{"start": "00:00", "end": "23:59"}]},
    {**WINDOWS, "windows": ["09:30-11:30"]},
    {**WINDOWS, "interval_minutes": 1},
    {**WINDOWS, "interval_minutes": 1440},
    {**WINDOWS, "interval_minutes": 0},
    {**WINDOWS, "interval_minutes": 1441},
    {**WINDOWS, "interval_minutes": 1.5},
    {**WINDOWS, "interval_minutes": True},
    {**WINDOWS, "interval_minutes": "5"},
    {**WINDOWS, "expression": "0 9 * * *"},
    {key: value for key, value in WINDOWS.items() if key != "windows"},
]


@pytest.mark.parametrize("trigger", CASES)
def test_the_document_takes_what_the_domain_takes(trigger: dict[str, Any]) -> None:
    assert documented(REQUEST).is_valid(trigger) == taken_by_domain(trigger)


def test_the_documented_keys_are_the_domains() -> None:
    shapes = trigger_shapes(REQUEST)
    assert set(shapes["WindowIntervalTriggerIn"]["properties"]) == _WINDOW_KEYS
    assert set(shapes["CronTriggerIn"]["properties"]) == {"kind", "expression"}
    assert set(shapes["TriggerWindowIn"]["properties"]) == {"start", "end"}


def test_the_documented_wall_time_is_the_domains() -> None:
    pattern = documented(REQUEST)
    for text in (f"{h:02d}:{m:02d}" for h in range(30) for m in range(0, 70, 7)):
        window = {**WINDOWS, "windows": [{"start": text, "end": text}]}
        assert pattern.is_valid(window) == bool(_HH_MM.fullmatch(text)), text


def test_an_answer_carries_the_shape_a_request_takes_open_to_new_keys() -> None:
    requests, answers = trigger_shapes(REQUEST), trigger_shapes(ANSWER)
    for name, shape in requests.items():
        answer = answers[name.removesuffix(REQUEST) + ANSWER]
        assert set(shape.get("properties", {})) == set(answer.get("properties", {}))
        assert shape.get("required") == answer.get("required")
        assert "additionalProperties" not in answer
        assert shape.get("additionalProperties", False) is False
    for trigger in (CRON, WINDOWS, {**WINDOWS, "weekdays": [5, 1, 5]}):
        shown = trigger_to_dict(parse_trigger(trigger))
        assert documented(ANSWER).is_valid(shown)
        assert documented(ANSWER).is_valid({**shown, "added_later": 1})
