"""A real HTTP receiver of webhook messages on loopback, for the webhook tests.

It records every request it gets and answers as the test scripts it: a status, or a gate that
holds the request until the test opens it (a receiver that never answers, or one a test kills
the notifier in front of).
"""

from __future__ import annotations

import json
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
