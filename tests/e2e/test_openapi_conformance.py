"""The server answers what its OpenAPI document says, checked by schemathesis on both stores.

Every operation of `/api/openapi.json` gets a few requests of each kind: the document's own
examples, valid requests on the seeded tenant's resources and on unknown ids, and invalid
requests. Each answer must have a declared status, content type and headers, a body valid
against its declared schema, and no header or field that the document does not declare.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from flask import Flask
from hypothesis import HealthCheck, settings

from cronledger.application.services import Services, open_services
from cronledger.config import Settings
from cronledger.persistence.signing_key import create_signing_key
from tests.e2e.conformance import (
    DOCUMENT,
    SECRET_KEY,
    STREAM,
    Document,
    checks_of,
    failures_of,
    report,
    seed,
)
from tests.support import Api, FakeClock, Opener
from web import MAX_BODY_BYTES, create_app, openapi

# A few short scenarios (a store takes seconds), the same ones every run.
STATEFUL = settings(
    max_examples=8,
    stateful_step_count=4,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture
def services(store_url: str, clock: FakeClock, tmp_path: Path) -> Iterator[Services]:
    """The app's services, with a refusal budget the generated refusals never spend, and a
    signing key (evidence bundles)."""
    create_signing_key(tmp_path / "signing-key.pem")
    settings = Settings(
        database_url=store_url,
        signing_key_file=str(tmp_path / "signing-key.pem"),
        refusals_per_minute=10**6,
        secret_key=SECRET_KEY,
        webhook_allow_private=True,  # a webhook on loopback, where nothing listens
        webhook_allow_http=True,
    )
    opened = open_services(settings, clock)
    yield opened
    opened.close()


def test_every_answer_is_as_documented(app: Flask, admin: Api) -> None:
    world = seed(admin)
    document = Document(admin.get(DOCUMENT).json)
    schema = schemathesis.openapi.from_wsgi(DOCUMENT, app)
    operations = [result.ok() for result in schema.get_all_operations()]
    # every operation but the document's own, which schemathesis leaves out
    assert {operation.label for operation in operations} == document.labels() - {f"GET {DOCUMENT}"}
    token = {"Authorization": f"Bearer {admin.token}"}
    failures = failures_of(operations, world, token, checks_of(document))
    assert not failures, report(failures)


def test_what_follows_a_201_is_answered_as_documented(app: Flask, admin: Api) -> None:
    """The stateful phase: schemathesis follows the document's links from each 201 to what
    may be done with the resource it created (read, change, command, delete), and checks
    every answer on the way as the test above does."""
    seed(admin)
    document = Document(admin.get(DOCUMENT).json)
    links = [
        link
        for operations in document.raw["paths"].values()
        for operation in operations.values()
        for link in operation["responses"].get("201", {}).get("links", {}).values()
    ]
    assert {link["operationId"] for link in links} >= {
        "get_schedule",
        "patch_schedule",
        "enable_schedule",
        "get_approval",
        "approve",
    }
    token = {"Authorization": f"Bearer {admin.token}"}
    checks = checks_of(document)
    machine = schemathesis.openapi.from_wsgi(DOCUMENT, app).as_state_machine()

    class Followed(machine):  # type: ignore[misc, valid-type]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": token}

        def validate_response(self, response: Any, case: Any, **_: Any) -> None:
            case.validate_response(response, checks=checks)

    Followed.run(settings=STATEFUL)


def test_limits_are_answered_as_documented(open_with: Opener, clock: FakeClock) -> None:
    """Answers the generated requests never meet: a body too large, a spent refusal budget,
    and no stream to spare."""
    services = open_with(clock, refusals_per_minute=1, streams_per_process=0)
    app = create_app({"SERVICES": services, "TESTING": True})
    token = {"Authorization": f"Bearer {services.directory.bootstrap('acme', 'root').token}"}
    document = Document(app.test_client().get(DOCUMENT).json)
    schema = schemathesis.openapi.from_wsgi(DOCUMENT, app)
    checks = checks_of(document)
    too_large = {"body": "x" * MAX_BODY_BYTES, "media_type": "application/json"}
    answers = [
        schema[path][method].Case(headers=token, **given).call_and_validate(checks=checks)
        for path, method, given in (
            (STREAM, "GET", {}),  # no stream allowed: 429 TOO_MANY_STREAMS
            ("/api/workflows/schedules", "POST", too_large),  # 413, which spends the budget
            ("/api/workflows/schedules", "GET", {}),  # 429 TOO_MANY_REQUESTS
        )
    ]
    assert [answer.status_code for answer in answers] == [429, 413, 429]


def test_operations_have_unique_ids_and_the_status_tables_name_them(admin: Api) -> None:
    document = admin.get(DOCUMENT).json
    ids = [op["operationId"] for ops in document["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))
    assert set(openapi.CONFLICTS) | set(openapi.REFERENCES) <= set(ids)
    answers = [op["responses"] for ops in document["paths"].values() for op in ops.values()]
    assert all("503" in responses for responses in answers)  # the probes' included
