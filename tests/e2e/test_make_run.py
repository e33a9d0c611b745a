"""`make run` in a copy of the repository (with this environment's packages, so nothing is
installed): it keeps a secret key of its own in `var/secret-key`, made once, so a console
session outlives a restart."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.cookiejar import CookieJar
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import urlencode

import pytest

from tests.e2e.test_wheel import NOT_SOURCE, ROOT
from tests.processes import free_port
from tests.support import wait_until

pytestmark = pytest.mark.slow
STOP_SECONDS = 30
START_SECONDS = 120  # make run migrates, bootstraps and starts serve: on a loaded machine, slowly
CSRF = re.compile(r'name="csrf-token" content="([^"]+)"')


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The repository's files, and a stamp that tells make this environment is installed."""
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT, copy, ignore=NOT_SOURCE)
    return copy


@contextmanager
def make_run(checkout: Path, port: int) -> Iterator[None]:
    """`make run` serving on `port` with this interpreter's packages, stopped afterwards."""
    stamp = checkout / "installed-here"
    stamp.touch()
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CRONLEDGER_")}
    command = ["make", "run", f"PORT={port}", f"BIN={Path(sys.executable).parent}"]
    with (checkout / "make-run.log").open("ab") as log:
        child = subprocess.Popen(
            [*command, f"SERVE_STAMP={stamp}"],
            cwd=checkout,
            env=environ,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until(
            lambda: answer(f"http://127.0.0.1:{port}/healthz")[0] == 200, "serving", START_SECONDS
        )
        yield
    finally:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait(STOP_SECONDS)
        wait_until(lambda: gone(child.pid), "make run's server stopped", STOP_SECONDS)


def gone(group: int) -> bool:
    """Whether no process of the group is left (make stops before its server has drained)."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return True
    return False


def answer(
    url: str, opener: urllib.request.OpenerDirector | None = None, **form: str
) -> tuple[int, str]:
    data = urlencode(form).encode() if form else None
    try:
        with (opener or urllib.request.build_opener()).open(url, data, timeout=5) as got:
            return got.status, got.read().decode()
    except HTTPError as refused:
        return refused.code, refused.read().decode()
    except OSError:
        return 0, ""


def test_a_session_outlives_a_restart_of_make_run(checkout: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    browser = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(CookieJar()), NoRedirects
    )
    with make_run(checkout, port):
        key = checkout / "var" / "secret-key"
        made = key.read_text()
        assert len(made.strip()) >= 32
        assert key.stat().st_mode & 0o777 == 0o600
        token = (checkout / "var" / "demo-token").read_text().strip()
        found = CSRF.search(answer(f"{base}/console/sign-in", browser)[1])
        assert found is not None
        signed_in = answer(f"{base}/console/sign-in", browser, csrf_token=found[1], token=token)
        assert signed_in[0] == 302
        assert answer(f"{base}/console/schedules/", browser)[0] == 200
    with make_run(checkout, port):
        assert key.read_text() == made  # never replaced
        assert answer(f"{base}/console/schedules/", browser)[0] == 200
