"""How events become JSON on the log, and back, without ever interpreting a caller's JSON.

eventsourcing's JSON transcoder reads any object with exactly the keys `_type_` and `_data_`
as an encoded value. Callers' JSON (`form_data`) is therefore written as one opaque string
(`FormDataAsText`). Release 0.1.0 wrote it as a plain object, so an object of that shape in a
caller's form could make an event no reader decodes: events of that era are read with
`form_data` taken as it stands, whatever it holds (`LogTranscoder.decode`).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from eventsourcing.persistence import (
    DatetimeAsISO,
    DecimalAsStr,
    JSONTranscoder,
    Transcoding,
    UUIDAsHex,
)

from domain.schedules import ScheduleSettings
from domain.values import FormData

FORM_DATA_TEXT = "form_data_text"
PLAIN_FORM_DATA = b'"form_data":{'  # a key, not text inside a string: those quotes are escaped
OPAQUE_FORM_DATA = b'"form_data":{"_type_":"' + FORM_DATA_TEXT.encode() + b'"'


class FormDataAsText(Transcoding):
    type = FormData
    name = FORM_DATA_TEXT

    def encode(self, obj: FormData) -> str:
        return obj.text

    def decode(self, data: str) -> FormData:
        return FormData.from_text(data)


class ScheduleSettingsAsDict(Transcoding):
    type = ScheduleSettings
    name = "schedule_settings"

    def encode(self, obj: ScheduleSettings) -> dict[str, Any]:
        return asdict(obj)

    def decode(self, data: dict[str, Any]) -> ScheduleSettings:
        return ScheduleSettings(**data)


class LogTranscoder(JSONTranscoder):
    """eventsourcing's JSON transcoder, reading release 0.1.0's plain `form_data` as given."""

    def __init__(self) -> None:
        super().__init__()
        for transcoding in (
            UUIDAsHex(),
            DecimalAsStr(),
            DatetimeAsISO(),
            FormDataAsText(),
            ScheduleSettingsAsDict(),
        ):
            self.register(transcoding)

    def decode(self, data: bytes) -> Any:
        if PLAIN_FORM_DATA in data and OPAQUE_FORM_DATA not in data:
            return self._revive(json.loads(data))
        return super().decode(data)

    def _revive(self, value: Any) -> Any:
        """Decode parsed JSON bottom-up as the library does, leaving each `form_data` as is."""
        if isinstance(value, list):
            return [self._revive(item) for item in value]
        if not isinstance(value, dict):
            return value
        revived = {
            key: FormData(item)
            if key == "form_data" and isinstance(item, dict)
            else self._revive(item)
            for key, item in value.items()
        }
        return self._decode_obj(revived)
