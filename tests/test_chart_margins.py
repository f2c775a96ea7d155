"""The report charts' fixed margins (``report/chart_layout.py``) leave room for every label.

The margins are computed from the labels' measured widths, not by constrained layout: a label
that did not fit would be cut at the figure's edge, so the charts are drawn with the widest names
a chart can show (40 characters of ``W``, ``short_label``'s limit) and the outermost pixels of
every PNG must be blank paper (nothing drawn touches the edge). The what-if's time lines, the
search's front and the monthly forecast panels too (branch chartmargins), with the largest values
and the longest axis label they can carry.
"""

from __future__ import annotations

import base64
import io

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from PIL import Image

from analyzer.monthly.forecast import forecast
from analyzer.monthly.series import SERIES
from analyzer.report import charts
from analyzer.report.charts import Chart, encode_png
from analyzer.report.monthly_charts import forecast_chart
from analyzer.report.search_chart import front_chart
from analyzer.report.whatif import time_lines
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.whatif.search import SearchResult
from analyzer.whatif.search_grid import SearchGrid
from analyzer.whatif.search_rule import SearchRow

WIDE = ["W" * 60 + f"-{i}" for i in range(6)]  # shortened to 40 characters when drawn
BORDER = 3  # pixels


def _pixels(chart: Chart) -> np.ndarray:
    png = base64.b64decode(chart.data_uri.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(png)).convert("L"))


def _edges_blank(chart: Chart) -> bool:
    a = _pixels(chart)
    edges = [a[:BORDER, :], a[-BORDER:, :], a[:, :BORDER], a[:, -BORDER:]]
    return all(bool((e >= 250).all()) for e in edges)


def test_charts_with_the_widest_names_draw_nothing_at_their_edges() -> None:
    start = pd.Timestamp("2026-11-07", tz="UTC")
    breaches = pd.DataFrame({
        "node": WIDE[:2], "resource": ["cpu", "memory"],
        "start": [start + pd.Timedelta(hours=2)] * 2, "end": [start + pd.Timedelta(hours=5)] * 2,
    })  # fmt: skip
    frame = pd.DataFrame({"x": [10.0, 90.0] * 3, "y": [95.0, 5.0] * 3, "pool": WIDE})
    times = [f"{h:02d}:00" for h in range(24)]
    drawn = [
        charts.heatmap(np.full((6, 24), 50.0), WIDE, times, title="t " * 60, alt="a",
                       xlabel="hour", colorbar_label="% of allocatable"),
        charts.grouped_bars(WIDE[:3], {"avg": [10.0, 99.0, 50.0], "p99": [100.0, 1.0, 7.0]},
                            title="bars", ylabel="% of pool allocatable", ylim=(0, 108)),
        charts.breach_timeline(breaches, WIDE, start=start, end=start + pd.Timedelta(days=1),
                               title="breaches"),
        charts.scatter(frame, x="x", y="y", group="pool", title="scatter", xlabel="requested",
                       ylabel="used"),
        charts.lines(times, {name: [99.0] * 24 for name in [*WIDE, "short"]}, title="lines",
                     ylabel="%", xlabel="UTC", ylim=(0, 105), end_labels=6),
    ]  # fmt: skip
    assert [c.title for c in drawn if not _edges_blank(c)] == []


def _search_row(name: str, released: float, violations: float, **flags: bool) -> SearchRow:
    return SearchRow(name, "searched", {}, 10, 10, violations, 0, 0, 0.0, {},
                     core_hours_released=released, gib_hours_released=released,
                     core_hours_released_pct=released, gib_hours_released_pct=released,
                     **flags)  # fmt: skip


def _monthly_rows(days: int, scale: float) -> pd.DataFrame:
    """A pool's daily history rising to ``scale`` (cores and GiB), allocatable twice that."""
    rise = np.linspace(0.2, 1.0, days) * scale
    frame = {"day": pd.date_range("2026-06-01", periods=days, freq="D").date}
    for resource in ("cpu", "memory"):
        frame |= {f"requested_peak_{resource}": rise, f"used_p95_{resource}": rise * 0.6,
                  f"allocatable_{resource}": np.full(days, 2 * scale),
                  f"largest_{resource}": np.full(days, scale / 10)}  # fmt: skip
    return pd.DataFrame(frame)


def test_whatif_search_and_monthly_charts_draw_nothing_at_their_edges() -> None:
    times = pd.date_range("2026-11-01", periods=96, freq="h", tz="UTC")
    big = [12_345.0 * (1 + i % 5) for i in range(96)]  # five-digit counts on the value axis
    lines = time_lines(dict.fromkeys(WIDE[:3], (times, big)), title="Pending pods",
                       ylabel="pods")  # fmt: skip
    rows = [_search_row("observed", 0, 4000), _search_row("a", 30, 20, on_front=True),
            _search_row("b", 10, 9000), _search_row("c", 45, 50, recommended=True)]  # fmt: skip
    # an autoscaler's name lengthens the x label past the plot's width
    front = front_chart(SearchResult(
        source="s", start="", end="", grid=SearchGrid(), seeds=1, thresholds=ThresholdConfig(),
        rows=rows, recommended="c", sentence="", autoscaler="cluster-autoscaler",
    ))  # fmt: skip
    history = _monthly_rows(60, 250_000.0)
    capacity = {"cpu": 65, "memory": 65}
    # robust=False: a straight rise has no level shift to find, and the search costs 2 s
    forecasts = {s.name: forecast(s.values(history), s.capacity(history, capacity),
                                  horizon_days=90, resource=s.name, robust=False)
                 for s in SERIES}  # fmt: skip
    monthly = forecast_chart(WIDE[0], history, forecasts, capacity)
    assert [c.title for c in (lines, front, monthly) if not _edges_blank(c)] == []


def test_a_label_cut_at_the_edge_is_caught() -> None:
    # the check above can fail: a name drawn from the figure's left edge leaves no blank paper
    fig = Figure(figsize=(4.0, 2.0))
    fig.text(0.0, 0.5, "W" * 40, fontsize=10)
    assert not _edges_blank(Chart(title="t", alt="a", data_uri=encode_png(fig)))
