"""Reading your own writes on any process (docs/api.md#reading-your-writes).

A write answers `X-Log-Position`, where its events end on the log. A read sent with
`X-Min-Log-Position: N` is answered once this process's read models have applied the log up to
N: at once if they have, else after catching up (here, on a helper thread, or by any other process
that projects), for at most WAIT_SECONDS, then 503 `UNAVAILABLE` with `Retry-After`.
"""

from __future__ import annotations

import logging
import re
import threading
import time

from flask import current_app, request

from cronledger.application.services import Services
from cronledger.health import REBUILDING
from domain.messages import Message
from projections.engine import Projector
from web.problems import SOME_FIELDS_INVALID, Problem

WRITTEN_HEADER = "X-Log-Position"
WANTED_HEADER = "X-Min-Log-Position"
WAIT_SECONDS = 2.0
POLL_SECONDS = 0.01
IDLE_SECONDS = 1.0  # a helper thread with nothing to do for this long ends
MAX_POSITION = 2**63 - 1
ASCII_DIGITS = re.compile(r"[0-9]{1,19}")  # str.isdigit also takes "²" and "٣"
log = logging.getLogger("cronledger.web")


class CatchUp:
    """Brings the read models up to the positions reads wait for, on one helper thread at a
    time, so that no request thread blocks on the projector's lock."""

    def __init__(self, projector: Projector) -> None:
        self.projector = projector
        self._wanted = 0
        self._reached = 0
        self._changed = threading.Condition()
        self._running = False

    def ask(self, position: int) -> None:
        """Have the read models reach `position`; returns at once."""
        with self._changed:
            self._wanted = max(self._wanted, position)
            self._changed.notify()
            if not self._running:
                self._running = True
                threading.Thread(target=self._run, name="catch-up", daemon=True).start()

    def _run(self) -> None:
        while (target := self._next()) is not None:
            try:
                self.projector.catch_up(until=target)
            except Exception:  # the store away, say: the reads waiting for it answer 503
                log.exception("catching up for a read failed")
            with self._changed:
                self._reached = max(self._reached, target)

    def _next(self) -> int | None:
        """The position to reach next, or None (the thread ends) after IDLE_SECONDS idle."""
        with self._changed:
            if self._wanted <= self._reached:
                self._changed.wait(IDLE_SECONDS)
            if self._wanted <= self._reached:
                self._running = False
                return None
            return self._wanted


def read_models_ready(services: Services) -> None:
    """Lists and single resources are read from the read models: while they are rebuilt after
    an upgrade (the live tables lacking the rebuilt ones' new columns until they are swapped
    in), 503 `UNAVAILABLE` (`/readyz` says so too, so a balancer sends nothing here)."""
    if services.health.phase == REBUILDING:
        raise Problem("UNAVAILABLE", Message("the read models are being rebuilt after an upgrade"))


def wanted_position() -> int | None:
    """The position the request's `X-Min-Log-Position` names, if it sends one; 422 if malformed."""
    text = request.headers.get(WANTED_HEADER)
    if text is None:
        return None
    if not ASCII_DIGITS.fullmatch(text.strip()) or int(text) > MAX_POSITION:
        raise _invalid(Message("a log position: a whole number, as a write's X-Log-Position gives"))
    return int(text)


def wait_until_projected(services: Services, position: int) -> None:
    """Return once every read model has applied the log up to `position`: 422 if the log
    does not reach it, 503 if the read models do not within WAIT_SECONDS."""
    deadline = time.monotonic() + WAIT_SECONDS
    if _reached(services.projector) >= position:
        return
    end = services.ledger.recorder.max_notification_id() or 0
    if position > end:
        raise _invalid(Message("the log ends at position {end}", end=end))
    _catch_up_of(services).ask(position)
    while _reached(services.projector) < position:
        if time.monotonic() >= deadline:
            raise Problem(
                "UNAVAILABLE",
                Message(
                    "the read models did not reach log position {position} within {seconds} s; "
                    "try again shortly",
                    position=position,
                    seconds=f"{WAIT_SECONDS:g}",
                ),
            )
        time.sleep(POLL_SECONDS)


def written_headers(services: Services) -> dict[str, str]:
    """`X-Log-Position` for a request that saved, else nothing."""
    position = services.ledger.saved_position()
    return {WRITTEN_HEADER: str(position)} if position else {}


def _reached(projector: Projector) -> int:
    """How far the slowest read model has applied the log (held ones, being rebuilt, aside)."""
    return min(projector.positions().values(), default=MAX_POSITION)


def _catch_up_of(services: Services) -> CatchUp:
    catch_up = current_app.extensions.get("catch_up")
    if catch_up is None:
        catch_up = current_app.extensions.setdefault("catch_up", CatchUp(services.projector))
    assert isinstance(catch_up, CatchUp)
    return catch_up


def _invalid(message: str) -> Problem:
    return Problem("VALIDATION_FAILED", SOME_FIELDS_INVALID, {WANTED_HEADER: [message]})
