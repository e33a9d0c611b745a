"""Bar charts drawn on the server as SVG: no script, nothing to download, readable without
colour (each bar names its figures, and the page shows the same figures as a table)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup

WIDTH, HEIGHT = 720, 240
LEFT, RIGHT, TOP, BOTTOM = 52, 8, 12, 28  # margins around the plot, for the axes' labels
MOST_X_LABELS = 8


@dataclass(frozen=True)
class Chart:
    """Stacked bars, one per bucket, one layer per series.

    `key` names the chart's element ids (unique on its page); `summary` is its text alternative;
    `values` holds, for each of `labels`, one value per series.
    """

    key: str
    title: str
    summary: str
    series: tuple[str, ...]
    labels: tuple[str, ...]
    values: tuple[tuple[float, ...], ...]
    unit: str = ""


def bar_chart(chart: Chart) -> Markup:
    """The chart as a `<figure>`: an SVG with its title and description, and a legend."""
    top = nice_ceiling(max((sum(v) for v in chart.values), default=0.0))
    ids = f"{chart.key}-title {chart.key}-desc"
    parts = [
        Markup('<figure class="chart" id="{}">').format(chart.key),
        Markup(
            '<svg viewBox="0 0 {} {}" role="img" aria-labelledby="{}" class="chart-svg">'
        ).format(WIDTH, HEIGHT, ids),
        Markup('<title id="{}-title">{}</title>').format(chart.key, chart.title),
        Markup('<desc id="{}-desc">{}</desc>').format(chart.key, chart.summary),
        *_y_axis(top, chart.unit),
        *_bars(chart, top),
        *_x_axis(chart.labels),
        Markup("</svg>"),
        _legend(chart.series),
        Markup("</figure>"),
    ]
    return Markup("").join(parts)


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is at least `value` (1 for nothing)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= value * (1 - 1e-9))


def number(value: float) -> str:
    """A figure as short as it reads: `3`, `0.25`, `12.3`, `1500` (never `1.5e+03`)."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3g}" if abs(value) < 1000 else str(round(value))


def _plot_height() -> float:
    return HEIGHT - TOP - BOTTOM


def _y(value: float, top: float) -> float:
    return TOP + _plot_height() * (1 - value / top)


def _y_axis(top: float, unit: str) -> list[Markup]:
    """Grid lines and labels at 0, half and the top."""
    lines: list[Markup] = []
    for value in (0.0, top / 2, top):
        y = round(_y(value, top), 1)
        lines.append(
            Markup('<line class="grid" x1="{}" x2="{}" y1="{}" y2="{}"/>').format(
                LEFT, WIDTH - RIGHT, y, y
            )
        )
        lines.append(
            Markup('<text class="axis" x="{}" y="{}" text-anchor="end">{}</text>').format(
                LEFT - 6, y + 4, number(value) + unit
            )
        )
    return lines


def _bars(chart: Chart, top: float) -> list[Markup]:
    """One `<g>` per bucket, its `<title>` naming every figure, its layers stacked upwards."""
    slot = (WIDTH - LEFT - RIGHT) / max(len(chart.labels), 1)
    width = round(slot * 0.7, 1)
    bars: list[Markup] = []
    for index, (label, values) in enumerate(zip(chart.labels, chart.values, strict=True)):
        x = round(LEFT + slot * index + (slot - width) / 2, 1)
        named = "; ".join(
            f"{name} {number(value)}{chart.unit}"
            for name, value in zip(chart.series, values, strict=True)
        )
        bars.append(Markup('<g class="bar"><title>{}: {}</title>').format(label, named))
        base = 0.0
        for layer, value in enumerate(values):
            if value > 0:
                y_top, y_base = _y(base + value, top), _y(base, top)
                bars.append(
                    Markup('<rect class="series-{}" x="{}" y="{}" width="{}" height="{}"/>').format(
                        layer, x, round(y_top, 1), width, round(y_base - y_top, 1)
                    )
                )
            base += value
        bars.append(Markup("</g>"))
    return bars


def _x_axis(labels: Sequence[str]) -> list[Markup]:
    """The baseline, and every few buckets' label under its bar."""
    slot = (WIDTH - LEFT - RIGHT) / max(len(labels), 1)
    every = max(1, math.ceil(len(labels) / MOST_X_LABELS))
    baseline = HEIGHT - BOTTOM
    marks = [
        Markup('<line class="baseline" x1="{}" x2="{}" y1="{}" y2="{}"/>').format(
            LEFT, WIDTH - RIGHT, baseline, baseline
        )
    ]
    for index in range(0, len(labels), every):
        x = round(LEFT + slot * (index + 0.5), 1)
        marks.append(
            Markup('<text class="axis" x="{}" y="{}" text-anchor="middle">{}</text>').format(
                x, baseline + 18, labels[index]
            )
        )
    return marks


def _legend(series: Sequence[str]) -> Markup:
    if len(series) < 2:
        return Markup("")
    items = Markup("").join(
        Markup('<li><span class="swatch series-{}" aria-hidden="true"></span>{}</li>').format(
            layer, name
        )
        for layer, name in enumerate(series)
    )
    return Markup('<figcaption><ul class="legend">{}</ul></figcaption>').format(items)
