"""Callers' JSON, kept exactly as given: the log stores it as text and never interprets it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from itertools import accumulate
from typing import Any

from domain.errors import ValidationFailed
from domain.messages import Message

MAX_FORM_DATA_BYTES = 64 * 1024
MAX_FORM_DATA_DEPTH = 32

# A string literal, or an unterminated one up to the end: the match never fails, so never retries
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class FormData(Mapping[str, Any]):
    """A caller's JSON object (表单数据), immutable; equal to any mapping with the same items."""

    __slots__ = ("_value", "text")

    def __init__(self, value: Mapping[str, Any] | None = None) -> None:
        self.text = json.dumps(dict(value or {}), ensure_ascii=False, separators=(",", ":"))
        self._value: dict[str, Any] = json.loads(self.text)

    @classmethod
    def of(cls, value: Mapping[str, Any] | None) -> FormData:
        """The value itself if it is FormData already, else a copy of the mapping."""
        return value if isinstance(value, FormData) else cls(value)

    @classmethod
    def from_text(cls, text: str) -> FormData:
        """FormData from its stored text, parsed as plain JSON."""
        value = json.loads(text)
        if not isinstance(value, dict):
            raise ValueError("form data must be a JSON object")
        form_data = cls.__new__(cls)
        form_data.text = text
        form_data._value = value
        return form_data

    def to_dict(self) -> dict[str, Any]:
        """A fresh copy, for callers that change it."""
        return json.loads(self.text)  # type: ignore[no-any-return]

    def __getitem__(self, key: str) -> Any:
        return self._value[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._value)

    def __len__(self) -> int:
        return len(self._value)

    def __repr__(self) -> str:
        return f"FormData({self._value!r})"

    def __copy__(self) -> FormData:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FormData:
        return self


def checked_form_data(value: Mapping[str, Any] | None) -> FormData:
    """Form data to keep, if it is small enough; else VALIDATION_FAILED naming `form_data`."""
    form_data = FormData.of(value)
    problem = form_data_problem(form_data)
    if problem:
        raise ValidationFailed.of("form_data", problem)
    return form_data


def form_data_problem(form_data: FormData) -> str | None:
    """What makes form data too large to accept (it is kept forever), if anything."""
    size = len(form_data.text.encode())
    if size > MAX_FORM_DATA_BYTES:
        return Message(
            "form data is {size} bytes as JSON; at most {count} are allowed",
            size=size,
            count=MAX_FORM_DATA_BYTES,
        )
    depth = nesting_depth(form_data.text)
    if depth > MAX_FORM_DATA_DEPTH:
        return Message(
            "form data nests {depth} levels deep; at most {count} are allowed",
            depth=depth,
            count=MAX_FORM_DATA_DEPTH,
        )
    return None


def nesting_depth(text: str) -> int:
    """The most arrays and objects open at once in JSON text, brackets inside strings aside.

    One linear pass, before any parser recurses into it. Also measures text that is not JSON:
    unclosed brackets count, as a parser meets them first.
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)
