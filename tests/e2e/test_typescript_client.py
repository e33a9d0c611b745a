"""A TypeScript client of the OpenAPI document, as docs/api.md#a-typescript-client makes one.

openapi-typescript (default options) generates the types from the document the app serves;
`tsc --strict` checks the flow of typescript_client_flow.ts, written against them and
openapi-fetch (minimal request bodies, unions narrowed on `kind`, `source` and a problem's
`code`, a value a later release adds), and the recipe in docs/api.md; it refuses a request
trigger that is not one; and the compiled flow runs against `cronledger serve`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import request
from tests.node_tools import TOOLS, node

pytestmark = pytest.mark.slow

FLOW = Path(__file__).with_name("typescript_client_flow.ts")
API_DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"
# What the recipe in docs/api.md takes as given.
RECIPE_GIVEN = "declare const token: string;\ndeclare const definitionId: string;\n"
STEP_SECONDS = 120  # generating, checking or running the flow
TSC = ["--strict", "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler"]
# Request triggers that are not one: each line must be refused.
WRONG_TRIGGERS = """import type { components } from "./cronledger";
type Schedule = components["schemas"]["ScheduleFieldsIn"];
export const noExpression: Schedule["trigger"] = { kind: "cron" };
export const noKind: Schedule["trigger"] = { expression: "0 9 * * *" };
export const wrongKind: Schedule["trigger"] = { kind: "hourly", expression: "0 9 * * *" };
export const mixed: Schedule["trigger"] = { kind: "cron", expression: "0 9 * * *", weekdays: [1] };
"""


@pytest.fixture(scope="module")
def generated(openapi_document: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the generated types (`cronledger.ts`), the flow and the node tools."""
    folder = tmp_path_factory.mktemp("typescript")
    (folder / "openapi.json").write_text(json.dumps(openapi_document), encoding="utf-8")
    made = _node(folder, "openapi-typescript/bin/cli.js", "openapi.json", "-o", "cronledger.ts")
    assert made.returncode == 0, made.stdout + made.stderr
    shutil.copy(FLOW, folder / "flow.ts")
    (folder / "package.json").write_text('{"type": "module"}', encoding="utf-8")
    (folder / "node_modules").symlink_to(TOOLS / "node_modules")
    return folder


def test_the_flow_type_checks_strictly_against_the_generated_types(generated: Path) -> None:
    checked = _node(generated, "typescript/bin/tsc", "--noEmit", *TSC, "flow.ts")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_recipe_in_the_docs_type_checks_strictly(generated: Path) -> None:
    section = API_DOCS.read_text(encoding="utf-8").split("\n### A TypeScript client\n")[1]
    recipe = re.search(r"```ts\n(.*?)```", section, re.S)
    assert recipe is not None, "docs/api.md shows no TypeScript"
    (generated / "recipe.ts").write_text(RECIPE_GIVEN + recipe[1], encoding="utf-8")
    checked = _node(generated, "typescript/bin/tsc", "--noEmit", *TSC, "recipe.ts")
    assert checked.returncode == 0, checked.stdout + checked.stderr


LATER_VALUES = """import type { components } from "./cronledger";
type Run = components["schemas"]["RunOut"];
export const later: Run["status"] = "PAUSED_FOR_HOLIDAY";
export const known: Run["status"] = "SUCCEEDED";
export const code: components["schemas"]["Problem"]["code"] = "SOMETHING_NEW";
"""


def test_the_types_accept_values_a_later_release_adds(generated: Path) -> None:
    """Enums in answers are open (web/openapi_shapes.py): `RunStatus | string`."""
    types = (generated / "cronledger.ts").read_text(encoding="utf-8")
    assert 'status: components["schemas"]["RunStatus"] | string;' in types
    (generated / "later.ts").write_text(LATER_VALUES, encoding="utf-8")
    checked = _node(generated, "typescript/bin/tsc", "--noEmit", *TSC, "later.ts")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_request_trigger_that_is_not_one_does_not_compile(generated: Path) -> None:
    (generated / "wrong.ts").write_text(WRONG_TRIGGERS, encoding="utf-8")
    checked = _node(generated, "typescript/bin/tsc", "--noEmit", *TSC, "wrong.ts")
    refused = set(re.findall(r"^wrong\.ts\((\d+),\d+\): error TS\d+", checked.stdout, re.M))
    assert refused == {"3", "4", "5", "6"}, checked.stdout + checked.stderr


def test_the_compiled_flow_runs_against_a_served_store(
    generated: Path, openapi_document: dict[str, Any], server: str, token: str
) -> None:
    served = request(f"{server}/api/openapi.json")
    assert served == (200, openapi_document), "not the document the types came from"
    compiled = _node(generated, "typescript/bin/tsc", *TSC, "flow.ts")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    ran = subprocess.run(
        [node(), "flow.js", server, token],
        cwd=generated,
        capture_output=True,
        text=True,
        timeout=STEP_SECONDS,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr


def _node(folder: Path, tool: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    """One of tools/openapi's node packages, run in `folder`."""
    return subprocess.run(
        [node(), str(TOOLS / "node_modules" / tool), *arguments],
        cwd=folder,
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=STEP_SECONDS,
        check=False,
    )
