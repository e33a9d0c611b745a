"""Waking a poller when the log grows: PostgreSQL's NOTIFY, else (and also) a timeout."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import psycopg
from psycopg import sql

from cronledger.logs import Outage
from cronledger.persistence.ledger import Ledger

log = logging.getLogger("cronledger.persistence.wakeup")
STOP_SEEN_WITHIN = 0.5  # seconds a stop may wait for a waiter listening for notifications


class AppendWakeup:
    """`wait(timeout)` returns early when events are appended (PostgreSQL only).

    eventsourcing's PostgreSQL recorder sends NOTIFY on its channel with every append. A lost
    notification or a dropped connection only delays the caller to its timeout: it polls too.
    """

    def __init__(self, ledger: Ledger, stop: threading.Event) -> None:
        self.store = ledger.store
        self.channel: str | None = getattr(ledger.recorder, "channel_name", None)
        self.stop = stop
        self._connection: psycopg.Connection[Any] | None = None
        self._lost = Outage(
            log,
            "lost the notification connection; polling until it is back",
            "the notification connection is back",
        )

    def wait(self, timeout: float) -> None:
        """Up to `timeout` seconds; less if events are appended, or once `stop` is set."""
        if self.store.kind != "postgresql" or self.channel is None:
            self.stop.wait(timeout)
            return
        deadline = time.monotonic() + timeout
        try:
            while not self.stop.is_set() and (left := deadline - time.monotonic()) > 0:
                listening = self._listening(self.channel)
                self._lost.succeeded()
                for _ in listening.notifies(timeout=min(left, STOP_SEEN_WITHIN), stop_after=1):
                    return  # an append
        except psycopg.Error:
            self._lost.failed(logging.WARNING)
            self.close()
            self.stop.wait(max(0.0, deadline - time.monotonic()))

    @property
    def listening(self) -> bool:
        """Whether its connection listens for notifications now."""
        return self._connection is not None and not self._connection.closed

    def _listening(self, channel: str) -> psycopg.Connection[Any]:
        if self._connection is None or self._connection.closed:
            self._connection = self.store.dedicated()
            self._connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
        return self._connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
