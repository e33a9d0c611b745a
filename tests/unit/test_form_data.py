"""Callers' JSON on the log: stored as given, never read as an encoded value, old shape too."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from uuid import UUID

import pytest

from cronledger.persistence.transcoding import LogTranscoder
from domain.approvals import Command
from domain.errors import ValidationFailed
from domain.values import (
    MAX_FORM_DATA_BYTES,
    MAX_FORM_DATA_DEPTH,
    FormData,
    checked_form_data,
    form_data_problem,
    nesting_depth,
)

ENCODED_LOOKALIKES = {
    "unknown": {"_type_": "no_such_type", "_data_": 1},
    "uuid": {"_type_": "uuid_hex", "_data_": "0123456789abcdef0123456789abcdef"},
    "bad": {"_type_": "datetime_iso", "_data_": 5},
    "ours": {"_type_": "form_data_text", "_data_": "[1]"},
    "nested": [{"_type_": "decimal_str", "_data_": "1.5"}],
}
AT = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


def test_form_data_shaped_like_encoded_values_comes_back_as_given() -> None:
    codec = LogTranscoder()
    form_data = FormData(ENCODED_LOOKALIKES)
    stored = codec.encode({"form_data": form_data, "at": AT})
    assert json.loads(stored)["form_data"] == {"_type_": "form_data_text", "_data_": form_data.text}
    decoded = codec.decode(stored)
    assert decoded["form_data"] == ENCODED_LOOKALIKES
    assert isinstance(decoded["form_data"], FormData)
    assert decoded["at"] == AT  # the event's own values are still decoded


def test_release_0_1_0_plain_form_data_is_read_as_given() -> None:
    """That release wrote form data as a plain object, whatever it held."""
    at = {"_type_": "datetime_iso", "_data_": AT.isoformat()}
    tenant = {"_type_": "uuid_hex", "_data_": "0" * 32}
    old = {
        "at": at,
        "tenant_id": tenant,
        "form_data": ENCODED_LOOKALIKES,
        "settings": {"name": "n", "form_data": ENCODED_LOOKALIKES},
        "schedule_presets": [{"id": "p", "form_data": ENCODED_LOOKALIKES}],
    }
    decoded = LogTranscoder().decode(json.dumps(old, separators=(",", ":")).encode())
    assert decoded["at"] == AT
    assert decoded["tenant_id"] == UUID(int=0)
    assert decoded["form_data"] == ENCODED_LOOKALIKES
    assert decoded["settings"]["form_data"] == ENCODED_LOOKALIKES
    assert decoded["schedule_presets"][0]["form_data"] == ENCODED_LOOKALIKES


def test_form_data_is_immutable_and_compares_as_its_object() -> None:
    given = {"a": [1, {"b": None}], "中": "文"}
    form_data = FormData(given)
    given["a"] = "changed after"
    assert form_data == {"a": [1, {"b": None}], "中": "文"}
    assert form_data.to_dict() == dict(form_data)
    assert FormData.of(form_data) is form_data
    assert FormData.from_text(form_data.text) == form_data
    with pytest.raises(ValueError, match="JSON object"):
        FormData.from_text("[1, 2]")


def test_fingerprints_are_the_same_for_form_data_and_the_plain_object() -> None:
    """A command repeated after the upgrade still matches the fingerprint stored before it."""
    plain = Command("submit", None, {"form_data": {"b": 1, "a": [2]}}).fingerprint
    assert Command("submit", None, {"form_data": FormData({"a": [2], "b": 1})}).fingerprint == (
        plain
    )


def test_nesting_depth_counts_brackets_outside_strings_only() -> None:
    assert nesting_depth('{"a": [1, {"b": "[[[{{{"}]}') == 3
    assert nesting_depth(r'{"a": "\"[", "b": [[]]}') == 3
    assert nesting_depth(r'{"a": "\\", "b": []}') == 2
    assert nesting_depth("{}") == 1


def test_form_data_is_bounded_in_size_and_depth() -> None:
    assert form_data_problem(FormData({"a": "x" * 100})) is None
    too_big = FormData({"a": "x" * MAX_FORM_DATA_BYTES})
    assert "at most 65536" in str(form_data_problem(too_big))
    deep: dict[str, object] = {}
    for _ in range(MAX_FORM_DATA_DEPTH):
        deep = {"d": deep}
    assert "nests 33 levels" in str(form_data_problem(FormData(deep)))
    with pytest.raises(ValidationFailed) as refused:
        checked_form_data(deep)
    assert list(refused.value.errors) == ["form_data"]
    assert checked_form_data({"d": {}}) == {"d": {}}
