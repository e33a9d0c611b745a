"""Processes for the end-to-end benchmarks: a shifted clock, child processes, their memory."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from multiprocessing import get_context
from pathlib import Path
from typing import IO, ParamSpec, TypeVar

from cronledger.application.services import Services
from tick.loops import Loop

P = ParamSpec("P")
T = TypeVar("T")
MIB = 2**20


class ShiftedClock:
    """Real time, shifted: it reads `at` until started, then runs at the real pace from there.

    `jump` moves it forward (never back), as the sustained load does between minutes; lateness
    measured against it is then real seconds since it reached an instant.
    """

    def __init__(self, at: datetime) -> None:
        self._origin: tuple[datetime, float | None] = (at, None)  # replaced whole: thread-safe

    def __call__(self) -> datetime:
        at, started = self._origin
        return at if started is None else at + timedelta(seconds=time.perf_counter() - started)

    def start(self, at: datetime) -> None:
        self._origin = (at, time.perf_counter())

    def jump(self, to: datetime) -> None:
        """On to `to` if it is still ahead; a clock already past it runs on."""
        if to > self():
            self.start(to)


@dataclass(frozen=True)
class Memory:
    """A process's resident set now and at its peak, in MiB."""

    rss: float
    peak: float


def memory_of(pid: int | None = None) -> Memory:
    """VmRSS and VmHWM of a process (this one by default), from /proc."""
    fields = _status(pid)
    return Memory(fields["VmRSS"] / 1024, fields["VmHWM"] / 1024)


def reset_peak_memory() -> None:
    """Start this process's peak resident set afresh (Linux 4.0 and later); else keep it."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _status(pid: int | None) -> dict[str, int]:
    """The kB figures of /proc/<pid>/status."""
    lines = Path(f"/proc/{pid or 'self'}/status").read_text().splitlines()
    fields = {}
    for line in lines:
        name, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            fields[name] = int(value.split()[0])
    return fields


PROFILE_SUFFIXES = {"flamegraph": "svg", "speedscope": "json", "raw": "txt"}


@contextmanager
def profiled(name: str) -> Iterator[None]:
    """With BENCH_PROFILE set to a folder: py-spy samples this process (every thread) while
    the block runs, into `<folder>/<name>.svg`, a flame graph (BENCH_PROFILE_FORMAT=raw:
    collapsed stacks in a .txt, speedscope: a .json); else nothing."""
    folder = os.environ.get("BENCH_PROFILE")
    if not folder:
        yield
        return
    kind = os.environ.get("BENCH_PROFILE_FORMAT", "flamegraph")
    Path(folder).mkdir(parents=True, exist_ok=True)
    spy_on = ["record", "--pid", str(os.getpid()), "--nonblocking", "--threads"]
    output = ["--format", kind, "--output", str(Path(folder) / f"{name}.{PROFILE_SUFFIXES[kind]}")]
    spy = subprocess.Popen(
        [str(Path(sys.executable).parent / "py-spy"), *spy_on, *output],
        stdout=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)  # py-spy writes what it sampled, then exits
        spy.wait(timeout=60)


def in_child(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`function(*args)` in a fresh Python process, so that its memory is its own."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(function, *args, **kwargs).result()


def start_loops(loops: list[Loop]) -> list[threading.Thread]:
    return [loop.start() for loop in loops]


def stop_loops(loops: list[Loop], threads: list[threading.Thread]) -> None:
    """Ask every loop to stop at once, then wait for each."""
    for loop in loops:
        loop.stop.set()
    for thread in threads:
        thread.join()


def loop_failures(services: Services) -> int:
    return sum(beat.failures for beat in services.health.loops.values())


def wait_for(condition: Callable[[], bool], timeout: float, what: str, every: float = 0.1) -> float:
    """Seconds until `condition()` holds, checked every `every` seconds; TimeoutError after
    `timeout` seconds, naming `what` was awaited."""
    started = time.perf_counter()
    while not condition():
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"{what}: not done after {timeout:.0f} s")
        time.sleep(every)
    return time.perf_counter() - started


def cronledger_command(
    command: str, environment: Mapping[str, str], log: IO[bytes]
) -> subprocess.Popen[bytes]:
    """`cronledger <command>` in a process of its own; its log goes to `log`."""
    script = Path(sys.executable).parent / "cronledger"
    return subprocess.Popen(
        [str(script), command],
        env={**os.environ, **environment},
        stdout=subprocess.DEVNULL,
        stderr=log,
    )


def stop_command(process: subprocess.Popen[bytes], timeout: float = 30) -> int:
    """SIGTERM (the graceful stop), then SIGKILL after `timeout`; its exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()
