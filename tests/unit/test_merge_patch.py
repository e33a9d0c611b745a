"""JSON Merge Patch against RFC 7396's examples (appendix A) and section 3's."""

from __future__ import annotations

from typing import Any

import pytest

from web.merge_patch import merge_patch

APPENDIX_A = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]

SECTION_3_TARGET = {
    "title": "Goodbye!",
    "author": {"givenName": "John", "familyName": "Doe"},
    "tags": ["example", "sample"],
    "content": "This will be unchanged",
}
SECTION_3_PATCH = {
    "title": "Hello!",
    "phoneNumber": "+01-123-456-7890",
    "author": {"familyName": None},
    "tags": ["example"],
}
SECTION_3_RESULT = {
    "title": "Hello!",
    "author": {"givenName": "John"},
    "tags": ["example"],
    "content": "This will be unchanged",
    "phoneNumber": "+01-123-456-7890",
}


@pytest.mark.parametrize(("target", "patch", "result"), APPENDIX_A)
def test_appendix_a(target: Any, patch: Any, result: Any) -> None:
    assert merge_patch(target, patch) == result


def test_section_3_example() -> None:
    assert merge_patch(SECTION_3_TARGET, SECTION_3_PATCH) == SECTION_3_RESULT


def test_the_target_is_left_alone() -> None:
    target = {"a": {"b": 1}}
    merge_patch(target, {"a": {"b": None}})
    assert target == {"a": {"b": 1}}
