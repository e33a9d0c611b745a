"""GET /api/docs: the document rendered by the vendored Swagger UI, without a token, with
nothing loaded from another origin."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient

from tests.node_tools import TOOLS, node

VENDORED = Path(__file__).resolve().parents[2] / "web" / "static" / "swagger-ui"
LOADED = re.compile(r'(?:src|href)="([^"]*)"')


def test_the_reference_is_a_page_that_reads_the_document(document_client: FlaskClient) -> None:
    page = document_client.get("/api/docs")

    assert page.status_code == 200
    assert page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert 'data-document="/api/openapi.json"' in html
    assert set(LOADED.findall(html)) == {
        "/static/swagger-ui/swagger-ui.css",
        "/static/swagger-ui/swagger-ui-bundle.js",
        "/static/api-docs.js",
        "data:,",  # no favicon to ask for
    }


def test_the_page_allows_its_own_origin_only(document_client: FlaskClient) -> None:
    policy = document_client.get("/api/docs").headers["Content-Security-Policy"]

    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'self'"
    assert directives["img-src"] == "'self' data:"  # swagger-ui.css's icons
    assert not re.search(r"https?:|\*|unsafe", policy)


def test_swagger_ui_and_its_start_are_served(document_client: FlaskClient) -> None:
    bundle = document_client.get("/static/swagger-ui/swagger-ui-bundle.js")
    styles = document_client.get("/static/swagger-ui/swagger-ui.css")
    start = document_client.get("/static/api-docs.js")

    assert (bundle.status_code, bundle.mimetype) == (200, "text/javascript")
    assert bundle.get_data() == (VENDORED / "swagger-ui-bundle.js").read_bytes()
    assert (styles.status_code, styles.mimetype) == (200, "text/css")
    assert (start.status_code, start.mimetype) == (200, "text/javascript")
    assert "SwaggerUIBundle(" in start.get_data(as_text=True)
    for answer in (bundle, styles, start):
        answer.close()


def test_the_document_lists_the_reference_as_public(openapi_document: dict[str, Any]) -> None:
    operation = openapi_document["paths"]["/api/docs"]["get"]

    assert operation["security"] == []
    assert "text/html" in operation["responses"]["200"]["content"]


def test_the_vendored_files_are_the_pinned_package_s() -> None:
    node()  # installs tools/openapi from its lock file
    published = TOOLS / "node_modules" / "swagger-ui-dist"
    vendored = {path.name for path in VENDORED.iterdir()} - {"SOURCE.md"}

    assert vendored == {
        "swagger-ui-bundle.js",
        "swagger-ui.css",
        "LICENSE",
        "NOTICE",
        "swagger-ui-bundle.js.LICENSE.txt",
    }
    changed = [
        name
        for name in vendored
        if (VENDORED / name).read_bytes() != (published / name).read_bytes()
    ]
    assert changed == []
    version = json.loads((published / "package.json").read_text(encoding="utf-8"))["version"]
    assert f"version **{version}**" in (VENDORED / "SOURCE.md").read_text(encoding="utf-8")
