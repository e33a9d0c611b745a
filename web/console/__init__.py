"""The console under /console/: pages over the same application services as the API.

docs/console/README.md describes it for its users. `install(app)` adds it to the Flask app: one
`console` blueprint (sign-in, CSRF, languages, headers, error pages) holding one child
blueprint per area. Each area is a module of this package; its templates live under
templates/console/<area>/ and its Chinese catalogue under translations/<area>/.
"""

from __future__ import annotations

from flask import Flask

# Each area has its own catalogue directory; Flask-Babel merges them.
AREAS = (
    "shell",
    "session",
    "schedules",
    "runs",
    "approvals",
    "tasks",
    "timelines",
    "operations",
    "directory",
    "groups",
    "calendars",
    "callback_sources",
    "webhooks",
    "notifications",
    "bulk",
    "lists",
)


def install(app: Flask) -> None:
    from web.console import (
        approvals,
        calendars,
        callback_sources,
        directory,
        lists,
        live,
        notifications,
        operations,
        runs,
        schedules,
        session,
        shell,
        tasks,
        timelines,
        webhooks,
    )

    console = shell.console_blueprint()
    for area in (
        session,
        schedules,
        runs,
        tasks,
        approvals,
        timelines,
        operations,
        directory,
        live,
    ):
        console.register_blueprint(area.bp)
    console.register_blueprint(callback_sources.bp)
    console.register_blueprint(webhooks.bp)
    console.register_blueprint(notifications.bp)
    console.register_blueprint(lists.bp)
    console.register_blueprint(calendars.bp)
    shell.install(app, console)
