"""Helpers shared by the test suites."""

from __future__ import annotations

import os
import pickle
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypeVar
from uuid import UUID

import psycopg
import pytest
from eventsourcing.domain import Snapshot
from eventsourcing.persistence import Mapper, Transcoder
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from cronledger.application.directory import DefinitionFields
from cronledger.application.services import Services
from cronledger.clock import ManualClock
from domain.approvals import ApprovalInstance
from domain.directory import Principal
from domain.runs import Run

T = TypeVar("T")
T0 = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
WAIT_SECONDS = 30.0  # what a test waits for something it expects, before it fails
POSTGRES_URL = os.environ.get(
    "CRONLEDGER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
Opener = Callable[..., Services]  # services on the test's store, from a clock and settings
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})


def on_ci() -> bool:
    """Whether this run is CI's (`CI` set to a true value, as CI services set it): then what a
    test needs and cannot find fails the test instead of skipping it."""
    return os.environ.get("CI", "").strip().lower() in TRUE_WORDS


def needed(problem: str | None) -> None:
    """Skip the test for `problem` (something it needs is missing), or fail it on CI."""
    if problem is None:
        return
    if on_ci():
        pytest.fail(f"{problem} (on CI what a test needs must be there: make test installs it)")
    pytest.skip(problem)


@dataclass
class FakeClock(ManualClock):
    """The project's hand-set clock, starting at `T0` unless told otherwise."""

    now: datetime = T0


def wait_until(
    condition: Callable[[], T],
    what: str,
    timeout: float = WAIT_SECONDS,
    interval: float = 0.02,
    context: Callable[[], str] = str,
) -> T:
    """`condition`'s first truthy value; the test fails, naming `what` and `context()`, if
    none comes within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"not {what} within {timeout}s\n{context()}")
        time.sleep(interval)
    return value


def fresh_postgres_url() -> Iterator[str]:
    """A PostgreSQL URL on its own schema, dropped afterwards."""
    schema = f"clt_{uuid.uuid4().hex[:12]}"
    yield f"{POSTGRES_URL}{'&' if '?' in POSTGRES_URL else '?'}schema={schema}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@dataclass
class FakeTime:
    """Monotonic seconds for a stream or a lifetime, moved only by its own `sleep`."""

    now: float = 0.0
    sleeps: int = 0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.sleeps += 1


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

    def patch(self, path: str, json: Any = None, **kwargs: Any) -> TestResponse:
        """A JSON Merge Patch (RFC 7396)."""
        headers = {"Content-Type": "application/merge-patch+json", **kwargs.pop("headers", {})}
        return self.call("PATCH", path, json, headers=headers, **kwargs)


def principal_of(services: Services, api: Api) -> Principal:
    """Who `api`'s token stands for."""
    principal = services.directory.authenticate(api.token)
    assert principal is not None
    return principal


class World:
    """A tenant with an admin, an initiator `ann`, a published definition and a schedule."""

    def __init__(self, services: Services, clock: FakeClock, **schedule: Any) -> None:
        self.services, self.clock = services, clock
        directory = services.directory
        root = directory.authenticate(directory.bootstrap("acme", "root").token)
        assert root is not None
        self.root: Principal = root
        directory.create_account(root, "ann", "Ann", ["requester"])
        self.definition = directory.create_definition(
            root, "daily", DefinitionFields("Daily", False, 3600, [])
        ).id
        directory.set_published(root, self.definition, True, None)
        body = {
            "name": "Daily",
            "definition_id": self.definition,
            "trigger": {"kind": "cron", "expression": "0 0 1 1 *"},
            "timezone": "UTC",
            "initiator_id": "ann",
            "title_template": "Daily {{date}}",
            "form_data": {"n": 1},
            "overlap_policy": "allow",  # overlapping cycles launch unless a test asks for skip
            **schedule,
        }
        settings = services.schedules.settings_from(body)
        self.schedule = services.schedules.create(root, settings, False).id

    def run_now(self, request_id: str = "r1") -> str:
        return self.services.schedules.run_now(self.root, self.schedule, request_id).id

    def set_ann_active(self, active: bool) -> None:
        self.services.directory.set_active(self.root, "ann", active, None)

    def set_ann_roles(self, roles: list[str]) -> None:
        version = self.services.directory.account(self.root.tenant_id, "ann").version
        self.services.directory.update_account(self.root, "ann", "Ann", roles, version)

    def run(self, run_id: str, services: Services | None = None) -> Run:
        ledger = (services or self.services).ledger
        return ledger.find(Run, UUID(run_id), "run", run_id)

    def instances(self) -> list[ApprovalInstance]:
        self.services.projector.catch_up()
        rows = self.services.store.query("SELECT id FROM approvals")
        found = self.services.ledger.get_many([UUID(row[0]) for row in rows])
        return [i for i in found.values() if isinstance(i, ApprovalInstance)]


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
