"""The console's SVG bar charts: a pure function of their figures."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from web.console.charts import BOTTOM, HEIGHT, Chart, bar_chart, nice_ceiling, number

SVG = "{http://www.w3.org/2000/svg}"


def chart(**changes: object) -> Chart:
    fields: dict[str, object] = {
        "key": "outcomes",
        "title": "Launch outcomes",
        "summary": "3 succeeded, 1 failed",
        "series": ("Succeeded", "Failed"),
        "labels": ("09:00", "10:00", "11:00"),
        "values": ((2.0, 1.0), (0.0, 0.0), (1.0, 0.0)),
    }
    return Chart(**{**fields, **changes})  # type: ignore[arg-type]


def parsed(markup: str) -> ET.Element:
    """The figure as XML (the SVG in the SVG namespace, as a browser reads it in HTML)."""
    namespaced = str(markup).replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1)
    return ET.fromstring(namespaced)


def test_the_svg_is_an_image_named_by_its_title_and_described_by_its_summary() -> None:
    figure = parsed(bar_chart(chart()))
    svg = figure.find(f"{SVG}svg")
    assert svg is not None
    assert svg.get("role") == "img"
    assert svg.get("aria-labelledby") == "outcomes-title outcomes-desc"
    assert svg.find(f"{SVG}title").text == "Launch outcomes"  # type: ignore[union-attr]
    assert svg.find(f"{SVG}desc").text == "3 succeeded, 1 failed"  # type: ignore[union-attr]
    assert figure.get("id") == "outcomes"


def test_each_bucket_is_a_bar_whose_title_names_every_figure() -> None:
    svg = parsed(bar_chart(chart(unit=" s")))
    titles = [g.find(f"{SVG}title").text for g in svg.iter(f"{SVG}g")]  # type: ignore[union-attr]
    assert titles == [
        "09:00: Succeeded 2 s; Failed 1 s",
        "10:00: Succeeded 0 s; Failed 0 s",
        "11:00: Succeeded 1 s; Failed 0 s",
    ]


def test_layers_stack_upwards_in_proportion_and_nothing_is_drawn_for_zero() -> None:
    svg = parsed(bar_chart(chart()))
    bars = list(svg.iter(f"{SVG}g"))
    ok, bad = bars[0].iter(f"{SVG}rect")
    assert (ok.get("class"), bad.get("class")) == ("series-0", "series-1")
    ok_y, ok_h, bad_y, bad_h = (float(r.get(a, 0)) for r in (ok, bad) for a in ("y", "height"))
    assert ok_y + ok_h == pytest.approx(HEIGHT - BOTTOM, abs=0.2)  # on the baseline
    assert ok_h == pytest.approx(2 * bad_h, abs=0.2)  # 2 against 1
    assert bad_y + bad_h == pytest.approx(ok_y, abs=0.2)  # failed sits on succeeded
    assert not list(bars[1].iter(f"{SVG}rect"))


def test_the_axis_reads_up_to_a_round_ceiling_and_labels_the_buckets() -> None:
    svg = parsed(bar_chart(chart(unit=" s")))
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    assert texts == ["0 s", "2.5 s", "5 s", "09:00", "10:00", "11:00"]


def test_many_buckets_get_a_label_every_few_bars() -> None:
    labels = tuple(f"{hour:02d}:00" for hour in range(24))
    values = tuple((1.0,) for _ in labels)
    svg = parsed(bar_chart(chart(labels=labels, values=values, series=("Runs",))))
    hours = [t.text for t in svg.iter(f"{SVG}text") if ":" in (t.text or "")]
    assert hours == ["00:00", "03:00", "06:00", "09:00", "12:00", "15:00", "18:00", "21:00"]
    assert len(list(svg.iter(f"{SVG}rect"))) == 24


def test_a_legend_names_the_series_of_a_stacked_chart_only() -> None:
    stacked = bar_chart(chart())
    assert re.findall(r'swatch series-(\d)" aria-hidden="true"></span>(\w+)', stacked) == [
        ("0", "Succeeded"),
        ("1", "Failed"),
    ]
    assert "legend" not in bar_chart(chart(series=("Lag",), values=((1.0,), (2.0,), (0.0,))))


def test_an_empty_chart_still_draws_its_axes() -> None:
    svg = parsed(bar_chart(chart(values=((0.0, 0.0),) * 3)))
    assert [t.text for t in svg.iter(f"{SVG}text")][:3] == ["0", "0.5", "1"]
    assert not list(svg.iter(f"{SVG}rect"))


def test_text_is_escaped() -> None:
    markup = bar_chart(chart(title="<script>x</script>", labels=("a&b", "c", "d")))
    assert "<script>" not in markup
    assert "&lt;script&gt;" in markup
    assert "a&amp;b" in markup


@pytest.mark.parametrize(
    ("value", "ceiling"),
    [(0, 1), (-3, 1), (0.3, 0.5), (1, 1), (1.01, 2), (7, 10), (10, 10), (101, 200), (0.04, 0.05)],
)
def test_nice_ceiling(value: float, ceiling: float) -> None:
    assert nice_ceiling(value) == pytest.approx(ceiling)


@pytest.mark.parametrize(
    ("value", "shown"),
    [(3.0, "3"), (0.25, "0.25"), (12.345, "12.3"), (1500.0, "1500"), (1234.56, "1235")],
)
def test_number(value: float, shown: str) -> None:
    assert number(value) == shown
