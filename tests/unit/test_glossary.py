"""One word for one thing (docs/console/glossary.md): every catalogue, the console's areas' and
the shared one of problems and field errors, translates each term of the glossary as the
glossary does, and none uses a word the glossary rules out."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "docs" / "console" / "glossary.md"
CATALOGUES = [
    *sorted((ROOT / "web" / "console" / "translations").glob("*/zh/LC_MESSAGES/messages.po")),
    ROOT / "web" / "translations" / "zh" / "LC_MESSAGES" / "messages.po",
]
ROW = re.compile(r"^\| (?P<english>[a-z][a-z ]*) \|(?P<zh>[^|]+)\|(?P<banned>[^|]*)\|")


class Term(NamedTuple):
    english: str
    chinese: str
    banned: tuple[str, ...]


def terms() -> list[Term]:
    found = []
    for line in GLOSSARY.read_text().splitlines():
        row = ROW.match(line)
        if row:
            banned = tuple(w.strip() for w in row["banned"].split(",") if w.strip())
            found.append(Term(row["english"], row["zh"].strip(), banned))
    return found


def translations() -> list[tuple[str, str, str]]:
    """Each catalogue's (area, msgid, msgstr)."""
    found = []
    for po in CATALOGUES:
        with po.open("rb") as source:
            for message in read_po(source, locale="zh"):
                if message.id and isinstance(message.id, str) and isinstance(message.string, str):
                    found.append((po.parts[-4], message.id, message.string))
    return found


def as_term(msgid: str) -> str:
    """A msgid as the term it may be: lower case, singular."""
    word = msgid.lower()
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def test_the_glossary_has_its_terms() -> None:
    assert {term.english for term in terms()} >= {"schedule", "run", "execution log", "webhook"}


@pytest.mark.parametrize("term", terms(), ids=lambda term: term.english)
def test_each_catalogue_says_a_term_as_the_glossary_does(term: Term) -> None:
    said = [
        f"{area}: {msgid!r} is {msgstr!r}"
        for area, msgid, msgstr in translations()
        if as_term(msgid) == term.english and msgstr != term.chinese
    ]
    assert not said, f"the glossary says {term.english} is {term.chinese}, but " + "; ".join(said)
    ruled_out = [
        f"{area}: {msgid!r} is {msgstr!r}"
        for area, msgid, msgstr in translations()
        for word in term.banned
        if word in msgstr
    ]
    assert not ruled_out, f"{term.english} is {term.chinese}, never {term.banned}: {ruled_out}"
