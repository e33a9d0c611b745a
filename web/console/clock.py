"""Instants as the console shows them, all through `moment`: one local time whose zone is
written so it cannot be misread (北京时间 for China's zone, `UTC` for UTC, else its offset such
as `UTC+02:00`; never an abbreviation like `CST`, which is also US Central), UTC on hover, and
how long until or since (Babel's words) where that helps (docs/time.md#in-the-console)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from urllib.parse import unquote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from flask import Flask, current_app, request
from flask_babel import format_timedelta
from flask_babel import gettext as _
from markupsafe import Markup

ZONE_COOKIE = "cronledger_zone"  # the browser's IANA zone, set by console.js
BEIJING_ZONES = frozenset(
    {"Asia/Shanghai", "Asia/Chongqing", "Asia/Chungking", "Asia/Harbin", "PRC"}
)
BEIJING_OFFSET = timedelta(hours=8)  # 北京时间; Shanghai's summer time of 1986-1991 was not
UTC_ZONES = frozenset({"UTC", "Etc/UTC", "Etc/UCT", "Etc/Universal", "Etc/Zulu", "UCT", "Zulu"})
SHOWN = "%Y-%m-%d %H:%M:%S"


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


def offset_text(offset: timedelta | None) -> str:
    """A UTC offset as `UTC+08:00`."""
    minutes = int((offset or timedelta()).total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def zone_label(local: datetime) -> str:
    """The zone of a local time, unambiguously: 北京时间 (Beijing time), UTC, or its offset."""
    key = getattr(local.tzinfo, "key", None) or ("UTC" if local.tzinfo is UTC else "")
    if key in BEIJING_ZONES and local.utcoffset() == BEIJING_OFFSET:
        return str(_("Beijing time"))
    if key in UTC_ZONES:
        return "UTC"
    return offset_text(local.utcoffset())


def zone_name(zone: tzinfo) -> str:
    """A zone for a date picker or a heading: 北京时间 (Beijing time), UTC, or its IANA name."""
    key = getattr(zone, "key", None) or "UTC"
    if key in BEIJING_ZONES:
        return str(_("Beijing time"))
    return "UTC" if key in UTC_ZONES else key


def zone_hint() -> str:
    """What a date and time field says about the zone it is read in (the viewer's)."""
    return str(_("in %(zone)s", zone=zone_name(viewer_zone())))


def in_viewer_zone(instant: datetime) -> datetime:
    return instant.astimezone(viewer_zone())


def typed_instant(text: str) -> datetime:
    """A time typed in a form (a date picker's `2026-10-01T09:00`, or with a space) in the
    viewer's zone; one with an offset as written. ValueError when it is no time."""
    instant = datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    return instant if instant.tzinfo else instant.replace(tzinfo=viewer_zone())


def local_text(instant: datetime) -> str:
    """`2026-10-01 09:00:00 北京时间`: the instant in the viewer's zone, as text."""
    local = in_viewer_zone(instant)
    return f"{local.strftime(SHOWN)} {zone_label(local)}"


def utc_text(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime(f"{SHOWN} UTC")


def now() -> datetime:
    """The service's clock (a fake one in tests)."""
    return current_app.extensions["cronledger"].ledger.clock()  # type: ignore[no-any-return]


def relative(instant: datetime, since: datetime | None = None) -> str:
    """How far `instant` is from now (or `since`), in words: `in 2 hours`, `2小时后`,
    `5 minutes ago`."""
    return str(format_timedelta(instant - (since or now()), add_direction=True))


def moment(
    instant: datetime | None,
    zone: tzinfo | str | None = None,
    *,
    weekday: str = "",
    until: bool = False,
) -> Markup:
    """An instant as `<time>`: its local time in `zone` (default: the viewer's) with the zone
    written out, UTC on hover, `weekday` before it, and with `until` how far it is from now."""
    if instant is None:
        return Markup("—")
    shown_in = ZoneInfo(zone) if isinstance(zone, str) else zone or viewer_zone()
    local = instant.astimezone(shown_in)
    html = Markup('<time datetime="{}" title="{}">{}{} <span class="zone">{}</span></time>').format(
        instant.astimezone(UTC).isoformat(),
        utc_text(instant),
        f"{weekday} " if weekday else "",
        local.strftime(SHOWN),
        zone_label(local),
    )
    if until:
        html += Markup(' <small class="relative">{}</small>').format(relative(instant))
    return html


def same_zone_shown(instant: datetime, zone: tzinfo | str) -> bool:
    """Whether `zone` shows the instant at the viewer's wall time (then one time is enough)."""
    other = ZoneInfo(zone) if isinstance(zone, str) else zone
    return instant.astimezone(other).utcoffset() == in_viewer_zone(instant).utcoffset()


def register_time_filters(app: Flask) -> None:
    app.add_template_filter(moment, "when")
    app.add_template_global(moment, "moment")
    app.add_template_global(zone_hint, "zone_hint")
    app.add_template_global(same_zone_shown, "same_zone_shown")
