"""A client generated from the OpenAPI document, as an integrating developer makes and uses one.

openapi-python-client generates the package `cronledger_client` into a temporary folder from
the document the app serves; mypy --strict type-checks a flow written against it alone
(generated_client_flow.py), and the flow runs against `cronledger serve` on each store. It also
reads answers holding values a later release adds (a run status, a skip reason, a problem code,
a reason code) without failing (so do the TypeScript types: test_typescript_client.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import request
from web.examples import EXAMPLES

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
FLOW = Path(__file__).with_name("generated_client_flow.py")
PACKAGE = "cronledger_client"
STEP_SECONDS = 120  # generating, type-checking or running the flow
# No post hooks: the generated code is checked as generated, not as ruff would rewrite it.
GENERATOR_CONFIG = "post_hooks: []\n"


@pytest.fixture(scope="module")
def generated(openapi_document: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding the generated package: what goes on PYTHONPATH and MYPYPATH."""
    folder = tmp_path_factory.mktemp("client")
    (folder / "openapi.json").write_text(json.dumps(openapi_document), encoding="utf-8")
    (folder / "config.yml").write_text(GENERATOR_CONFIG, encoding="utf-8")
    result = _run(
        folder,
        str(BIN / "openapi-python-client"),
        "generate",
        "--path=openapi.json",
        f"--output-path={PACKAGE}",
        "--meta=none",
        "--config=config.yml",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    said = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert said == [f"Generating {PACKAGE}"], "the generator warned:\n" + "\n".join(said)
    return folder


def test_the_flow_type_checks_strictly_against_the_generated_client(generated: Path) -> None:
    result = _run(
        generated,
        str(BIN / "mypy"),
        "--strict",
        "--config-file=",  # the project's settings are for the project's packages
        "--cache-dir=.mypy_cache",
        str(FLOW),
        PACKAGE,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_flow_runs_against_a_served_store(
    generated: Path, openapi_document: dict[str, Any], server: str, token: str
) -> None:
    served = request(f"{server}/api/openapi.json")
    assert served == (200, openapi_document), "not the document the client came from"
    result = _run(generated, sys.executable, str(FLOW), server, token)
    assert result.returncode == 0, result.stdout + result.stderr


LATER_VALUES = """
import json, sys
from cronledger_client.models.problem import Problem
from cronledger_client.models.run_out import RunOut

run = RunOut.from_dict(json.loads(sys.argv[1]))
problem = Problem.from_dict(json.loads(sys.argv[2]))
print(json.dumps([run.status, run.skip_reason.code, problem.code, run.to_dict()["status"]]))
"""


def test_the_generated_client_reads_values_a_later_release_adds(generated: Path) -> None:
    """Enums in answers are open (web/openapi_shapes.py): a value the client never saw is read
    as a string, and a new reason code is only a new string."""
    skipped = {**EXAMPLES["RunPage"]["newest-first"]["items"][0], "status": "PAUSED_FOR_HOLIDAY"}
    skipped["skip_reason"] = {**skipped["skip_reason"], "code": "CALENDAR"}
    problem = {**EXAMPLES["Problem"]["NOT_FOUND"], "code": "SOMETHING_NEW"}
    result = _run(
        generated, sys.executable, "-c", LATER_VALUES, json.dumps(skipped), json.dumps(problem)
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout) == [
        "PAUSED_FOR_HOLIDAY",
        "CALENDAR",
        "SOMETHING_NEW",
        "PAUSED_FOR_HOLIDAY",
    ]


def _run(folder: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """`command` run in `folder`, which is on its module search paths."""
    env = {**os.environ, "PYTHONPATH": str(folder), "MYPYPATH": str(folder)}
    return subprocess.run(
        command,
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=STEP_SECONDS,
        check=False,
    )
