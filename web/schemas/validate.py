"""marshmallow's validators, each message a `Message` (template and values kept), so that a
field error is said in the reader's language (web/language.py). Schemas import these, not
marshmallow's: `from web.schemas import validate`."""

from __future__ import annotations

from typing import Any

from marshmallow import validate

from domain.messages import Message


class Length(validate.Length):
    def _format_error(self, value: Any, message: str) -> str:
        return Message(self.error or message, min=self.min, max=self.max, equal=self.equal)


class Range(validate.Range):
    def _format_error(self, value: Any, message: str) -> str:
        return Message(self.error or message, min=self.min, max=self.max)


class OneOf(validate.OneOf):
    def _format_error(self, value: Any) -> str:
        return Message(self.error, choices=self.choices_text, labels=self.labels_text)


class Regexp(validate.Regexp):
    def _format_error(self, value: str | bytes) -> str:
        return Message(self.error, regex=self.regex.pattern)
