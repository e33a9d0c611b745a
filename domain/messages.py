"""Words for people that remember what they were made from.

A `Message` is its English text, a `str`, so every caller, log line and client reads it as
before; it also keeps its `template` (a `str.format` pattern, `{name}` for each value) and its
`values`, so that an edge may say it in the reader's language: the web layer looks the
template up in its catalogue and fills in the values (web/language.py). A value that is itself
a `Message` (a noun such as `Message("schedule")`) is said in that language too; any other
value (an id, a number, a name someone typed) is filled in as it is.

Templates are msgids: write them as literals, `Message("...", name=value)`, so that the
catalogue's test finds each one (a table of templates filled in later marks each with `N_`); a
literal brace is doubled (`{{`), as `str.format` wants. `Joined` puts several messages one after
the other, each said in the reader's language.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class Message(str):
    """English words, with the template and the values they were made from."""

    template: str
    values: Mapping[str, object]

    def __new__(cls, template: str, /, **values: object) -> Message:
        message = super().__new__(cls, template.format_map(values))
        message.template = template
        message.values = values
        return message

    @classmethod
    def verbatim(cls, text: str) -> Message:
        """Another library's English words (marshmallow's "Missing data for required field.")
        as a message: its text is its template, braces and all."""
        return (
            text if isinstance(text, Message) else cls(text.replace("{", "{{").replace("}", "}}"))
        )

    def as_data(self) -> dict[str, Any]:
        """The message as plain data (JSON), `from_data` makes it again."""
        values = {
            name: value.as_data() if isinstance(value, Message) else value
            for name, value in self.values.items()
        }
        return {"template": self.template, "values": values}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Message:
        values = {
            name: cls.from_data(value) if isinstance(value, Mapping) else value
            for name, value in data["values"].items()
        }
        return cls(data["template"], **values)

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt, (self.template, dict(self.values))


def _rebuilt(template: str, values: dict[str, object]) -> Message:
    return Message(template, **values)


class Joined(str):
    """Several messages one after the other, with a separator, as one value of a message."""

    separator: str
    parts: tuple[str, ...]

    def __new__(cls, separator: str, parts: Iterable[str]) -> Joined:
        kept = tuple(parts)
        joined = super().__new__(cls, separator.join(kept))
        joined.separator = separator
        joined.parts = kept
        return joined

    def __reduce__(self) -> tuple[Any, ...]:
        return Joined, (self.separator, self.parts)


def N_(template: str) -> str:  # noqa: N802 (gettext's name for a marker that does nothing)
    """`template`, marked for the catalogue: a message is made of it later, with its values."""
    return template
