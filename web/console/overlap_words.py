"""Overlap policies and skip reasons in the viewer's language, for the schedules and runs areas
(docs/time.md#overlapping-cycles-overlap_policy)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask_babel import lazy_gettext

from domain.overlap import ALLOW, SKIP_WHILE_LAUNCHING, SKIP_WHILE_OPEN
from domain.runs import PENDING, RETRY_WAIT, RUNNING, SUCCEEDED

OVERLAP_WORDS = {
    ALLOW: lazy_gettext("Start every cycle, even while an earlier one is unfinished"),
    SKIP_WHILE_LAUNCHING: lazy_gettext(
        "Skip a cycle only while an earlier one is still being launched"
    ),
    SKIP_WHILE_OPEN: lazy_gettext(
        "Skip a cycle also while an earlier one's approval waits for review"
    ),
}
BLOCKED_WORDS = {
    PENDING: lazy_gettext("An earlier run was still waiting to be launched."),
    RUNNING: lazy_gettext("An earlier run was still being launched."),
    RETRY_WAIT: lazy_gettext("An earlier run was still waiting to retry its launch."),
    SUCCEEDED: lazy_gettext("An earlier run's approval was still waiting for review."),
}
UNSAID = lazy_gettext("An earlier run was unfinished.")  # skips recorded before release 0.11.0


def overlap_words(policy: str) -> str:
    """What an overlap policy does, in words (its name is shown beside them)."""
    return str(OVERLAP_WORDS.get(policy, policy))


def blocked_words(reason: Mapping[str, Any]) -> str:
    """Why an OVERLAP skip happened: what the blocking run was doing when it was decided."""
    return str(BLOCKED_WORDS.get(reason.get("blocking_status") or "", UNSAID))
