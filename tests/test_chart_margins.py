"""The nightly charts' fixed margins (``report/chart_layout.py``) leave room for every label.

The margins are computed from the labels' measured widths, not by constrained layout: a label
that did not fit would be cut at the figure's edge, so the charts are drawn with the widest names
a chart can show (40 characters of ``W``, ``short_label``'s limit) and the outermost pixels of
every PNG must be blank paper (nothing drawn touches the edge).
"""

from __future__ import annotations

import base64
import io

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from PIL import Image

from analyzer.report import charts
from analyzer.report.charts import Chart, encode_png

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


def test_a_label_cut_at_the_edge_is_caught() -> None:
    # the check above can fail: a name drawn from the figure's left edge leaves no blank paper
    fig = Figure(figsize=(4.0, 2.0))
    fig.text(0.0, 0.5, "W" * 40, fontsize=10)
    assert not _edges_blank(Chart(title="t", alt="a", data_uri=encode_png(fig)))
