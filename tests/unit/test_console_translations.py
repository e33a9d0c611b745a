"""The console's Chinese catalogues: each committed .mo is its .po compiled (`make
translations`), the shared one of web/translations too, and every text the console's templates
and Python mark has a Chinese translation in some area's catalogue
(web/console/translations/<area>/).

A .mo is compared with its .po by what it translates, not byte for byte: compiling writes the
time of compilation into the header of a .po that names none.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.mofile import read_mo
from babel.messages.pofile import read_po

CONSOLE = Path(__file__).resolve().parents[2] / "web" / "console"
CATALOGUES = sorted((CONSOLE / "translations").glob("*/zh/LC_MESSAGES/messages.po"))
# And the words of problems and field errors, which the console shows too (web/language.py).
SHARED = CONSOLE.parent / "translations" / "zh" / "LC_MESSAGES" / "messages.po"
METHODS = [("**.py", "python"), ("templates/**.html", "jinja2.ext:babel_extract")]
KEYWORDS = {**DEFAULT_KEYWORDS, "lazy_gettext": None}


def catalogue(po: Path) -> Catalog:
    with po.open("rb") as source:
        return read_po(source, locale="zh")


@pytest.mark.parametrize("po", [*CATALOGUES, SHARED], ids=lambda po: po.parts[-4])
def test_each_committed_mo_is_its_po_compiled_now(po: Path) -> None:
    read = catalogue(po)
    assert not read.fuzzy, f"{po} is marked fuzzy: pybabel compile would skip it"
    problems = [f"{m.id!r}: {errors}" for m, errors in read.check()]
    assert not problems, f"{po}: " + "; ".join(problems)
    mo = po.with_suffix(".mo")
    assert mo.exists(), f"{mo} is missing: run `make translations`"
    with mo.open("rb") as compiled:
        committed = translations(read_mo(compiled))
    expected = translations(read, skip_fuzzy=True)
    stale = sorted({*committed.items()} ^ {*expected.items()}, key=str)
    assert not stale, f"{mo} is not {po} compiled (run `make translations`): {stale[:5]}"


def translations(catalog: Catalog, skip_fuzzy: bool = False) -> dict[object, object]:
    """What a catalogue translates, as pybabel compile writes it: no header, nothing untranslated
    (nor fuzzy)."""
    return {
        (m.context, _frozen(m.id)): _frozen(m.string)
        for m in catalog
        if m.id and translated(m.string) and not (skip_fuzzy and m.fuzzy)
    }


def _frozen(value: object) -> object:
    return tuple(value) if isinstance(value, list | tuple) else value


def used_texts() -> dict[tuple[str | None, str], list[str]]:
    """Each marked text (with its context) of the console, and where it is used."""
    used: dict[tuple[str | None, str], list[str]] = {}
    for filename, line, message, _, context in extract_from_dir(
        CONSOLE, METHODS, keywords=KEYWORDS
    ):
        msgid = message[0] if isinstance(message, tuple) else message
        if msgid:
            used.setdefault((context, msgid), []).append(f"{filename}:{line}")
    return used


def translated(message: object) -> bool:
    strings = message if isinstance(message, list | tuple) else [message]
    return all(isinstance(s, str) and s.strip() for s in strings)


def test_every_text_of_the_console_has_a_chinese_translation() -> None:
    known = set()
    for po in CATALOGUES:
        for message in catalogue(po):
            if message.id and translated(message.string):
                msgid = message.id[0] if isinstance(message.id, tuple) else message.id
                known.add((message.context, msgid))
    missing = {key: where for key, where in used_texts().items() if key not in known}
    lines = [f"  {msgid!r} (used at {', '.join(where)})" for (_, msgid), where in missing.items()]
    assert not missing, f"{len(missing)} texts have no Chinese translation:\n" + "\n".join(lines)
