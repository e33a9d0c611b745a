"""Overlap policies: whether a cycle starts while an earlier cycle of its schedule is unfinished.

Release 0.11.0 renamed `skip` to `skip_while_open` and made `skip_while_launching` the default
(docs/time.md): a launched approval waiting for review no longer blocks the next cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ALLOW = "allow"
SKIP_WHILE_LAUNCHING = "skip_while_launching"
SKIP_WHILE_OPEN = "skip_while_open"
OVERLAP_POLICIES = (ALLOW, SKIP_WHILE_LAUNCHING, SKIP_WHILE_OPEN)
DEFAULT_OVERLAP_POLICY = SKIP_WHILE_LAUNCHING
LEGACY_SKIP = "skip"  # stored before 0.11.0; still accepted in requests, deprecated
FIELD = "overlap_policy"


def policy_named(policy: str) -> str:
    """The policy by its name since release 0.11.0: `skip` is `skip_while_open`."""
    return SKIP_WHILE_OPEN if policy == LEGACY_SKIP else policy


def skips(policy: str) -> bool:
    """Whether the policy ever skips a cycle."""
    return policy in (SKIP_WHILE_LAUNCHING, SKIP_WHILE_OPEN)


def renamed_in(values: dict[str, Any]) -> dict[str, Any]:
    """Settings or a run's frozen values with the overlap policy by its current name (upcast)."""
    if FIELD not in values:
        return values
    return {**values, FIELD: policy_named(values[FIELD])}


def renamed_changes(changes: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """An edit's recorded changes with an old or new overlap policy by its current name."""
    if changes is None:
        return None
    return [
        {**change, "old": policy_named(change["old"]), "new": policy_named(change["new"])}
        if change["field"] == FIELD
        else change
        for change in changes
    ]


@dataclass(frozen=True)
class Blocker:
    """The earlier run that made a cycle skip: still being launched (`PENDING`, `RUNNING`,
    `RETRY_WAIT`), or `SUCCEEDED` with its instance waiting for review (`instance_id`).

    `status` is None for a skip recorded before release 0.11.0, which did not say which.
    """

    run_id: str
    status: str | None = None
    instance_id: str | None = None
