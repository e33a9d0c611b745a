"""`cronledger web --workers N`: N server processes answering on one listening socket.

The parent binds the socket, then forks the workers before it opens anything else (no thread,
no store connection crosses a fork): each worker opens its own services and pools. The parent
only watches: SIGTERM or SIGINT is passed on to every worker, which drains as `cronledger web`
does, and the parent exits once they all have (0 if they all exited 0). A worker that dies
unexpectedly is replaced at once; one that dies `RESTARTS` times within `RESTART_WINDOW_SECONDS`
stops them all, and the parent exits 1 (a store or a setting that keeps workers from starting
is not retried forever).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from types import FrameType

log = logging.getLogger("cronledger.workers")
RESTARTS = 5
RESTART_WINDOW_SECONDS = 60.0
WATCH_SECONDS = 0.2  # how often the parent looks for workers that exited
KILL_AFTER_SECONDS = 5.0  # past the workers' own shutdown grace: SIGKILL
BACKLOG = 1024  # connections waiting to be accepted, as waitress listens by default


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port` and listening, for every worker to accept from."""
    family, kind, protocol, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, protocol)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(address)
    sock.listen(BACKLOG)
    return sock


class Supervisor:
    """Runs `serve(index)` in `count` forked processes until asked to stop."""

    def __init__(self, count: int, serve: Callable[[int], int], grace_seconds: float) -> None:
        self.count, self.serve, self.grace_seconds = count, serve, grace_seconds
        self.workers: dict[int, int] = {}  # pid: index
        self.deaths: deque[float] = deque(maxlen=RESTARTS)
        self.stopping_since: float | None = None
        self.failed = False

    def run(self) -> int:
        """Start the workers, replace those that die, and return the exit status."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._stop)
        for index in range(self.count):
            self._start(index)
        while self.workers:
            self._reap()
            self._kill_late()
            time.sleep(WATCH_SECONDS)
        return 1 if self.failed else 0

    def _start(self, index: int) -> None:
        pid = os.fork()
        if pid == 0:
            os._exit(self._as_worker(index))
        self.workers[pid] = index
        log.info("web worker started", extra={"worker": index, "pid": pid})
        if self.stopping_since is not None:  # a stop came while it was starting
            _signal(pid, signal.SIGTERM)

    def _as_worker(self, index: int) -> int:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)  # until the worker's own shutdown takes them
        _stop_when_orphaned(os.getppid())
        try:
            return self.serve(index)
        except SystemExit as exit:
            return exit.code if isinstance(exit.code, int) else 1
        except BaseException:
            log.exception("web worker failed", extra={"worker": index})
            return 1
        finally:
            logging.shutdown()

    def _reap(self) -> None:
        while self.workers:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return
            index = self.workers.pop(pid)
            code = os.waitstatus_to_exitcode(status)
            if self.stopping_since is None:
                self._replace(index, pid, code)
            elif code != 0:
                self.failed = True

    def _replace(self, index: int, pid: int, code: int) -> None:
        log.error(
            "web worker exited unexpectedly", extra={"worker": index, "pid": pid, "code": code}
        )
        now = time.monotonic()
        self.deaths.append(now)
        if len(self.deaths) == RESTARTS and now - self.deaths[0] < RESTART_WINDOW_SECONDS:
            log.error(
                f"{RESTARTS} workers died within {RESTART_WINDOW_SECONDS:g} s: stopping them all"
            )
            self.failed = True
            self._stop()
            return
        self._start(index)

    def _stop(self, signum: int | None = None, frame: FrameType | None = None) -> None:
        """Ask every worker to stop (again, if a signal comes twice)."""
        if self.stopping_since is None:
            self.stopping_since = time.monotonic()
            log.info("stopping the web workers", extra={"workers": len(self.workers)})
        for pid in self.workers:
            _signal(pid, signal.SIGTERM)

    def _kill_late(self) -> None:
        """Workers still running well past their own shutdown grace are killed."""
        if self.stopping_since is None:
            return
        if time.monotonic() - self.stopping_since > self.grace_seconds + KILL_AFTER_SECONDS:
            for pid in self.workers:
                _signal(pid, signal.SIGKILL)
            self.failed = True


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # exited already: reaped on the next look
        os.kill(pid, signum)


def _stop_when_orphaned(parent: int) -> None:
    """A worker whose parent is gone (killed) stops as if sent SIGTERM."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
