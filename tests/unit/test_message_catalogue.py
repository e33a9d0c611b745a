"""The words of problems and field errors in Chinese: every message the code makes (a
`Message` template, or one marked `N_`) and every message marshmallow's fields and validators
make for the API's schemas has its Chinese form in web/translations/zh, naming no value its
English does not; and a message says the same English as before, in any language asked for.
"""

from __future__ import annotations

import ast
import pickle
from pathlib import Path
from string import Formatter

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po
from flask import Flask
from marshmallow import Schema, fields

import web.schemas
from domain.messages import Joined, Message
from domain.reason_codes import CLAIMED_BY_OTHER, MATERIAL_STALE, Reason
from web import language
from web.schemas import validate

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "web" / "translations" / "zh" / "LC_MESSAGES" / "messages.po"
SOURCES = ("domain", "cronledger", "projections", "web")
KEYWORDS = {"Message": None, "N_": None}


def chinese() -> dict[str, str]:
    with CATALOGUE.open("rb") as source:
        return {m.id: m.string for m in read_po(source, locale="zh") if m.id and m.string}


def used_templates() -> dict[str, list[str]]:
    used: dict[str, list[str]] = {}
    for folder in SOURCES:
        for filename, line, message, _, _ in extract_from_dir(
            ROOT / folder, [("**.py", "python")], keywords=KEYWORDS
        ):
            if isinstance(message, str) and message:
                used.setdefault(message, []).append(f"{folder}/{filename}:{line}")
    return used


def names(template: str) -> set[str]:
    return {name for _, name, _, _ in Formatter().parse(template) if name}


def test_every_message_of_the_code_has_a_chinese_form() -> None:
    known = chinese()
    missing = {msgid: where for msgid, where in used_templates().items() if msgid not in known}
    assert not missing, "no Chinese in web/translations for:\n" + "\n".join(
        f"  {msgid!r} ({', '.join(where)})" for msgid, where in missing.items()
    )


def test_a_chinese_form_names_only_values_its_english_gives() -> None:
    wrong = {
        msgid: sorted(names(text) - names(msgid))
        for msgid, text in chinese().items()
        if not names(text) <= names(msgid)
    }
    assert not wrong, wrong


def schema_fields() -> list[fields.Field]:
    """Every field of every schema of web.schemas, nested ones' too."""
    found: list[fields.Field] = []
    for path in sorted((ROOT / "web" / "schemas").glob("*.py")):
        loaded = __import__(f"web.schemas.{path.stem}", fromlist=["*"])
        for value in vars(loaded).values():
            if isinstance(value, type) and issubclass(value, Schema):
                found.extend(value._declared_fields.values())
    inner = [f.inner for f in found if isinstance(f, fields.List)]
    return [*found, *inner]


def test_every_message_marshmallow_may_answer_has_a_chinese_form() -> None:
    said = {*Schema.error_messages.values(), *Schema._default_error_messages.values()}
    for field in schema_fields():
        said |= {m for m in field.error_messages.values() if "{" not in m}
        for check in field.validators:
            said |= {
                getattr(check, name)
                for name in ("message_min", "message_max", "message_all", "message_equal", "error")
                if isinstance(getattr(check, name, None), str)
            }
    said.add("Not a valid datetime.")  # "Not a valid {obj_type}." as UtcDateTime says it
    assert not sorted(said - set(chinese())), sorted(said - set(chinese()))


def test_the_schemas_use_the_validators_that_keep_their_messages() -> None:
    """marshmallow's own validators format their messages into plain text, which no catalogue
    can say again: the schemas take web.schemas.validate's."""
    offenders = []
    for path in sorted((ROOT / "web").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            imported = isinstance(node, ast.ImportFrom) and node.module in ("marshmallow",)
            if imported and any(alias.name == "validate" for alias in node.names):
                offenders.append(str(path.relative_to(ROOT)))
            if isinstance(node, ast.ImportFrom) and node.module == "marshmallow.validate":
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == ["web/schemas/validate.py"]
    assert web.schemas.validate is validate


def test_a_message_is_its_english_and_keeps_what_made_it() -> None:
    message = Message("{field} {number} is out of range {low}-{high}", field=Message("minute"),
                      number=61, low=0, high=59)  # fmt: skip
    assert message == "minute 61 is out of range 0-59"
    assert isinstance(message, str)
    again = pickle.loads(pickle.dumps(message))
    assert (again, again.template, again.values) == (message, message.template, message.values)
    assert Message.from_data(message.as_data()) == message
    assert Message.verbatim("use {date}") == "use {date}"
    assert Message.verbatim(message) is message
    assert Reason(CLAIMED_BY_OTHER, {"assignee": "vera"}).text == "the task is claimed by vera"


@pytest.fixture
def app() -> Flask:
    made = Flask(__name__)
    language.install(made)
    return made


@pytest.mark.parametrize(
    ("asked", "words"),
    [
        ("zh-CN", "分钟 61 超出范围 0-59"),
        ("zh-TW, en;q=0.5", "分钟 61 超出范围 0-59"),
        ("en-GB", "minute 61 is out of range 0-59"),
        ("fr", "minute 61 is out of range 0-59"),
        ("", "minute 61 is out of range 0-59"),
    ],
)
def test_a_message_is_said_in_the_language_asked_for(app: Flask, asked: str, words: str) -> None:
    message = Message("{field} {number} is out of range {low}-{high}", field=Message("minute"),
                      number=61, low=0, high=59)  # fmt: skip
    with app.test_request_context(headers={"Accept-Language": asked} if asked else {}):
        assert language.said(message) == words


def test_values_said_and_unsaid(app: Flask) -> None:
    stale = Reason(MATERIAL_STALE, {"offered": 1, "current": 2}).text
    joined = Message(
        "{reason}; mismatch: {mismatches}", reason=stale, mismatches=Joined("; ", [stale, stale])
    )
    with app.test_request_context(headers={"Accept-Language": "zh-CN"}):
        stale_words = "材料版本 1 不是当前版本 2"
        assert language.said(joined) == f"{stale_words}；不一致：{stale_words}; {stale_words}"
        assert language.said("schedule") == "schedule"  # someone's own words: as they are
        broken = Message("not in the catalogue {x}", x=Message("minute"))
        assert language.said(broken) == "not in the catalogue 分钟"


# Calls that name what was not found (or is at another version), and where their noun is.
NAMING_CALLS = {
    "NotFound": 0,
    "VersionConflict": 0,
    "PreconditionFailed": 0,
    "check_expected_version": 0,
    "find": 2,
    "find_in_tenant": 2,
}


def named_kinds() -> dict[str, str]:
    """Each noun the code names to those calls (a literal, or a module's constant), and where."""
    found: dict[str, str] = {}
    for folder in ("domain", "cronledger"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text())
            constants = {
                target.id: node.value.value
                for node in tree.body
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                for target in node.targets
                if isinstance(target, ast.Name)
            }
            for call in ast.walk(tree):
                if not isinstance(call, ast.Call):
                    continue
                name = getattr(call.func, "attr", getattr(call.func, "id", None))
                index = NAMING_CALLS.get(str(name))
                if index is None or len(call.args) <= index:
                    continue
                given = call.args[index]
                kind = given.value if isinstance(given, ast.Constant) else None
                if isinstance(given, ast.Name):
                    kind = constants.get(given.id)
                if isinstance(kind, str):
                    found[kind] = f"{path.relative_to(ROOT)}:{call.lineno}"
    return found


def test_every_kind_a_refusal_names_is_a_noun_of_the_catalogue() -> None:
    """`NotFound("run", id)` says 找不到执行日志 …: the noun is one of domain.errors.KINDS."""
    from domain.errors import KINDS

    internal = {"session", "registry", "service"}  # never answered: the service's own lookups
    unknown = {
        kind: where
        for kind, where in named_kinds().items()
        if kind not in KINDS and kind not in internal
    }
    assert not unknown, unknown
