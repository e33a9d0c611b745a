"""English a person would read where Chinese was asked for: the visible text of a console page
(text, and the attributes a person reads or hears), or a problem document's words.

What is not prose is left out: codes, ids and data marked up as such (`<code>`, `<pre>`,
`<kbd>`, `<samp>`, `class="code"`, `translate="no"`, or text in another language, `lang="en"`,
such as words recorded by an earlier release), UUIDs, addresses, time zone names, the
service's own actors (`system:tick`, `worker:host:…`), title placeholders (`{{date}}`) and the
words in `english_allowed.txt` (proper names such as cronledger, and acronyms such as UTC).
Plain text (a problem document's) marks its codes as the catalogues write them: in
`backticks`, or as an upper-case code such as `DEAD_LETTER`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from html.parser import HTMLParser
from pathlib import Path

ALLOWED = frozenset(
    line.strip().lower()
    for line in (Path(__file__).with_name("english_allowed.txt")).read_text().splitlines()
    if line.strip() and not line.startswith("#")
)
WORD = re.compile(r"[A-Za-z]{2,}")
NOT_PROSE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # a UUID
    r"|[0-9a-f]{8,}"  # a hash, or the start of an id
    r"|\b[a-z][a-z0-9+.-]*://\S+"  # an address
    r"|\b[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_+-]+)+"  # an IANA time zone name
    r"|\b\d{4}-\d{2}-\d{2}T[0-9:.]+(?:Z|[+-]\d{2}:\d{2})?"  # an ISO 8601 instant
    r"|\{\{\s*\w+\s*\}\}"  # a title template's placeholder
    r"|\b(?:system|worker|notifier|source)(?::[\w.-]+)+"  # the service's own actors' ids
)
PLAIN_CODE = re.compile(r"`[^`]*`|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b[A-Z]{2,}\b")
SKIPPED_TAGS = frozenset({"script", "style", "code", "pre", "kbd", "samp", "template"})
VOID_TAGS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
READ_ATTRIBUTES = ("title", "placeholder", "aria-label", "alt", "aria-description")
SHOWN_VALUES = frozenset({"submit", "button", "reset"})  # an <input> that shows its value


def english_words(text: str, known: Iterable[str] = (), codes: bool = False) -> list[str]:
    """The words of `text` that are English and not allowed: neither codes, ids, addresses nor
    zone names, nor one of `known` (the data a test entered itself); with `codes`, plain
    text's codes (`backticked`, or upper-case) are left out too."""
    for token in sorted(known, key=len, reverse=True):
        text = text.replace(token, " ")
    if codes:
        text = PLAIN_CODE.sub(" ", text)
    text = NOT_PROSE.sub(" ", text)
    return [word for word in WORD.findall(text) if word.lower() not in ALLOWED]


class VisibleText(HTMLParser):
    """The text a person reads on a page, as separate pieces (a piece per element's text or
    attribute), without what is marked as code or as another language."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page_language = ""
        self.open: list[tuple[str, bool]] = []  # each open element, and whether it is skipped
        self.pieces: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        given = {name: value or "" for name, value in attrs}
        if tag == "html":
            self.page_language = given.get("lang", "")
        skipped = self._skipping() or self._not_prose(tag, given)
        if not skipped:
            self.pieces.extend(given[name] for name in READ_ATTRIBUTES if given.get(name))
            if tag == "input" and given.get("type") in SHOWN_VALUES and given.get("value"):
                self.pieces.append(given["value"])
        if tag not in VOID_TAGS:
            self.open.append((tag, skipped))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.open) - 1, -1, -1):
            if self.open[depth][0] == tag:
                del self.open[depth:]
                return

    def handle_data(self, data: str) -> None:
        if data.strip() and not self._skipping():
            self.pieces.append(data.strip())

    def _skipping(self) -> bool:
        return any(skipped for _, skipped in self.open)

    def _not_prose(self, tag: str, given: dict[str, str]) -> bool:
        language = given.get("lang")
        return (
            tag in SKIPPED_TAGS
            or given.get("translate") == "no"
            or "code" in given.get("class", "").split()
            or (language is not None and tag != "html" and language != self.page_language)
        )


def visible_text(html: str) -> list[str]:
    parser = VisibleText()
    parser.feed(html)
    parser.close()
    return parser.pieces
