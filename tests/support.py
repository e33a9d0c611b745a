"""Helpers shared by the test suites."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

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
