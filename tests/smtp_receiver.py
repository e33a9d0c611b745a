"""A real SMTP server on loopback (aiosmtpd), for the notice emails' tests: it keeps every
message it accepts, and refuses the first `refusals` with a temporary error."""

from __future__ import annotations

import email
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message
from typing import Any

from aiosmtpd.controller import Controller

from tests.processes import free_port


class Receiver:
    def __init__(self, refusals: int = 0) -> None:
        self.refusals = refusals
        self.messages: list[Message] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        if self.refusals:
            self.refusals -= 1
            return "451 4.3.0 try again later"
        self.messages.append(email.message_from_bytes(envelope.content))
        return "250 OK"


@contextmanager
def smtp_server(refusals: int = 0) -> Iterator[tuple[Receiver, str]]:
    """A running server and its `smtp://` URL."""
    receiver = Receiver(refusals)
    controller = Controller(receiver, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield receiver, f"smtp://127.0.0.1:{controller.port}"
    finally:
        controller.stop()
