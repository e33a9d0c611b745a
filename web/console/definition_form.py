"""The console's definition form, to create a definition or edit one: its fields named as the
API's body names them, read as sent or filled from a saved definition, turned into the API's
body, and the API's refusals placed next to the field they are about
(docs/console/directory.md#process-definitions)."""

from __future__ import annotations

import json
import re
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
DEFINITION_CHECKS = (
    "external",
    "allow_self_approval",
    "reviewers.applicant_leader",
    "restart_deadline_on_revise",
)
# A level's fields, each named `levels.N.<field>` (N from 0, as the API's errors count them).
LEVEL_TEXTS = ("name", "approvals_required")
LEVEL_CHECKS = ("any_reject_rejects", "reviewers.applicant_leader")
LEVEL_NAME = re.compile(r"levels\.(\d+)\.name")
LEVEL_ACTION = re.compile(r"(up|down|remove)\.(\d+)")
NEW_LEVEL: dict[str, Any] = {
    "name": "",
    "approvals_required": "1",
    "any_reject_rejects": True,
    "reviewers.applicant_leader": False,
    **{name: [] for name in REVIEWER_PICKS},
}
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
    form["levels"] = _levels_read()
    return form


def _levels_read() -> list[dict[str, Any]]:
    """The levels as sent, in order; a level left blank (the form's empty one) out."""
    numbers = sorted({int(m[1]) for key in request.form if (m := LEVEL_NAME.fullmatch(key))})
    levels = [_level_read(f"levels.{number}.") for number in numbers]
    return [level for level in levels if not _blank(level)]


def _level_read(prefix: str) -> dict[str, Any]:
    level: dict[str, Any] = {
        name: request.form.get(prefix + name, "").strip() for name in LEVEL_TEXTS
    }
    level.update({name: prefix + name in request.form for name in LEVEL_CHECKS})
    level.update({name: request.form.getlist(prefix + name) for name in REVIEWER_PICKS})
    return level


def _blank(level: dict[str, Any]) -> bool:
    named = any(level[name] for name in REVIEWER_PICKS) or level["reviewers.applicant_leader"]
    return not (named or level["name"] or level["approvals_required"] not in ("", "1"))


def moved_levels(form: dict[str, Any]) -> bool:
    """Whether the form was sent by a level's button (move up or down, remove, add): then its
    levels are rearranged so, for the form to be shown again, and nothing is saved."""
    action = request.form.get("level_action")
    if action is None:
        return False
    found = LEVEL_ACTION.fullmatch(action)
    levels = form["levels"]
    if found and int(found[2]) < len(levels):
        index = int(found[2])
        level = levels.pop(index)
        if found[1] != "remove":
            levels.insert(max(0, index - 1) if found[1] == "up" else index + 1, level)
    return True


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
        "restart_deadline_on_revise": definition.restart_deadline_on_revise,
        "levels": [_level_form(level) for level in definition.levels or []],
    }
    form.update(
        {f"reviewers.{k}": list(reviewers.get(k, [])) for k in ("accounts", "groups", "roles")}
    )
    form.update({f"escalation.{k}": _text(v) for k, v in escalation.items() if v is not None})
    form.update({f"deadline_rule.{k}": _text(v) for k, v in rule.items() if k != "seconds"})
    return form


def _level_form(level: dict[str, Any]) -> dict[str, Any]:
    reviewers = level["reviewers"]
    return {
        "name": level.get("name") or "",
        "approvals_required": str(level["approvals_required"]),
        "any_reject_rejects": level["any_reject_rejects"],
        "reviewers.applicant_leader": bool(reviewers.get("applicant_leader")),
        **{name: list(reviewers.get(name.split(".")[1], [])) for name in REVIEWER_PICKS},
    }


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _presets_text(presets: list[dict[str, Any]]) -> str:
    return json.dumps(presets, ensure_ascii=False, indent=2) if presets else ""


def body_of(form: dict[str, Any]) -> tuple[dict[str, Any], Errors]:
    """The form as the API's body (a whole number of seconds, presets parsed from JSON), and
    what cannot be read as JSON; a field that is no number is passed on for the schema to name.
    Every field is given (a PUT leaving one out would keep it); the reviewers are always named,
    so that a new definition naming nobody is refused."""
    body = {
        key: value
        for key, value in form.items()
        if value != "" and "." not in key and key != "levels"
    }
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
    body, errors = _presets_body(body)
    return body, {**errors, **_levels_body(form, body)}


def _levels_body(form: dict[str, Any], body: dict[str, Any]) -> Errors:
    """The levels as the API's `levels` (none: null, so that an edit clears them and the
    reviewers review); given, the reviewers are not named as well."""
    levels = form["levels"]
    body["levels"] = [_level_body(level) for level in levels] or None
    if not levels:
        return {}
    if any(body["reviewers"].values()):
        return {"reviewers": [_("Name the reviewers here or in the levels, not both.")]}
    del body["reviewers"]
    return {}


def _level_body(level: dict[str, Any]) -> dict[str, Any]:
    required = level["approvals_required"]
    return {
        "name": level["name"] or None,
        "reviewers": {
            name.split(".")[1]: level[name] for name in (*REVIEWER_PICKS, *LEVEL_CHECKS[1:])
        },
        "approvals_required": _number(required) if required else 1,
        "any_reject_rejects": level["any_reject_rejects"],
    }


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
    a reviewer list's items under the list (a level's too: `levels.1.reviewers.accounts`)."""
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
            if parts[0] == "levels" and len(parts) > 3 and parts[2] == "reviewers":
                field = ".".join(parts[:4])
            together.setdefault(field, []).extend(messages)
    return together
