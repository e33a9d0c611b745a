"""Real HTTP receivers of webhook messages on loopback, for the webhook tests.

`receiving` records every request it gets and answers as the test scripts it: a status, or a
gate that holds the request until the test opens it (a receiver that never answers, or one a
test kills the notifier in front of). `dripping` is a receiver that sends its answer's status
line and headers a byte at a time, slowly: every read of it is quick, the answer whole only
after as long as the test says.
"""

from __future__ import annotations

import json
import select
import socket
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pytest_httpserver import HTTPServer
from standardwebhooks import Webhook
from werkzeug import Request, Response

PATH = "/hook"
HELD_SECONDS = 120.0  # the longest a gate holds a request (the test opens it sooner)


@dataclass(frozen=True)
class Received:
    """One request as it came: its headers and body."""

    headers: dict[str, str]
    body: bytes

    @property
    def message_id(self) -> str:
        return self.headers["webhook-id"]

    def verified(self, secret: str) -> Any:
        """The message, once the standardwebhooks verifier accepts its signature."""
        return Webhook(secret).verify(self.body, self.headers)


@dataclass
class Receiver:
    """Answers each request with the next scripted answer (a status, or a `threading.Event` to
    wait on, then 200), then with `status`."""

    server: HTTPServer
    status: int = 200
    location: str = "/elsewhere"  # where a scripted 3xx points
    script: deque[int | threading.Event] = field(default_factory=deque)
    received: list[Received] = field(default_factory=list)
    entered: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return self.server.url_for(PATH)

    def answer(self, *answers: int | threading.Event) -> None:
        self.script.extend(answers)

    def handle(self, request: Request) -> Response:
        with self.lock:
            headers = {name.lower(): value for name, value in request.headers.items()}
            self.received.append(Received(headers, request.get_data()))
            answer = self.script.popleft() if self.script else self.status
        self.entered.set()
        if isinstance(answer, threading.Event):
            answer.wait(HELD_SECONDS)
            return Response("late", 200)
        headers = {"Location": self.location} if 300 <= answer < 400 else {}
        return Response("ok" if answer < 300 else "no", answer, headers)

    def types(self) -> list[str]:
        """The `type` of each message received, in order."""
        return [json.loads(r.body)["type"] for r in list(self.received)]


@contextmanager
def receiving() -> Iterator[Receiver]:
    """A receiver listening on 127.0.0.1 until the block ends."""
    server = HTTPServer(host="127.0.0.1", threaded=True)
    receiver = Receiver(server)
    server.expect_request(PATH).respond_with_handler(receiver.handle)
    server.start()
    try:
        yield receiver
    finally:
        server.clear()
        server.stop()


DRIP_GAP_SECONDS = 0.1  # between two bytes of a dripped answer


@dataclass
class Drip:
    """Reads each request whole, then answers 200: the first `dripping` requests with a byte
    of the status line and headers every DRIP_GAP_SECONDS, `seconds` in all; the others at
    once."""

    server: socket.socket
    seconds: float
    dripping: int
    received: list[Received] = field(default_factory=list)
    entered: threading.Event = field(default_factory=threading.Event)  # a request came
    ended: threading.Event = field(default_factory=threading.Event)  # a dripped answer ended
    cut: threading.Event = field(default_factory=threading.Event)  # ... the sender hung up
    closing: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        host, port = self.server.getsockname()[:2]
        return f"http://{host}:{port}{PATH}"

    def serve(self) -> None:
        while not self.closing.is_set():
            try:
                connection, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:  # closed
                return
            threading.Thread(target=self.answer, args=(connection,), daemon=True).start()

    def answer(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(None)
            received = _read_request(connection)
            with self.lock:
                self.received.append(received)
                drips = len(self.received) <= self.dripping
            self.entered.set()
            if drips:
                self._drip(connection)
            else:
                connection.sendall(_answer(0))

    def _drip(self, connection: socket.socket) -> None:
        """The answer a byte at a time, until it is whole or the sender hangs up (seen at once:
        between two bytes the receiver watches the connection)."""
        answer = _answer(round(self.seconds / DRIP_GAP_SECONDS))
        try:
            for at in range(len(answer)):
                connection.sendall(answer[at : at + 1])
                if _hung_up(connection, DRIP_GAP_SECONDS):
                    self.cut.set()
                    return
                if self.closing.is_set():
                    return
        except OSError:
            self.cut.set()
        finally:
            self.ended.set()


def _hung_up(connection: socket.socket, seconds: float) -> bool:
    """Whether the sender closes the connection within `seconds`."""
    readable, _, _ = select.select([connection], [], [], seconds)
    return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""


def _read_request(connection: socket.socket) -> Received:
    """A request's headers and its body (as long as its Content-Length says)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError("the sender hung up before its request was whole")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")[1:]
    headers = {name.lower(): value.strip() for name, value in (x.split(":", 1) for x in lines)}
    while len(body) < int(headers.get("content-length", 0)):
        body += connection.recv(65536)
    return Received(headers, body)


def _answer(bytes_of_padding: int) -> bytes:
    """A 200 whose headers are padded to take that many more bytes."""
    padding = f"X-Padding: {'.' * bytes_of_padding}\r\n" if bytes_of_padding else ""
    return f"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n{padding}Connection: close\r\n\r\nok".encode()


@contextmanager
def dripping(seconds: float, dripping: int = 1) -> Iterator[Drip]:
    """A receiver on 127.0.0.1 whose first `dripping` answers each take `seconds` to drip."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    drip = Drip(server, seconds, dripping)
    thread = threading.Thread(target=drip.serve, name="drip-receiver", daemon=True)
    thread.start()
    try:
        yield drip
    finally:
        drip.closing.set()
        thread.join()
        server.close()
