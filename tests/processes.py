"""`cronledger` commands run as a user runs them, each with a time limit.

A started command is watched through its standard error; waiting for it has a deadline, a
child that exits early fails the test with what it logged, and it is always ended at the end.
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest

from cronledger.persistence.store import Store
from tests.log_scan import note_log, note_output, note_secret
from tests.support import WAIT_SECONDS, wait_until

T = TypeVar("T")
CLI = str(Path(sys.executable).parent / "cronledger")
RUN_SECONDS = 60  # one command that finishes by itself
STOP_SECONDS = 15  # from SIGTERM until the child is killed


DRAIN_SECONDS = "0.2"  # a stopping server's drain: short, so that tests stop quickly
# Each pool keeps one connection open instead of two: six workers' processes, most of them
# idle, stay well inside PostgreSQL's 100 connections (the pools still grow under load).
TEST_POOLS = {"CRONLEDGER_POOL_SIZE": "1"}


def environment(store_url: str, **env: str) -> dict[str, str]:
    base = {
        "CRONLEDGER_DATABASE_URL": store_url,
        "CRONLEDGER_DRAIN_SECONDS": DRAIN_SECONDS,
        "CRONLEDGER_SIGNING_KEY_FILE": str(signing_key_file(store_url)),
    }
    whole = {**TEST_POOLS, **os.environ, **base, **env}
    note_secret("secret key", whole.get("CRONLEDGER_SECRET_KEY", ""))
    return whole


def signing_key_file(store_url: str) -> Path:
    """One signing key per test store, outside the checkout (a PostgreSQL store's default
    is under the working directory)."""
    if store_url.startswith("sqlite:"):
        return Path(f"{Store.from_url(store_url).sqlite_path}.signing-key.pem")
    name = hashlib.sha256(store_url.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / "cronledger-test-keys" / f"{name}.pem"


def run_cli(store_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`cronledger ARGS` on `store_url`, finished; what it printed and logged goes to the log
    scan too."""
    return run_in(environment(store_url), None, *args)


def run_in(
    env: Mapping[str, str], cwd: Path | None, *args: str
) -> subprocess.CompletedProcess[str]:
    """`cronledger ARGS` in exactly `env` (and `cwd`), finished; scanned like `run_cli`."""
    done = subprocess.run(
        [CLI, *args],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        check=False,
    )
    command = " ".join(["cronledger", *args[:1]])
    note_output(command, done.stdout)
    note_log(command, done.stderr.splitlines())
    return done


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Child:
    """A running `cronledger` command; its standard error is collected as it comes."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.command = " ".join(["cronledger", *args])
        self.process = subprocess.Popen(
            [CLI, *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._collect, daemon=True)
        self.reader.start()

    def _collect(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)

    @property
    def stderr(self) -> str:
        return "".join(list(self.lines))

    def logged(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def wait_for(self, condition: Callable[[], T], what: str, timeout: float = WAIT_SECONDS) -> T:
        """`condition`'s first truthy value; the test fails if the child exits or time runs out
        first."""

        def met_while_running() -> T:
            value = condition()
            if not value and self.process.poll() is not None:
                self.reader.join(STOP_SECONDS)  # the rest of what it wrote
                pytest.fail(
                    f"{self.command} exited with {self.process.returncode} before {what}:\n"
                    f"{self.stderr}"
                )
            return value

        return wait_until(met_while_running, what, timeout, context=self.describe)

    def describe(self) -> str:
        return f"{self.command} logged:\n{self.stderr}"

    def stop(self) -> int:
        """SIGTERM, then its exit status once it has stopped (SIGKILL after `STOP_SECONDS`)."""
        self.process.terminate()
        try:
            return self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"{self.command} ignored SIGTERM for {STOP_SECONDS}s\n{self.describe()}")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(STOP_SECONDS)

    def end(self) -> None:
        """Whatever happened, the child is gone and its standard error closed."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.reader.join(STOP_SECONDS)
        note_log(self.command.partition(" --")[0], list(self.lines))


@contextmanager
def started(store_url: str, *args: str, **env: str) -> Iterator[Child]:
    """`cronledger ARGS` running on `store_url` (with `env` added) until the block ends."""
    child = Child(list(args), environment(store_url, **env))
    try:
        yield child
    finally:
        child.end()


def killed_mid_work(
    store_url: str, command: str, working: Callable[[], object], what: str, **env: str
) -> None:
    """Start `cronledger COMMAND`, and SIGKILL it as soon as `working()` shows it at work."""
    with started(store_url, command, **env) as child:
        child.wait_for(working, what)
        child.kill()
