"""JSON Merge Patch (RFC 7396): how a PATCH body changes a resource's representation."""

from __future__ import annotations

from typing import Any


def merge_patch(target: Any, patch: Any) -> Any:
    """`target` changed by `patch`, as RFC 7396 section 2 defines it; neither is modified.

    An object patch merges recursively, a null member removes the key, and anything else
    (arrays included) replaces the target whole.
    """
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged
