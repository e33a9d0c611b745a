"""Closing a waitress server without resetting a connection (RFC 9112, section 9.6).

A socket closed while input it has not read waits in it is reset (TCP RST), and a reset can
destroy an answer the client has not read yet. So a server is closed in steps: it accepts the
connections already queued on its socket, then stops accepting (a client connecting later is
refused: it knows nothing was sent); each connection, once it has answered what it was asked
and sent all of it and has been quiet a moment (a client that just connected sends its request
first), is taken from the server, half-closed (the client reads its end) and read,
the bytes dropped, until the client closes its side or `LINGER_SECONDS` pass; only then is it
closed. Everything that touches the server's connections runs in its own loop's thread.
"""

from __future__ import annotations

import contextlib
import queue
import select
import socket
import time
from collections.abc import Callable
from functools import partial
from typing import Any

LINGER_SECONDS = 2.0  # the longest a half-closed connection is read for its client's close
LOOK_SECONDS = 0.05
IN_LOOP_SECONDS = 5.0  # the longest a step waits for the server's loop to run it
QUIET_SECONDS = 0.1  # a connection with nothing to answer is closed once this quiet...
QUIET_FOR_AT_MOST = 1.0  # ...for this long after the server stopped accepting; then at once
MOST_QUEUED = 4096  # connections a listening socket may queue (its backlog), and more


def close_gracefully(server: Any, remaining: Callable[[], float]) -> None:
    """Close `server` (from any thread but its loop's; `server.run()` returns once it is), its
    connections each once answered, within `remaining()` seconds at most."""
    from waitress import wasyncore

    lingering = Lingering()
    try:
        in_loop(server, lambda: stop_accepting(server))
        stopped = time.time()  # waitress's clock for a connection's last activity
        while True:
            now = time.time()
            quiet = now - QUIET_SECONDS if now - stopped < QUIET_FOR_AT_MOST else now
            lingering.add(in_loop(server, partial(take_idle, server, quiet)))
            if not connections(server) or remaining() <= 0:
                break
            lingering.read(min(LOOK_SECONDS, remaining()))
        lingering.finish(min(LINGER_SECONDS, remaining()))
    finally:
        lingering.close()
        server.trigger.pull_trigger(lambda: wasyncore.close_all(server._map))  # ends server.run


def in_loop(server: Any, thunk: Callable[[], Any]) -> Any:
    """`thunk()` run in the server's loop thread, and its result; raises what it raised."""
    answer: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=1)

    def run() -> None:
        try:
            answer.put((True, thunk()))
        except Exception as error:
            answer.put((False, error))

    server.trigger.pull_trigger(run)
    done, result = answer.get(timeout=IN_LOOP_SECONDS)  # queue.Empty: the loop has ended
    if not done:
        raise result
    return result


def stop_accepting(server: Any) -> None:
    """Accept every connection queued on the listening socket, then close it."""
    from waitress import wasyncore

    if server.socket is None:  # closed already
        return
    for _ in range(MOST_QUEUED):
        if not select.select([server.socket], [], [], 0)[0]:
            break
        server.handle_accept()  # a connection of the server's, as any other
    wasyncore.dispatcher.close(server)


def connections(server: Any) -> list[Any]:
    """The server's client connections (its loop's map holds its trigger too)."""
    from waitress.channel import HTTPChannel

    return [c for c in server._map.copy().values() if isinstance(c, HTTPChannel)]


def take_idle(server: Any, quiet_since: float) -> list[socket.socket]:
    """The sockets of the connections with nothing to answer or send and no activity since
    `quiet_since`, taken from the server."""
    taken = []
    for channel in connections(server):
        busy = channel.requests or channel.request is not None or channel.total_outbufs_len
        if busy or channel.socket is None or channel.last_activity > quiet_since:
            continue
        sock = channel.socket
        channel.del_channel()  # the loop no longer reads it; its socket is ours now
        channel.socket, channel.connected = None, False
        for outbuf in channel.outbufs:
            with contextlib.suppress(Exception):
                outbuf.close()
        taken.append(sock)
    return taken


class Lingering:
    """Half-closed sockets, read until their clients close them (or until told to close)."""

    def __init__(self) -> None:
        self.sockets: list[socket.socket] = []

    def add(self, sockets: list[socket.socket]) -> None:
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_WR)  # the client reads the end of the connection
            except OSError:  # the client is gone already
                sock.close()
                continue
            self.sockets.append(sock)

    def read(self, seconds: float) -> None:
        """Read (and drop) what the clients send for up to `seconds`; close those that closed."""
        if not self.sockets:
            time.sleep(max(seconds, 0.0))
            return
        readable, _, _ = select.select(self.sockets, [], [], max(seconds, 0.0))
        for sock in readable:
            try:
                ended = not sock.recv(65536)
            except OSError:
                ended = True
            if ended:
                self.sockets.remove(sock)
                sock.close()

    def finish(self, seconds: float) -> None:
        """Read until every client has closed, or `seconds` have passed."""
        deadline = time.monotonic() + seconds
        while self.sockets and (left := deadline - time.monotonic()) > 0:
            self.read(min(left, LOOK_SECONDS))

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()
        self.sockets.clear()
