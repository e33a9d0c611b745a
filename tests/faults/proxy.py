"""A TCP forwarder in front of a server (PostgreSQL at 127.0.0.1:5432), which a test can pause,
cut and restore, to take the database away from running processes without touching the server.

- `pause()`: connections are still accepted but nothing is forwarded either way (a server that
  stopped answering), from the moment it returns; new ones are held, unconnected, until
  `restore()`.
- `cut()`: every connection open through the proxy is closed (a server that went down).
- `refuse()`: new connections are reset as soon as they are accepted (a server stopped).
- `restore()`: forwarding resumes; held connections are connected to the server then.
"""

from __future__ import annotations

import select
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

POLL_SECONDS = 0.05
PAUSE_SECONDS = 5  # the longest `pause()` waits for bytes being passed on
CHUNK = 65536


class Proxy:
    """Forwards 127.0.0.1:`port` to `upstream` until `close()`."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(POLL_SECONDS)
        self.port: int = self.listener.getsockname()[1]
        self.forwarding = threading.Event()
        self.forwarding.set()
        self.refusing = threading.Event()
        self.closed = threading.Event()
        self.lock = threading.Lock()
        self.passing = threading.Condition()  # guards `transfers`: bytes being passed on now
        self.transfers = 0
        self.sockets: set[socket.socket] = set()
        self.servers: set[socket.socket] = set()  # the sockets to `upstream` among them
        self.accepted = 0  # connections accepted so far, paused or not
        self.acceptor = threading.Thread(target=self._accept, daemon=True, name="proxy-accept")
        self.acceptor.start()

    def pause(self) -> None:
        """From when this returns, no byte is passed on (those being passed on are, first)."""
        with self.passing:
            self.forwarding.clear()
            self.passing.wait_for(lambda: self.transfers == 0, timeout=PAUSE_SECONDS)

    def refuse(self) -> None:
        self.refusing.set()

    def restore(self) -> None:
        self.refusing.clear()
        self.forwarding.set()

    def cut(self) -> None:
        with self.lock:
            doomed = list(self.sockets)
            self.sockets.clear()
        for sock in doomed:
            _close(sock)

    def server_ports(self) -> set[int]:
        """The local ports of the forwarded connections to the server (PostgreSQL's
        `pg_stat_activity.client_port` of each)."""
        ports = set()
        with self.lock:
            for sock in self.sockets & self.servers:
                with suppress(OSError):
                    ports.add(sock.getsockname()[1])
        return ports

    def close(self) -> None:
        self.closed.set()
        self.forwarding.set()
        self.cut()
        self.acceptor.join(5)
        self.listener.close()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self.refusing.is_set():
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.close()  # with linger 0: a reset, as from a port nobody listens on
                continue
            with self.lock:
                self.sockets.add(client)
                self.accepted += 1
            threading.Thread(target=self._pipe, args=(client,), daemon=True).start()

    def _pipe(self, client: socket.socket) -> None:
        server: socket.socket | None = None
        try:
            while not self.forwarding.wait(POLL_SECONDS):  # held while paused
                if self._gone(client):
                    return
            server = socket.create_connection(self.upstream, timeout=5)
            with self.lock:
                if client not in self.sockets:  # cut while it was held
                    return
                self.sockets.add(server)
                self.servers.add(server)
            self._forward(client, server)
        except OSError:
            pass
        finally:
            for sock in (client, server):
                if sock is not None:
                    with self.lock:
                        self.sockets.discard(sock)
                        self.servers.discard(sock)
                    _close(sock)

    def _gone(self, sock: socket.socket) -> bool:
        with self.lock:
            return sock not in self.sockets or self.closed.is_set()

    def _forward(self, client: socket.socket, server: socket.socket) -> None:
        peers = {client: server, server: client}
        while not self._gone(client) and not self._gone(server):
            if not self.forwarding.is_set():  # blackholed: read nothing, send nothing
                self.forwarding.wait(POLL_SECONDS)
                continue
            readable, _, _ = select.select(list(peers), [], [], POLL_SECONDS)
            for sock in readable:
                if not self._pass_on(sock, peers[sock]):
                    return

    def _pass_on(self, sock: socket.socket, peer: socket.socket) -> bool:
        """What `sock` has for `peer`, unless paused; False once `sock` has closed."""
        with self.passing:
            if not self.forwarding.is_set():
                return True
            self.transfers += 1
        try:
            data = sock.recv(CHUNK)
            if data:
                peer.sendall(data)
            return bool(data)
        finally:
            with self.passing:
                self.transfers -= 1
                self.passing.notify_all()


def _close(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with suppress(OSError):
        sock.close()


@contextmanager
def proxy_to(host: str, port: int) -> Iterator[Proxy]:
    """A running proxy to `host:port`, closed when the block ends."""
    proxy = Proxy((host, port))
    try:
        yield proxy
    finally:
        proxy.close()
