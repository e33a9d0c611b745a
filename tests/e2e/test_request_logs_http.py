"""Request and error log lines: the route template and the request id; probes at DEBUG."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from flask.testing import FlaskClient

from cronledger.application.services import Services
from tests.support import Api


def request_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "cronledger.web" and r.message == "request"]


def test_a_request_line_names_the_route_template_and_the_request_id(
    admin: Api, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        admin.get("/api/accounts/root", headers={"X-Request-ID": "req-42"})
    [line] = request_lines(caplog)
    assert line.levelno == logging.INFO
    assert (vars(line)["route"], vars(line)["path"], vars(line)["request_id"]) == (
        "/api/accounts/<account_id>",
        "/api/accounts/root",
        "req-42",
    )


@pytest.mark.parametrize("path", ["/livez", "/readyz", "/healthz", "/metrics"])
def test_probes_and_scrapes_are_logged_at_debug(
    client: FlaskClient, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    with caplog.at_level(logging.DEBUG):
        client.get(path)
    [line] = request_lines(caplog)
    assert (line.levelno, vars(line)["route"]) == (logging.DEBUG, path)


def test_the_unhandled_error_line_carries_the_request_id_and_route(
    admin: Api,
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def explode(*args: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(services.directory, "accounts", explode)
    with caplog.at_level(logging.ERROR):
        admin.get("/api/accounts", headers={"X-Request-ID": "req-500"})
    [line] = [r for r in caplog.records if r.message == "unhandled error"]
    assert (vars(line)["request_id"], vars(line)["route"]) == ("req-500", "/api/accounts")
