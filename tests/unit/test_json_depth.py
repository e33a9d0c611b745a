"""The nesting depth of a body, measured without parsing it, as the parser would meet it."""

from __future__ import annotations

import pytest

from web.json_depth import nesting_depth


@pytest.mark.parametrize(
    ("raw", "depth"),
    [
        (b"", 0),
        (b"42", 0),
        (b"{}", 1),
        (b'{"a": [1, {"b": null}], "c": {}}', 3),
        (b'{"a": "[[[{{{"}', 1),
        (b'{"a": "\\"[[["}', 1),
        (b'{"a": "\\\\", "b": [[]]}', 3),
        (b'{"a": "unterminated [[[', 1),
        (b"[" * 5000, 5000),
        ('{"ä": ["ö"]}'.encode("utf-16"), 2),
        ('{"ä": ["ö"]}'.encode("utf-32-be"), 2),
        (b'{"a": "\xff[", "b": [[]]}', 3),
    ],
)
def test_nesting_depth(raw: bytes, depth: int) -> None:
    assert nesting_depth(raw) == depth


def test_a_mebibyte_of_escaped_quotes_is_one_string() -> None:
    assert nesting_depth(b'["' + b'\\"[' * 349_000 + b'"]') == 1
