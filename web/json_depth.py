"""How deeply a JSON text nests, measured in one linear pass before any parser recurses into it.

Python's json module recurses once per level and fails with RecursionError a few thousand levels
down, so a body is measured first and refused when it nests deeper than `MAX_JSON_DEPTH`.
"""

from __future__ import annotations

import json

from domain import values
from domain.messages import Message
from web.problems import Problem

MAX_JSON_DEPTH = 32  # levels of arrays and objects; the body itself is the first


def check_nesting(raw: bytes) -> None:
    """Refuse (400) a body that nests deeper than `MAX_JSON_DEPTH`."""
    depth = nesting_depth(raw)
    if depth > MAX_JSON_DEPTH:
        raise Problem(
            "BAD_REQUEST",
            Message(
                "the body nests arrays and objects {depth} levels deep; "
                "at most {count} are allowed",
                depth=depth,
                count=MAX_JSON_DEPTH,
            ),
        )


def nesting_depth(raw: bytes) -> int:
    """`values.nesting_depth` of a body in whichever encoding `json.loads` would read it."""
    return values.nesting_depth(raw.decode(json.detect_encoding(raw), errors="replace"))
