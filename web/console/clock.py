"""Instants as the console shows them: in the viewer's zone and in UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import unquote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from flask import Flask, current_app, request
from markupsafe import Markup

ZONE_COOKIE = "cronledger_zone"  # the browser's IANA zone, set by console.js


def viewer_zone() -> ZoneInfo:
    """The browser's zone (console.js keeps it in a cookie), else the service's business zone."""
    for name in (
        unquote(request.cookies.get(ZONE_COOKIE, "")),  # console.js encodes the `/`
        current_app.extensions["cronledger"].settings.timezone,
    ):
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            continue
    return ZoneInfo("UTC")


def local(instant: datetime | None) -> str:
    if instant is None:
        return "—"
    return instant.astimezone(viewer_zone()).strftime("%Y-%m-%d %H:%M:%S %Z")


def utc(instant: datetime | None) -> str:
    if instant is None:
        return "—"
    return instant.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def when(instant: datetime | None) -> Markup:
    """An instant as `<time>`: local time, with UTC beside it."""
    if instant is None:
        return Markup("—")
    return Markup('<time datetime="{}">{}</time> <small class="utc">{}</small>').format(
        instant.astimezone(UTC).isoformat(), local(instant), utc(instant)
    )


def register_time_filters(app: Flask) -> None:
    app.add_template_filter(local, "local")
    app.add_template_filter(utc, "utc")
    app.add_template_filter(when, "when")
