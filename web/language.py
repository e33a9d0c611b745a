"""Languages: which one a request is answered in, and the words of the domain and of the web
layer (problems, field errors: `domain.messages.Message`, and marshmallow's and Werkzeug's own
English messages) said in it.

The JSON API answers in the language `Accept-Language` asks for (`zh-CN` or `en`; English when
it asks for neither) and names it in `Content-Language`; a console page is in the language its
reader picked (web/console/shell.py). Both read one catalogue of these words,
web/translations/zh/LC_MESSAGES/messages.po (compiled by `make translations`): a `Message` is
looked up by its template (marshmallow's and Werkzeug's English messages are their own templates:
`Message.verbatim`). The console's own words have their catalogues under
web/console/translations/; docs/console/glossary.md holds the terms all of them share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from flask import Flask, Response, request
from flask_babel import Babel, Domain, get_locale

from domain.messages import Joined, Message

API_LANGUAGES = ("en", "zh")  # English first: a client that names no language reads English
CONTENT_LANGUAGE = {"zh": "zh-CN", "en": "en"}  # as answers name them
ANSWER_HEADERS = ("Content-Language", "Vary")  # on every problem (`name_language`)
CATALOGUE = Path(__file__).parent / "translations"
WORDS = Domain(translation_directories=str(CATALOGUE))


def install(
    app: Flask,
    page_language: Callable[[], str | None] = lambda: None,
    directories: Iterable[str] = (),
) -> None:
    """Flask-Babel for the app: a request's language is `page_language()`'s (a console page's),
    else the API's; `directories` are the console's catalogues."""
    app.config.update(BABEL_TRANSLATION_DIRECTORIES=";".join(directories) or str(CATALOGUE))
    Babel(app, locale_selector=lambda: page_language() or api_language())


def api_language() -> str:
    """The language `Accept-Language` prefers of those the API speaks."""
    return preferred_language(API_LANGUAGES)


def preferred_language(spoken: Sequence[str]) -> str:
    """The first of `spoken` that `Accept-Language` asks for, by its preference and by primary
    language (`zh-CN` and `zh-TW` read `zh`); else the first of `spoken`."""
    for tag, quality in request.accept_languages:
        primary = tag.replace("_", "-").partition("-")[0].lower()
        if quality > 0 and primary in spoken:
            return primary
    return spoken[0]


def said(text: str) -> str:
    """`text` in the request's language: a `Message` by its template, with its `Message` values
    said too; several `Joined` each said; any other text (someone's own words, a name) as it is."""
    if isinstance(text, Joined):
        return text.separator.join(said(part) for part in text.parts)
    if not isinstance(text, Message):
        return text
    values = {name: _said_value(value) for name, value in text.values.items()}
    try:
        return str(WORDS.gettext(text.template)).format_map(values)
    except (KeyError, IndexError, ValueError):  # a translation naming a value it was not given
        return str(text)


def _said_value(value: object) -> object:
    return said(value) if isinstance(value, Message | Joined) else value


def said_all(errors: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Field errors, each message said in the request's language."""
    return {field: [said(message) for message in messages] for field, messages in errors.items()}


def name_language(answer: Response) -> Response:
    """`Content-Language` of the words an answer carries, and `Vary: Accept-Language`."""
    answer.headers["Content-Language"] = CONTENT_LANGUAGE.get(str(get_locale()), "en")
    answer.vary.add("Accept-Language")
    return answer
