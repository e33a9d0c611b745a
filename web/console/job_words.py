"""A schedule's target and a built-in job's result as a person reads them (docs/jobs.md): the
kind's label, its params and timeout in words, and what a job's run found. The codes stay as
they are beside them, for whoever searches the API or the logs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask_babel import gettext, lazy_gettext, ngettext

from domain.jobs import (
    APPROVAL,
    AUDIT_CHECKPOINT,
    AUDIT_VERIFY,
    SYSTEM_HEALTH_CHECK,
    TARGET_KINDS,
    WEBHOOK_PING,
)

TARGET_LABELS = {
    APPROVAL: lazy_gettext("Launch an approval"),
    SYSTEM_HEALTH_CHECK: lazy_gettext("Health check"),
    AUDIT_VERIFY: lazy_gettext("Verify the audit log"),
    AUDIT_CHECKPOINT: lazy_gettext("Sign an audit checkpoint"),
    WEBHOOK_PING: lazy_gettext("Ping a webhook"),
}
assert set(TARGET_LABELS) == set(TARGET_KINDS), "every target kind has its label"


def target_label(kind: str) -> str:
    """The kind's label; the kind itself for one this release does not know."""
    return str(TARGET_LABELS.get(kind, kind))


def target_words(target: Mapping[str, Any]) -> str:
    """The target as one line: its label, a job's params and its timeout."""
    kind = str(target.get("kind", APPROVAL))
    params = target.get("params") or {}
    parts = [target_label(kind)]
    if kind == AUDIT_VERIFY:
        parts.append(
            gettext("the whole log")
            if params.get("full")
            else gettext("what was appended since the last verified position")
        )
    if kind == WEBHOOK_PING:
        parts.append(gettext("subscription %(id)s", id=params.get("webhook_id", "")))
    if target.get("timeout_seconds"):
        parts.append(gettext("timeout %(seconds)s s", seconds=target["timeout_seconds"]))
    return " · ".join(parts)


def result_words(kind: str, result: Mapping[str, Any] | None) -> str:
    """What a job's run found, in a sentence; empty without a result."""
    if not result:
        return ""
    if kind == AUDIT_VERIFY:
        return _verified(result)
    if kind == AUDIT_CHECKPOINT:
        size = result.get("tree_size", 0)
        if result.get("signed"):
            return str(gettext("Signed a checkpoint of the first %(size)s events.", size=size))
        return str(gettext("Already signed at %(size)s events: nothing new to sign.", size=size))
    if kind == SYSTEM_HEALTH_CHECK:
        loops = int(result.get("loops", 0))
        return str(
            ngettext(
                "The store answered; %(num)s loop beats.",
                "The store answered; %(num)s loops beat.",
                loops,
            )
        )
    if kind == WEBHOOK_PING:
        return str(gettext("The receiver answered %(status)s.", status=result.get("status")))
    return ""


def _verified(result: Mapping[str, Any]) -> str:
    count = int(result.get("events_verified", 0))
    if count == 0:
        last = result.get("to_position")
        return str(gettext("Nothing appended since position %(position)s.", position=last))
    said = ngettext(
        "%(num)s event verified, positions %(first)s to %(last)s.",
        "%(num)s events verified, positions %(first)s to %(last)s.",
        count,
        first=result.get("from_position"),
        last=result.get("to_position"),
    )
    return str(gettext("The whole log: %(said)s", said=said) if result.get("full") else said)
