"""Stored text made safe for a terminal: what could forge a line or reorder one shows escaped."""

from __future__ import annotations

import json
import re
from typing import Any

# Beyond the C0 controls (which JSON escapes itself): DEL and the C1 controls, the Unicode line
# and paragraph separators, and the bidirectional marks that can make a terminal show
# characters in another order than stored.
BEYOND_C0 = "\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_IN_TEXT = re.compile(rf"[\\\x00-\x1f{BEYOND_C0}]")
_IN_JSON = re.compile(f"[{BEYOND_C0}]")
_SHORT = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _SHORT.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str) -> str:
    """`text` on one line: controls, line breaks and backslashes escaped Python-style (`\\n`)."""
    return _IN_TEXT.sub(_escape, text)


def printable_json(value: Any, indent: int | None = None) -> str:
    """`value` as JSON, keeping non-ASCII text but escaping (`\\u2028`) what JSON leaves raw."""
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    return _IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
