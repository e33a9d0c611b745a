"""Helpers shared by the test suites."""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import psycopg
import pytest
from eventsourcing.domain import Snapshot
from eventsourcing.persistence import Mapper, Transcoder
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from cronledger.application.directory import DefinitionFields
from cronledger.application.services import Services, open_services
from cronledger.clock import ManualClock
from cronledger.config import Settings
from cronledger.persistence.store import Store
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
    schema = new_schema()
    yield schema_url(schema)
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        drop_schema(conn, schema)


def new_schema() -> str:
    return f"clt_{uuid.uuid4().hex[:12]}"


def schema_url(schema: str) -> str:
    return f"{POSTGRES_URL}{'&' if '?' in POSTGRES_URL else '?'}schema={schema}"


def drop_schema(conn: psycopg.Connection[Any], schema: str) -> None:
    conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def signing_key_file(store_url: str) -> Path:
    """One signing key per test store, outside the checkout (a PostgreSQL store's default
    is under the working directory)."""
    if store_url.startswith("sqlite:"):
        return Path(f"{Store.from_url(store_url).sqlite_path}.signing-key.pem")
    name = hashlib.sha256(store_url.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / "cronledger-test-keys" / f"{name}.pem"


def event_keys_file(store_url: str) -> Path:
    """The event keys of a test store: a SQLite store's default, else beside its signing key."""
    if store_url.startswith("sqlite:"):
        return Path(f"{Store.from_url(store_url).sqlite_path}.event-keys")
    return signing_key_file(store_url).with_suffix(".event-keys")


class SchemaPool:
    """Empty PostgreSQL schemas for the tests of one process. A schema a test leaves with
    exactly the tables, columns and indexes a fresh migration makes is emptied and handed out
    again: a tenth of the cost of migrating a new one, which most tests would otherwise pay.
    Any other schema is dropped.

    Emptying takes every table's `ACCESS EXCLUSIVE` lock first, as `TRUNCATE` would (a process
    of the test that still holds a lock gets its schema dropped instead), then deletes the rows
    and restarts the sequences in the same transaction: a test's few rows go in a tenth of the
    time `TRUNCATE` takes to give each of some forty tables new files."""

    def __init__(self, migrate: Callable[[str], None]) -> None:
        self.migrate = migrate  # migrates the store at a URL, as opening services does
        self.spare: list[str] = []
        self.pristine: str | None = None  # the layout a fresh migration makes

    def url(self) -> Iterator[str]:
        """A URL on an empty schema (migrated, or not yet made), given back afterwards."""
        schema = self.spare.pop() if self.spare else new_schema()
        url = schema_url(schema)
        event_keys_file(url).unlink(missing_ok=True)  # an earlier test's, or an earlier run's
        yield url
        self.give_back(schema)

    def give_back(self, schema: str) -> None:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute("SET lock_timeout = '5s'")
            layout = layout_of(conn, schema)
            if layout is not None and layout == self.pristine_layout(conn):
                try:
                    empty(conn, schema)
                except psycopg.errors.LockNotAvailable:  # a process of the test lives on
                    drop_schema(conn, schema)
                else:
                    self.spare.append(schema)
                return
            drop_schema(conn, schema)

    def pristine_layout(self, conn: psycopg.Connection[Any]) -> str | None:
        if self.pristine is None:
            schema = new_schema()
            self.migrate(schema_url(schema))
            self.pristine = layout_of(conn, schema)
            self.spare.append(schema)
        return self.pristine

    def close(self) -> None:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            for schema in self.spare:
                drop_schema(conn, schema)
        self.spare.clear()


def empty(conn: psycopg.Connection[Any], schema: str) -> None:
    """Every row of `schema`'s tables deleted and its sequences restarted, in one transaction
    that first locks every table as `TRUNCATE` would."""
    tables = tables_of(conn, schema)
    rows = conn.execute(
        "SELECT sequence_name FROM information_schema.sequences WHERE sequence_schema = %s",
        (schema,),
    )
    sequences = [f'"{schema}"."{name}"' for (name,) in rows]
    with conn.transaction():
        conn.execute(f"LOCK TABLE {', '.join(tables)} IN ACCESS EXCLUSIVE MODE")
        for table in tables:
            conn.execute(f"DELETE FROM {table}")
        for sequence in sequences:
            conn.execute(f"ALTER SEQUENCE {sequence} RESTART")


def tables_of(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    rows = conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
    )
    return [f'"{schema}"."{name}"' for (name,) in rows]


def layout_of(conn: psycopg.Connection[Any], schema: str) -> str | None:
    """The schema's tables, columns, indexes and routines as text (its own name left out);
    None if it holds no table. Read from the catalogs, a third of the time of
    information_schema's views."""
    row = conn.execute(
        "SELECT string_agg(item, E'\\n' ORDER BY item) FROM ("
        "SELECT concat_ws(' ', c.relname, a.attname, format_type(a.atttypid, a.atttypmod), "
        "a.attnotnull, pg_get_expr(d.adbin, d.adrelid)) AS item FROM pg_attribute a "
        "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
        "WHERE n.nspname = %(s)s AND c.relkind IN ('r', 'p', 'v', 'm') AND a.attnum > 0 "
        "AND NOT a.attisdropped "
        "UNION ALL SELECT indexdef FROM pg_indexes WHERE schemaname = %(s)s "
        "UNION ALL SELECT p.proname FROM pg_proc p "
        "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = %(s)s) items",
        {"s": schema},
    ).fetchone()
    text = row[0] if row else None
    return None if text is None else str(text).replace(schema, "<schema>")


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


# Reviewers as anyone who may decide was before reviewers (admins and operators), and an
# operator of each test tenant who is neither applicant nor schedule saver, so that someone may.
DECIDERS = {"roles": ["admin", "operator"]}
REVIEWER = "vera"


def add_reviewer(store_url: str, token: str) -> None:
    """The operator `REVIEWER` in the tenant of the admin whose token is `token`."""
    services = open_services(Settings(database_url=store_url), FakeClock())
    try:
        admin = services.directory.authenticate(token)
        assert admin is not None
        services.directory.create_account(admin, REVIEWER, "Vera", ["operator"])
    finally:
        services.close()


class World:
    """A tenant with an admin, an initiator `ann`, a published definition and a schedule."""

    def __init__(
        self,
        services: Services,
        clock: FakeClock,
        reviewers: Any = DECIDERS,
        **schedule: Any,
    ) -> None:
        self.services, self.clock = services, clock
        directory = services.directory
        self.token = directory.bootstrap("acme", "root").token  # the admin's, for the API
        root = directory.authenticate(self.token)
        assert root is not None
        self.root: Principal = root
        directory.create_account(root, "ann", "Ann", ["requester"])
        directory.create_account(root, REVIEWER, "Vera", ["operator"])
        self.definition = directory.create_definition(
            root, "daily", DefinitionFields("Daily", False, 3600, [], reviewers=reviewers)
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


def stored_at_version(event: Any, version: int, *new_fields: str) -> Any:
    """`event` as a release that wrote it at class version `version`, before `new_fields`,
    read back today (for a snapshot: the aggregate's state and version)."""
    mapper: Mapper[Any] = Mapper(transcoder=PickleTranscoder())
    stored = mapper.to_stored_event(event)
    state = pickle.loads(stored.state)
    older = state["state"] if isinstance(event, Snapshot) else state
    older["class_version"] = version
    for name in new_fields:
        del older[name]
    return mapper.to_domain_event(replace(stored, state=pickle.dumps(state)))


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
