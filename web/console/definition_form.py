"""The console's definition form, to create a definition or edit one: its fields named as the
API's body names them, read as sent or filled from a saved definition, turned into the API's
body, and the API's refusals placed next to the field they are about
(docs/console/directory.md#process-definitions)."""

from __future__ import annotations

import json
from typing import Any

from flask import request
from flask_babel import gettext as _

from domain.approvals import REASSIGN_TASK
from domain.directory import RETURN_TO_FIRST
from domain.messages import Message
from domain.working_time import SECONDS, WORKING_DAYS
from projections.directory import DefinitionRow
from web.console.forms import Errors

# The definition form's fields, named as the API's body names them.
DEFINITION_TEXTS = (
    "key",
    "name",
    "review_window_seconds",
    "schedule_presets",
    "reminders",
    "escalation.after_seconds",
    "escalation.account_id",
    "escalation.group_leader_of",
    "escalation.mode",
    "deadline_rule.kind",
    "deadline_rule.days",
    "deadline_rule.calendar",
    "deadline_rule.cutoff",
    "deadline_rule.hours",
    "max_pause_seconds",
    "return_to",
    "cancellation_definition",
)
REVIEWER_PICKS = ("reviewers.accounts", "reviewers.groups", "reviewers.roles")
DEFINITION_CHECKS = ("external", "allow_self_approval", "reviewers.applicant_leader")
NEW_DEFINITION = {
    "review_window_seconds": "86400",
    "escalation.mode": REASSIGN_TASK,
    "deadline_rule.kind": SECONDS,
    "deadline_rule.days": "3",
    "deadline_rule.cutoff": "18:00",
    "deadline_rule.hours": "8",
    "return_to": RETURN_TO_FIRST,
}


def read_form() -> dict[str, Any]:
    """The form as sent: its fields are named as the API's body names them (`escalation.mode`
    for the body's `{"escalation": {"mode": ...}}`)."""
    form: dict[str, Any] = {name: request.form.get(name, "").strip() for name in DEFINITION_TEXTS}
    form.update({name: name in request.form for name in DEFINITION_CHECKS})
    form.update({name: request.form.getlist(name) for name in REVIEWER_PICKS})
    return form


def form_of(definition: DefinitionRow) -> dict[str, Any]:
    """A saved definition as its edit form shows it."""
    rule = definition.deadline_rule
    reviewers = definition.reviewers or {}
    escalation = definition.escalation or {}
    form: dict[str, Any] = {
        **NEW_DEFINITION,
        "key": definition.key,
        "name": definition.name,
        "external": definition.external,
        "allow_self_approval": definition.allow_self_approval,
        "review_window_seconds": str(definition.review_window_seconds),
        "reminders": ", ".join(str(r["before_seconds"]) for r in definition.reminders),
        "schedule_presets": _presets_text(definition.schedule_presets),
        "max_pause_seconds": _text(definition.max_pause_seconds),
        "return_to": definition.return_to,
        "cancellation_definition": definition.cancellation_definition or "",
        "reviewers.applicant_leader": bool(reviewers.get("applicant_leader")),
    }
    form.update(
        {f"reviewers.{k}": list(reviewers.get(k, [])) for k in ("accounts", "groups", "roles")}
    )
    form.update({f"escalation.{k}": _text(v) for k, v in escalation.items() if v is not None})
    form.update({f"deadline_rule.{k}": _text(v) for k, v in rule.items() if k != "seconds"})
    return form


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _presets_text(presets: list[dict[str, Any]]) -> str:
    return json.dumps(presets, ensure_ascii=False, indent=2) if presets else ""


def body_of(form: dict[str, Any]) -> tuple[dict[str, Any], Errors]:
    """The form as the API's body (a whole number of seconds, presets parsed from JSON), and
    what cannot be read as JSON; a field that is no number is passed on for the schema to name.
    Every field is given (a PUT leaving one out would keep it); the reviewers are always named,
    so that a new definition naming nobody is refused."""
    body = {key: value for key, value in form.items() if value != "" and "." not in key}
    window = body.get("review_window_seconds", "")
    if window.isdigit():
        body["review_window_seconds"] = int(window)
    body["reviewers"] = _part(form, "reviewers")
    pause = form["max_pause_seconds"]
    body["max_pause_seconds"] = _number(pause) if pause else None
    body["cancellation_definition"] = form["cancellation_definition"] or None
    body.setdefault("reminders", [])
    body.setdefault("schedule_presets", [])
    _deadline_body(form, body)
    _notices_body(form, body)
    return _presets_body(body)


def _presets_body(body: dict[str, Any]) -> tuple[dict[str, Any], Errors]:
    if not isinstance(body["schedule_presets"], str):
        return body, {}
    try:
        body["schedule_presets"] = json.loads(body["schedule_presets"])
    except json.JSONDecodeError as error:
        del body["schedule_presets"]
        not_json = _(
            "This is not JSON (line %(line)s, column %(column)s).",
            line=error.lineno,
            column=error.colno,
        )
        return body, {"schedule_presets": [not_json]}
    return body, {}


def _part(form: dict[str, Any], name: str) -> dict[str, Any]:
    """The form's fields `name.x`, as the body's object `name` (`{"x": ...}`); those left
    empty out."""
    prefix = f"{name}."
    return {
        key.removeprefix(prefix): value
        for key, value in form.items()
        if key.startswith(prefix) and value != ""
    }


def _deadline_body(form: dict[str, Any], body: dict[str, Any]) -> None:
    """A deadline in working days or hours as the API's `deadline_rule` (the review window
    is then not read); in seconds, the review window alone."""
    rule = _part(form, "deadline_rule")
    kind = rule.get("kind", SECONDS)
    if kind == SECONDS:
        return
    body.pop("review_window_seconds", None)
    kept = ("days", "calendar", "cutoff") if kind == WORKING_DAYS else ("hours", "calendar")
    body["deadline_rule"] = {"kind": kind} | {
        name: _number(rule[name]) if name in ("days", "hours") else rule[name]
        for name in kept
        if name in rule
    }


def _notices_body(form: dict[str, Any], body: dict[str, Any]) -> None:
    """Reminders typed as "86400, 3600" and the escalation, as the API takes them (what is no
    number is passed on for the schema to name); an escalation only of its mode is none."""
    if body["reminders"]:
        body["reminders"] = [
            {"before_seconds": _number(part.strip())} for part in body["reminders"].split(",")
        ]
    escalation = _part(form, "escalation")
    body["escalation"] = None
    if escalation.keys() - {"mode"}:
        if "after_seconds" in escalation:
            escalation["after_seconds"] = _number(escalation["after_seconds"])
        body["escalation"] = escalation


def _number(text: str) -> int | str:
    return int(text) if text.isdigit() else text


def errors_by_field(errors: Errors) -> Errors:
    """Each reminder's messages under the one reminders field, naming the reminder; those of
    a reviewer list's items under the list."""
    together: Errors = {}
    for name, messages in errors.items():
        parts = name.split(".")
        if parts[0] == "reminders" and len(parts) > 1:
            together.setdefault("reminders", []).extend(
                Message("Reminder {number}: {message}", number=int(parts[1]) + 1, message=m)
                for m in messages
            )
        else:
            field = ".".join(parts[:2]) if parts[0] == "reviewers" else name
            together.setdefault(field, []).extend(messages)
    return together
