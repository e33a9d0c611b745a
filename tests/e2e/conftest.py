"""Fixtures of the end-to-end tests: published definitions, a schedule body, a served process."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from cronledger.application.services import open_services
from cronledger.config import Settings
from tests.e2e.helpers import DEFINITION, SCHEDULE, answers, with_reviewer
from tests.processes import free_port, started
from tests.support import DECIDERS, Api, FakeClock
from web import create_app


@pytest.fixture
def definition_id(admin: Api) -> str:
    """A published definition without presets (and an operator to review it)."""
    with_reviewer(admin)
    created = admin.post(
        "/api/definitions",
        {
            "key": "onboarding",
            "name": "Onboarding",
            "external": False,
            "review_window_seconds": 3600,
            "reviewers": DECIDERS,
        },
    ).json
    admin.post(f"/api/definitions/{created['id']}/publish")
    return str(created["id"])


@pytest.fixture
def definition(admin: Api) -> dict[str, Any]:
    """A published definition with a schedule preset, as the API answers it (and an operator
    to review it)."""
    with_reviewer(admin)
    created = admin.post("/api/definitions", DEFINITION).json
    return admin.post(f"/api/definitions/{created['id']}/publish").json  # type: ignore[no-any-return]


@pytest.fixture
def body(definition: dict[str, Any]) -> dict[str, Any]:
    """A valid schedule on `definition`, initiated by `root`, every settable field named."""
    return {**copy.deepcopy(SCHEDULE), "definition_id": definition["id"]}


@pytest.fixture
def server(store_url: str, token: str) -> Iterator[str]:
    """The base URL of `cronledger serve` on the test's store, once it answers."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with started(store_url, "serve", "--port", str(port)) as child:
        child.wait_for(lambda: answers(f"{base}/healthz"), "answering /healthz")
        yield base


@pytest.fixture(scope="module")
def document_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FlaskClient]:
    """An app on a SQLite store of its own, for the tests of what does not depend on the store
    (the OpenAPI document, the reference at /api/docs)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('document')}/cronledger.sqlite"
    services = open_services(Settings(database_url=url), FakeClock())
    yield create_app({"SERVICES": services, "TESTING": True}).test_client()
    services.close()


@pytest.fixture(scope="module")
def openapi_document(document_client: FlaskClient) -> dict[str, Any]:
    """The document as GET /api/openapi.json serves it."""
    answer = document_client.get("/api/openapi.json")
    assert answer.status_code == 200
    return answer.json  # type: ignore[no-any-return]
