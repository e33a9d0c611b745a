"""The background processes, each a loop over one application service: tick, worker, sweeper,
projections and notifier. Loops only: every command they run lives in cronledger/application/."""

from __future__ import annotations

import logging
import threading

from cronledger.application.cycles import Ticker
from cronledger.application.launches import Worker
from cronledger.application.notifier import Notifier
from cronledger.application.services import Services
from tick.loops import Loop

log = logging.getLogger("cronledger.tick.processes")


def tick_loop(services: Services) -> Loop:
    """Registers every due cycle, every CRONLEDGER_TICK_SECONDS, on whole multiples of it."""
    ticker, stop = Ticker.of(services), threading.Event()
    return Loop(
        "tick",
        services.settings.tick_seconds,
        ticker.scan,
        stop,
        lambda _: stop.wait(ticker.until_next_scan()),
        health=services.health,
        on_failure=services.meters.database_error,
    )


def worker_loop(services: Services, interval: float) -> Loop:
    """Stopping it stops claiming; the batch being launched finishes its commit."""
    worker = Worker.of(services)
    return Loop(
        "worker",
        interval,
        worker.drain,
        stop=worker.stopping,
        pause=worker.pause,
        health=services.health,
        on_failure=services.meters.database_error,
    )


def sweeper_loop(services: Services, interval: float) -> Loop:
    """Expires the instances whose deadline has come, and records the reminders and
    escalations due on those still waiting."""
    return Loop(
        "sweeper",
        interval,
        services.approvals.sweep,
        health=services.health,
        on_failure=services.meters.database_error,
    )


def projections_loop(services: Services, interval: float) -> Loop:
    """On PostgreSQL it wakes on each append's NOTIFY, and polls every `interval` as well."""
    stop = threading.Event()
    if services.evidence.key is None:
        log.warning(
            "no signing key: the log's Merkle tree is kept but no checkpoint is signed "
            "(`cronledger migrate` makes a key, or set CRONLEDGER_SIGNING_KEY_FILE; docs/audit.md)"
        )

    def project_and_sign() -> None:
        services.registration.wait(services.settings.scan_budget_seconds)  # the tick first
        services.projector.catch_up()
        services.evidence.checkpoint()

    return Loop(
        "projections",
        interval,
        project_and_sign,
        stop,
        services.wakeup(stop),
        health=services.health,
        on_failure=services.meters.database_error,
    )


def every_loop(services: Services) -> list[Loop]:
    """What `cronledger serve` runs beside the web API."""
    return [
        projections_loop(services, 1.0),
        tick_loop(services),
        worker_loop(services, 1.0),
        sweeper_loop(services, 1.0),
    ]


def notifier_loop(services: Services, interval: float) -> Loop:
    """Schedules and sends webhook messages, and emails notices, every `interval` (sooner when
    a message being sent finishes); stopping it lets the messages being sent finish, each
    within its attempt deadline, and be recorded."""
    notifier, mailer = Notifier.of(services), services.mailer

    def work() -> None:
        notifier.work()
        mailer.send_due()  # notices by email, when CRONLEDGER_SMTP_URL names a server

    return Loop(
        "notifier",
        interval,
        work,
        stop=notifier.stopping,
        pause=notifier.pause,
        health=services.health,
        on_failure=services.meters.database_error,
        finish=notifier.finish_sending,
    )
