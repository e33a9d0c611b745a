"""Waking a poller when the log grows: PostgreSQL's NOTIFY, else (and also) a timeout."""

from __future__ import annotations

import logging
import threading
from typing import Any

import psycopg
from psycopg import sql

from cronledger.persistence.ledger import Ledger

log = logging.getLogger("cronledger.persistence.wakeup")


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

    def wait(self, timeout: float) -> None:
        if self.store.kind != "postgresql" or self.channel is None:
            self.stop.wait(timeout)
            return
        try:
            for _ in self._listening(self.channel).notifies(timeout=timeout, stop_after=1):
                pass
        except psycopg.Error:
            log.warning("lost the notification connection; polling until it is back")
            self.close()
            self.stop.wait(timeout)

    def _listening(self, channel: str) -> psycopg.Connection[Any]:
        if self._connection is None or self._connection.closed:
            self._connection = self.store.dedicated()
            self._connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
        return self._connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
