"""The whole-suite log scan (tests/log_scan.py) fails a session that logged a secret, and names
the kind, the logger or command and the test, never the secret; a clean session passes.

Each case runs a small inner session in a subprocess with the plugin on; the inner test writes
the secrets it leaked to a file, so that the outer one can check they are not in the report.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
INNER = """
import logging
from pathlib import Path

from cronledger.application.services import open_services
from cronledger.config import Settings
from tests.log_scan import note_log, note_output
from tests.support import FakeClock


def test_a_session(tmp_path):
    services = open_services(Settings(database_url=f"sqlite:///{tmp_path}/s.sqlite"), FakeClock())
    issued = services.directory.bootstrap("acme", "root")
    services.close()
    child_token = "clt_" + "Ab3-" * 10 + "xyz"
    note_output("cronledger bootstrap", f"tenant acme created\\n{child_token}\\n")
    Path("leaked.txt").write_text(f"{issued.token}\\n{child_token}\\n")
    log = logging.getLogger("cronledger.web")
    log.debug("signed in with token id %s", issued.token_id)
    note_log("cronledger serve", ['{"message": "started"}'])
    {leak}
"""
LEAKS = {
    "a raw token logged at DEBUG in process": (
        'log.debug("checked %s", issued.token.removeprefix("clt_"))',
        "api token (sha256:",
        "logged by cronledger.web in test_a_session.py::test_a_session",
    ),
    "a printed token in a child's log line": (
        'note_log("cronledger serve", [f\'{{"authorization": "Bearer {child_token}"}}\'])',
        "clt_ printed by cronledger bootstrap (sha256:",
        "logged by cronledger serve in test_a_session.py::test_a_session",
    ),
}


def run_inner(
    pytester: pytest.Pytester, leak: str, *options: str
) -> tuple[pytest.RunResult, list[str]]:
    """The inner session's result, and the secrets its test wrote down."""
    pytester.makepyfile(test_a_session=INNER.replace("{leak}", leak))
    pytester.chdir()
    result = pytester.runpytest_subprocess(
        "-p", "tests.log_scan", "-p", "no:cacheprovider", *options
    )
    leaked = (pytester.path / "leaked.txt").read_text().split()
    return result, leaked


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """An inner session with no plugin but the scan (and pytest-xdist where asked): the others
    installed (schemathesis, hypothesis, ...) would only add seconds to each process's start."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester


@pytest.mark.parametrize(
    "workers", [(), ("-p", "xdist", "-n", "2")], ids=["one process", "pytest-xdist"]
)
@pytest.mark.parametrize("case", LEAKS)
def test_a_session_that_logged_a_secret_fails_naming_it_but_not_showing_it(
    inner: pytest.Pytester, case: str, workers: tuple[str, ...]
) -> None:
    """Under pytest-xdist a worker scans the test and its controller judges the session."""
    leak, kind, where = LEAKS[case]
    result, leaked = run_inner(inner, leak, *workers)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    output = result.stdout.str()
    assert "1 SECRETS LOGGED" in output
    assert kind in output
    assert where in output
    secrets = [*leaked, *(s.removeprefix("clt_") for s in leaked)]
    assert not [s for s in secrets if s in output]
    assert not re.search(r"clt_[A-Za-z0-9_-]{20}", output)


def test_a_session_that_logged_no_secret_passes_and_tells_what_it_searched(
    inner: pytest.Pytester,
) -> None:
    result, _ = run_inner(inner, 'log.info("nothing secret")')
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    summary = re.search(
        r"log scan: (\d+) log lines searched for (.*): no secret in any", result.stdout.str()
    )
    assert summary, result.stdout.str()
    assert int(summary.group(1)) >= 3
    assert "1 api token" in summary.group(2)
    assert "1 clt_ printed by cronledger bootstrap" in summary.group(2)
