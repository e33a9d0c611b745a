"""Helpers shared by the test suites."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from eventsourcing.domain import Snapshot
from eventsourcing.persistence import Mapper, Transcoder
from flask.testing import FlaskClient
from werkzeug.test import TestResponse


@dataclass
class FakeClock:
    """A clock the test moves by hand."""

    now: datetime = field(default_factory=lambda: datetime(2026, 10, 1, 9, 0, tzinfo=UTC))

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


@dataclass
class Api:
    """A test client that sends one bearer token."""

    client: FlaskClient
    token: str

    def call(self, method: str, path: str, json: Any = None, **kwargs: Any) -> TestResponse:
        headers = {"Authorization": f"Bearer {self.token}", **kwargs.pop("headers", {})}
        return self.client.open(path, method=method, json=json, headers=headers, **kwargs)

    def get(self, path: str, **kwargs: Any) -> TestResponse:
        return self.call("GET", path, **kwargs)

    def post(self, path: str, json: Any = None, **kwargs: Any) -> TestResponse:
        return self.call("POST", path, json, **kwargs)

    def put(self, path: str, json: Any = None, **kwargs: Any) -> TestResponse:
        return self.call("PUT", path, json, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> TestResponse:
        return self.call("DELETE", path, **kwargs)


class PickleTranscoder(Transcoder):
    """Stores any state as it is, so that a test can edit it like an older release's."""

    def encode(self, obj: Any) -> bytes:
        return pickle.dumps(obj)

    def decode(self, data: bytes) -> Any:
        return pickle.loads(data)


def stored_by_an_older_release(event: Any, *new_fields: str) -> Any:
    """`event` as a release before `new_fields` stored it (class version 1), read back today.

    For a snapshot, the fields are those of the aggregate state it holds.
    """
    mapper: Mapper[Any] = Mapper(transcoder=PickleTranscoder())
    stored = mapper.to_stored_event(event)
    state = pickle.loads(stored.state)
    older = state["state"] if isinstance(event, Snapshot) else state
    older.pop("class_version")
    for name in new_fields:
        del older[name]
    return mapper.to_domain_event(replace(stored, state=pickle.dumps(state)))
