"""The served OpenAPI document passes Redocly's recommended rules (tools/openapi/redocly.yaml)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.node_tools import TOOLS, node

LINT_SECONDS = 120
QUIET = {"REDOCLY_TELEMETRY": "off", "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true"}


def test_the_document_passes_the_lint_with_no_warning(
    openapi_document: dict[str, Any], tmp_path: Path
) -> None:
    document = tmp_path / "openapi.json"
    document.write_text(json.dumps(openapi_document, indent=1))
    cli = TOOLS / "node_modules" / "@redocly" / "cli" / "bin" / "cli.js"
    lint = [node(), str(cli), "lint", "--config", str(TOOLS / "redocly.yaml"), "--format", "json"]

    result = subprocess.run(
        [*lint, str(document)],
        capture_output=True,
        text=True,
        timeout=LINT_SECONDS,
        env={**os.environ, **QUIET},
        check=False,
    )

    assert result.stdout.startswith("{"), f"the lint did not run:\n{result.stderr}"
    report = json.loads(result.stdout)
    problems = [
        f"{p['severity']} {p['ruleId']} at {p['location'][0]['pointer']}: {p['message']}"
        for p in report["problems"]
    ]
    assert problems == []
