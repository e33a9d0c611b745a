"""`cronledger` commands run as a user runs them, each with a time limit.

A started command is watched through its standard error; waiting for it has a deadline, a
child that exits early fails the test with what it logged, and it is always ended at the end.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO, TypeVar

import pytest

from tests.log_scan import note_log, note_output, note_secret
from tests.support import WAIT_SECONDS, event_keys_file, signing_key_file, wait_until

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
        "CRONLEDGER_EVENT_KEYS_FILE": str(event_keys_file(store_url)),
    }
    whole = {**TEST_POOLS, **os.environ, **base, **env}
    note_secret("secret key", whole.get("CRONLEDGER_SECRET_KEY", ""))
    return whole


def run_cli(store_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`cronledger ARGS` on `store_url`, finished; what it printed and logged goes to the log
    scan too."""
    return run_in(environment(store_url), None, *args)


def run_in(
    env: Mapping[str, str], cwd: Path | None, *args: str
) -> subprocess.CompletedProcess[str]:
    """`cronledger ARGS` in exactly `env` (and `cwd`), finished; scanned like `run_cli`."""
    if ZYGOTE.suits(env):
        done = ZYGOTE.run(env, cwd, list(args))
    else:
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


class Zygote:
    """This worker's `tests.cli_zygote`: `cronledger` commands forked from a process that has
    imported the command line already (started on first use, ended with the worker)."""

    # What Python reads when it starts: a command whose environment differs in these needs a
    # process of its own, since a forked child has started already.
    STARTUP = re.compile(r"^(PYTHON|LC_|LANG$)")

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.lock = threading.Lock()

    def suits(self, env: Mapping[str, str]) -> bool:
        def startup(variables: Mapping[str, str]) -> dict[str, str]:
            return {k: v for k, v in variables.items() if self.STARTUP.match(k)}

        return startup(env) == startup(os.environ)

    def run(
        self, env: Mapping[str, str], cwd: Path | None, args: list[str]
    ) -> subprocess.CompletedProcess[str]:
        """As `subprocess.run` with `capture_output`, `text` and a `RUN_SECONDS` timeout."""
        with tempfile.TemporaryDirectory() as folder:
            out, err = Path(folder, "stdout"), Path(folder, "stderr")
            pid = self.start(args, env, cwd, out, err, RUN_SECONDS)
            code = Forked(pid, [CLI, *args], self).wait()
            if code == -signal.SIGALRM:
                raise subprocess.TimeoutExpired([CLI, *args], RUN_SECONDS)
            return subprocess.CompletedProcess([CLI, *args], code, out.read_text(), err.read_text())

    def start(
        self,
        args: list[str],
        env: Mapping[str, str],
        cwd: Path | None,
        stdout: Path,
        stderr: Path,
        timeout: int | None,
    ) -> int:
        request: dict[str, Any] = {"op": "start", "args": args, "env": dict(env)}
        request |= {"cwd": str(cwd or Path.cwd())}
        request |= {"stdout": str(stdout), "stderr": str(stderr), "timeout": timeout}
        return int(self._ask(request)["pid"])

    def poll(self, pid: int) -> int | None:
        code = self._ask({"op": "poll", "pid": pid})["returncode"]
        return None if code is None else int(code)

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            process = self._process()
            assert process.stdin is not None
            assert process.stdout is not None
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            answer = process.stdout.readline()
            assert answer, f"the command-line zygote has ended ({process.poll()})"
            return dict(json.loads(answer))

    def _process(self) -> subprocess.Popen[str]:
        if self.process is None:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.cli_zygote"],
                cwd=Path(__file__).parents[1],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        return self.process


class Forked:
    """A command the zygote forked, as much of `subprocess.Popen` as the tests use."""

    def __init__(self, pid: int, args: list[str], zygote: Zygote) -> None:
        self.pid, self.args, self.zygote = pid, args, zygote
        self.returncode: int | None = None
        self.stderr: TextIO | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.zygote.poll(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.002
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(pause)  # a child's end is asked for, not told: ask less and less often
            pause = min(pause * 2, 0.05)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # not yet reaped: the pid is still this child's
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


ZYGOTE = Zygote()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def popen(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [CLI, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def forked(args: list[str], env: dict[str, str]) -> Forked:
    """`args` forked by the zygote, its standard error read through a FIFO as from a pipe."""
    with tempfile.TemporaryDirectory() as folder:
        fifo = Path(folder, "stderr")
        os.mkfifo(fifo)
        pid = ZYGOTE.start(args, env, None, Path(os.devnull), fifo, None)
        child = Forked(pid, [CLI, *args], ZYGOTE)
        child.stderr = fifo.open()  # the child opens it first thing: this waits for no more
    return child


class Child:
    """A running `cronledger` command; its standard error is collected as it comes."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.command = " ".join(["cronledger", *args])
        self.process = forked(args, env) if ZYGOTE.suits(env) else popen(args, env)
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
