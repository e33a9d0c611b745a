"""`GET /api/docs`: the OpenAPI document rendered by Swagger UI, no token needed.

Swagger UI is vendored under web/static/swagger-ui (SOURCE.md there says from which package);
the page loads nothing from another origin, and its Content-Security-Policy says so.
"""

from __future__ import annotations

from html import escape

from flask import Blueprint, Response, request, url_for

bp = Blueprint("docs", __name__)

# Scripts, styles, fonts and requests from this origin only; images also as data: URLs, which
# is how swagger-ui.css draws its icons (an image cannot run script).
POLICY = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cronledger API reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{styles}">
</head>
<body>
<div id="swagger-ui" data-document="{document}"></div>
<script src="{bundle}"></script>
<script src="{start}"></script>
</body>
</html>
"""


@bp.get("/api/docs")
def get_api_docs() -> Response:
    page = PAGE.format(
        styles=escape(url_for("static", filename="swagger-ui/swagger-ui.css")),
        document=escape(request.script_root + "/api/openapi.json"),
        bundle=escape(url_for("static", filename="swagger-ui/swagger-ui-bundle.js")),
        start=escape(url_for("static", filename="api-docs.js")),
    )
    response = Response(page, mimetype="text/html")
    response.headers["Content-Security-Policy"] = POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


get_api_docs.openapi_operation = {  # type: ignore[attr-defined]
    "summary": "The API reference: this document rendered by Swagger UI (no token)",
    "description": "An HTML page that reads `GET /api/openapi.json`; its scripts and styles "
    "are served by the service itself (`/static/`), nothing from another origin.",
    "tags": ["operations"],
    "security": [],
    "responses": {
        "200": {
            "description": "the HTML page",
            "headers": {
                "Content-Security-Policy": {
                    "description": "nothing from another origin",
                    "required": True,
                    "schema": {"type": "string", "enum": [POLICY]},
                },
                "X-Content-Type-Options": {
                    "required": True,
                    "schema": {"type": "string", "enum": ["nosniff"]},
                },
            },
            "content": {"text/html": {"schema": {"type": "string"}}},
        }
    },
}
